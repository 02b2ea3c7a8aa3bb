"""The work-tree snapshot (snapshot/worktree.py: the build, the commit, the listing) against real git
repositories in temp dirs.

The central promise is non-invasiveness, so most tests capture everything the
user owns (every file under .git except new objects and our own refs, every
ref, the stash, every working file) before and after and demand byte equality.
"""

import os
import shutil
import tempfile
import time

import pytest

from cc_continuity.snapshot.facts import git_facts
from cc_continuity.snapshot.gitrun import SnapshotError
from cc_continuity.snapshot.refs import ref_name
from cc_continuity.snapshot.worktree import list_snapshots, snapshot
from helpers.gitrepo import commit_all, git, tree_of, user_state, walk, write


def test_snapshot_captures_work_tree_and_leaves_user_state_byte_identical(busy_repo):
    r = busy_repo
    before = user_state(r)
    assert {"HEAD", "index", "config"} <= set(before["gitdir"]) and before["stash"]
    head = git(r, "rev-parse", "HEAD").strip()

    res = snapshot(r, ref_name("proj", 1), "Handoff: fix the parser\nsecond line\n")

    assert user_state(r) == before
    assert res["git"] is True and res["parent"] == head and res["skipped_large"] == []
    assert git(r, "rev-parse", "refs/continuity/proj/cp-001").strip() == res["commit"]
    assert git(r, "rev-parse", res["commit"] + "^{tree}").strip() == res["tree"]
    assert git(r, "rev-parse", res["commit"] + "^").strip() == head
    assert git(r, "log", "-1", "--format=%B", res["commit"]).startswith(
        "Handoff: fix the parser\nsecond line\n")
    tree = tree_of(r, res["commit"])
    assert tree["tracked.txt"][1] == b"v2 unstaged\n"
    assert tree["staged.txt"][1] == b"staged\n"
    assert tree["notes/deep/untracked.md"][1] == b"untracked\n"
    assert tree["run.sh"][0] == "100755" and tree["link"] == ("120000", b"README.md")
    assert "doomed.txt" not in tree and "debug.log" not in tree and "build/out.bin" not in tree
    assert res["files"] == len(tree)
    assert res["bytes"] == sum(len(c) for _, c in tree.values())


def test_snapshot_runs_no_hooks_and_leaves_no_temp_index(busy_repo, tmp_path, monkeypatch):
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    marker = tmp_path / "hook-ran"
    git(busy_repo, "update-ref", "refs/continuity/df", "HEAD")  # for the failure case below
    hooks = os.path.join(busy_repo, ".git", "hooks")
    for name in ("post-index-change", "reference-transaction", "pre-commit", "post-commit",
                 "pre-auto-gc", "post-checkout", "fsmonitor-watchman"):
        write(os.path.join(hooks, name), "#!/bin/sh\necho %s >> '%s'\n" % (name, marker))
        os.chmod(os.path.join(hooks, name), 0o755)
    git(busy_repo, "update-index", "--refresh", check=False)  # prove the hooks are live
    assert marker.exists()
    marker.unlink()
    before = user_state(busy_repo)

    snapshot(busy_repo, ref_name("proj", 1), "m")
    assert not marker.exists()
    assert list(private_tmp.iterdir()) == []

    # A failing snapshot (ref D/F conflict) also cleans up and reports git's stderr.
    with pytest.raises(SnapshotError, match="cannot lock ref"):
        snapshot(busy_repo, "refs/continuity/df/cp-001", "m")
    assert list(private_tmp.iterdir()) == []
    assert not marker.exists()
    assert user_state(busy_repo) == before


