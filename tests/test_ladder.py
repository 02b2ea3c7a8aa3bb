"""The ladder of rotation fixtures (tests/helpers/ladder.py): each rung what it says, and a copied
*verified* world that is the test's own: its paths, its key, its ledgers chained, its snapshot ref."""

import os

from cc_continuity import ledger, paths, session
from cc_continuity.snapshot import job
from helpers.ladder import S1, S2


def test_requested_asks_for_the_handoff_at_its_path(requested):
    assert requested.drv.state(S1)["state"] == session.HANDOFF_REQUESTED
    assert requested.handoff_path == requested.drv.handoff_path(S1)
    assert [p["event"] for p in requested.last_ctx.pushes] == ["rotation-pending"]


def test_verified_is_a_copy_with_this_tests_paths_only(verified, verified_world, tmp_path):
    drv, base = verified.drv, str(tmp_path.resolve())
    assert drv.root == os.path.join(base, "proj") and drv.cc_home == os.path.join(base, "cchome")
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["driver"] == "manual"
    assert rec["project_root"] == drv.root and rec["project_key"] == drv.project.key
    assert rec["transcript"] == drv.transcript(S1).path and os.path.exists(rec["transcript"])
    assert verified.checkpoint["handoff"]["path"] == verified.handoff_path == drv.handoff_path(S1)
    assert verified.verified_out["systemMessage"].startswith("cc-continuity: handoff cp-001 is verified.")
    # nothing in the copied state names another place
    for top in (drv.cc_home, drv.home):
        for dirpath, _, names in os.walk(top):
            for name in names:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    data = f.read()
                for word in (verified_world.base.encode(), paths.project_key(verified_world.root).encode()):
                    assert word not in data or data.startswith(b"DIRC"), (path, word)
    ok, _, why = ledger.verify(session.ledger_path(drv.sdir(S1)))
    assert ok, why
    git = job.current(verified.checkpoint["git"])
    assert git["ref"].startswith("refs/continuity/%s/" % drv.project.key)
    assert drv.git("rev-parse", "--verify", git["ref"]).decode().strip() == git["commit"]


def test_a_copy_changed_by_one_test_is_not_the_next_ones(verified):
    verified.clear()
    assert verified.drv.state(S2)["state"] == session.BOOTSTRAPPING


def test_cleared_and_claimed_hand_over_to_the_successor(claimed):
    drv = claimed.drv
    assert claimed.bootstrap.startswith("Continuing from cp-001") and "src/util.py" in claimed.bootstrap
    assert drv.state(S1)["state"] == session.ROTATED and drv.state(S2)["state"] == session.ACTIVE
    assert drv.state(S2)["revalidation"]["verdict"] == "fresh", drv.state(S2)["revalidation"]
    assert [p["event"] for p in claimed.last_ctx.pushes] == ["rotation-complete", "successor-resumed"]


def test_the_second_copy_starts_at_verified_again(verified):
    assert verified.drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert verified.drv.number(S2) is None


def test_a_step_may_run_for_another_agent_process(project):
    other = os.getpid()  # a live `claude` that is not the ladder's (its pid is drv.claude_pid)
    project.said(S2, 10_000)
    assert project.start(S2, agent_pid=other) is None
    assert project.last_ctx.agent_pid() == other and project.last_ctx.env["CLAUDE_PID"] == str(other)
    assert project.drv.state(S2)["pid"] == other
    assert project.host.pid == project.drv.claude_pid  # the ladder's own process is unchanged
    project.said(S1, 10_000)
    assert project.start(S1) is None
    assert project.last_ctx.agent_pid() == project.drv.claude_pid == project.drv.state(S1)["pid"]


def test_with_the_mods_heartbeat_verified_is_offered_to_the_mod(make_project):
    from cc_continuity.rotation import handover

    lad = make_project(claude_pid=os.getpid())  # the mod's heartbeat needs a live process
    assert lad.mod_hello() == {"runtime": os.path.join(lad.drv.cc_home, "runtime")}
    lad.work().request_handoff().verify(driver="mod")
    assert lad.verified_out is None  # nobody asks the user for /clear
    rec = lad.drv.state(S1)
    assert (rec["state"], rec["driver"]) == (session.ROTATING, "mod")
    assert handover.handover_offered(S1) and lad.checkpoint["id"] == rec["checkpoint"]["id"] == "cp-001"
