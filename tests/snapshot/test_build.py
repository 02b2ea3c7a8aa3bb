"""The private index (snapshot/build.py, snapshot/indexes.py). Issue 13, P6: the persistent private index builds exactly the tree a from-scratch snapshot builds.

The oracle is the from-scratch build, written here independently of snapshot/build.py: a byte copy of
the user's index (mtime kept), the files over the caps found with ``ls-files --modified
--others`` and excluded, ``git add -A`` (``-u`` for tracked files only), ``write-tree``.
Hypothesis plays sequences of add / modify (also same-size rewrites in the second the
index was written: racily clean) / delete / rename / chmod / symlink / file<->directory / stage / unstage /
commit / ignore / unignore / over-cap changes against a real repository, and after every
step the incremental snapshot (one private index kept across the whole sequence) must give
the oracle's tree, and list at least the oracle's skipped files.  The user's .git stays
byte-identical through all of it.
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cc_continuity.snapshot import worktree
from helpers.gitrepo import git, tree_of, user_state, write

CAP, UCAP = 600, 300
POOL = ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "x.log", "big.bin", "n/g.txt"]


def from_scratch(repo, cap=CAP, ucap=UCAP, untracked=True):
    """(tree, skipped paths) the from-scratch snapshot records, built in a throwaway index."""
    tmp = tempfile.mkdtemp(prefix="oracle-")
    try:
        index = os.path.join(tmp, "index")
        real = os.path.join(repo, ".git", "index")
        env = dict(os.environ, GIT_INDEX_FILE=index, GIT_OPTIONAL_LOCKS="0")
        if os.path.exists(real):
            seen = os.stat(real)
            shutil.copyfile(real, index)
            os.utime(index, ns=(seen.st_atime_ns, seen.st_mtime_ns))
        elif subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=repo, capture_output=True).returncode == 0:
            subprocess.run(["git", "read-tree", "HEAD"], cwd=repo, env=env, check=True)
        run = lambda *a, **kw: subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *a], cwd=repo, env=env,
                                              capture_output=True, **kw)
        others = ["--others", "--exclude-standard"] if untracked else []
        out = run("ls-files", "-z", "-t", "--modified", *others, check=True).stdout
        big = set()
        for rec in filter(None, out.split(b"\0")):
            tag, rel = rec[:2], rec[2:]
            try:
                st_ = os.lstat(os.path.join(os.fsencode(repo), rel))
            except OSError:
                continue
            limit = ucap if tag == b"? " else cap
            if stat.S_ISREG(st_.st_mode) and st_.st_size > limit:
                big.add(rel.decode())
        specs = [":(exclude,literal)" + rel for rel in sorted(big)]
        run("add", "-A" if untracked else "-u", "--ignore-errors", "--", ".", *specs)
        tree = run("write-tree", check=True).stdout.decode().strip()
        return tree, big
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def incremental(repo, index, **kw):
    res = worktree.snapshot(repo, "refs/continuity/t/cp-001", "m", unique=True, max_file_bytes=CAP,
                           max_untracked_bytes=UCAP, index=index, **kw)
    return res


def tree_files(repo, tree):
    return tree_of(repo, tree)


# -- the operations ---------------------------------------------------------------------------
def _path(repo, rel):
    return os.path.join(repo, rel)


def _clear(repo, rel):
    """Make room for a file at ``rel``: a file in the way of a parent dir, or a dir at the path, goes."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        p = _path(repo, "/".join(parts[:i]))
        if os.path.lexists(p) and not os.path.isdir(p) or os.path.islink(p):
            os.remove(p)
    p = _path(repo, rel)
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.remove(p)


