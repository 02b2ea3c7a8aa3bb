"""Publishing checkpoints to the repository's git remote (share/), in-process rotations, real remotes.

The remote is a bare repository on this machine, over file:// and through ``git daemon`` on
127.0.0.1 (the network protocol is real); a rejecting one has a pre-receive hook that says no,
a down one is a port nobody listens on.
"""

import glob
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import time

import pytest

from cc_continuity import config, paths, session
from cc_continuity.project import LEASES
from cc_continuity.rotation import texts
from cc_continuity.share import claiming, data, fleet, job, publish, transport
from helpers.hookdriver import HookDriver
from helpers.share import (GOOD, S1, S2, bare, claim_cli, free_port, git, machine, machine_a, mid_of, niceness,
                           published, rotate, user_refs, wait_status)


def test_the_machine_id_is_made_once_private_and_differs_per_state_dir(tmp_path, monkeypatch):
    a = transport.machine_id()
    assert len(a) == 12 and transport.machine_id() == a
    st = os.stat(os.path.join(paths.home(), transport.MACHINE_ID))
    assert stat.S_IMODE(st.st_mode) == 0o600
    monkeypatch.setenv("CC_CONTINUITY_HOME", str(tmp_path / "other"))
    assert transport.machine_id() != a


def test_the_machine_ids_shape_is_defined_once():
    """rotation/texts.py holds it: share/data's MACHINE_RE (remote refs and files) and the bootstrap's check agree."""
    for v in (transport.machine_id(), "0123456789ab", "f" * 12):
        assert texts.is_machine_id(v) and data.MACHINE_RE.match(v), v
    for v in ("0123456789AB", "0123456789a", "0123456789abc", "0123456789ab\n", "01234567-9ab", "",
              "\uff10" * 12, None, 12):
        assert not texts.is_machine_id(v) and not (isinstance(v, str) and data.MACHINE_RE.match(v)), v
    assert data.FORK_RE.match("cp-001-fork-0123456789ab") and not data.FORK_RE.match("cp-001-fork-0123456789")


@pytest.mark.parametrize("scheme", ["file", "daemon"])
def test_a_verified_checkpoint_is_published_with_its_handoff_and_the_users_refs_untouched(
        tmp_path, scheme, request):
    remote = bare(tmp_path)
    url = "file://" + remote if scheme == "file" else request.getfixturevalue("daemon") + "/remote.git"
    drv = machine_a(tmp_path, url)
    before = user_refs(remote)
    rotate(drv)
    st = wait_status(drv, ("published", "failed"))
    assert st["state"] == "published" and st["tries"] == 1, st
    mid = transport.machine_id()
    key = paths.project_key(drv.root)
    ref = "refs/continuity/shared/%s/%s/cp-001" % (mid, key)
    assert st["ref"] == ref and st["local_claim"] is True
    refs = dict(reversed(line.split()) for line in git(remote, "for-each-ref", "--format=%(objectname) %(refname)")
                .splitlines())
    assert refs[ref] == st["commit"]
    assert set(git(remote, "ls-tree", "--name-only", ref).split()) == set(publish.FILES)
    assert git(remote, "show", ref + ":handoff.md").strip() == GOOD.strip()
    pub = json.loads(git(remote, "show", ref + ":publisher.json"))
    assert pub["machine"] == mid and pub["checkpoint"] == "cp-001" and pub["author"] == "Test <test@example.invalid>"
    # the parent is the work-tree snapshot at A's HEAD, without the untracked file (share_untracked is off)
    snap = git(remote, "rev-parse", ref + "^1").strip()
    assert git(remote, "rev-parse", snap + "^1").strip() == git(drv.root, "rev-parse", "HEAD").strip()
    assert git(remote, "show", snap + ":src/app.py") == "print(2)\n"
    assert "notes.txt" not in git(remote, "ls-tree", "-r", "--name-only", snap).split()
    # A's own successor claimed it within the wait: the same push made that lease
    claim = json.loads(git(remote, "show", transport.claim_ref(mid, key, "cp-001") + ":claim.json"))
    assert claim["machine"] == mid and claim["local_successor"]
    assert user_refs(remote) == before  # the user's branches and tags: the same names, the same objects
    assert sorted(r for r in refs if not r.startswith("refs/continuity/")) == ["refs/heads/main", "refs/tags/v1"]


def test_untracked_files_go_only_with_the_second_opt_in(tmp_path):
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote, share_untracked=True)
    rotate(drv, claim_locally=False)
    st = wait_status(drv, ("published", "failed"))
    assert st["state"] == "published" and st["local_claim"] is False, st
    assert git(remote, "show", st["ref"] + "^1:notes.txt") == "untracked scratch\n"
    assert "/claims/" not in git(remote, "for-each-ref", "refs/continuity/")


