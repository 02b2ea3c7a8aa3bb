"""Issue 10: a mirror push carries every snapshot, untracked files included.

Against real repositories: ``git push --mirror`` really sends refs/continuity/* with an
untracked notes file; ``doctor`` says so for a remote configured to mirror (or whose push
refspec covers refs/*) and not for an ordinary one; ``snapshot_untracked: false`` keeps
untracked files out of the snapshot (and turns doctor's warning into a note).
"""

import os
import subprocess

import pytest

from cc_continuity import config
from cc_continuity.snapshot import worktree
from cc_continuity.snapshot.refs import ref_name
from cc_continuity.doctor import system
from cc_continuity.hosts import checkup

SECRET = "password=hunter2-local-only"


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=str(repo), check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(git_repo):
    (git_repo / "notes.txt").write_text(SECRET + "\n")  # untracked, not ignored
    return git_repo


def mirror_check(repo):
    return system.check_mirror(checkup.Context(cwd=str(repo)))


def test_a_mirror_push_carries_the_snapshots_and_untracked_files(repo, tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    snap = worktree.snapshot(str(repo), ref_name("proj-0123456789", 1), "cp-001", unique=True)
    git(repo, "push", "-q", "--mirror", str(bare))
    assert snap["ref"] in git(bare, "for-each-ref", "--format=%(refname)")
    assert git(bare, "show", snap["ref"] + ":notes.txt").strip() == SECRET
    # snapshot_untracked: false -> the next snapshot has only tracked files
    tracked = worktree.snapshot(str(repo), ref_name("proj-0123456789", 2), "cp-002", unique=True,
                               untracked=False)
    git(repo, "push", "-q", "--mirror", str(bare))
    assert "notes.txt" not in git(bare, "ls-tree", "-r", "--name-only", tracked["ref"]).split()


@pytest.mark.parametrize("setup,red", [
    (["remote", "add", "--mirror=push", "backup", "/nowhere.git"], True),
    (["config", "--add", "remote.origin.push", "+refs/*:refs/*"], True),
    (["config", "--add", "remote.origin.push", "refs/continuity/*:refs/continuity/*"], True),
    (["config", "--add", "remote.origin.push", "refs/heads/*:refs/heads/*"], False),
    (["config", "--add", "remote.origin.push", ":"], False),
    (None, False),
])
def test_doctor_warns_about_a_remote_that_pushes_the_snapshots(repo, setup, red):
    git(repo, "remote", "add", "origin", "/nowhere-origin.git")
    if setup:
        git(repo, *setup)
    result = mirror_check(repo)
    assert result.ok is (not red), result
    if red:
        assert "refs/continuity" in result.detail and "untracked" in result.detail
        assert "snapshot_untracked" in result.fix and "^refs/continuity/*" in result.fix


def test_a_negative_refspec_or_snapshot_untracked_false_calms_doctor(repo):
    git(repo, "remote", "add", "origin", "/nowhere-origin.git")
    git(repo, "config", "--add", "remote.origin.push", "+refs/*:refs/*")
    assert not mirror_check(repo).ok
    git(repo, "config", "--add", "remote.origin.push", "^refs/continuity/*")
    assert mirror_check(repo).ok
    git(repo, "remote", "add", "--mirror=push", "backup", "/nowhere.git")
    assert not mirror_check(repo).ok
    config.update_global({"snapshot_untracked": False})
    result = mirror_check(repo)
    assert result.ok and "tracked files only" in result.detail


def test_the_checkpoint_path_honours_snapshot_untracked(make_project):
    """Through the rotation's own steps (the ladder, in-process): the setting reaches worktree."""
    from helpers.hookdriver import handoff_text

    lad = make_project(files={"README.md": "hello\n"})
    drv = lad.drv
    with open(os.path.join(drv.root, "notes.txt"), "w") as f:
        f.write(SECRET + "\n")
    drv.config(snapshot_untracked=False)
    sid = lad.S1
    lad.work(sid=sid, prompts=()).request_handoff(sid)
    lad.verify(handoff_text(config.HANDOFF_SECTIONS, body="Details of the work so far: see `README.md`."), sid,
               reply=None)
    ref = drv.checkpoint_file("manifest.json", sid)["git"]["ref"]
    assert drv.git("ls-tree", "-r", "--name-only", ref).decode().split() == ["README.md"]