def test_files_over_the_cap_are_skipped_and_listed(git_repo):
    r = str(git_repo)
    write(os.path.join(r, "data.bin"), b"x" * 100)
    write(os.path.join(r, ".gitignore"), "*.huge\n")
    commit_all(r, "data")
    write(os.path.join(r, "data.bin"), b"y" * 5000)       # tracked, grew past the cap
    write(os.path.join(r, "big.bin"), b"z" * 4000)        # untracked, past the cap
    write(os.path.join(r, "small.txt"), "small\n")
    write(os.path.join(r, "model.huge"), b"w" * 9000)     # ignored: not even considered
    write(os.path.join(r, "edge.bin"), b"e" * 1000)       # exactly at the cap: kept
    before = user_state(r)

    res = snapshot(r, ref_name("proj", 1), "m", max_file_bytes=1000)

    assert user_state(r) == before
    assert sorted(res["skipped_large"], key=lambda d: d["path"]) == [
        {"path": "big.bin", "size": 4000, "tracked": False},
        {"path": "data.bin", "size": 5000, "tracked": True},
    ]
    tree = tree_of(r, res["commit"])
    assert tree["data.bin"][1] == b"x" * 100               # the committed version is kept
    assert "big.bin" not in tree and "model.huge" not in tree
    assert tree["small.txt"][1] == b"small\n" and tree["edge.bin"][1] == b"e" * 1000
    assert "Continuity-Skipped-Large: 2" in git(r, "log", "-1", "--format=%B", res["commit"])


def test_racily_clean_change_is_captured(git_repo):
    """A same-size rewrite in the second the index was written is still seen."""
    r = str(git_repo)
    git(r, "config", "core.trustctime", "false")
    path, index = os.path.join(r, "racy.txt"), os.path.join(r, ".git", "index")
    t0 = int(time.time()) - 100
    write(path, "aaaa")
    os.utime(path, (t0, t0))
    git(r, "add", "racy.txt")
    write(path, "bbbb")                     # same size, same inode, same mtime
    os.utime(path, (t0, t0))
    os.utime(index, (t0 - 1, t0 - 1))       # entry mtime >= index mtime: racily clean
    assert git(r, "status", "--porcelain") == "AM racy.txt\n"

    res = snapshot(r, ref_name("proj", 1), "racy")
    assert tree_of(r, res["commit"])["racy.txt"][1] == b"bbbb"


def test_repo_without_commits(tmp_path):
    r = str(tmp_path / "fresh")
    os.mkdir(r)
    git(r, "init", "-q", "-b", "main")
    write(os.path.join(r, "a.txt"), "a\n")
    before = user_state(r)
    assert "index" not in before["gitdir"]

    first = snapshot(r, ref_name("fresh", 1), "first")     # no index file at all yet
    assert user_state(r) == before
    assert not os.path.exists(os.path.join(r, ".git", "index"))

    git(r, "add", "a.txt")
    write(os.path.join(r, "b.txt"), "b\n")
    before = user_state(r)
    second = snapshot(r, ref_name("fresh", 2), "second")
    assert user_state(r) == before

    for res in (first, second):
        assert res["parent"] is None
        assert git(r, "rev-list", "--parents", "-n", "1", res["commit"]).split() == [res["commit"]]
    assert set(tree_of(r, first["commit"])) == {"a.txt"}
    assert set(tree_of(r, second["commit"])) == {"a.txt", "b.txt"}
    assert git(r, "rev-parse", "-q", "--verify", "HEAD", check=False) == ""
    facts = git_facts(r)
    assert facts["head"] is None and facts["branch"] == "main" and facts["recent_commits"] == []
    assert facts["diffstat"]["files"] == 1 and facts["diffstat"]["insertions"] == 1
    assert facts["errors"] == []


def test_detached_head(git_repo):
    r = str(git_repo)
    first = git(r, "rev-parse", "HEAD").strip()
    write(os.path.join(r, "later.txt"), "later\n")
    commit_all(r, "later")
    git(r, "checkout", "-q", "--detach", first)
    write(os.path.join(r, "README.md"), "edited while detached\n")
    before = user_state(r)

    res = snapshot(r, ref_name("proj", 1), "detached")

    assert user_state(r) == before
    assert res["parent"] == first
    assert tree_of(r, res["commit"])["README.md"][1] == b"edited while detached\n"
    facts = git_facts(r)
    assert facts["detached"] is True and facts["branch"] is None and facts["head"] == first


