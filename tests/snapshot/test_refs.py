"""The snapshot refs (snapshot/refs.py): names git accepts, and never one overwritten.

Issue 10: a snapshot ref under refs/continuity is never overwritten by a later checkpoint.

Each scenario used to replace an older ``cp-001`` (refs were named by the directory's
slug, and a checkpoint without a manifest dropped the ref of its name first): two
worktrees of one repository both called ``proj``, a purged state dir (the counter starts
again), and a project moved to another path.  Each runs full rotations through the protocol's
own steps (the ladder, in-process: tests/helpers/ladder.py) against a real repository; every
ref that existed before must still point at its commit afterwards, and the new checkpoint
must have a ref of its own.
"""


import json
import os
import shutil
import subprocess
import sys

import pytest

from cc_continuity import config, session
from cc_continuity.snapshot.gitrun import SnapshotError
from cc_continuity.snapshot.refs import ref_name
from cc_continuity.snapshot.worktree import snapshot
from helpers.gitrepo import git, write
from helpers.hookdriver import handoff_text


def test_ref_name_validation_matches_git():
    assert ref_name("my-proj", 7) == "refs/continuity/my-proj/cp-007"
    assert ref_name("x", 1234) == "refs/continuity/x/cp-1234"
    good = ["my-proj", "ünï", "a.b", "-dash", "x@y", "UPPER_1"]
    bad = [".hidden", "x.lock", "a..b", "sp ace", "t~1", "c^", "co:lon", "q?", "st*r", "br[",
           "back\\slash", "at@{x", "ctl\x01", "del\x7f"]
    for slug in good:
        ref = ref_name(slug, 1)
        assert subprocess.run(["git", "check-ref-format", ref]).returncode == 0, slug
    for slug in bad:
        with pytest.raises(ValueError):
            ref_name(slug, 1)
        ref = "refs/continuity/%s/cp-001" % slug
        assert subprocess.run(["git", "check-ref-format", ref]).returncode != 0, slug
    for slug in ("", "a/b", None, "@", "ends."):  # git allows the last two mid-ref
        with pytest.raises(ValueError):
            ref_name(slug, 1)
    for number in (-1, "3", True, 1.0):
        with pytest.raises(ValueError):
            ref_name("ok", number)


def test_bad_ref_rejected_before_touching_anything(git_repo):
    objects = git(git_repo, "count-objects")
    for ref in ("heads/x", "refs/continuity/a b/cp-001", "refs//x", "refs/x/"):
        with pytest.raises(ValueError):
            snapshot(str(git_repo), ref, "m")
    assert git(git_repo, "count-objects") == objects


def test_existing_ref_is_never_overwritten(git_repo):
    r = str(git_repo)
    ref = ref_name("proj", 1)
    first = snapshot(r, ref, "one")
    write(os.path.join(r, "README.md"), "changed\n")
    with pytest.raises(SnapshotError, match="already exists"):
        snapshot(r, ref, "two")
    assert git(r, "rev-parse", ref).strip() == first["commit"]
    # unique: a taken name makes the next free one, and the taken ones stay where they were.
    two = snapshot(r, ref, "two", unique=True)
    three = snapshot(r, ref, "three", unique=True)
    assert (two["ref"], three["ref"]) == (ref + "-2", ref + "-3")
    assert git(r, "rev-parse", ref).strip() == first["commit"]
    assert git(r, "rev-parse", ref + "-2").strip() == two["commit"] != three["commit"]


