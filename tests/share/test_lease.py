"""A published checkpoint is claimed exactly once across machines, local claims included (lease.py),
and a live holder's lease is renewed.

Real remotes: a bare repository over file:// and through ``git daemon`` on 127.0.0.1 (stopped
and started again on the same port for "the remote is down"); machine A's rotations run
in-process (helpers/share.py's), its late claims too or as the installed SessionStart hook; machine
B claims with the real ``cc-continuity claim --from`` in a clone with its own HOME and state dir.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from cc_continuity.rotation import start, turn
from cc_continuity.share import claiming, fleet, lease, publish, transport
from cc_continuity.project import LEASES
from cc_continuity import paths, session
from helpers.hookdriver import dead_pid
from helpers.hookdriver import tokens_at
from helpers.share import GOOD, S1, bare, claim_cli, free_port, git, machine, machine_a, mid_of, rotate, step, wait_status


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.3)
    monkeypatch.setattr(publish, "LOCAL_CLAIM_WAIT_S", 1)
    monkeypatch.setattr(publish, "RETRY_DELAYS_S", (1, 1))


class Daemon:
    """``git daemon`` serving ``base`` on one port of 127.0.0.1, stopped and started again at will."""

    def __init__(self, base):
        self.base, self.port, self.proc = str(base), free_port(), None
        self.url = "git://127.0.0.1:%d/remote.git" % self.port

    def start(self):
        self.proc = subprocess.Popen(["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr",
                                      "--listen=127.0.0.1", "--port=%d" % self.port, "--base-path=%s" % self.base,
                                      self.base], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # git runs git-daemon as its child: killed as a group
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("git daemon did not listen")

    def stop(self):
        if self.proc:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


def url_for(tmp_path, scheme, daemon):
    remote = bare(tmp_path)
    return remote, ("file://" + remote if scheme == "file" else daemon.start().url)


def publish_unclaimed(tmp_path, url):
    """Machine A rotates, no successor claims within the wait (a crash, a /clear typed later): published alone."""
    drv = machine_a(tmp_path, url)
    rotate(drv, claim_locally=False)
    st = wait_status(drv, ("published", "failed"))
    assert st["state"] == "published" and st["local_claim"] is False, st
    return drv, "%s/cp-001" % paths.project_key(drv.root)


def late_claim(drv, prev, sid):
    """A's session after ``prev`` is cleared: its SessionStart's context (or "") and the hook's seconds."""
    step(drv, start.session_ended, "SessionEnd", prev, reason="clear")
    drv.transcript(sid)
    t0 = time.monotonic()
    out, ctx = step(drv, start.session_started, "SessionStart", sid, source="clear")
    took = time.monotonic() - t0
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext", ""), took


def remote_lease(remote, spec):
    key, cid = spec.split("/")
    ref = transport.claim_ref(transport.machine_id(), key, cid)
    got = git(remote, "for-each-ref", "--format=%(objectname)", ref).strip()
    return (json.loads(git(remote, "show", ref + ":claim.json")), got) if got else (None, None)


def sid():
    return str(uuid.uuid4())


@pytest.mark.parametrize("scheme", ["file", "daemon"])
def test_b_claims_first_then_a_late_local_claim_is_refused_naming_b(tmp_path, scheme, daemon):
    remote, url = url_for(tmp_path, scheme, daemon)
    drv, spec = publish_unclaimed(tmp_path, url)
    env_b, clone_b = machine(tmp_path, "b", url)
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print")
    assert res.returncode == 0, res.stderr
    # B keeps its lease for renewal, in its worktree's project
    wt_key = paths.project_key(clone_b + "-cp-001")
    held = json.load(open(os.path.join(env_b["CC_CONTINUITY_HOME"], "projects", wt_key, "leases.json")))["leases"]
    assert [r["ref"] for r in held] == [transport.claim_ref(transport.machine_id(), *spec.split("/"))]
    s2 = sid()
    text, took = late_claim(drv, S1, s2)
    assert "is claimed there by machine %s" % mid_of(env_b) in text and "starts fresh" in text, text
    assert not text.startswith("Continuing from")
    rec1, rec2 = drv.state(S1), drv.state(s2)
    assert rec1["state"] == session.ROTATED and rec1["successor"] is None
    assert rec1["remote_claim"]["machine"] == mid_of(env_b)
    assert not rec2.get("predecessor_claimed")
    # never claimed here afterwards either, and the remote's lease is still B's
    text, _ = late_claim(drv, s2, sid())
    assert "Continuing from" not in text
    assert remote_lease(remote, spec)[0]["machine"] == mid_of(env_b)