@pytest.mark.parametrize("kind", ["rejecting", "down"])
def test_a_rejecting_or_down_remote_never_delays_or_breaks_the_rotation(tmp_path, kind):
    url = "file://" + bare(tmp_path, reject=True) if kind == "rejecting" else \
        "git://127.0.0.1:%d/remote.git" % free_port()
    drv = machine_a(tmp_path, "file://" + bare(tmp_path, "seed.git"))
    drv.git("remote", "set-url", "origin", url)
    took = rotate(drv)
    assert took < 3, took  # the hook did not wait for the network (the snapshot itself is in here)
    assert drv.state(S1)["state"] == session.ROTATED and drv.state(S2)["state"] == session.BOOTSTRAPPING
    st = wait_status(drv, ("retrying",))
    assert st["tries"] == 1 and st["error"]
    assert niceness(st["pid"]) == min(19, os.nice(0) + job.JOB_NICE)  # the job (asleep now) yields the CPU
    if kind == "rejecting":
        assert "pre-receive hook declined" in st["error"] or "rejected" in st["error"], st
    st = wait_status(drv, ("failed",), timeout=60)
    assert st["tries"] == 3 and st["error"], st


def test_sharing_off_starts_nothing_and_writes_no_status(tmp_path):
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    drv.config(share_remote=None)
    rotate(drv)
    assert not os.path.exists(session.share_status_path(drv.sdir(S1)))
    assert not git(remote, "for-each-ref", "refs/continuity/")


def test_push_never_names_a_ref_outside_refs_continuity(tmp_path):
    for ref in ("refs/heads/main", "refs/tags/v1", "refs/continuity/../heads/main"):
        with pytest.raises(ValueError):
            transport.push(str(tmp_path), "origin", [("0" * 40, ref, "")])


def test_the_remote_env_never_prompts_and_keeps_the_users_credentials():
    env = transport.remote_env({"HOME": "/h", "SSH_AUTH_SOCK": "/s", "GIT_ASKPASS": "/x", "GIT_DIR": "/y",
                            "GIT_SSH_COMMAND": "ssh -i key"})
    assert env["GIT_TERMINAL_PROMPT"] == "0" and "BatchMode=yes" in env["GIT_SSH_COMMAND"]
    assert env["GIT_SSH_COMMAND"].startswith("ssh -i key") and env["SSH_AUTH_SOCK"] == "/s"
    assert "GIT_ASKPASS" not in env and "GIT_DIR" not in env


# -- claiming on another machine ------------------------------------------------------------------

def test_another_machine_claims_it_into_a_new_worktree_and_a_second_one_is_told_who_has_it(tmp_path):
    remote, drv, spec = published(tmp_path)
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    head_b = git(clone_b, "symbolic-ref", "HEAD")
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print")
    assert res.returncode == 0, res.stderr
    wt = clone_b + "-cp-001"
    assert "published by machine %s (its author, as the remote says: Test <test@example.invalid>)" % (
        transport.machine_id()) in res.stderr
    assert "## Handoff (cp-001)" in res.stdout and "Details of the work" in res.stdout
    assert "written on another machine (machine %s)" % transport.machine_id() in res.stdout
    assert re.search(r"~~~~ from the remote [0-9a-f]{16}: not the machine's words ~~~~\npublished by: Test "
                     r"<test@example.invalid>\nsession there: a-001\n", res.stdout), res.stdout
    assert "never as the user's words" in res.stdout
    # a new branch at A's HEAD, the snapshot's changes uncommitted, the untracked file not shared
    assert git(wt, "symbolic-ref", "HEAD").strip() == "refs/heads/continuity/cp-001"
    assert git(wt, "rev-parse", "HEAD") == git(drv.root, "rev-parse", "HEAD")
    assert git(wt, "status", "--porcelain").splitlines() == [" M src/app.py"]
    assert open(os.path.join(wt, "src/app.py")).read() == "print(2)\n"
    assert git(clone_b, "symbolic-ref", "HEAD") == head_b and not git(clone_b, "status", "--porcelain")
    lease = json.loads(git(remote, "show", transport.claim_ref(transport.machine_id(), *spec.split("/")) + ":claim.json"))
    assert lease["machine"] == mid_of(env_b) and lease["published_by"] == transport.machine_id()
    # machine C: refused, non-zero, told who holds it; nothing made
    env_c, clone_c = machine(tmp_path, "c", "file://" + remote)
    res = claim_cli(env_c, clone_c, "--from", "origin", spec, "--print")
    assert res.returncode == 3 and "is claimed by machine %s" % mid_of(env_b) in res.stderr, res.stderr
    assert not os.path.exists(clone_c + "-cp-001")
    # the imported checkpoint is what the successor in the worktree claims
    rec = json.load(open(os.path.join(env_b["CC_CONTINUITY_HOME"], "projects", paths.project_key(wt),
                                      "sessions", "001", "state.json")))
    assert rec["state"] == session.CHECKPOINT_VERIFIED and rec["imported"]["machine"] == transport.machine_id()


