"""What the verifying Stop leaves behind the successor's first request when the mod clears in-process (P4).

The mod (or a host's own clear: the ``native`` driver) does the /clear the moment the Stop returns, so every millisecond of the Stop is on the way to
the successor's first model request (bench/p4.py measures it against the real binaries).  The work-tree
snapshot is what can wait: its job goes on, the checkpoint says it is pending, and the successor's tools
that change files wait for it (PreToolUse); when the user's own /clear drives, the Stop still waits for it.
"""

import os

from cc_continuity import session
from cc_continuity.rotation import checkpoint, context, texts, turn
from helpers import ladder
from helpers.hookdriver import wait_for_snapshot_jobs
from helpers.ladder import S1, S2, added_context, tokens_at


def _verify(lad):
    lad.write_handoff()
    lad.said(S1, tokens_at(66), "Handoff written.")
    return lad.stop(S1, stop_hook_active=True)


def test_the_mods_verifying_stop_leaves_the_snapshot_to_its_job(make_project):
    lad = make_project(claude_pid=os.getpid())  # the mod's heartbeat needs a live process
    lad.mod_hello()
    lad.work().request_handoff()
    assert _verify(lad) is None
    rec = lad.drv.state(S1)
    assert rec["driver"] == "mod"
    [made] = lad.drv.ledger(S1, ev="checkpoint")
    assert made["snapshot_pending"] is True and made["commit"] is None, made  # (its ref is the one planned)
    held = rec["checkpoint"]["snapshot_wait"]  # what PreToolUse holds the successor's tools on
    assert held["pid"] > 0 and rec["checkpoint"]["ref"] is None, rec["checkpoint"]
    wait_for_snapshot_jobs(lad.drv.cc_home)
    git = checkpoint.git_entry(lad.drv.sdir(S1))
    assert git.get("ref", "").startswith("refs/continuity/") and git.get("commit"), git
    lad.clear()
    assert "work-tree snapshot: %s " % git["ref"] in lad.bootstrap  # finished before the claim: named
    assert lad.drv.state(S2)["predecessor_claimed"]


def test_without_the_mod_the_verifying_stop_waits_for_the_snapshot(project):
    project.work().request_handoff()
    out = _verify(project)
    assert out and "/clear" in out["systemMessage"]  # the user's own /clear: nothing is racing the Stop
    [made] = project.drv.ledger(S1, ev="checkpoint")
    assert made["snapshot_pending"] is False and made["ref"].startswith("refs/continuity/"), made
    assert "snapshot_wait" not in project.drv.state(S1)["checkpoint"]



class NativeContext(context.Context):
    """A host that clears and continues in its own answer (Gemini CLI's AfterAgent ``clearContext``)."""

    def own_driver(self):
        return "native"


def test_a_native_clear_is_the_verifying_answer_and_the_successor_claims_at_its_first_prompt(project):
    project.work().request_handoff()
    project.write_handoff()
    project.said(S1, tokens_at(66), "Handoff written.")
    out = project.step(turn.turn_ended, "Stop", S1, ctx_class=NativeContext, stop_hook_active=True)
    rec = project.drv.state(S1)
    assert (rec["state"], rec["driver"]) == (session.ROTATING, "native")
    assert out["decision"] == "block" and out["hookSpecificOutput"]["clearContext"] is True
    continuation = out["reason"]
    assert texts.is_continuation(continuation) and "cp-001" in continuation and "proj-002" in continuation
    assert "cp-001" in out["systemMessage"]
    assert "rotator_pid" not in rec and not project.drv.ledger(S1, ev="rotator_spawned")  # no tmux, no process
    [made] = project.drv.ledger(S1, ev="checkpoint")
    assert made["snapshot_pending"] is True  # the clear follows at once: the snapshot is its job's
    # The host cleared silently: no SessionEnd, no SessionStart. The successor (a new key for the same agent
    # process) is first seen at its first prompt, the continuation, and claims there.
    wait_for_snapshot_jobs(project.drv.cc_home)
    project.said(S2, tokens_at(4))
    claimed = project.prompt(S2, continuation)
    boot = added_context(claimed)
    assert boot.startswith("Continuing from cp-001 (proj-002).") and ladder.HANDOFF.splitlines()[0] in boot
    succ = project.drv.state(S2)
    assert succ["predecessor"] == 1 and succ["predecessor_claimed"] and succ["state"] == session.ACTIVE
    assert project.drv.state(S1)["state"] == session.ROTATED
    assert len([r for n in (1, 2) for r in project.drv.ledger(number=n, ev="claim")]) == 1
    assert added_context(project.prompt(S2, "and go on")) == ""  # delivered once
