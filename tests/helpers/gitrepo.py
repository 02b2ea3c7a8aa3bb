"""A real git repository's state as comparable data, for the snapshot tests (tests/snapshot/).

``user_state`` is everything a snapshot must leave alone; ``tree_of`` a commit's full tree.
"""

import hashlib
import os
import subprocess


OURS = ("objects", os.path.join("refs", "continuity"), os.path.join("logs", "refs", "continuity"))


def git(repo, *args, check=True, input=None):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # our own probes must not refresh the index
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, input=input, env=env)
    if check and proc.returncode != 0:
        raise AssertionError("git %s: %s" % (args, proc.stderr.decode()))
    return proc.stdout.decode("utf-8", "surrogateescape")


def digest(path):
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    with open(path, "rb") as fh:
        return "%o:%s" % (os.stat(path).st_mode, hashlib.sha256(fh.read()).hexdigest())


def walk(top, skip=()):
    found = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        dirnames[:] = [d for d in dirnames
                       if os.path.normpath(os.path.join(rel_dir, d)) not in skip]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            found[os.path.normpath(os.path.join(rel_dir, name))] = digest(os.path.join(dirpath, name))
    return found


def user_state(repo):
    """Everything a snapshot must leave alone, as comparable data."""
    gitdir = os.path.join(repo, ".git")
    refs = [line for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith("refs/continuity/")]
    return {
        "gitdir": walk(gitdir, skip=OURS),
        "refs": refs,
        "stash": git(repo, "stash", "list", "--format=%H %gs"),
        "status": git(repo, "status", "--porcelain=v1", "-z"),
        "work": walk(repo, skip=(".git",)),
    }


def tree_of(repo, commit):
    """{path: (mode, blob bytes or gitlink sha)} of a commit's full tree."""
    out = subprocess.run(["git", "ls-tree", "-r", "-z", commit], cwd=repo, capture_output=True,
                         check=True).stdout
    tree = {}
    for rec in filter(None, out.split(b"\0")):
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.decode().split()
        content = sha if kind == "commit" else subprocess.run(
            ["git", "cat-file", "blob", sha], cwd=repo, capture_output=True, check=True).stdout
        tree[path.decode("utf-8", "surrogateescape")] = (mode, content)
    return tree


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def commit_all(repo, message):
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