def test_a_checkpoint_its_own_successor_claimed_is_taken_elsewhere_only_as_a_fork(tmp_path):
    remote, drv, spec = published(tmp_path, claim_locally=True)
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print")
    assert res.returncode == 3 and "its own successor" in res.stderr and "--fork" in res.stderr, res.stderr
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print", "--fork")
    assert res.returncode == 0, res.stderr
    assert "This is a fork" in res.stdout
    # A's own successor was told, in its bootstrap, that the checkpoint is published and may be forked
    text = [r for r in drv.ledger(S2) if r.get("ev") == "bootstrap"]
    assert text
    assert "also published to the git remote origin" in open(session.bootstrap_path(drv.sdir(S1))).read()


def test_a_lease_is_stolen_only_after_24_hours_naming_the_old_holder(tmp_path, monkeypatch):
    remote, drv, spec = published(tmp_path)
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    assert claim_cli(env_b, clone_b, "--from", "origin", spec, "--print").returncode == 0
    env_c, clone_c = machine(tmp_path, "c", "file://" + remote)
    res = claim_cli(env_c, clone_c, "--from", "origin", spec, "--print", "--steal")
    assert res.returncode == 3 and "only after 24 h" in res.stderr, res.stderr
    pubs, leases = claiming.remote_view(clone_c, "origin")
    monkeypatch.setenv("CC_CONTINUITY_HOME", env_c["CC_CONTINUITY_HOME"])
    got = claiming.take_lease(clone_c, "origin", pubs[0], leases, steal=True, now=time.time() + 25 * 3600)
    assert got["stolen_from"]["machine"] == mid_of(env_b) and got["machine"] == mid_of(env_c)


def race(tmp_path, remote, spec, n, rounds):
    """``n`` machines claim ``spec`` at once, ``rounds`` times (the lease deleted between rounds): winners per round."""
    machines = [machine(tmp_path, "m%d" % i, "file://" + remote) for i in range(n)]
    lease = transport.claim_ref(transport.machine_id(), *spec.split("/"))
    winners, took = [], []
    for r in range(rounds):
        t0 = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-m", "cc_continuity", "claim", "--from", "origin", spec,
                                   "--print", "--dir", "%s-r%d" % (clone, r)], cwd=clone, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for env, clone in machines]
        codes = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        took.append(time.monotonic() - t0)
        won = [i for i, (rc, _) in enumerate(codes) if rc == 0]
        assert all(rc in (0, 3) for rc, _ in codes), [c for c in codes if c[0] not in (0, 3)]
        assert all("claimed by machine" in err for rc, err in codes if rc == 3), [err for rc, err in codes if rc == 3 and "claimed by machine" not in err]
        winners.append(won)
        git(remote, "update-ref", "-d", lease)
        for env, _ in machines:  # the winner's own record of its lease: it would refuse the next round as a second claim
            for kept in glob.glob(os.path.join(env["CC_CONTINUITY_HOME"], "projects", "*", LEASES)):
                os.unlink(kept)
    took.sort()
    print("race: %d rounds of %d claimers: winners per round %s; round (all %d done) median %.2f s, max %.2f s" % (
        rounds, n, sorted({len(w) for w in winners}), n, took[len(took) // 2], took[-1]))
    return winners


def test_of_eight_machines_claiming_at_once_exactly_one_wins(tmp_path):
    remote, drv, spec = published(tmp_path)
    rounds = int(os.environ.get("CC_CONTINUITY_RACE_ROUNDS", "2"))
    winners = race(tmp_path, remote, spec, 8, rounds)
    assert [len(w) for w in winners] == [1] * rounds, winners


def test_status_reports_the_publishing_and_the_remote_fleet_view_lists_unclaimed_first(tmp_path):
    remote, drv, spec = published(tmp_path)
    out = drv.cli("status").stdout
    assert "shared cp-001 to origin: published" in out, out
    # a second project (another checkout on A) publishes a checkpoint that stays unclaimed; the first is claimed
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    assert claim_cli(env_b, clone_b, "--from", "origin", spec, "--print").returncode == 0
    drv2 = HookDriver(tmp_path / "a2", files={"README.md": "hello\n", "src/app.py": "print(1)\n"})
    drv2.git("remote", "add", "origin", "file://" + remote)
    rotate(drv2, claim_locally=False)
    assert wait_status(drv2, ("published", "failed"))["state"] == "published"
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "status", "--remote", "origin", "--json"],
                         cwd=clone_b, env=env_b, capture_output=True, text=True, timeout=60)
    rows = json.loads(res.stdout)["checkpoints"]
    assert [(r["class"], r["key"]) for r in rows] == [("unclaimed", paths.project_key(drv2.root)),
                                                      ("claimed", paths.project_key(drv.root))], rows
    assert rows[1]["holder"]["machine"] == mid_of(env_b)
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "status", "--remote", "origin"],
                         cwd=clone_b, env=env_b, capture_output=True, text=True, timeout=60)
    assert res.stdout.splitlines()[0] == "origin: 2 published checkpoint(s), 1 unclaimed or with a stale lease"
    assert "claim one: cc-continuity claim --from origin" in res.stdout


