"""What our Codex hooks cost on every tool call (issue 28), as Codex runs them.

Codex runs a hooks.json handler's ``command`` with ``sh -c``; ours is
``<python> -S -c <bootstrap> <Event>`` (cc_continuity.hosts.codex.hooks).  Each figure is a
ratio measured pair by pair against a bare interpreter start run the same way
(``sh -c '<python> -S -c pass'``), on a rollout recorded from the real Codex 0.171
(tests/data/codex), with the session registered first (its card built): the steady state.

  C1  PostToolUse (the level recorded; no level change)   vs  sh -c python -S -c pass
  C2  PreToolUse (below the hard ceiling, a plain command) vs  the same

Usage: python bench/codex_hooks.py [--runs 30] [--instructions]
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import pairs  # noqa: E402
from hotpath import instructions  # noqa: E402

from cc_continuity.hosts.codex import hooks  # noqa: E402
from cc_continuity.install import settings  # noqa: E402

BASE_PY = os.path.realpath(sys.executable)
ROLLOUT = os.path.join(REPO, "tests", "data", "codex", "rollout-tool-turn.jsonl")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--instructions", action="store_true", help="also count instructions with valgrind")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cc-codex-bench-")
    try:
        subprocess.run([BASE_PY, "-m", "compileall", "-q", os.path.join(REPO, "cc_continuity")], check=True,
                       stdout=subprocess.DEVNULL)
        proj = os.path.join(work, "proj")
        subprocess.run(["git", "init", "-q", proj], check=True)
        rollout = os.path.join(work, "rollout.jsonl")
        shutil.copyfile(ROLLOUT, rollout)
        env = dict(os.environ, HOME=work, CC_CONTINUITY_HOME=os.path.join(work, "cc"))
        env.pop("CC_CONTINUITY", None)
        env.pop("PYTHONPATH", None)

        def command(event):
            return ["sh", "-c", shlex.join([BASE_PY, "-S", "-c", settings.boot_code(REPO, hooks.HOOK_MARK), event])]

        base = {"session_id": "01a23446-7060-7422-ae98-7e95270e3588", "transcript_path": rollout, "cwd": proj,
                "model": "scripted-model", "permission_mode": "bypassPermissions"}
        start = dict(base, hook_event_name="SessionStart", source="startup")
        subprocess.run(command("SessionStart"), input=json.dumps(start).encode(), env=env, check=True)
        calls = iter(range(1, 1 << 30))

        def tool(event):
            def payload():
                n = next(calls)
                p = dict(base, hook_event_name=event, turn_id="t-1", tool_name="Bash",
                         tool_input={"command": "ls -la src"}, tool_use_id="call_bench_%d" % n)
                if event == "PostToolUse":
                    p["tool_response"] = "a\nb\n"
                return json.dumps(p).encode()
            return payload

        bare = ["sh", "-c", shlex.join([BASE_PY, "-S", "-c", "pass"])]
        for event in ("PostToolUse", "PreToolUse"):  # warm: the slow path built the card once already
            subprocess.run(command(event), input=tool(event)(), env=env, check=True, stdout=subprocess.DEVNULL)
        results = {"python": BASE_PY, "runs": args.runs}
        for name, event in (("C1", "PostToolUse"), ("C2", "PreToolUse")):
            run = lambda cmd, data: subprocess.run(cmd, input=data() if callable(data) else data, env=env,  # noqa: E731
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            results[name] = pairs.alternate(lambda: run(command(event), tool(event)), lambda: run(bare, b""),
                                            args.runs, 3)
            r = results[name]
            print("%s %s  A %.2f ms  B %.2f ms  ratio median %.3f (min %.3f, max %.3f)" % (
                name, event, r["a_ms"], r["b_ms"], r["ratio"], r["min"], r["max"]))
        if args.instructions:
            results["instructions"] = {"pass": instructions(bare, b"", env),
                                       "post_tool_use": instructions(command("PostToolUse"), tool("PostToolUse")(), env),
                                       "pre_tool_use": instructions(command("PreToolUse"), tool("PreToolUse")(), env)}
            print("instructions: %s" % results["instructions"])
        log = open(os.path.join(work, "cc", "logs", "hooks.log")).read().splitlines()
        print("outcomes: %s" % sorted({line.split("ms ", 1)[-1] for line in log}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