def op_write(repo, rel, size, seed):
    _clear(repo, rel)
    write(_path(repo, rel), (("%s:%d;" % (rel, seed)) * (size // 8 + 1))[:size])


def op_same_size(repo, rel, seed):
    """A rewrite with the same size and inode, usually in the second the private index was written:
    only git's racy-clean check sees it.  (The mtime is the write's own: a rewrite that puts the old
    mtime back within one ctime second is invisible to any stat cache, the user's own as well.)"""
    p = _path(repo, rel)
    if not os.path.isfile(p) or os.path.islink(p):
        return
    with open(p, "rb") as f:
        data = f.read()
    if not data:
        return
    new = bytes([(data[0] + 1 + seed % 7) % 256]) + data[1:]
    with open(p, "r+b") as f:
        f.write(new)


def op_delete(repo, rel):
    p = _path(repo, rel)
    if os.path.islink(p) or os.path.isfile(p):
        os.remove(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)


def op_rename(repo, rel, other):
    src = _path(repo, rel)
    if rel == other or not os.path.lexists(src) or other.startswith(rel + "/") or rel.startswith(other + "/"):
        return
    _clear(repo, other)
    os.makedirs(os.path.dirname(_path(repo, other)), exist_ok=True)
    os.rename(src, _path(repo, other))


def op_chmod(repo, rel):
    p = _path(repo, rel)
    if os.path.isfile(p) and not os.path.islink(p):
        os.chmod(p, os.stat(p).st_mode ^ 0o111)


def op_symlink(repo, rel, other):
    _clear(repo, rel)
    os.makedirs(os.path.dirname(_path(repo, rel)), exist_ok=True)
    os.symlink(other, _path(repo, rel))


def op_dir_over_file(repo, rel):
    """The file ``d`` where the directory ``d/`` was (or the other way round)."""
    top = rel.split("/")[0]
    p = _path(repo, top)
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
        write(p, "now a file\n")
    elif os.path.lexists(p):
        os.remove(p)
        write(os.path.join(p, "inner.txt"), "now a directory\n")


def op_stage(repo, rel):
    git(repo, "add", "-A", "--", rel, check=False)


def op_unstage(repo, rel):
    git(repo, "rm", "-q", "--cached", "-r", "--ignore-unmatch", "--", rel, check=False)


def op_force_add(repo, rel):
    git(repo, "add", "-f", "--", rel, check=False)


def op_commit(repo):
    git(repo, "add", "-A", check=False)
    git(repo, "commit", "-q", "--allow-empty", "-m", "step", check=False)


def op_ignore(repo, pattern):
    with open(_path(repo, ".gitignore"), "a") as f:
        f.write(pattern + "\n")


def op_unignore(repo):
    p = _path(repo, ".gitignore")
    if os.path.exists(p):
        lines = open(p).read().splitlines()
        with open(p, "w") as f:
            f.write("".join(line + "\n" for line in lines[:-1]))


def op_exclude(repo, pattern):
    """Ignore through .git/info/exclude: no path in the work tree changes."""
    p = os.path.join(repo, ".git", "info", "exclude")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "a") as f:
        f.write(pattern + "\n")


rel_ = st.sampled_from(POOL)
size_ = st.sampled_from([0, 5, 40, 290, 310, 590, 610, 2000])
OPS = st.one_of(
    st.tuples(st.just("write"), rel_, size_, st.integers(0, 50)),
    st.tuples(st.just("same_size"), rel_, st.integers(0, 50)),
    st.tuples(st.just("delete"), rel_),
    st.tuples(st.just("rename"), rel_, rel_),
    st.tuples(st.just("chmod"), rel_),
    st.tuples(st.just("symlink"), rel_, rel_),
    st.tuples(st.just("dir_over_file"), rel_),
    st.tuples(st.just("stage"), rel_),
    st.tuples(st.just("unstage"), rel_),
    st.tuples(st.just("force_add"), rel_),
    st.tuples(st.just("commit")),
    st.tuples(st.just("ignore"), st.sampled_from(["*.log", "d/e/", "b.txt", "n", "*.bin"])),
    st.tuples(st.just("unignore")),
    st.tuples(st.just("exclude"), st.sampled_from(["a.txt", "d/c.txt", "*.txt"])),
    st.tuples(st.just("snapshot")),
)


def apply(repo, op):
    name, args = op[0], op[1:]
    globals()["op_" + name](repo, *args) if name != "snapshot" else None


def new_repo():
    repo = tempfile.mkdtemp(prefix="inc-")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "core.hooksPath", "/dev/null")
    for rel in ("a.txt", "d/c.txt", "d/e/f.txt"):
        write(_path(repo, rel), "initial %s\n" % rel)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def check_step(repo, index, history):
    want_tree, want_big = from_scratch(repo)
    res = incremental(repo, index)
    got_big = {d["path"] for d in res["skipped_large"]}
    if res["tree"] != want_tree:
        diff = subprocess.run(["git", "diff-tree", "-r", "--no-renames", want_tree, res["tree"]], cwd=repo,
                              capture_output=True, text=True).stdout
        raise AssertionError("incremental tree differs from the from-scratch one after %s (%s):\n%s"
                             % (history, res["index"], diff))
    assert want_big <= got_big, (history, want_big, got_big)
    for d in res["skipped_large"]:
        assert d["size"] > (CAP if d["tracked"] else UCAP), d
    files = subprocess.run(["git", "ls-tree", "-r", "-l", "-z", res["tree"]], cwd=repo, capture_output=True,
                           check=True).stdout.split(b"\0")
    assert res["files"] == len([f for f in files if f])
    assert res["bytes"] == sum(int(f.split()[3]) for f in files if f and f.split()[3].isdigit())
    return res


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=8))
# Found by this test: the user's file replaced by a directory, that path excluded, then a file again.
# The directory is not the file, so the file stays the user's (tracked), whatever the exclude says.
@example(ops=[("dir_over_file", "a.txt"), ("exclude", "a.txt"), ("write", "a.txt", 0, 0)])
def test_incremental_tree_equals_from_scratch_after_any_changes(ops):
    repo = new_repo()
    state_dir = tempfile.mkdtemp(prefix="inc-state-")
    index = os.path.join(state_dir, "snapshot.index")
    try:
        check_step(repo, index, [])  # the first one seeds the private index
        history = []
        for op in ops:
            apply(repo, op)
            history.append(op)
            before = user_state(repo)
            res = check_step(repo, index, history)
            assert res["index"] in ("incremental", "seeded", "reseeded")
            assert user_state(repo) == before
    finally:
        shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(state_dir, ignore_errors=True)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=6))