def test_uninstall_purge_says_what_stays_on_the_remote_and_the_command_removes_it(tmp_path):
    from cc_continuity.hosts import setup

    remote, drv, spec = published(tmp_path, claim_locally=True)
    lines = []
    assert setup.uninstall(purge=True, out=lines.append) == 0, lines
    said = [x for x in lines if x.startswith("remote: origin")]
    assert len(said) == 1 and "keeps the checkpoints published from here" in said[0], lines
    assert not os.path.exists(paths.home())
    cmd = said[0].split("remove them with: ", 1)[1]
    assert git(remote, "for-each-ref", "refs/continuity/")
    subprocess.run(cmd, shell=True, check=True, capture_output=True)
    assert not git(remote, "for-each-ref", "refs/continuity/")  # ours and the lease gone
    assert user_refs(remote) == ["refs/heads/main " + git(drv.root, "rev-parse", "main").strip(),
                                 "refs/tags/v1 " + git(drv.root, "rev-parse", "v1").strip()]


def test_remote_retention_keeps_what_is_claimable_or_claimed_and_live(tmp_path):
    """Five published checkpoints of this machine, snapshot_keep 1: the newest stays, an unclaimed and a
    freshly leased one stay whatever their rank; the two with leases past 24 h go, leases included;
    another machine's checkpoint is not ours to prune."""
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    root, key, me, now = drv.root, paths.project_key(drv.root), transport.machine_id(), time.time()
    updates = []

    def published_at(cid, at, machine=me, lease_at=None):
        c = transport.commit_files(root, {"publisher.json": json.dumps({"published_at": at}).encode()}, [], "p")
        updates.append((c, transport.shared_ref(machine, key, cid), ""))
        if lease_at is not None:
            lease = transport.lease_commit(root, {"machine": "other00000001", "at": lease_at})
            updates.append((lease, transport.claim_ref(machine, key, cid), ""))

    day = 86400
    published_at("cp-005", now - 100, lease_at=now - 50)         # newest: kept
    published_at("cp-004", now - 2 * day)                         # unclaimed: claimable, kept
    published_at("cp-003", now - 3 * day, lease_at=now - 3600)    # claimed and live: kept
    published_at("cp-002", now - 4 * day, lease_at=now - 2 * day)  # stale lease: goes
    published_at("cp-001", now - 5 * day, lease_at=now - 3 * day)  # stale lease: goes
    published_at("cp-001", now - 5 * day, machine="other00000001", lease_at=now - 3 * day)  # another machine's
    transport.push(root, "origin", updates)
    cfg = dict(config.DEFAULTS, snapshot_keep=1)
    dry = fleet.prune_remote(root, "origin", key, cfg, now=now, dry_run=True)
    assert sorted(dry["protected"]) == [transport.shared_ref(me, key, c) for c in ("cp-003", "cp-004")]
    res = fleet.prune_remote(root, "origin", key, cfg, now=now)
    assert sorted(res["deleted"]) == sorted([transport.shared_ref(me, key, "cp-001"), transport.shared_ref(me, key, "cp-002"),
                                             transport.claim_ref(me, key, "cp-001"), transport.claim_ref(me, key, "cp-002")])
    left = git(remote, "for-each-ref", "--format=%(refname)", "refs/continuity/").split()
    assert sorted(left) == sorted([transport.shared_ref(me, key, "cp-005"), transport.shared_ref(me, key, "cp-004"),
                                   transport.shared_ref(me, key, "cp-003"), transport.shared_ref("other00000001", key, "cp-001"),
                                   transport.claim_ref(me, key, "cp-005"), transport.claim_ref(me, key, "cp-003"),
                                   transport.claim_ref("other00000001", key, "cp-001")])


