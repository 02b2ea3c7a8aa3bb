"""Record the Codex CLI fixtures in this folder from the real binary (offline, a throwaway sandbox).

    python3 tests/data/codex/record.py            # CC_CONTINUITY_CODEX_BIN or the .ci/install-codex.sh cache

Writes ``rollout-tool-turn.jsonl`` (one exec turn: a text prompt, one exec_command call, its
follow-up), ``rollout-compacted.jsonl`` (the same turn with the first request over
``model_auto_compact_token_limit``: an automatic compaction mid-turn) and
``hook-payloads.jsonl`` (every hook call of both runs: the probe on every event, trust
bypassed).  The sandbox's temp root is replaced by ``/SANDBOX`` (nothing else is changed).
"""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # tests/ (helpers)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the checkout

from helpers.codex import CodexSandbox, find_codex_bin  # noqa: E402
from helpers.responses_model import ResponsesModel  # noqa: E402

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop",
          "SessionEnd")
TOOL_TURN = {"rules": [{"name": "tool", "when": {"latest_contains": "please run a tool"},
                        "reply": [{"type": "exec_command", "cmd": "echo hello-from-tool && pwd"}],
                        "then": ["Tool done."]}],
             "compact_summary": "SUMMARY: ran echo hello-from-tool."}


def run(name, scenario, *args):
    bin_ = find_codex_bin()
    if bin_ is None:
        sys.exit("no codex: run .ci/install-codex.sh first")
    with tempfile.TemporaryDirectory(prefix="codex-record-") as root, ResponsesModel(scenario) as model:
        box = CodexSandbox(bin_, model, root)
        box.install_probe(EVENTS)
        p = box.exec("please run a tool", *args)
        assert p.returncode == 0, p.stderr
        (rollout,) = box.rollouts()
        real = os.path.realpath(root)

        def scrub(data):
            return data.replace(real, "/SANDBOX").replace(root, "/SANDBOX")

        with open(rollout) as f, open(os.path.join(HERE, "rollout-%s.jsonl" % name), "w") as out:
            out.write(scrub(f.read()))
        return [json.loads(scrub(json.dumps(c))) for c in box.hook_calls()]


def main():
    calls = run("tool-turn", TOOL_TURN)
    big = json.loads(json.dumps(TOOL_TURN))
    big["rules"][0]["usage"] = {"input_tokens": 15000}
    calls += run("compacted", big, "-c", "model_auto_compact_token_limit=12000")
    with open(os.path.join(HERE, "hook-payloads.jsonl"), "w") as out:
        for c in calls:
            out.write(json.dumps({"event": c["event"], "payload": c["payload"]}) + "\n")
    print("recorded %d hook calls" % len(calls))


if __name__ == "__main__":
    main()
