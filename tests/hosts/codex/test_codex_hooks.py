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
from cc_continuity.hosts.codex import hooks, rollout, wire
from cc_continuity.install import settings
from cc_continuity.project import Project
from cc_continuity.rotation import handoff
from helpers.hookdriver import REPO
from helpers import TESTS

DATA = os.path.join(TESTS, "data", "codex")
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

def recorded(event):
    with open(os.path.join(DATA, "hook-payloads.jsonl"), encoding="utf-8") as f:
        return next(json.loads(line)["payload"] for line in f if json.loads(line)["event"] == event)


def rollout_at(path, tokens, window=38000):
    """A rollout whose newest request left ``tokens`` of an effective ``window``."""
    usage = {"input_tokens": tokens - 17, "output_tokens": 17, "total_tokens": tokens}
    row = {"timestamp": "2026-12-02T01:02:41.631Z", "ordinal": 1, "type": "event_msg",
           "payload": {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                       "model_context_window": window}}}
    path.write_text(json.dumps(row) + "\n")
    return str(path)


def test_past_hard_the_deny_names_a_handoff_file_a_shell_command_can_write(tmp_path, git_repo):
    """Found by the e2e: the first deny past hard came before any Stop had made the checkpoint folder, and
    the model's ``cat > <path>`` failed (no such directory): the rotation fell back to a machine handoff."""
    payload = dict(recorded("PreToolUse"), cwd=str(git_repo), tool_input={"command": "cat big.txt"},
                   transcript_path=rollout_at(tmp_path / "rollout.jsonl", 35000))
    text, outcome, _, _ = hooks.answer("PreToolUse", json.dumps(payload), dict(os.environ))
    assert outcome == "denied at hard ceiling"
    reason = json.loads(text)["hookSpecificOutput"]["permissionDecisionReason"]
    assert json.loads(text) == json.loads(wire.deny_tool(reason))
    path = reason.split("handoff file ", 1)[1].split(" ", 1)[0]
    assert path.endswith("/checkpoint/handoff.md") and os.path.isdir(os.path.dirname(path))
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    subprocess.run(["bash", "-c", "cat > %s <<'EOF'\nthe handoff\nEOF" % path], check=True)
    # The write itself goes through, past hard: it names the handoff file.
    write = dict(payload, tool_input={"command": "cat > %s <<'EOF'\nthe handoff\nEOF" % path})
    assert hooks.answer("PreToolUse", json.dumps(write), dict(os.environ))[0] is None
