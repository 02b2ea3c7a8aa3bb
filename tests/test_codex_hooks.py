"""Our Codex hook entry (cc_continuity/hosts/codex/hooks.py) on payloads and a rollout recorded from the
real Codex 0.171 (tests/data/codex): the steps with the Codex host, the tool calls' fast path, the wire.

The real binary runs it in tests/e2e/test_codex_headless_e2e.py; here the process is the test's."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from cc_continuity import ledger, session
from cc_continuity.hosts.codex import hooks, rollout
from cc_continuity.install import settings
from cc_continuity.project import Project
from cc_continuity.rotation import handoff
from helpers.hookdriver import REPO

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "codex")
SID = "01a23446-7060-7422-ae98-7e95270e3588"


class World:
    """A git work dir, a copy of a recorded rollout we can grow, and the payloads Codex sent."""

    def __init__(self, tmp_path):
        self.work = str(tmp_path / "work")
        subprocess.run(["git", "init", "-q", self.work], check=True)
        self.rollout = str(tmp_path / "rollout.jsonl")
        shutil.copyfile(os.path.join(DATA, "rollout-tool-turn.jsonl"), self.rollout)
        self.sent = {}
        for line in open(os.path.join(DATA, "hook-payloads.jsonl")):
            d = json.loads(line)
            if d["payload"].get("session_id") == SID or d["event"] not in self.sent:
                self.sent[d["event"]] = d["payload"]  # (PreCompact: only the compacting thread sent one)

    def payload(self, event, **fields):
        p = dict(self.sent[event], transcript_path=self.rollout, cwd=self.work, session_id=SID)
        p.update(fields)
        return p

    def call(self, event, **fields):
        return hooks.answer(event, json.dumps(self.payload(event, **fields)), {"PATH": os.environ["PATH"]})

    def usage(self, total, window=19000):
        """Codex's next request used ``total`` tokens (a token_count line, as it writes them)."""
        info = {"last_token_usage": {"input_tokens": total - 10, "output_tokens": 10, "total_tokens": total},
                "model_context_window": window}
        with open(self.rollout, "a") as f:
            f.write(json.dumps({"timestamp": "t", "ordinal": 99, "type": "event_msg",
                                "payload": {"type": "token_count", "info": info}}) + "\n")

    def sdir(self):
        return Project.discover(self.work).session_dir(1)


def test_a_session_registers_with_the_codex_host_and_its_window(tmp_path):
    w = World(tmp_path)
    text, outcome, sid, _ = w.call("SessionStart")
    assert text is None and sid == SID and outcome.startswith("registered")
    rec = session.load(w.sdir())
    assert rec["host"] == "codex" and rec["transcript"] == w.rollout
    w.call("UserPromptSubmit", prompt="please run a tool")
    _, outcome, _, _ = w.call("PostToolUse")
    assert outcome == "ok"  # the steady state: the card, the record, the rollout's tail
    [line] = [r for r in ledger.read(session.ledger_path(w.sdir())) if r["ev"] == "tool"]
    got = rollout.read_rollout(w.rollout)
    assert line["tokens"] == got["tokens"] and line["percent"] == round(100.0 * got["tokens"] / got["window"], 1)
    assert line["target"] == "echo hello-from-tool && pwd" and line["exit"] is None  # not in the rollout yet, live
    w.call("Stop", last_assistant_message="Tool done.")  # the turn's end: the rollout has the call's record
    [got] = [r for r in handoff.tool_lines(ledger.read(session.ledger_path(w.sdir())))]
    assert got["exit"] == 0  # "Process exited with code 0", settled by a tool_exit line


def test_past_rotate_the_stop_asks_for_the_handoff_in_codexs_wire(tmp_path):
    w = World(tmp_path)
    w.call("SessionStart")
    w.usage(12_500)  # 66 % of 19 000
    text, outcome, _, _ = w.call("Stop", last_assistant_message="Tool done.")
    answer = json.loads(text)
    assert outcome == "handoff requested" and answer["decision"] == "block"
    assert "Handoff file (absolute path): %s" % session.handoff_path(w.sdir()) in answer["reason"]
    assert "with one shell command" in answer["reason"]  # how a Codex model writes a file
    assert set(answer) == {"decision", "reason"}  # Codex's own shape, nothing it does not know


def test_past_hard_every_tool_is_denied_but_the_handoffs_own_write(tmp_path):
    w = World(tmp_path)
    w.call("SessionStart")
    w.usage(14_000)  # 74 %: past hard (72 %)
    text, outcome, _, _ = w.call("PreToolUse", tool_input={"command": "cat big.log"})
    deny = json.loads(text)["hookSpecificOutput"]
    assert outcome == "denied at hard ceiling" and deny["permissionDecision"] == "deny"
    assert session.load(w.sdir())["state"] == session.ROTATION_PENDING
    hpath = session.handoff_path(w.sdir())
    text, _, _, _ = w.call("PreToolUse", tool_input={"command": "cat > %s <<'EOF'\nx\nEOF" % hpath})
    assert text is None


def test_an_auto_compaction_is_never_vetoed(tmp_path):
    w = World(tmp_path)
    w.call("SessionStart")
    w.usage(12_500)
    w.call("PostToolUse")  # the rotate level recorded
    text, outcome, _, _ = w.call("PreCompact", trigger="auto")
    assert text is None and "let through" in outcome  # a veto would interrupt Codex's turn


def test_a_payload_that_is_not_codexs_fails_open_through_the_installed_command(tmp_path):
    env = dict(os.environ, CC_CONTINUITY_HOME=str(tmp_path / "state"))
    cmd = [sys.executable, "-S", "-c", settings.boot_code(REPO, hooks.HOOK_MARK), "Stop"]
    res = subprocess.run(cmd, input=b'{"hook_event_name": "Stop"}', capture_output=True, env=env, timeout=30)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    log = open(tmp_path / "state" / "logs" / "hooks.log").read()
    assert "codex:Stop" in log and "bad payload: session_id" in log


@pytest.mark.parametrize("event", hooks.EVENTS)
def test_every_event_has_a_budget_below_its_timeout(event):
    assert hooks.BUDGET[event] < hooks.TIMEOUTS[event]
    assert event != "SessionEnd" or hooks.TIMEOUTS[event] <= 3  # Codex clamps SessionEnd's to 3 s
