"""Each outcome of the rotation's hook events, through the real installed command (issue 35).

The steps are tested in-process (tests/rotation/); here each outcome a Claude Code event can have
on a rotation's path is reached once through ``python -S -c <bootstrap> <Event>`` as settings.json
runs it, on the ladder's rungs (tests/helpers/ladder.py): what the hook prints, the line it logs,
the state it leaves.  The outcome is read from ``logs/hooks.log`` (the hook driver asserts the call
exited 0, wrote nothing on stderr and did not fail open).
"""

import json

import pytest

from cc_continuity import session
from cc_continuity.hosts.claude import hooks
from helpers.hookdriver import tokens_at
from helpers.ladder import HANDOFF, PROMPT, S1, S2, added_context


def outcome(drv):
    return drv.outcomes[-1][3]


def deny_reason(out):
    hso = (out or {}).get("hookSpecificOutput") or {}
    assert hso.get("permissionDecision") == "deny", out
    return hso["permissionDecisionReason"]


# -- SessionStart ---------------------------------------------------------------------------------

def test_session_start_registers_a_new_session(project):
    drv = project.drv
    project.said(S1, tokens_at(5))
    assert drv.hook("SessionStart", S1, source="startup") is None
    assert outcome(drv).startswith("registered ") and outcome(drv).endswith("(startup)")
    assert drv.state(S1)["state"] == session.ACTIVE


def test_session_start_after_clear_claims_the_checkpoint(verified):
    drv = verified.drv
    assert drv.hook("SessionEnd", S1, reason="clear") is None
    verified.said(S2, tokens_at(3))
    out = drv.hook("SessionStart", S2, source="clear")
    assert outcome(drv).startswith("claimed cp-001 for "), outcome(drv)
    assert added_context(out).startswith("Continuing from cp-001"), out
    assert drv.state(S1)["state"] == session.ROTATED


def test_session_start_in_a_disabled_project_registers_nothing(project):
    drv = project.drv
    drv.config(enabled=False)
    project.said(S1, tokens_at(5))
    assert drv.hook("SessionStart", S1, source="startup") is None
    assert outcome(drv) == "project disabled"


# -- UserPromptSubmit ------------------------------------------------------------------------------

def test_the_successors_first_prompt_makes_it_active(cleared):
    drv = cleared.drv
    assert drv.state(S2)["state"] != session.ACTIVE
    drv.hook("UserPromptSubmit", S2, prompt="carry on")
    assert drv.state(S2)["state"] == session.ACTIVE
    assert [e["text"] for e in drv.ledger(S2, ev="prompt")][-1] == "carry on"


# -- Stop ------------------------------------------------------------------------------------------

def test_stop_below_rotate_asks_for_nothing(project):
    project.work(percent=40)
    drv = project.drv
    assert drv.hook("Stop", S1, last_assistant_message="Step finished.") is None
    assert drv.state(S1)["state"] == session.ACTIVE


def test_stop_past_rotate_requests_the_handoff(working):
    drv = working.drv
    out = drv.hook("Stop", S1, last_assistant_message="Step finished.")
    assert outcome(drv) == "handoff requested"
    assert out["decision"] == "block" and drv.handoff_path(S1) in out["reason"]
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED


def test_stop_verifies_a_written_handoff(requested):
    drv = requested.drv
    requested.write_handoff(HANDOFF)
    requested.said(S1, tokens_at(66), "Handoff written.")
    drv.hook("Stop", S1, stop_hook_active=True, last_assistant_message="Handoff written.")
    assert outcome(drv).startswith("checkpoint cp-001 verified"), outcome(drv)
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR


def test_stop_sends_an_invalid_handoff_back(requested):
    drv = requested.drv
    requested.write_handoff("# Handoff\n\nnothing useful\n")
    requested.said(S1, tokens_at(66), "Handoff written.")
    out = drv.hook("Stop", S1, stop_hook_active=True, last_assistant_message="Handoff written.")
    assert outcome(drv) == "handoff invalid (try 1)", outcome(drv)
    assert out["decision"] == "block"
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED


# -- PreToolUse ------------------------------------------------------------------------------------

def test_a_tool_call_below_hard_goes_through(working):
    drv = working.drv
    drv.transcript(S1).assistant(tokens_at(65))
    assert drv.hook("PreToolUse", S1, tool_name="Bash", tool_input={"command": "ls"}) is None


def test_a_tool_call_past_hard_is_denied_but_the_handoff_write_is_not(working):
    drv = working.drv
    drv.transcript(S1).assistant(tokens_at(80))
    out = drv.hook("PreToolUse", S1, tool_name="Bash", tool_input={"command": "ls"})
    assert outcome(drv) == "denied at hard ceiling"
    assert drv.handoff_path(S1) in deny_reason(out)
    out = drv.hook("PreToolUse", S1, tool_name="Write", tool_input={"file_path": drv.handoff_path(S1),
                                                                     "content": HANDOFF})
    assert outcome(drv) == "handoff write allowed"
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow"


# -- PreCompact ------------------------------------------------------------------------------------

def test_an_auto_compaction_past_rotate_is_blocked_for_a_rotation(working):
    drv = working.drv
    drv.hook("PostToolUse", S1, tool_name="Bash", tool_input={"command": "ls"})  # the crossing, noted
    out = drv.hook("PreCompact", S1, trigger="auto")
    assert outcome(drv) == "auto-compaction blocked; rotation requested"
    assert out["decision"] == "block", out
    assert drv.state(S1)["rotate_requested"] is True


def test_a_compaction_below_rotate_leaves_an_emergency_checkpoint(project):
    project.work(percent=40)
    drv = project.drv
    assert drv.hook("PreCompact", S1, trigger="auto") is None
    assert outcome(drv) == "emergency checkpoint"
    assert drv.ledger(S1, ev="emergency_checkpoint")


# -- SessionEnd ------------------------------------------------------------------------------------

def test_session_end_of_a_rotated_away_session_keeps_its_checkpoint(verified):
    drv = verified.drv
    assert drv.hook("SessionEnd", S1, reason="clear") is None
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR  # still claimable: nobody claimed it yet
    assert drv.checkpoint_file("manifest.json", S1)["id"] == "cp-001"


# -- the table of handlers --------------------------------------------------------------------------

@pytest.mark.parametrize("event", sorted(hooks.HANDLERS))
def test_every_handler_answers_a_real_process(project, event):
    """Each event the router knows, run once as installed on a registered session: exit 0, one log line,
    not failed open, and what it printed (if anything) one JSON object."""
    drv = project.drv
    project.said(S1, tokens_at(5))
    drv.hook("SessionStart", S1, source="startup")
    fields = {"prompt": PROMPT, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_t_1",
              "tool_response": {"stdout": ""}, "reason": "other", "trigger": "manual", "stop_hook_active": False,
              "last_assistant_message": "Working on it.", "error": "rate_limit", "message": "hi",
              "notification_type": "idle_prompt", "usage": {}}
    out = drv.hook(event, S1, **fields)
    assert drv.outcomes[-1][0] == event
    assert out is None or json.loads(json.dumps(out)) == out