def test_repo_with_submodule_records_gitlink_without_recursing(git_repo, tmp_path):
    src = str(tmp_path / "libsrc")
    os.mkdir(src)
    git(src, "init", "-q", "-b", "main")
    write(os.path.join(src, "lib.c"), "int x;\n")
    commit_all(src, "lib")
    r = str(git_repo)
    git(r, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
    git(r, "commit", "-q", "-m", "add sub")
    sub = os.path.join(r, "sub")
    write(os.path.join(sub, "lib.c"), "int y;\n")
    commit_all(sub, "moved on inside the submodule")
    write(os.path.join(sub, "scratch.txt"), "uncommitted in sub\n")
    sub_head = git(sub, "rev-parse", "HEAD").strip()
    before = user_state(r)
    assert any(p.startswith("modules/sub/") for p in before["gitdir"])

    res = snapshot(r, ref_name("proj", 1), "with sub")
    facts = git_facts(r)

    assert user_state(r) == before
    assert {"path": "sub", "status": ".M"} in facts["dirty"]
    tree = tree_of(r, res["commit"])
    assert tree["sub"] == ("160000", sub_head)     # the submodule's checked-out commit
    assert ".gitmodules" in tree
    assert not any(p.startswith("sub/") for p in tree)


def test_non_git_directory_is_not_an_error(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.txt").write_text("x")
    assert snapshot(str(plain), ref_name("plain", 1), "m") == {"git": False, "reason": "no git"}
    assert list_snapshots(str(plain)) == []
    assert git_facts(str(plain))["git"] is False
    assert sorted(os.listdir(plain)) == ["f.txt"]
    assert snapshot(str(tmp_path / "missing"), ref_name("x", 1), "m")["git"] is False
    assert git_facts(str(tmp_path / "missing"))["git"] is False


def test_snapshot_from_a_subdirectory_seeds_from_the_real_index(git_repo):
    r = str(git_repo)
    write(os.path.join(r, "data.bin"), b"h" * 100)
    commit_all(r, "data")
    write(os.path.join(r, "data.bin"), b"s" * 200)
    git(r, "add", "data.bin")                          # staged version: only in the index
    write(os.path.join(r, "data.bin"), b"w" * 5000)    # then grown past the cap
    deep = os.path.join(r, "a", "b")
    os.makedirs(deep)
    before = user_state(r)

    res = snapshot(deep, ref_name("proj", 1), "from below", max_file_bytes=1000)

    assert user_state(r) == before
    assert res["root"] == os.path.realpath(r)
    tree = tree_of(r, res["commit"])
    assert tree["data.bin"][1] == b"s" * 200 and "README.md" in tree


def test_linked_worktree_seeds_from_its_own_index(git_repo, tmp_path):
    r = str(git_repo)
    write(os.path.join(r, "data.bin"), b"h" * 100)
    commit_all(r, "data")
    wt = str(tmp_path / "wt")
    git(r, "worktree", "add", "-q", "-b", "side", wt)
    write(os.path.join(wt, "data.bin"), b"s" * 200)
    git(wt, "add", "data.bin")                          # staged version, only in wt's index
    write(os.path.join(wt, "data.bin"), b"w" * 5000)    # then grown past the cap
    os.makedirs(os.path.join(wt, "deep"))
    before, before_main = user_state(wt), user_state(r)

    res = snapshot(os.path.join(wt, "deep"), ref_name("wt", 1), "m", max_file_bytes=1000)

    assert user_state(wt) == before and user_state(r) == before_main
    assert res["root"] == os.path.realpath(wt)
    assert tree_of(r, res["commit"])["data.bin"][1] == b"s" * 200
    assert git_facts(wt)["branch"] == "side"


def test_two_snapshots_two_refs_listed_newest_first(git_repo):
    r = str(git_repo)
    t0 = time.time()
    one = snapshot(r, ref_name("proj", 1), "first checkpoint\nmore")
    write(os.path.join(r, "new.txt"), "n" * 321)
    two = snapshot(r, ref_name("proj", 2), "second checkpoint")
    git(r, "update-ref", "refs/continuity/other/cp-001", "HEAD")  # not made by us: no trailer
    t1 = time.time()

    assert one["commit"] != two["commit"]
    rows = list_snapshots(r)
    assert [row["ref"] for row in rows[:2]] == [two["ref"], one["ref"]]
    mine = {row["ref"]: row for row in rows}
    assert mine[one["ref"]]["commit"] == one["commit"] and mine[two["ref"]]["commit"] == two["commit"]
    assert mine[one["ref"]]["message"] == "first checkpoint"
    assert mine[two["ref"]]["size"] == two["bytes"] == one["bytes"] + 321
    assert mine[two["ref"]]["files"] == two["files"] == 2
    for row in (mine[one["ref"]], mine[two["ref"]]):
        assert int(t0) - 2 <= row["created"] <= t1 + 2
    assert mine["refs/continuity/other/cp-001"]["size"] == len("hello\n")
    assert [row["ref"] for row in list_snapshots(r, prefix="refs/continuity/other/")] == [
        "refs/continuity/other/cp-001"]


def test_snapshot_restores_into_a_copy(busy_repo, tmp_path):
    r = busy_repo
    res = snapshot(r, ref_name("proj", 1), "restore me")
    copy = str(tmp_path / "copy")
    shutil.copytree(r, copy, symlinks=True)
    for name in os.listdir(copy):
        if name != ".git":
            path = os.path.join(copy, name)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    git(copy, "checkout", res["commit"], "--", ".")

    expected = {p: d for p, d in walk(r, skip=(".git",)).items()
                if not p.endswith(".log") and not p.startswith("build")}
    assert walk(copy, skip=(".git",)) == expected


def test_awkward_file_names(git_repo):
    r = str(git_repo)
    names = ["with space.txt", "ünïcødé ☃.txt", "-leading-dash.txt", "new\nline.txt", "tab\there"]
    for name in names:
        write(os.path.join(r, name), "v1 " + name)
    commit_all(r, "awkward")
    for name in names[:3]:
        write(os.path.join(r, name), "v2 " + name)
    write(os.path.join(r, "-big ☃ file.bin"), b"B" * 2048)
    write(os.path.join(r, "sub dir", "-x ü.txt"), "nested\n")
    before = user_state(r)

    res = snapshot(r, ref_name("proj", 1), "names", max_file_bytes=1024)

    assert user_state(r) == before
    tree = tree_of(r, res["commit"])
    for name in names[:3]:
        assert tree[name][1] == ("v2 " + name).encode()
    assert tree["new\nline.txt"][1] == b"v1 new\nline.txt"
    assert tree["sub dir/-x ü.txt"][1] == b"nested\n"
    assert res["skipped_large"] == [{"path": "-big ☃ file.bin", "size": 2048, "tracked": False}]
    dirty = {d["path"] for d in git_facts(r)["dirty"]}
    assert set(names[:3]) | {"-big ☃ file.bin", "sub dir/"} == dirty


def test_untracked_files_can_be_left_out(git_repo):
    r = str(git_repo)
    write(os.path.join(r, "README.md"), "tracked change\n")
    write(os.path.join(r, "notes.txt"), "password=hunter2-local-only\n")
    res = snapshot(r, ref_name("proj", 1), "tracked only", untracked=False)
    names = git(r, "ls-tree", "-r", "--name-only", res["commit"]).split()
    assert names == ["README.md"]
    assert git(r, "show", res["commit"] + ":README.md") == "tracked change\n"
    full = snapshot(r, ref_name("proj", 2), "everything")
    assert "notes.txt" in git(r, "ls-tree", "-r", "--name-only", full["commit"]).split()


def test_fallback_identity_without_touching_config(git_repo, monkeypatch):
    r = str(git_repo)
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "XDG_CONFIG_HOME", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    before = user_state(r)
    res = snapshot(r, ref_name("proj", 1), "anon")
    assert user_state(r) == before
    who = "%an <%ae>|%cn <%ce>"
    assert git(r, "log", "-1", "--format=" + who, res["commit"]).strip() == (
        "cc-continuity <cc-continuity@localhost>|cc-continuity <cc-continuity@localhost>")

    git(r, "config", "user.name", "Real Person")
    git(r, "config", "user.email", "real@example.invalid")
    res = snapshot(r, ref_name("proj", 2), "named")
    assert git(r, "log", "-1", "--format=%an <%ae>", res["commit"]).strip() == (
        "Real Person <real@example.invalid>")