def test_tracked_only_snapshots_follow_add_u(ops):
    repo = new_repo()
    state_dir = tempfile.mkdtemp(prefix="inc-state-")
    index = os.path.join(state_dir, "snapshot.index")
    try:
        for op in [("snapshot",)] + ops:
            apply(repo, op)
            want, _ = from_scratch(repo, untracked=False)
            res = incremental(repo, index, untracked=False)
            assert res["tree"] == want, ops
    finally:
        shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(state_dir, ignore_errors=True)


# -- the persistent index itself -----------------------------------------------------------------
@pytest.fixture
def repo(git_repo):
    r = str(git_repo)
    for i in range(30):
        write(os.path.join(r, "src", "m%02d.py" % i), "x = %d\n" % i)
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "files")
    return r


@pytest.fixture
def index(tmp_path):
    return str(tmp_path / "state" / "snapshot.index")


def test_second_snapshot_is_incremental_private_and_leaves_the_user_alone(repo, index):
    before = user_state(repo)
    first = incremental(repo, index)
    write(os.path.join(repo, "src", "m03.py"), "changed\n")
    write(os.path.join(repo, "new.txt"), "new\n")
    before = user_state(repo)
    second = incremental(repo, index)
    assert (first["index"], second["index"]) == ("seeded", "incremental")
    assert user_state(repo) == before
    assert second["tree"] == from_scratch(repo)[0]
    assert stat.S_IMODE(os.stat(os.path.dirname(index)).st_mode) == 0o700
    for p in (index, index + ".state"):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    # One file changed since: the snapshot reads that file, not the others (git's stat cache).
    write(os.path.join(repo, "src", "m04.py"), "changed too\n")
    third = incremental(repo, index)
    assert third["tree"] == from_scratch(repo)[0] and third["index"] == "incremental"


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "empty", "stale lock", "state garbage",
                                    "other repo", "objects pruned"])
