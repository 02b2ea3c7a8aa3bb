"""Claiming a checkpoint exactly once: which sessions qualify, and many claimers racing for one.

The unit tests build session records with the session module itself; the race tests run the
installed SessionStart hook in separate processes against a checkpoint on the ladder's *verified*
rung (tests/helpers/ladder.py: made in-process, its owner gone or, with make_project, alive).
"""

import json
import os
import subprocess

import pytest

from cc_continuity.rotation import claim
from cc_continuity import ledger, session
from cc_continuity.project import Project
from helpers.hookdriver import dead_pid
from helpers.ladder import S1

ALIVE = os.getpid()


@pytest.fixture
def proj(tmp_path):
    p = Project(str(tmp_path / "proj"))
    p.ensure()
    return p


def add(proj, state, pid, successor=None, corrupt=False):
    """One more session in ``proj`` with ``state`` owned by Claude process ``pid``."""
    with proj.lock():
        n = proj.allocate_number()
    sdir = proj.session_dir(n)
    if corrupt:
        with open(session.state_path(sdir), "w") as f:
            f.write("{not json")
        return n
    rec = session.new_record(n, proj.session_name(n), "sid-%d" % n, state=state, pid=pid, successor=successor)
    if state in session.CLAIMABLE or state == session.ROTATED:
        rec["checkpoint"] = {"id": "cp-%03d" % n, "verified_at": 1.0}
    session.save(sdir, rec)
    return n


def test_pid_alive():
    assert claim.pid_alive(ALIVE)
    for pid in (dead_pid(), 0, -1, None, "123"):
        assert not claim.pid_alive(pid), pid


def test_only_claimable_unclaimed_checkpoints_of_gone_processes_qualify(proj):
    for state in (session.ACTIVE, session.WARNED, session.ROTATION_PENDING, session.HANDOFF_REQUESTED,
                  session.BOOTSTRAPPING, session.ENDED, session.ROTATED):
        add(proj, state, dead_pid())
    alive_owner = add(proj, session.AWAITING_MANUAL_CLEAR, ALIVE)
    taken = add(proj, session.ROTATING, dead_pid(), successor=99)
    add(proj, session.ACTIVE, dead_pid(), corrupt=True)
    wanted = [add(proj, s, dead_pid(k)) for k, s in enumerate(session.CLAIMABLE)]
    got = claim.candidates(proj, claude_pid=dead_pid(50))
    assert got == sorted(wanted, reverse=True)  # newest first
    assert alive_owner not in got and taken not in got


def test_the_cleared_predecessor_comes_first_even_with_its_process_alive(proj):
    older = add(proj, session.AWAITING_MANUAL_CLEAR, dead_pid(1))
    mine = add(proj, session.ROTATING, ALIVE)
    newer = add(proj, session.CHECKPOINT_VERIFIED, dead_pid(2))
    assert claim.candidates(proj, claude_pid=ALIVE, predecessor=mine) == [mine, newer, older]
    # Without the /clear link, this process's own checkpoint is left alone.
    assert claim.candidates(proj, claude_pid=ALIVE) == [newer, older]


def test_claim_moves_the_predecessor_to_rotated_once(proj):
    n = add(proj, session.AWAITING_MANUAL_CLEAR, dead_pid())
    s1, s2 = add(proj, session.ACTIVE, ALIVE), add(proj, session.ACTIVE, ALIVE)
    with proj.lock():
        got, prec = claim.claim(proj, s1, proj.session_dir(s1), [n])
    assert got == n and prec["state"] == session.ROTATED and prec["successor"] == s1
    saved = session.load(proj.session_dir(n))
    assert saved["state"] == session.ROTATED and saved["successor"] == s1
    assert isinstance(saved["checkpoint"]["rotation_ms"], int)
    assert [r["checkpoint"] for r in ledger.read(session.ledger_path(proj.session_dir(s1)))
            if r["ev"] == "claim"] == ["cp-%03d" % n]
    with proj.lock():
        assert claim.claim(proj, s2, proj.session_dir(s2), [n]) == (None, None)
    assert session.load(proj.session_dir(n))["successor"] == s1
    assert not os.path.exists(session.ledger_path(proj.session_dir(s2)))