def test_unique_names_under_concurrent_snapshots(git_repo):
    """Eight processes publish the same checkpoint name at once: eight refs, none moved."""
    r = str(git_repo)
    code = ("import sys, json; from cc_continuity.snapshot.worktree import snapshot; "
            "print(json.dumps(snapshot(sys.argv[1], 'refs/continuity/k/cp-001', sys.argv[2], unique=True)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, r, "writer %d" % i], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(8)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    refs = {res["ref"]: res["commit"] for res in results}
    assert len(refs) == 8
    for ref, commit in refs.items():
        assert git(r, "rev-parse", ref).strip() == commit


S = ["%d%d%d%d0000-0000-4000-8000-00000000000%d" % (i, i, i, i, i) for i in range(1, 9)]


def refs(drv):
    out = drv.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/continuity").decode()
    return dict(line.split() for line in out.splitlines())


def rotate(lad, sid, marker):
    """One session from start to a verified checkpoint (the ladder's rungs); returns the manifest's git record."""
    drv = lad.drv
    with open(os.path.join(drv.root, "work.txt"), "w") as f:
        f.write("state of the work: %s\n" % marker)  # every snapshot has its own tree
    lad.work(sid=sid, prompts=("work on %s" % marker,))
    out = lad.request_handoff(sid).request
    assert out and out["decision"] == "block", out
    lad.verify(handoff_text(config.HANDOFF_SECTIONS, body="Details: %s, see `README.md`." % marker), sid, reply=None)
    assert drv.state(sid)["state"] == session.AWAITING_MANUAL_CLEAR
    git = drv.checkpoint_file("manifest.json", sid)["git"]
    assert git.get("git") is True, git
    return git


def assert_kept(drv, before):
    now = refs(drv)
    for ref, commit in before.items():
        assert now.get(ref) == commit, "%s was moved or deleted: %s -> %s" % (ref, commit, now.get(ref))


README = {"README.md": "hello\n"}


def test_two_worktrees_with_the_same_name_keep_their_own_refs(make_project, tmp_path):
    a = make_project(tmp_path / "a" / "proj", README)
    first = rotate(a, S[0], "worktree a")
    wt = tmp_path / "b" / "proj"
    a.drv.git("worktree", "add", "-q", "-b", "other", str(wt))
    b = make_project(wt, {}, git=False)
    assert b.drv.project.slug == a.drv.project.slug == "proj" and b.drv.project.key != a.drv.project.key
    before = refs(a.drv)
    second = rotate(b, S[1], "worktree b")
    assert second["ref"] != first["ref"]
    assert_kept(a.drv, before)
    assert set(refs(a.drv)) == {first["ref"], second["ref"]}
    assert a.drv.project.key in first["ref"] and b.drv.project.key in second["ref"]


def test_a_purged_state_dir_restarting_the_counter_does_not_replace_cp_001(make_project):
    lad = make_project(files=README)
    drv = lad.drv
    first = rotate(lad, S[0], "before the purge")
    assert first["ref"].endswith("/cp-001")
    before = refs(drv)
    shutil.rmtree(drv.cc_home)  # what `uninstall --purge` leaves; the repository keeps its refs
    again = rotate(lad, S[1], "after the purge")
    assert drv.state(S[1])["checkpoint"]["id"] == "cp-001"  # the counter did start again
    assert again["ref"] == first["ref"] + "-2"
    assert_kept(drv, before)
    shutil.rmtree(drv.cc_home)
    third = rotate(lad, S[2], "second purge")
    assert third["ref"] == first["ref"] + "-3"
    assert len(set(refs(drv).values())) == 3


def test_a_moved_project_keeps_the_refs_it_had(make_project, tmp_path):
    old = make_project(tmp_path / "x" / "proj", README)
    first = rotate(old, S[0], "at the old path")
    before = refs(old.drv)
    os.makedirs(tmp_path / "y")
    shutil.move(old.drv.root, str(tmp_path / "y" / "proj"))
    moved = make_project(tmp_path / "y" / "proj", {}, git=False)
    second = rotate(moved, S[1], "at the new path")
    assert second["ref"] != first["ref"]
    assert_kept(moved.drv, before)
    # ... and moved back, where the old state dir's counter still knows cp-001 is taken.
    shutil.move(moved.drv.root, old.drv.root)
    third = rotate(old, S[2], "back again")
    assert third["ref"] not in (first["ref"], second["ref"])
    assert_kept(old.drv, dict(before, **{second["ref"]: refs(old.drv)[second["ref"]]}))


def test_a_foreign_ref_in_the_way_is_left_alone(make_project):
    """A ref someone made at our name (by hand, another tool) is not ours to move either."""
    lad = make_project(files=README)
    drv = lad.drv
    head = drv.git("rev-parse", "HEAD").decode().strip()
    mine = "refs/continuity/%s/cp-001" % drv.project.key
    subprocess.run(["git", "update-ref", mine, head], cwd=drv.root, check=True)
    git = rotate(lad, S[0], "foreign ref present")
    assert git["ref"] == mine + "-2"
    assert refs(drv)[mine] == head
