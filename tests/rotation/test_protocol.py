"""The rotation protocol in-process: every step called directly, no hook process, no hook adapter, no agent.

The world is real (a git repository, the state directory); the ports of
:class:`context.Context` are stand-ins: the agent is a fake host (tests/helpers/fakehost.py:
no transcript file, the test says what each reply's context was), pushes are collected,
and tmux is either absent (the plain context) or a stand-in that records the rotator it
was asked to start.
"""

import os
import re

import pytest

from cc_continuity import config, ledger, session
from cc_continuity.rotation import context, handover, start, turn
from cc_continuity.snapshot import job
from helpers.fakehost import FakeHost
from helpers.hookdriver import HookDriver, handoff_text, tokens_at, wait_for_snapshot_jobs

S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000b2"
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py` (modified)"})


@pytest.fixture
def drv(tmp_path, monkeypatch):
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.3)
    d = HookDriver(tmp_path / "proj", files={"README.md": "hello\n", "src/app.py": "print(1)\n"})
    d.host = FakeHost(pid=d.claude_pid)
    return d


def said(drv, sid, tokens, text="Working on it."):
    """The agent's reply in session ``sid``, its request at ``tokens`` of context."""
    drv.host.reply(drv.payload("Stop", sid)["transcript_path"], tokens, text)


def step(drv, fn, event, sid, context=context.Context, **fields):
    """Run one protocol step for ``event``; (its output, the context it ran with).

    Context our step added is what the agent then holds (a real host finds it in its transcript)."""
    path = drv.payload(event, sid)["transcript_path"]
    if event == "Stop" and "last_assistant_message" not in fields:  # the agent names the turn's last reply
        fields["last_assistant_message"] = drv.host.last_reply(path) or "Done for now."
    payload = drv.payload(event, sid, **fields)
    ctx = context(event, payload, drv.env(sid), host=drv.host)
    out = fn(ctx)
    if out is not None:
        for then in ctx.after_output:  # as hooks.main does once the answer is written
            then()
        added = (out.get("hookSpecificOutput") or {}).get("additionalContext") if isinstance(out, dict) else None
        if added:
            drv.host.received(payload["transcript_path"], added)
    return out, ctx


class TmuxStandIn(context.Context):
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
    said(drv, sid, tokens_at(10))
    out, ctx = step(drv, start.session_started, "SessionStart", sid, source="startup")
    assert out is None and [p["event"] for p in ctx.pushes] == ["session-started"]
    step(drv, start.prompt_submitted, "UserPromptSubmit", sid, prompt="build the parser")
    said(drv, sid, tokens_at(percent), "Step finished.")
    out, ctx = step(drv, turn.turn_ended, "Stop", sid)
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
    out, ctx = step(drv, turn.turn_ended, "Stop", S1)
    assert out["decision"] == "block" and "is not complete yet (check 1 of" in out["reason"], out
    assert ctx.pushes == []

    # a valid one: verified; no tmux here, so the user is asked for /clear
    with open(path, "w") as f:
        f.write(GOOD)
    out, ctx = step(drv, turn.turn_ended, "Stop", S1)
    assert out == {"systemMessage": "cc-continuity: handoff cp-001 is verified. Type /clear to continue in a "
                                    "fresh session; it picks up the handoff automatically."}
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["driver"] == "manual"
    assert [p["event"] for p in ctx.pushes] == ["checkpoint-verified"] and ctx.pushes[0]["text"] == "cp-001 valid"

    # /clear: the old session ends as cleared, the new one claims the checkpoint
    out, ctx = step(drv, start.session_ended, "SessionEnd", S1, reason="clear")
    assert out is None and ctx.pushes == []  # a clear is not an end worth a push
    out, ctx = step(drv, start.session_started, "SessionStart", S2, source="clear")
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("Continuing from cp-001") and "## Since the checkpoint:" in text
    assert ctx.pushes == []  # not complete before the bootstrap is known to have reached the model
    assert drv.state(S2)["bootstrap"]["sent"] == "SessionStart" and "delivered_at" not in drv.state(S2)["bootstrap"]
    assert drv.state(S1)["state"] == session.ROTATED and drv.state(S2)["state"] == session.BOOTSTRAPPING
    assert os.path.exists(handover.started_marker(drv.sdir(S1)))

    # the first prompt: ACTIVE, named, and the predecessor told it was delivered
    out, ctx = step(drv, start.prompt_submitted, "UserPromptSubmit", S2, prompt="carry on")
    assert out["hookSpecificOutput"]["sessionTitle"] == drv.state(S2)["name"]
    assert drv.state(S2)["state"] == session.ACTIVE
    assert os.path.exists(handover.delivered_marker(drv.sdir(S1)))
    assert "additionalContext" not in out["hookSpecificOutput"]  # sent once, by SessionStart
    assert drv.state(S2)["bootstrap"]["via"] == "transcript"  # the agent holds it (the host found it there)
    assert [p["event"] for p in ctx.pushes] == ["rotation-complete", "successor-resumed"]


def test_a_handoff_never_written_falls_back_to_a_machine_handoff_after_the_tries(drv):
    drv.config(handoff_max_tries=2)
    crossed(drv, S1)
    out, _ = step(drv, turn.turn_ended, "Stop", S1)
    assert out["decision"] == "block" and "does not exist yet (check 1 of 2)" in out["reason"]
    out, ctx = step(drv, turn.turn_ended, "Stop", S1)
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"] is True, rec
    assert ctx.pushes[-1]["text"] == "cp-001 degraded"
    assert "machine" in open(drv.handoff_path(S1)).read().lower()


def test_a_handoff_its_killed_stop_never_checked_is_verified_when_the_session_ends(drv):
    """The verifying Stop died (its timeout, the user's interrupt) and the user typed /clear: the complete
    handoff is checked at SessionEnd as the Stop would have, and the successor claims its checkpoint."""
    path = crossed(drv, S1)
    with open(path, "w") as f:
        f.write(GOOD)  # written; the Stop that would have checked it never did
    out, ctx = step(drv, turn.session_ended, "SessionEnd", S1, reason="clear")
    assert out is None and ctx.outcome.startswith("handoff verified at the session's end: checkpoint cp-001 verified")
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"] is False, rec["state"]
    assert [p["event"] for p in ctx.pushes] == ["checkpoint-verified"] and ctx.pushes[0]["text"] == "cp-001 valid"
    [check] = drv.ledger(S1, ev="handoff_check")
    assert check["ok"] is True and check["by"] == "SessionEnd"
    assert drv.ledger(S1, ev="handoff_verified_at_end")[0]["reason"] == "clear"
    manifest = drv.checkpoint_file("manifest.json", S1)
    assert manifest["handoff"]["validation"] == "valid" and manifest["id"] == "cp-001"

    out, ctx = step(drv, start.session_started, "SessionStart", S2, source="clear")
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("Continuing from cp-001") and "src/app.py" in text
    assert drv.state(S1)["state"] == session.ROTATED and drv.state(S2)["state"] == session.BOOTSTRAPPING
    wait_for_snapshot_jobs(drv.cc_home)
    git = job.current(drv.checkpoint_file("manifest.json", S1)["git"])
    assert git.get("commit") and drv.git("rev-parse", "--verify", git["ref"]).decode().strip() == git["commit"]


def test_a_second_verifier_of_the_same_handoff_makes_no_second_checkpoint(drv):
    """A SessionEnd racing the Stop it outlived: whoever takes the lock second finds the checkpoint made."""
    path = crossed(drv, S1)
    with open(path, "w") as f:
        f.write(GOOD)
    _, ctx = step(drv, turn.turn_ended, "Stop", S1)
    manifest = drv.checkpoint_file("manifest.json", S1)
    check, tries = turn.verify_written(ctx, drv.sdir(S1))
    assert check.ok and turn.checkpoint_and_hand_over(ctx, 1, drv.sdir(S1), check, False, tries) is None
    assert ctx.outcome == "checkpoint already made (AWAITING_MANUAL_CLEAR)"
    assert drv.checkpoint_file("manifest.json", S1) == manifest and len(drv.ledger(S1, ev="checkpoint")) == 1
    assert drv.ledger(S1, ev="checkpoint_skipped")[0]["state"] == session.AWAITING_MANUAL_CLEAR


@pytest.mark.parametrize("written", [None, "# Handoff\n\n## Goal\nshort\n"], ids=["none", "incomplete"])
def test_without_a_valid_handoff_the_session_end_ends_it_and_says_why(drv, written):
    path = crossed(drv, S1)
    if written is not None:
        with open(path, "w") as f:
            f.write(written)
    out, ctx = step(drv, turn.session_ended, "SessionEnd", S1, reason="clear")
    assert out is None and drv.state(S1)["state"] == session.ENDED
    [line] = drv.ledger(S1, ev="handoff_not_verified_at_end")
    if written is None:
        assert line["why"] == "no handoff was written" and not drv.ledger(S1, ev="handoff_check")
    else:
        assert line["why"] == "the handoff is not valid" and line["problems"], line
    assert ctx.outcome == "handoff not verified at the session's end: %s" % line["why"]
    assert not os.path.exists(session.manifest_path(drv.sdir(S1)))
    out, _ = step(drv, start.session_started, "SessionStart", S2, source="clear")
    assert out is None or "Continuing from" not in str(out)


def test_with_tmux_the_rotator_is_started_and_its_pid_recorded(drv):
    TmuxStandIn.started, TmuxStandIn.fail = [], None
    path = crossed(drv, S1)
    with open(path, "w") as f:
        f.write(GOOD)
    out, ctx = step(drv, turn.turn_ended, "Stop", S1, context=TmuxStandIn)
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
    out, ctx = step(drv, turn.turn_ended, "Stop", S1, context=TmuxStandIn)
    assert "Type /clear to continue" in out["systemMessage"]
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert [p["event"] for p in ctx.pushes] == ["checkpoint-verified", "lifecycle-failed"]
    assert ctx.pushes[-1]["text"] == "rotator did not start: OSError"


def test_a_reading_that_has_not_caught_up_is_left_to_the_late_stop(drv):
    said(drv, S1, tokens_at(10))
    step(drv, start.session_started, "SessionStart", S1, source="startup")
    # the turn's last reply (what Stop names) is not in the transcript yet
    end = {"last_assistant_message": "the reply still being written", "prompt_id": "p-late-1"}
    out, ctx = step(drv, turn.turn_ended, "Stop", S1, **end)
    assert out is None and ctx.outcome.startswith("transcript behind after ")
    assert drv.state(S1)["state"] == session.ACTIVE
    # it lands; the late Stop sees it past rotate and asks for the handoff by waking the model
    said(drv, S1, tokens_at(70), "the reply still being written")
    wake, ctx = step(drv, turn.late_turn_end, "Stop", S1, **end)  # the same turn end: its Stop line is found
    assert wake and "Handoff file (absolute path): %s" % drv.handoff_path(S1) in wake
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED


def test_a_disabled_project_is_left_alone_by_every_step(drv):
    said(drv, S1, tokens_at(70))
    os.makedirs(os.path.join(drv.root, ".claude"), exist_ok=True)
    with open(os.path.join(drv.root, ".claude", "continuity.json"), "w") as f:
        f.write('{"enabled": false}')
    for fn, event in ((start.session_started, "SessionStart"), (start.prompt_submitted, "UserPromptSubmit"),
                      (turn.turn_ended, "Stop"), (turn.before_compact, "PreCompact")):
        out, ctx = step(drv, fn, event, S1)
        assert out is None and ctx.outcome == "project disabled" and ctx.pushes == [], event
    assert drv.number(S1) is None


def test_level_notes_after_a_tool_are_given_once(drv):
    said(drv, S1, tokens_at(10))
    _, ctx = step(drv, start.session_started, "SessionStart", S1, source="startup")
    n, sdir, rec = ctx.load_session()
    for expected in ("warn", None):  # the second time at the same level: no note
        said(drv, S1, tokens_at(57))
        reading = ctx.reading(sdir, rec)
        note, rec = turn.tool_used(ctx, n, sdir, rec, reading)
        assert (note is not None) == (expected is not None), note
    assert rec["state"] == session.WARNED
    assert [r["level"] for r in ledger.read(session.ledger_path(sdir)) if r["ev"] == "level"] == ["warn"]


def test_hooks_status_and_a_manual_checkpoint_read_a_session_in_the_same_window(drv):
    """The status line reported a 1M window for a model id we would guess at 200k: all three use 1M."""
    import json

    said(drv, S1, 130_000)  # 65 % of 200k, 13 % of 1M
    drv.transcript(S1).assistant(130_000)  # (the CLI below reads the Claude Code transcript: its host's)
    _, ctx = step(drv, start.session_started, "SessionStart", S1, source="startup")
    n, sdir, rec = ctx.load_session()
    with open(os.path.join(sdir, "statusline.json"), "w") as f:
        json.dump({"window": 1_000_000}, f)
    assert ctx.reading(sdir, rec)["percent"] == 13.0
    made = json.loads(drv.cli("checkpoint", "--json", session_id=S1).stdout)
    assert made["reading"]["window"] == 1_000_000 and made["reading"]["percent"] == 13.0, made["reading"]
    status = json.loads(drv.cli("status", "--json", session_id=S1).stdout)
    row = [s for s in status["sessions"] if s["session_id"] == S1][0]
    assert (row["percent"], row["window"]) == (13.0, 1_000_000), row


def test_the_agent_is_read_only_through_its_host(drv):
    """A Claude Code transcript on disk says 90 %; the host says 10 %: the steps believe the host alone."""
    drv.transcript(S1).assistant(tokens_at(90), "Done.")
    said(drv, S1, tokens_at(10), "Done.")
    step(drv, start.session_started, "SessionStart", S1, source="startup")
    out, ctx = step(drv, turn.turn_ended, "Stop", S1)
    assert out is None and drv.state(S1)["state"] == session.ACTIVE, (out, ctx.outcome)
    assert [r["percent"] for r in drv.ledger(S1) if r["ev"] == "stop"] == [10.0]
    assert ("reply_reading", drv.payload("Stop", S1)["transcript_path"]) in drv.host.calls