def test_claim_takes_the_next_candidate_when_the_first_was_taken_meanwhile(proj):
    first = add(proj, session.ROTATING, dead_pid(1))
    second = add(proj, session.ROTATING, dead_pid(2))
    me = add(proj, session.ACTIVE, ALIVE)
    rec = session.load(proj.session_dir(second))
    session.transition(proj.session_dir(second), rec, session.ROTATED, "someone else", successor=77)
    with proj.lock():
        got, _ = claim.claim(proj, me, proj.session_dir(me), [second, first])
    assert got == first


# -- races through the real hook -------------------------------------------------------------------
# The checkpoint: the ladder's *verified* rung (session 1 AWAITING_MANUAL_CLEAR), owned by a gone
# Claude process (the fixture: drv.claude_pid is dead_pid()) or, climbed with make_project, a live one.


def bootstrap_in(stdout):
    if not stdout:
        return None
    ctx = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return ctx if ctx.startswith("Continuing from cp-") else None


@pytest.fixture
def live_pids():
    """Stand-in Claude processes: live pids the test started (and ends, by pid)."""
    procs = []

    def make(k):
        procs.extend(subprocess.Popen(["sleep", "120"]) for _ in range(k))
        return [p.pid for p in procs[-k:]]

    yield make
    for p in procs:
        p.kill()
        p.wait()


def race(drv, starters):
    """Start every (session_id, env, fields) hook at once; wait for all; [(sid, stdout)]."""
    procs = [(sid, drv.start("SessionStart", sid, env=env, **fields)) for sid, env, fields in starters]
    out = []
    for sid, p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0 and stderr == b"", stderr
        out.append((sid, stdout))
    return out


def test_twenty_concurrent_startup_claimers_claim_exactly_once(verified, live_pids):
    drv = verified.drv  # its Claude (dead_pid()) crashed, or the machine rebooted
    assert drv.claude_pid == dead_pid() and drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    sids = ["e%07d-0000-4000-8000-%012d" % (k, k) for k in range(20)]
    pids = live_pids(20)
    results = race(drv, [(sid, drv.env(sid, CLAUDE_PID=pid), {"source": "startup"}) for sid, pid in zip(sids, pids)])
    winners = [sid for sid, out in results if bootstrap_in(out)]
    assert len(winners) == 1, winners
    assert all(out == b"" for sid, out in results if sid not in winners)  # 19 plain registrations
    pred = drv.state(S1)
    assert pred["state"] == session.ROTATED and pred["successor"] == drv.number(winners[0])
    assert sorted(drv.number(s) for s in sids) == list(range(2, 22))
    assert drv.state(winners[0])["predecessor"] == 1
    assert [s for s in sids if drv.state(s)["state"] == session.BOOTSTRAPPING] == winners
    assert len([r for r in drv.ledger(S1, ev="transition") if r["to"] == session.ROTATED]) == 1
    for n in range(1, 22):
        assert ledger.verify(session.ledger_path(drv.sdir(number=n)))[0]


def test_other_terminals_never_steal_a_rotation_in_flight(make_project, live_pids):
    owner, *others = live_pids(6)
    lad = make_project(claude_pid=owner).work().request_handoff().verify()  # its Claude process is alive
    drv = lad.drv
    assert lad.end(S1, reason="clear") is None  # ... and clearing right now
    successor = "f0f0f0f0-0000-4000-8000-000000000000"
    starters = [(successor, drv.env(successor), {"source": "clear"})]
    sids = ["f%07d-0000-4000-8000-%012d" % (k + 1, k) for k in range(len(others))]
    starters += [(sid, drv.env(sid, CLAUDE_PID=pid), {"source": "startup"}) for sid, pid in zip(sids, others)]
    results = dict(race(drv, starters))
    assert bootstrap_in(results.pop(successor)).startswith("Continuing from cp-001")
    assert all(out == b"" for out in results.values())
    assert drv.state(S1)["successor"] == drv.number(successor)


def test_a_draft_the_rotator_cut_from_the_box_is_in_the_bootstrap(verified):
    drv = verified.drv  # its Claude process is gone
    draft = "also add a changelog entry\nand bump the version"
    with open(os.path.join(drv.sdir(S1), "checkpoint", "draft.txt"), "w") as f:
        f.write(draft)  # what rotation.draft_file holds once the rotator kept a draft
    sid = "d0d0d0d0-0000-4000-8000-000000000001"
    out = verified.start(sid, agent_pid=os.getpid())  # a new terminal's SessionStart (in-process)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("Continuing from cp-001")
    section = text.split("## Typed in the input box during the rotation, not sent\n", 1)[1]
    assert draft in section and "it is back in their input box" in section
