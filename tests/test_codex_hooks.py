"""Codex CLI's hook entry (cc_continuity/hosts/codex/hooks.py) on payloads as the 0.171 binary sends them.

tests/e2e/test_codex_tui_e2e.py runs the same entry under the real binary; these pin what it found.
"""

import json
import os
import subprocess

from cc_continuity.hosts.codex import hooks, wire

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "codex")


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
