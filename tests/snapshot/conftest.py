"""Fixtures the snapshot tests share."""

import os
import time

import pytest

from helpers.gitrepo import commit_all, git, write


@pytest.fixture
def busy_repo(git_repo):
    """A repo in the middle of work: staged, unstaged, deleted, untracked, ignored, a stash."""
    r = str(git_repo)
    write(os.path.join(r, ".gitignore"), "*.log\nbuild/\n")
    write(os.path.join(r, "tracked.txt"), "v1\n")
    write(os.path.join(r, "doomed.txt"), "bye\n")
    write(os.path.join(r, "run.sh"), "#!/bin/sh\necho hi\n")
    os.chmod(os.path.join(r, "run.sh"), 0o755)
    os.symlink("README.md", os.path.join(r, "link"))
    commit_all(r, "second")
    git(r, "branch", "feature")
    write(os.path.join(r, "tracked.txt"), "stashed change\n")
    git(r, "stash", "-q")
    write(os.path.join(r, "tracked.txt"), "v2 unstaged\n")
    write(os.path.join(r, "staged.txt"), "staged\n")
    git(r, "add", "staged.txt")
    os.remove(os.path.join(r, "doomed.txt"))
    write(os.path.join(r, "notes", "deep", "untracked.md"), "untracked\n")
    write(os.path.join(r, "debug.log"), "ignored\n")
    write(os.path.join(r, "build", "out.bin"), b"\0ignored")
    # Stat-dirty but unchanged: a plain `git status` would rewrite the real index.
    os.utime(os.path.join(r, "README.md"), (time.time() + 5, time.time() + 5))
    return r
