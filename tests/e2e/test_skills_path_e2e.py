"""The skills and ``signal`` run inside a real Claude Code whose PATH lacks ``~/.local/bin``.

The model runs what each installed skill tells it to run, through the real Bash
tool; Claude Code's Bash tool has the user's PATH, and ``~/.local/bin`` (where the
installer links ``cc-continuity``) is not on it on macOS, nor on Debian before the
next login.  Here PATH holds only claude's directory and the system ones: no
``cc-continuity`` of any interpreter is reachable by name.
"""

import os
import re
import shutil

import pytest

from .common import prompt

pytestmark = pytest.mark.e2e
SKILLS = ("status", "history", "checkpoint", "off", "on", "rotate")  # rotate last: it asks for a handoff


def scenario():
    return {"rules": [
        {"name": "skill", "when": {"last_user_contains": "with the Bash tool"},
         "extract": {"cmd": r"Run `([^`]+)` with the Bash tool"},
         "reply": [{"type": "tool_use", "name": "Bash",
                    "input": {"command": "{cmd}", "description": "what the skill says to run"}}],
         "then": ["Reported."]},
        {"name": "signal", "when": {"last_user_contains": "SIGNAL-DONE-NOW"},
         "extract": {"cmd": r'`(\S+) signal done "<summary>"`'}, "extract_from": "any",
         "reply": [{"type": "tool_use", "name": "Bash",
                    "input": {"command": '{cmd} signal done "the e2e task"', "description": "signal"}}],
         "then": ["Signalled."]},
    ], "default": {"reply": "OK."}}


def tool_results(sb):
    """Every tool_result of the conversation, in order: (is_error, text).

    Each request carries the whole conversation, so the newest one holds them all
    (a /clear would reset it; the skills here do not clear)."""
    out = []
    reqs = sb.model.requests(kind="main")
    for req in reqs[-1:]:
        for m in req.messages:
            for b in m.get("content") if isinstance(m.get("content"), list) else ():
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c = b.get("content")
                    text = c if isinstance(c, str) else " ".join(
                        x.get("text", "") for x in c or () if isinstance(x, dict))
                    out.append((bool(b.get("is_error")), text))
    return out


def test_every_skill_and_signal_run_without_the_users_path(sandbox_factory, claude_bin):
    bare = "%s:/usr/bin:/bin" % os.path.dirname(os.path.realpath(claude_bin))
    sb = sandbox_factory(scenario=scenario(), extra_env={"PATH": bare})
    assert shutil.which("cc-continuity", path=bare) is None, "the test needs a PATH without cc-continuity"
    proc = sb.cli("install", "--no-wrapper", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sb.start_claude()
    seen = 0
    for verb in SKILLS:
        prompt(sb, "/continuity-%s" % verb)
        sb.wait_for(lambda: len(tool_results(sb)) > seen, 60, what="the tool result of /continuity-%s" % verb)
        is_error, text = tool_results(sb)[seen]
        assert not is_error and "not found" not in text, (verb, text)
        seen += 1
        sb.model.wait_for(lambda r: r.rule == "then", timeout=30)
        if verb == "status":
            assert re.search(r"rotation (on|OFF)", text), text
        if verb == "rotate":
            break
    # The CLAUDE.md block's signal, as the model would run it.
    prompt(sb, "SIGNAL-DONE-NOW")
    sb.wait_for(lambda: len(tool_results(sb)) > seen, 60, what="the tool result of signal")
    is_error, text = tool_results(sb)[seen]
    assert not is_error and "not found" not in text, text
    assert "flagged done: the e2e task" in text, text
