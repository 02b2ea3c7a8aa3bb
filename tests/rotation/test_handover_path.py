"""What the verifying Stop leaves behind the successor's first request when the mod clears in-process (P4).

The mod does the /clear the moment the Stop returns, so every millisecond of the Stop is on the way to
the successor's first model request (bench/p4.py measures it against the real binaries).  The work-tree
snapshot is what can wait: its job goes on, the checkpoint says it is pending, and the successor's tools
that change files wait for it (PreToolUse); when the user's own /clear drives, the Stop still waits for it.
"""

import os

from cc_continuity.rotation import checkpoint
from helpers.hookdriver import wait_for_snapshot_jobs
from helpers.ladder import S1, S2, tokens_at


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