@pytest.mark.parametrize("scheme", ["file", "daemon"])
def test_a_late_local_claim_takes_the_lease_on_the_remote_then_b_is_refused_naming_a(tmp_path, scheme, daemon):
    remote, url = url_for(tmp_path, scheme, daemon)
    drv, spec = publish_unclaimed(tmp_path, url)
    s2 = sid()
    text, took = late_claim(drv, S1, s2)
    assert text.startswith("Continuing from cp-001"), text
    rec1 = drv.state(S1)
    assert rec1["successor"] == drv.number(s2) and rec1["remote_lease"]["ref"].endswith("/cp-001")
    claim, sha = remote_lease(remote, spec)
    assert claim["machine"] == transport.machine_id() and claim["local_successor"] == drv.state(s2)["name"]
    assert [r["sha"] for r in transport.held(drv.project.dir)] == [sha]
    print("late local claim through the remote (%s): SessionStart %.0f ms" % (scheme, took * 1000))
    env_b, clone_b = machine(tmp_path, "b", url)
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print")
    assert res.returncode == 3 and "is claimed by machine %s" % transport.machine_id() in res.stderr, res.stderr
    assert "its own successor %s" % drv.state(s2)["name"] in res.stderr
    assert not os.path.exists(clone_b + "-cp-001")


