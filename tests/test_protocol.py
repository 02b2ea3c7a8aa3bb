"""The rotation protocol in-process: every step called directly, no hook process, no hook adapter.

The world is real (a git repository, transcripts shaped like Claude Code's, the
state directory); only the three ports of :class:`protocol.Context` differ from a
hook's: pushes are collected, and tmux is either absent (the plain context) or a
stand-in that records the rotator it was asked to start.
"""

import os
import re

import pytest

from cc_continuity import config, ledger, session
from cc_continuity.rotation import protocol, handover
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000b2"
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py` (modified)"})


@pytest.fixture
def drv(tmp_path, monkeypatch):
    monkeypatch.setattr(protocol, "STOP_WAIT_S", 0.3)
    return HookDriver(tmp_path / "proj", files={"README.md": "hello\n", "src/app.py": "print(1)\n"})


def step(drv, fn, event, sid, context=protocol.Context, **fields):
    """Run one protocol step for ``event``; (its output, the context it ran with)."""
    ctx = context(event, drv.payload(event, sid, **fields), drv.env(sid))
    out = fn(ctx)
    if out is not None:
        for then in ctx.after_output:  # as hooks.main does once the answer is written
            then()
    return out, ctx


class TmuxStandIn(protocol.Context):
    """A context whose tmux can drive, and whose rotator start is recorded (or fails, when told to)."""

    started = []
    fail = None

    def can_drive(self, rec):
        return True

    def start_rotator(self, rec, sdir, successor_name, project_lock, standby_s):
        if self.fail:
            raise self.fail
        self.started.append((sdir, successor_name, project_lock))
        return os.getpid()


def crossed(drv, sid, percent=65):
    """A session that worked, then crossed *rotate* on its turn's last reply: the Stop's request."""
    drv.transcript(sid).assistant(tokens_at(10))
    out, ctx = step(drv, protocol.session_started, "SessionStart", sid, source="startup")
    assert out is None and [p["event"] for p in ctx.pushes] == ["session-started"]
    step(drv, protocol.prompt_submitted, "UserPromptSubmit", sid, prompt="build the parser")
    drv.transcript(sid).assistant(tokens_at(percent), "Step finished.")
    out, ctx = step(drv, protocol.turn_ended, "Stop", sid)
    assert out["decision"] == "block" and ctx.outcome == "handoff requested", (out, ctx.outcome)
    assert [p["event"] for p in ctx.pushes] == ["rotation-pending"]
    assert abs(ctx.pushes[0]["ratio"] - percent / 100) < 0.01
    return re.search(r"Handoff file \(absolute path\): (\S+)", out["reason"]).group(1)


def test_a_whole_manual_rotation_runs_in_process(drv):
    path = crossed(drv, S1)
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED and path == drv.handoff_path(S1)

    # an incomplete handoff: asked again, with what is wrong
    with open(path, "w") as f:
        f.write("# Handoff\n\n## Goal\nshort\n")
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1)
    assert out["decision"] == "block" and "is not complete yet (check 1 of" in out["reason"], out
    assert ctx.pushes == []

    # a valid one: verified; no tmux here, so the user is asked for /clear
    with open(path, "w") as f:
        f.write(GOOD)
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1)
    assert out == {"systemMessage": "cc-continuity: handoff cp-001 is verified. Type /clear to continue in a "
                                    "fresh session; it picks up the handoff automatically."}
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["driver"] == "manual"
    assert [p["event"] for p in ctx.pushes] == ["checkpoint-verified"] and ctx.pushes[0]["text"] == "cp-001 valid"

    # /clear: the old session ends as cleared, the new one claims the checkpoint
    out, ctx = step(drv, protocol.session_ended, "SessionEnd", S1, reason="clear")
    assert out is None and ctx.pushes == []  # a clear is not an end worth a push
    drv.transcript(S2)
    out, ctx = step(drv, protocol.session_started, "SessionStart", S2, source="clear")
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("Continuing from cp-001") and "## Since the checkpoint:" in text
    assert ctx.pushes == []  # not complete before the bootstrap is known to have reached the model
    assert drv.state(S2)["bootstrap"]["sent"] == "SessionStart" and "delivered_at" not in drv.state(S2)["bootstrap"]
    assert drv.state(S1)["state"] == session.ROTATED and drv.state(S2)["state"] == session.BOOTSTRAPPING
    assert os.path.exists(handover.started_marker(drv.sdir(S1)))

    # the first prompt: ACTIVE, named, and the predecessor told it was delivered
    out, ctx = step(drv, protocol.prompt_submitted, "UserPromptSubmit", S2, prompt="carry on")
    assert out["hookSpecificOutput"]["sessionTitle"] == drv.state(S2)["name"]
    assert drv.state(S2)["state"] == session.ACTIVE
    assert os.path.exists(handover.delivered_marker(drv.sdir(S1)))
    assert "additionalContext" not in out["hookSpecificOutput"]  # sent once, by SessionStart
    assert drv.state(S2)["bootstrap"]["via"] == "SessionStart"
    assert [p["event"] for p in ctx.pushes] == ["rotation-complete", "successor-resumed"]


def test_a_handoff_never_written_falls_back_to_a_machine_handoff_after_the_tries(drv):
    drv.config(handoff_max_tries=2)
    crossed(drv, S1)
    out, _ = step(drv, protocol.turn_ended, "Stop", S1)
    assert out["decision"] == "block" and "does not exist yet (check 1 of 2)" in out["reason"]
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1)
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"] is True, rec
    assert ctx.pushes[-1]["text"] == "cp-001 degraded"
    assert "machine" in open(drv.handoff_path(S1)).read().lower()


def test_with_tmux_the_rotator_is_started_and_its_pid_recorded(drv):
    TmuxStandIn.started, TmuxStandIn.fail = [], None
    path = crossed(drv, S1)
    with open(path, "w") as f:
        f.write(GOOD)
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1, context=TmuxStandIn)
    assert out is None, "the rotator types /clear: nothing for the user to do"
    rec = drv.state(S1)
    assert rec["state"] == session.ROTATING and rec["driver"] == "tmux" and rec["rotator_pid"] == os.getpid()
    assert TmuxStandIn.started == [(drv.sdir(S1), drv.state(S1)["name"][:-3] + "002", drv.project.lock_path)]
    assert [r["ev"] for r in drv.ledger(S1)][-2:] == ["driver", "rotator_spawned"]


def test_a_rotator_that_cannot_start_leaves_the_user_a_clear_and_an_urgent_push(drv):
    TmuxStandIn.started, TmuxStandIn.fail = [], OSError("no fork")
    path = crossed(drv, S1)
    with open(path, "w") as f:
        f.write(GOOD)
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1, context=TmuxStandIn)
    assert "Type /clear to continue" in out["systemMessage"]
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert [p["event"] for p in ctx.pushes] == ["checkpoint-verified", "lifecycle-failed"]
    assert ctx.pushes[-1]["text"] == "rotator did not start: OSError"


def test_a_reading_that_has_not_caught_up_is_left_to_the_late_stop(drv):
    drv.transcript(S1).assistant(tokens_at(10))
    step(drv, protocol.session_started, "SessionStart", S1, source="startup")
    # the turn's last reply (what Stop names) is not in the transcript yet
    turn = {"last_assistant_message": "the reply still being written", "prompt_id": "p-late-1"}
    out, ctx = step(drv, protocol.turn_ended, "Stop", S1, **turn)
    assert out is None and ctx.outcome.startswith("transcript behind after ")
    assert drv.state(S1)["state"] == session.ACTIVE
    # it lands; the late Stop sees it past rotate and asks for the handoff by waking the model
    drv.transcript(S1).assistant(tokens_at(70), "the reply still being written")
    wake, ctx = step(drv, protocol.late_turn_end, "Stop", S1, **turn)  # the same turn end: its Stop line is found
    assert wake and "Handoff file (absolute path): %s" % drv.handoff_path(S1) in wake
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED


def test_a_disabled_project_is_left_alone_by_every_step(drv):
    drv.transcript(S1).assistant(tokens_at(70))
    os.makedirs(os.path.join(drv.root, ".claude"), exist_ok=True)
    with open(os.path.join(drv.root, ".claude", "continuity.json"), "w") as f:
        f.write('{"enabled": false}')
    for fn, event in ((protocol.session_started, "SessionStart"), (protocol.prompt_submitted, "UserPromptSubmit"),
                      (protocol.turn_ended, "Stop"), (protocol.before_compact, "PreCompact")):
        out, ctx = step(drv, fn, event, S1)
        assert out is None and ctx.outcome == "project disabled" and ctx.pushes == [], event
    assert drv.number(S1) is None


def test_level_notes_after_a_tool_are_given_once(drv):
    drv.transcript(S1).assistant(tokens_at(10))
    _, ctx = step(drv, protocol.session_started, "SessionStart", S1, source="startup")
    n, sdir, rec = ctx.load_session()
    for expected in ("warn", None):  # the second time at the same level: no note
        drv.transcript(S1).assistant(tokens_at(57))
        reading = protocol.measure(ctx, sdir, rec)
        note, rec = protocol.tool_used(ctx, n, sdir, rec, reading)
        assert (note is not None) == (expected is not None), note
    assert rec["state"] == session.WARNED
    assert [r["level"] for r in ledger.read(session.ledger_path(sdir)) if r["ev"] == "level"] == ["warn"]


def test_hooks_status_and_a_manual_checkpoint_read_a_session_in_the_same_window(drv):
    """The status line reported a 1M window for a model id we would guess at 200k: all three use 1M."""
    import json

    drv.transcript(S1).assistant(130_000)  # 65 % of 200k, 13 % of 1M
    _, ctx = step(drv, protocol.session_started, "SessionStart", S1, source="startup")
    n, sdir, rec = ctx.load_session()
    with open(os.path.join(sdir, "statusline.json"), "w") as f:
        json.dump({"window": 1_000_000}, f)
    assert protocol.measure(ctx, sdir, rec)["percent"] == 13.0
    made = json.loads(drv.cli("checkpoint", "--json", session_id=S1).stdout)
    assert made["reading"]["window"] == 1_000_000 and made["reading"]["percent"] == 13.0, made["reading"]
    status = json.loads(drv.cli("status", "--json", session_id=S1).stdout)
    row = [s for s in status["sessions"] if s["session_id"] == S1][0]
    assert (row["percent"], row["window"]) == (13.0, 1_000_000), row
