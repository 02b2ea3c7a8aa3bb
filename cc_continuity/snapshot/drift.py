"""Drift: what changed in the work tree since a snapshot, and the commits since a HEAD."""

import os
import shutil
import tempfile
import time

from .build import worktree_changes
from .facts import parse_commits
from .gitrun import Runner, git, locate_repo, open_repo, split_z, text
from .indexes import FLOCK_SUFFIX, STATE_SUFFIX, read_state, user_index_copy

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..lock import Lock
    from .gitrun import StrPath



def _blob_oid(data: bytes, oid_len: int) -> str:
    import hashlib

    h = hashlib.sha256() if oid_len == 64 else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def changed_since(root: "StrPath", commit: str, *, index: str | None = None, facts_index: str | None = None,
                  untracked: bool = True, skip: "Iterable[str]" = (), limit: int = 2000,
                  timeout: float = 10) -> "dict[str, Any]":
    """The files whose content now differs from snapshot ``commit``'s tree: {"changed": [(path, kind)], …}.

    ``kind`` is modified, added or deleted.  Never touches the user's index: the listing runs
    on an index of ours that has git's stat data, so only files that changed are read —
    the persistent snapshot index (``index``, when its flock is free and its last build
    completed), else the refreshed copy of the user's index (``facts_index``), else a
    temporary copy.  Candidates are that index against the snapshot's tree
    (``diff-index --cached``) plus the index against the work tree (``status``); each
    candidate is then checked exactly (blob ids), so an index that moved on since the
    snapshot, or a file changed and changed back, gives no false entry.  More than
    ``limit`` candidates: listed as they are, unchecked (``checked`` false).
    ``skip``: paths the snapshot left out on purpose (over its size caps).
    """
    started = time.monotonic()
    opened = open_repo(root, timeout)
    if isinstance(opened, str):
        return {"git": False, "reason": opened}
    runner, (top, real_index, _common, oid_len, _head) = opened
    proc = runner.run(["rev-parse", "-q", "--verify", "%s^{tree}" % commit], ok=(0, 1, 128))
    if proc.returncode != 0:
        return {"git": True, "error": "the snapshot commit %s is not in the repository (pruned?)" % commit[:12]}
    tree = proc.stdout.strip().decode("ascii")
    listed, used = _candidates(runner, real_index, tree, index, facts_index, untracked)
    skip_b = {os.fsencode(p) for p in skip}
    cands = sorted(c for c in listed if c not in skip_b)
    result: "dict[str, Any]" = {"git": True, "tree": tree, "via": used, "checked": True, "candidates": len(cands)}
    if len(cands) > limit:
        result.update(changed=[(text(c), "changed") for c in cands[:limit]], checked=False, truncated=True)
    else:
        changed = _compare(runner, oid_len, cands, _tree_entries(runner, tree, cands))
        result.update(changed=[(text(c), k) for c, k in changed], truncated=False)
    result["elapsed_ms"] = int((time.monotonic() - started) * 1000)
    return result


def _listing_index(top: str, real_index: str, index: str | None,
                   facts_index: str | None) -> "tuple[str, str, Lock] | tuple[None, None, None]":
    """An index of ours with git's stat data, what it is, and its flock (held): the persistent snapshot
    index when its flock is free and its last build completed, else the refreshed copy of the user's."""
    from ..lock import Lock, LockTimeout

    if index and os.path.exists(index):
        try:
            lock: "Lock | None" = Lock(index + FLOCK_SUFFIX, timeout=0.5).acquire()
        except (LockTimeout, OSError):
            lock = None
        if lock is not None:
            state = read_state(index + STATE_SUFFIX) or {}
            if state.get("clean") and state.get("top") == top:
                return index, "snapshot index", lock
            lock.release()
    if facts_index:
        got = user_index_copy(facts_index, real_index)
        if got[0]:
            return got[0], "facts index", got[1]
    return None, None, None


