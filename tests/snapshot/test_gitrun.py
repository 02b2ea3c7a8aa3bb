"""The snapshot's git runner (snapshot/gitrun.py). Issue 22: a snapshot runs no program the repository defines.

The repository's ``.git/config`` (or a file it includes) names a program for each key git
would run one for; every one of them writes a marker.  For each key the value git sees in
a snapshot's calls is the neutral one (this fails for a key we stop overriding), and a
snapshot, an incremental one, ``git_facts`` and ``changed_since`` over changed, untracked,
staged and filtered files leave no marker.  A filtered path (git-lfs style) is stored as
its index blob while it is unchanged, and raw once it changed.
"""

import os
import subprocess

import pytest

from cc_continuity import gitrun as profiles
from cc_continuity.snapshot import drift, facts, gitrun, worktree
from cc_continuity.snapshot.indexes import PrivateIndex

# key -> the value our calls must give it (None: unset, an empty list of helpers)
NEUTRAL = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "diff.external": "",
    "core.sshCommand": "false",
    "core.askPass": "false",
    "credential.helper": "",
    "gpg.program": "false",
    "core.editor": "false",
    "core.pager": "cat",
    "filter.evil.clean": "",
    "filter.evil.smudge": "",
    "filter.evil.process": "",
    "filter.evil.required": "false",
    "diff.evil.textconv": "",
    "diff.evil.command": "",
    "filter.we=ird.clean": "",  # a driver name -c could not carry
}


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout.decode()


@pytest.fixture
def hostile(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "ran"
    prog = tmp_path / "prog"
    prog.write_text("#!/bin/sh\necho \"$0 $*\" >> %s\ncat\n" % marker)
    prog.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("reference-transaction", "post-index-change", "pre-commit", "post-commit"):
        (hooks / name).write_text("#!/bin/sh\necho hook %s >> %s\n" % (name, marker))
        (hooks / name).chmod(0o755)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "u@example.com")
    git(repo, "config", "user.name", "u")
    (repo / "a.txt").write_text("one\n")
    (repo / "big.bin").write_text("pointer-like content\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    # Only now the traps (the setup above must not trip them).
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.bin filter=we=ird\n")
    for key, _ in NEUTRAL.items():
        value = str(hooks) if key == "core.hooksPath" else "true" if key.endswith(".required") else str(prog)
        git(repo, "config", "--add" if key == "credential.helper" else "--replace-all", key, value)
    return repo, marker


def test_each_key_is_neutral_in_a_snapshots_git_calls(hostile):
    repo, _ = hostile
    for key, want in NEUTRAL.items():
        out = gitrun.git(["config", "--get-all", key], str(repo))
        got = out.stdout.decode().splitlines()
        # (a list key such as credential.helper: an empty entry resets it, so it must come last)
        assert got and got[-1] == want, (key, got)


def test_snapshots_and_facts_run_no_repository_program(hostile, tmp_path):
    repo, marker = hostile
    (repo / "a.txt").write_text("two\n")             # changed, tracked, filtered
    (repo / "new.txt").write_text("untracked\n")     # untracked, filtered
    (repo / "staged.txt").write_text("staged\n")
    subprocess.run(["git", "-c", "filter.evil.clean=cat", "-c", "filter.evil.required=false", "add", "staged.txt"],
                   cwd=repo, check=True, env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1"))
    marker.unlink(missing_ok=True)  # (that add ran the hooks and maybe the process filter: ours must not)
    index = str(tmp_path / "private.index")
    first = worktree.snapshot(repo, "refs/continuity/t/1", "one", index=index)
    (repo / "a.txt").write_text("three\n")
    second = worktree.snapshot(repo, "refs/continuity/t/2", "two", index=index)
    facts.git_facts(repo)
    drift.changed_since(repo, first["commit"])
    assert not marker.exists(), marker.read_text()
    # The changed filtered file is stored raw; the unchanged filtered file keeps its index blob.
    assert git(repo, "show", "%s:a.txt" % second["commit"]) == "three\n"
    assert git(repo, "rev-parse", "%s:big.bin" % second["commit"]) == git(repo, "rev-parse", ":big.bin")
    assert git(repo, "show", "%s:new.txt" % second["commit"]) == "untracked\n"


def test_user_config_entries_already_in_the_environment_are_kept(hostile, monkeypatch):
    repo, _ = hostile
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "from-env")
    profiles._drivers_of.clear()
    assert gitrun.git(["config", "user.name"], str(repo)).stdout.decode().strip() == "from-env"
    assert gitrun.git(["config", "filter.evil.clean"], str(repo)).stdout.decode().strip() == ""


def test_the_private_index_is_0600_even_when_the_snapshot_is_killed_before_its_chmod(tmp_path, monkeypatch):
    """A kill between git's write and close()'s chmod: simulated by a close() that never runs."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a").write_text("a\n")
    index = tmp_path / "state" / "snapshot.index"
    index.parent.mkdir(mode=0o700)
    monkeypatch.setattr(PrivateIndex, "close", lambda self: None)
    old = os.umask(0o022)
    try:
        worktree.snapshot(repo, "refs/continuity/t/1", "one", index=str(index))
    finally:
        os.umask(old)
    assert index.exists() and index.stat().st_mode & 0o777 == 0o600, oct(index.stat().st_mode)