@pytest.fixture
def silent():
    """A port on 127.0.0.1 that accepts connections and never answers (a hung server, a black hole)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield "git://127.0.0.1:%d/remote.git" % s.getsockname()[1]
    s.close()


@pytest.mark.parametrize("down", ["refusing connections", "silent"])
def test_remote_down_after_the_publish_landed_the_claim_is_unconfirmed_then_taken_when_it_answers(
        tmp_path, daemon, silent, down):
    remote, url = url_for(tmp_path, "daemon", daemon)
    drv, spec = publish_unclaimed(tmp_path, url)
    if down == "silent":
        drv.git("remote", "set-url", "origin", silent)
    else:
        daemon.stop()
    s2 = sid()
    text, took = late_claim(drv, S1, s2)
    assert took < lease.LOCAL_TIMEOUT_S + 2, took  # bounded: the hook never waits on the network past it
    assert text.startswith("UNCONFIRMED - cc-continuity could not claim checkpoint cp-001"), text
    assert "## Handoff (cp-001)" in text and "has NOT claimed it" in text
    rec1 = drv.state(S1)
    assert rec1["state"] in session.CLAIMABLE and rec1["successor"] is None  # still claimable: nothing decided
    assert drv.state(s2)["unconfirmed"]["checkpoint"] == "cp-001"
    assert remote_lease(remote, spec) == (None, None)
    print("late local claim, remote %s: SessionStart %.0f ms" % (down, took * 1000))
    if down == "silent":  # the remote answers again: the next session here claims it, through the remote
        drv.git("remote", "set-url", "origin", url)
    else:
        daemon.start()
    s3 = sid()
    text, _ = late_claim(drv, s2, s3)
    assert text.startswith("Continuing from cp-001"), text
    assert drv.state(S1)["successor"] == drv.number(s3)
    assert remote_lease(remote, spec)[0]["machine"] == transport.machine_id()


def test_two_published_checkpoints_and_a_silent_remote_cost_the_claim_one_bounded_wait(tmp_path, silent, monkeypatch):
    remote = bare(tmp_path)
    drv, spec = publish_unclaimed(tmp_path, "file://" + remote)
    s3 = sid()  # a second session of the same process rotates, unclaimed too: cp-002
    drv.transcript(s3).assistant(tokens_at(10))
    step(drv, start.session_started, "SessionStart", s3, source="startup")
    drv.transcript(s3).assistant(tokens_at(65), "Step finished.")
    step(drv, turn.turn_ended, "Stop", s3)
    with open(drv.handoff_path(s3), "w") as f:
        f.write(GOOD)
    assert step(drv, turn.turn_ended, "Stop", s3)[1].outcome.startswith("checkpoint cp-002 verified")
    deadline = time.time() + 30
    while transport.read_status(drv.sdir(s3)).get("state") != "published" and time.time() < deadline:
        time.sleep(0.1)
    assert transport.read_status(drv.sdir(s3))["state"] == "published"
    drv.git("remote", "set-url", "origin", silent)
    text, took = late_claim(drv, s3, sid())
    assert took < lease.LOCAL_TIMEOUT_S + 2, took  # one question, not one per checkpoint
    assert text.startswith("UNCONFIRMED - cc-continuity could not claim checkpoint cp-002"), text
    for s in (S1, s3):
        assert drv.state(s)["state"] in session.CLAIMABLE and drv.state(s)["successor"] is None


def test_remote_down_before_any_try_reached_it_the_claim_stays_local_and_the_publish_carries_its_lease(
        tmp_path, daemon, monkeypatch):
    monkeypatch.setattr(publish, "RETRY_DELAYS_S", (4, 4, 4, 4))
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    drv.git("remote", "set-url", "origin", daemon.url)  # nobody listens there yet
    rotate(drv, claim_locally=False)
    st = wait_status(drv, ("retrying",))
    assert st["may_be_there"] is False and st["in_flight"] is False and "unable to connect" in st["error"], st
    s2 = sid()
    text, took = late_claim(drv, S1, s2)
    assert text.startswith("Continuing from cp-001"), text  # no try changed the remote: claimed here, no network
    assert "remote_lease" not in drv.state(S1)
    print("late local claim, no try reached the remote: SessionStart %.0f ms" % (took * 1000))
    daemon.start()
    st = wait_status(drv, ("published", "failed"), timeout=60)
    assert st["state"] == "published" and st["local_claim"] is True, st
    spec = "%s/cp-001" % paths.project_key(drv.root)
    claim, sha = remote_lease(remote, spec)
    assert claim["machine"] == transport.machine_id() and claim["local_successor"] == drv.state(s2)["name"]
    env_b, clone_b = machine(tmp_path, "b", daemon.url)
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print")
    assert res.returncode == 3 and "is claimed by machine %s" % transport.machine_id() in res.stderr, res.stderr


OFFSETS_S = (0.6, 0.0, 0.3, 0.9, 0.45, 0.75, 0.15, 1.2)  # A's hook starts this long after B's claim


def test_a_late_local_claim_racing_a_remote_claim_has_exactly_one_winner(tmp_path):
    """Each round: B's `claim --from` and A's installed SessionStart hook (a fresh `claude` after a
    crash) start at once on a checkpoint published unclaimed, A a little later each round (OFFSETS_S,
    so either may get to the remote first); then the round is undone
    (A's record back to claimable, the lease deleted on the remote)."""
    remote = bare(tmp_path)
    drv, spec = publish_unclaimed(tmp_path, "file://" + remote)
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    key, cid = spec.split("/")
    lref = transport.claim_ref(transport.machine_id(), key, cid)
    state1 = os.path.join(drv.sdir(S1), session.STATE)
    saved = open(state1, "rb").read()
    rounds = int(os.environ.get("CC_CONTINUITY_RACE_ROUNDS", "3"))
    tally = {"A": 0, "B": 0, "both": 0, "neither (A unconfirmed)": 0}
    for r in range(rounds):
        s = sid()
        drv.transcript(s)
        cli = subprocess.Popen([sys.executable, "-m", "cc_continuity", "claim", "--from", "origin", spec, "--print",
                                "--dir", "%s-r%d" % (clone_b, r)], cwd=clone_b, env=env_b, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(OFFSETS_S[r % len(OFFSETS_S)])  # B's start-up and its look at the remote take about this long
        hook = drv.start("SessionStart", s, source="startup", env=drv.env(s, CLAUDE_PID=dead_pid(1 + r)))
        out, err = hook.communicate(timeout=60)
        assert hook.returncode == 0 and not err, err
        b_rc, b_err = cli.wait(timeout=120), cli.stderr.read()
        ctx = (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else "")
        a_won = ctx.startswith("Continuing from cp-001")
        b_won = b_rc == 0
        holder = json.loads(git(remote, "show", lref + ":claim.json"))["machine"] \
            if git(remote, "for-each-ref", lref).strip() else None
        if a_won and b_won:
            tally["both"] += 1
        elif a_won:
            assert b_rc == 3 and "claimed by machine %s" % transport.machine_id() in b_err, b_err
            assert holder == transport.machine_id() and drv.state(S1)["successor"] == drv.number(s)
            tally["A"] += 1
        elif b_won:
            assert "is claimed there by machine %s" % mid_of(env_b) in ctx or ctx.startswith("UNCONFIRMED"), ctx
            assert holder == mid_of(env_b) and not drv.state(S1)["successor"]
            tally["B"] += 1
        else:  # A's push did not answer within its bound while B was refused: nobody continues, nothing doubled
            assert ctx.startswith("UNCONFIRMED") and b_rc == 3, (ctx, b_err)
            tally["neither (A unconfirmed)"] += 1
        with open(state1, "wb") as f:  # undo the round
            f.write(saved)
        open(os.path.join(drv.project.open_dir, "%03d" % drv.number(S1)), "w").close()
        if holder:
            git(remote, "update-ref", "-d", lref)
        if os.path.exists(drv.project.leases_path):
            os.unlink(drv.project.leases_path)
        for kept in glob.glob(os.path.join(env_b["CC_CONTINUITY_HOME"], "projects", "*", LEASES)):
            os.unlink(kept)  # B's own record of the lease: it would refuse the next round's claim as its second
    print("local-vs-remote race: %d rounds: %s" % (rounds, tally))
    assert tally["both"] == 0, tally


# -- renewal ----------------------------------------------------------------------------------------

def held_on_a(tmp_path):
    remote = bare(tmp_path)
    drv, spec = publish_unclaimed(tmp_path, "file://" + remote)
    s2 = sid()
    text, _ = late_claim(drv, S1, s2)
    assert text.startswith("Continuing from cp-001"), text
    return remote, drv, spec, s2


def test_the_holders_stop_renews_its_lease_in_a_detached_job(tmp_path, monkeypatch):
    remote, drv, spec, s2 = held_on_a(tmp_path)
    old_claim, old = remote_lease(remote, spec)
    proj = drv.project
    assert lease.renew_due(proj) is None  # taken a moment ago: not due
    monkeypatch.setattr(lease, "RENEW_EVERY_S", 0)
    drv.transcript(s2).assistant(20000, "Done.")
    t0 = time.monotonic()
    step(drv, turn.turn_ended, "Stop", s2)
    took = time.monotonic() - t0
    deadline = time.time() + 30
    while time.time() < deadline and transport.held(proj.dir)[0]["sha"] == old:
        time.sleep(0.1)
    row = transport.held(proj.dir)[0]
    claim, new = remote_lease(remote, spec)
    assert new == row["sha"] != old and claim["renewals"] == 1 and claim["renewed_at"] >= old_claim["at"]
    assert claim["machine"] == transport.machine_id() and claim["at"] == old_claim["at"]  # the same holder, same start
    assert git(remote, "rev-parse", new + "^1").strip() == old  # a fast-forward: servers that deny others accept it
    assert lease.renew_due(proj) is None  # the job ran a moment ago: no second one
    print("Stop that started the renewal job: %.0f ms" % (took * 1000))


def test_steal_and_the_fleet_view_count_a_leases_age_from_its_last_renewal(tmp_path, monkeypatch):
    remote, drv, spec, s2 = held_on_a(tmp_path)
    a_home = os.environ["CC_CONTINUITY_HOME"]
    claim0, _ = remote_lease(remote, spec)
    later = claim0["at"] + 20 * 3600
    res = lease.renew(drv.project.dir, now=later)  # as the holder's hook did 20 h after the claim
    assert res["renewed"] and not res["failed"], res
    rows = fleet.fleet(drv.root, "origin", now=later + 60)
    assert rows[0]["class"] == "claimed" and 59 <= rows[0]["lease_age_s"] <= 61
    out = drv.cli("status", "--remote", "origin").stdout
    assert "lease renewed" in out, out
    env_c, clone_c = machine(tmp_path, "c", "file://" + remote)
    monkeypatch.setenv("CC_CONTINUITY_HOME", env_c["CC_CONTINUITY_HOME"])
    pubs, leases = claiming.remote_view(clone_c, "origin")
    with pytest.raises(transport.LeaseHeld, match="renewed 5.0 h ago"):  # 25 h after the claim, 5 h after the renewal
        claiming.take_lease(clone_c, "origin", pubs[0], leases, steal=True, now=claim0["at"] + 25 * 3600)
    got = claiming.take_lease(clone_c, "origin", pubs[0], leases, steal=True, now=later + 25 * 3600)
    assert got["stolen_from"]["machine"] != got["machine"]
    # A's next renewal finds its lease taken over: dropped from its list, C's lease left alone
    monkeypatch.setenv("CC_CONTINUITY_HOME", a_home)
    res = lease.renew(drv.project.dir)
    assert res["dropped"] == [transport.claim_ref(transport.machine_id(), *spec.split("/"))] and not res["renewed"], res
    assert transport.held(drv.project.dir) == []
    assert remote_lease(remote, spec)[0]["machine"] == mid_of(env_c)


def test_a_lease_that_is_this_machines_already_is_taken_again_with_its_object_and_no_ref_kept(tmp_path):
    """An earlier claim here timed out after its push landed: the next take finds the lease is its own."""
    remote = bare(tmp_path)
    drv, spec = publish_unclaimed(tmp_path, "file://" + remote)
    proj = drv.project
    first, info = lease.take(proj, 1, "a-009")
    assert first == lease.WON
    again, info2 = lease.take(proj, 1, "a-010")
    assert again == lease.WON and info2.get("again") is True, info2
    assert info2["sha"] == info["sha"] == git(remote, "rev-parse", info["ref"]).strip()
    assert not git(drv.root, "for-each-ref", "refs/continuity/fetched/").strip()
