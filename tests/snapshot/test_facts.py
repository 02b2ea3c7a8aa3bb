"""The machine's git facts (snapshot/facts.py) against real repositories: bounded, never writing the user's
index, errors instead of exceptions, and the same facts through a refreshed copy of the user's index."""

import json
import os
import stat
import time

import pytest

from cc_continuity.snapshot.gitrun import SnapshotError
from cc_continuity.snapshot.refs import ref_name
from cc_continuity.snapshot.worktree import snapshot
from cc_continuity.snapshot.facts import git_facts
from helpers.gitrepo import commit_all, git, user_state, write


def test_git_facts_reports_and_bounds_without_writing(git_repo):
    r = str(git_repo)
    for i in range(4):
        write(os.path.join(r, "f%d.txt" % i), "line\n" * (i + 1))
        commit_all(r, "commit %d " % i + "x" * 300)
    write(os.path.join(r, "f0.txt"), "line\nadded\nadded\n")        # +2 -0
    git(r, "mv", "f1.txt", "renamed.txt")
    write(os.path.join(r, "new.txt"), "new\n")
    os.utime(os.path.join(r, "f2.txt"), (time.time() + 5, time.time() + 5))
    before = user_state(r)

    facts = git_facts(r, max_commits=2, max_files=2)

    assert user_state(r) == before
    assert facts["git"] is True and facts["errors"] == []
    assert facts["branch"] == "main" and facts["detached"] is False
    assert facts["head"] == git(r, "rev-parse", "HEAD").strip()
    assert facts["dirty_count"] == 3 and facts["dirty_truncated"] is True
    assert len(facts["dirty"]) == 2
    full = {d["path"]: d for d in git_facts(r)["dirty"]}
    assert full["f0.txt"]["status"] == ".M" and full["new.txt"]["status"] == "??"
    assert full["renamed.txt"]["status"] == "R." and full["renamed.txt"]["from"] == "f1.txt"
    stat = git_facts(r)["diffstat"]
    assert (stat["files"], stat["insertions"], stat["deletions"]) == (3, 4, 2)
    assert [c["subject"][:8] for c in facts["recent_commits"]] == ["commit 3", "commit 2"]
    assert all(len(c["subject"]) <= 200 for c in facts["recent_commits"])
    assert json.loads(json.dumps(facts)) == facts


def test_corrupt_index_gives_errors_not_exceptions(git_repo):
    r = str(git_repo)
    head = git(r, "rev-parse", "HEAD").strip()
    write(os.path.join(r, ".git", "index"), b"DIRC garbage")
    facts = git_facts(r)
    assert facts["git"] is True and facts["errors"]
    assert facts["head"] == head and facts["branch"] == "main"
    with pytest.raises(SnapshotError, match="index"):
        snapshot(r, ref_name("proj", 1), "m")
    assert git(r, "for-each-ref", "refs/continuity/") == ""


def test_facts_through_a_refreshed_copy_of_the_users_index_are_the_same_facts(busy_repo, tmp_path):
    copy = str(tmp_path / "state" / "facts.index")
    later = time.time() - 3600
    for d, _dirs, files in os.walk(busy_repo):
        if "/.git" not in d + "/":
            for f in files:
                if not os.path.islink(os.path.join(d, f)):
                    os.utime(os.path.join(d, f), (later, later))  # the user's stat cache is stale now
    before = user_state(busy_repo)
    plain = git_facts(busy_repo)
    via = git_facts(busy_repo, index=copy)
    assert via == plain
    assert user_state(busy_repo) == before
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
    time.sleep(1.1)  # past the second it was written in: no entry is racily clean any more
    assert git_facts(busy_repo, index=copy) == plain
    refreshed = os.stat(copy).st_mtime_ns
    assert git_facts(busy_repo, index=copy) == plain
    assert os.stat(copy).st_mtime_ns == refreshed  # nothing left to refresh: status read no file again
    git(busy_repo, "add", "notes")  # the user's index changes: the copy follows it
    assert git_facts(busy_repo, index=copy) == git_facts(busy_repo)