def test_a_damaged_private_index_is_seeded_again(repo, index, tmp_path, damage):
    incremental(repo, index)
    write(os.path.join(repo, "src", "m05.py"), "changed\n")
    if damage == "corrupt":
        data = bytearray(open(index, "rb").read())
        data[40:60] = b"\xff" * 20
        open(index, "wb").write(bytes(data))
    elif damage == "truncated":
        data = open(index, "rb").read()
        open(index, "wb").write(data[: len(data) // 2])
    elif damage == "empty":
        open(index, "wb").close()
    elif damage == "stale lock":
        open(index + ".lock", "w").close()  # a git killed while it wrote the index
    elif damage == "state garbage":
        open(index + ".state", "w").write("{not json")
    elif damage == "other repo":
        other = str(tmp_path / "other")
        os.makedirs(other)
        git(other, "init", "-q", "-b", "main")
        write(os.path.join(other, "src", "m05.py"), "something else\n")
        write(os.path.join(other, "only-there.txt"), "x\n")
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", "other")
        other_index = str(tmp_path / "other-state" / "snapshot.index")
        incremental(other, other_index)
        shutil.copyfile(other_index, index)  # the state still names our repository
    elif damage == "objects pruned":
        write(os.path.join(repo, "untracked-once.txt"), "soon unreachable\n")
        res = incremental(repo, index)
        blob = git(repo, "rev-parse", res["commit"] + ":untracked-once.txt").strip()
        for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/continuity/").split():
            git(repo, "update-ref", "-d", ref)
        path = os.path.join(repo, ".git", "objects", blob[:2], blob[2:])
        os.chmod(path, 0o600)
        os.remove(path)  # what `git gc --prune=now` does to it
    before = user_state(repo)
    res = incremental(repo, index)
    assert user_state(repo) == before
    assert res["tree"] == from_scratch(repo)[0], damage
    assert not os.path.exists(index + ".lock")
    assert incremental(repo, index)["index"] == "incremental"


def test_concurrent_snapshots_of_one_index_are_all_correct(repo, index):
    incremental(repo, index)
    write(os.path.join(repo, "src", "m07.py"), "changed\n")
    want = from_scratch(repo)[0]
    code = ("import sys, json; from cc_continuity.snapshot import worktree; print(json.dumps(worktree.snapshot(sys.argv[1], "
            "'refs/continuity/k/cp-001', 'm', unique=True, max_file_bytes=%d, max_untracked_bytes=%d, "
            "index=sys.argv[2])))" % (CAP, UCAP))
    procs = [subprocess.Popen([sys.executable, "-c", code, repo, index], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(4)]
    import json

    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert {r["tree"] for r in results} == {want}
    assert incremental(repo, index)["index"] == "incremental"


def test_ignore_rules_outside_the_work_tree_are_followed(repo, index):
    write(os.path.join(repo, "notes.txt"), "mine\n")
    assert "notes.txt" in tree_files(repo, incremental(repo, index)["tree"])
    op_exclude(repo, "notes.txt")  # nothing in the work tree changes
    res = incremental(repo, index)
    assert "notes.txt" not in tree_files(repo, res["tree"])
    assert res["tree"] == from_scratch(repo)[0]


def test_racily_clean_change_is_captured_by_the_persistent_index(repo, index):
    git(repo, "config", "core.trustctime", "false")
    p = os.path.join(repo, "src", "m09.py")
    first = incremental(repo, index)
    st_ = os.stat(p)
    with open(p, "r+b") as f:
        f.write(b"y")  # same size, same inode
    os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    os.utime(index, ns=(st_.st_mtime_ns - 10**9, st_.st_mtime_ns - 10**9))  # entry mtime >= index mtime
    res = incremental(repo, index)
    assert tree_files(repo, res["tree"])["src/m09.py"][1] == b"y = 9\n"
    assert res["tree"] != first["tree"]


def test_sparse_checkout_entries_stay_as_the_user_has_them(repo, index):
    incremental(repo, index)
    git(repo, "sparse-checkout", "set", "--no-cone", "/README.md")
    assert not os.path.exists(os.path.join(repo, "src", "m01.py"))
    res = incremental(repo, index)
    assert res["tree"] == from_scratch(repo)[0]
    assert "src/m01.py" in tree_files(repo, res["tree"])