def _candidates(runner: Runner, real_index: str, tree: str, index: str | None, facts_index: str | None,
                untracked: bool) -> "tuple[set[bytes], str]":
    """The paths that may differ from ``tree`` (the index against it, the work tree against the index),
    and which index listed them (a temporary copy of the user's when no index of ours is free)."""
    idx, used, lock = _listing_index(runner.top, real_index, index, facts_index)
    tmpdir: str | None = None
    try:
        if idx is None or used is None:
            tmpdir = tempfile.mkdtemp(prefix="cc-continuity-drift-")
            idx, used = os.path.join(tmpdir, "index"), "temporary index"
            try:
                shutil.copyfile(real_index, idx)
            except OSError:
                runner.run(["read-tree", tree], env=dict(runner.env, GIT_INDEX_FILE=idx))
        env = dict(runner.env, GIT_INDEX_FILE=idx, GIT_OPTIONAL_LOCKS="1")  # our own index: its stat refresh is kept
        listed = set(split_z(runner.run(["diff-index", "--cached", "--no-renames", "--name-only", "-z", tree, "--"],
                                        env=env).stdout))
        out = runner.run(["status", "--porcelain=v2", "-z", "--no-renames", "--ignore-submodules=dirty",
                          "--untracked-files=all" if untracked else "--untracked-files=no"], env=env).stdout
        dirty, new = worktree_changes(out)
        listed.update(dirty, new)
        if idx == index:
            try:
                os.chmod(idx, 0o600)
            except OSError:
                pass
    finally:
        if lock is not None:
            lock.release()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return listed, used


def _tree_entries(runner: Runner, tree: str, cands: "list[bytes]") -> "dict[bytes, tuple[bytes, str]]":
    """{path: (mode, object id)} of the candidates ``tree`` has."""
    entries: "dict[bytes, tuple[bytes, str]]" = {}
    for i in range(0, len(cands), 500):
        out = runner.run(["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", tree, "--",
                          *(os.fsdecode(c) for c in cands[i:i + 500])]).stdout
        for rec in split_z(out):
            meta, _, path = rec.partition(b"\t")
            mode, _kind, oid = meta.split(b" ")
            entries[path] = (mode, oid.decode("ascii"))
    return entries


def _compare(runner: Runner, oid_len: int, cands: "list[bytes]",
             entries: "dict[bytes, tuple[bytes, str]]") -> "list[tuple[bytes, str]]":
    """[(path, kind)] of the candidates whose content differs from their ``entries``, sorted: exact (blob ids)."""
    top_b = os.fsencode(runner.top)
    changed: "list[tuple[bytes, str]]"
    to_hash: "list[bytes]"
    changed, to_hash = [], []
    for c in cands:
        full = os.path.join(top_b, c)
        there = os.path.lexists(full)
        entry = entries.get(c)
        if entry is None:
            if there and not os.path.isdir(full):
                changed.append((c, "added"))
            elif there:
                changed.append((c, "added"))  # a nested repository (git lists it as a directory)
            continue
        if not there:
            changed.append((c, "deleted"))
            continue
        if entry[0] == b"160000":
            changed.append((c, "modified"))  # a submodule status listed: its commit moved
            continue
        if os.path.islink(full):
            if _blob_oid(os.readlink(full), oid_len) != entry[1]:
                changed.append((c, "modified"))
            continue
        to_hash.append(c)
    if to_hash:
        out = runner.run(["hash-object", "--stdin-paths"], input=b"".join(p + b"\n" for p in to_hash)).stdout
        oids = out.decode("ascii", "replace").split()
        for c, hashed in zip(to_hash, oids):
            if hashed != entries[c][1]:
                changed.append((c, "modified"))
    changed.sort()
    return changed


def history_since(root: "StrPath", old: str | None, timeout: float = 10, limit: int = 10) -> "dict[str, Any]":
    """Branch and HEAD now, and the commits from ``old`` to HEAD: {"branch", "head", "ancestor", "count", "commits"}."""
    found = locate_repo(root, timeout=timeout, head=True)
    if found[0] is None:
        return {"git": False, "reason": found[5]}
    top, _i, _c, _o, head, _ = found
    out: "dict[str, Any]" = {"git": True, "head": head, "branch": None, "ancestor": None, "count": 0, "commits": []}
    proc = git(["symbolic-ref", "-q", "--short", "HEAD"], top, timeout=timeout)
    out["branch"] = text(proc.stdout).strip() or None if proc.returncode == 0 else None
    if not old or not head or old == head:
        out["ancestor"] = bool(old) and old == head
        return out
    proc = git(["merge-base", "--is-ancestor", old, head], top, timeout=timeout)
    out["ancestor"] = proc.returncode == 0
    if proc.returncode not in (0, 1):
        out["ancestor"] = None  # the old HEAD is gone from the repository
        return out
    if out["ancestor"]:
        proc = git(["rev-list", "--count", "%s..%s" % (old, head)], top, timeout=timeout)
        out["count"] = int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0
        proc = git(["log", "-n", str(limit), "--no-show-signature", "-z", "--format=%H%x1f%at%x1f%an%x1f%s",
                     "%s..%s" % (old, head), "--"], top, timeout=timeout)
        if proc.returncode == 0:
            out["commits"] = parse_commits(proc.stdout)
    return out