def test_text_from_the_remote_reaches_the_terminal_without_escape_sequences():
    line = transport.describe({"machine": "abc\x1b]0;pwned\x07", "author": "Eve \x1b[2J<e@x>", "at": 0})
    assert "\x1b" not in line and "\x07" not in line and "machine abc?]0;pwned? (Eve ?[2J<e@x>)" in line


def test_the_claimed_worktree_has_the_snapshots_new_changed_and_deleted_files_uncommitted(tmp_path):
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote, share_untracked=True)
    rotate(drv, claim_locally=False, delete="README.md")
    assert wait_status(drv, ("published", "failed"))["state"] == "published"
    env_b, clone_b = machine(tmp_path, "b", "file://" + remote)
    spec = "%s/cp-001" % paths.project_key(drv.root)
    res = claim_cli(env_b, clone_b, "--from", "origin", spec, "--print", "--dir", str(tmp_path / "wt"))
    assert res.returncode == 0, res.stderr
    wt = str(tmp_path / "wt")
    assert sorted(git(wt, "status", "--porcelain").splitlines()) == [" D README.md", " M src/app.py", "?? notes.txt"]
    assert git(wt, "diff", "--cached") == ""  # nothing staged
    assert git(wt, "symbolic-ref", "HEAD").strip() == "refs/heads/continuity/cp-001"


def test_share_by_hand_publishes_once_and_says_so_the_second_time(tmp_path):
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    drv.config(share_remote=None)
    rotate(drv)
    assert not git(remote, "for-each-ref", "refs/continuity/")
    res = drv.cli("share", "cp-001", "--remote", "origin")
    ref = transport.shared_ref(transport.machine_id(), paths.project_key(drv.root), "cp-001")
    assert res.stdout.strip() == "cp-001 published to origin as %s (claimed here by its own successor)" % ref
    first = git(remote, "rev-parse", ref)
    res = drv.cli("share", "cp-001", "--remote", "origin")
    assert res.stdout.startswith("cp-001 was already published to origin as ") and git(remote, "rev-parse", ref) == first
    bad = drv.cli("share", "cp-009", "--remote", "origin", check=False)
    assert bad.returncode == 2 and "cp-009 has no verified checkpoint" in bad.stderr
    assert drv.cli("share", "cp-001", check=False).returncode == 2  # no remote named, none configured


def test_the_no_remote_hint_names_a_command_that_sets_share_remote(tmp_path):
    # Before: the hint said `cc-continuity configure`, which had no option for share_remote.
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    drv.config(share_remote=None)
    rotate(drv)
    res = drv.cli("share", "cp-001", check=False)
    assert res.returncode == 2, res.stderr
    hinted = re.search(r"`(cc-continuity configure [^`]*)`", res.stderr)
    assert hinted, res.stderr
    argv = shlex.split(hinted.group(1).replace("<name>", "origin"))
    assert argv[0] == "cc-continuity"
    out = drv.cli(*argv[1:]).stdout  # as written: it is accepted and says what it set
    assert re.search(r"^\* share_remote +\"origin\"", out, re.M), out
    assert config.load(drv.root)["share_remote"] == "origin"
    ref = transport.shared_ref(transport.machine_id(), paths.project_key(drv.root), "cp-001")
    assert drv.cli("share", "cp-001").stdout.startswith("cp-001 published to origin as %s" % ref)
    assert git(remote, "rev-parse", ref)
    off = drv.cli("configure", "--share-remote", "off").stdout
    assert re.search(r"^\* share_remote +null", off, re.M) and config.load(drv.root)["share_remote"] is None
    for bad in ("--upload-pack=evil", "two words", ""):
        res = drv.cli("configure", "--share-remote", bad, check=False)
        assert res.returncode == 2 and "--share-remote" in res.stderr, (bad, res.stderr)
    assert config.load(drv.root)["share_remote"] is None


def test_a_repository_cannot_set_share_remote_even_now_configure_can(tmp_path):
    drv = HookDriver(tmp_path / "r", files={"README.md": "hello\n"})
    os.makedirs(os.path.join(drv.root, ".claude"), exist_ok=True)
    with open(os.path.join(drv.root, ".claude", "continuity.json"), "w") as f:
        json.dump({"share_remote": "origin"}, f)
    cfg = config.load(drv.root)
    assert cfg["share_remote"] is None and any(key == "share_remote" for _p, key, _m in cfg.ignored)
