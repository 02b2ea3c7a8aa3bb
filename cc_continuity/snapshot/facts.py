"""The machine's git facts for a checkpoint: branch, HEAD, dirty files, diff stat, recent commits.

Read, never written: the user's index stays as it is (a refreshed copy of it in our state
dir keeps git's stat data, ``indexes.user_index_copy``).
"""

import os
import subprocess

from .gitrun import SUBJECT_MAX, git, git_env, last_line, locate, text
from .indexes import user_index_copy

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from typing import Any

    from ..lock import Lock
    from .gitrun import StrPath



def _status_facts(out: bytes, facts: "dict[str, Any]", max_files: int) -> None:
    """Parse `git status --porcelain=v2 --branch -z` into branch + bounded dirty list."""
    dirty: "list[dict[str, str]]"
    dirty, count = [], 0
    records = iter(out.split(b"\0"))
    for rec in records:
        if not rec:
            continue
        if rec.startswith(b"# "):
            key, _, value = text(rec[2:]).partition(" ")
            if key == "branch.oid":
                facts["head"] = None if value == "(initial)" else value
            elif key == "branch.head":
                facts["detached"] = value == "(detached)"
                facts["branch"] = None if facts["detached"] else value
            elif key == "branch.upstream":
                facts["upstream"] = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                facts["ahead"], facts["behind"] = int(ahead[1:] or 0), int(behind[1:] or 0)
            continue
        kind = rec[:1]
        entry = None
        if kind == b"?":
            entry = {"path": text(rec[2:]), "status": "??"}
        elif kind in (b"1", b"u"):
            parts = rec.split(b" ", 8 if kind == b"1" else 10)
            entry = {"path": text(parts[-1]), "status": text(parts[1])}
        elif kind == b"2":
            parts = rec.split(b" ", 9)
            entry = {"path": text(parts[-1]), "status": text(parts[1]),
                     "from": text(next(records, b""))}
        if entry is None:
            continue
        count += 1
        if len(dirty) < max_files:
            dirty.append(entry)
    facts["dirty"] = dirty
    facts["dirty_count"] = count
    facts["dirty_truncated"] = count > len(dirty)


def _diffstat(out: bytes, max_files: int) -> "dict[str, Any]":
    per_file: "list[dict[str, Any]]"
    per_file, added, deleted, files = [], 0, 0, 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        parts = rec.split(b"\t", 2)
        if len(parts) != 3:
            continue
        a = int(parts[0]) if parts[0].isdigit() else None
        d = int(parts[1]) if parts[1].isdigit() else None
        files += 1
        added += a or 0
        deleted += d or 0
        if len(per_file) < max_files:
            per_file.append({"path": text(parts[2]), "added": a, "deleted": d})
    return {"files": files, "insertions": added, "deletions": deleted,
            "per_file": per_file, "truncated": files > len(per_file)}


def parse_commits(out: bytes) -> "list[dict[str, Any]]":
    commits: "list[dict[str, Any]]" = []
    for rec in out.split(b"\0"):
        fields = rec.strip(b"\n").split(b"\x1f")
        if len(fields) != 4:
            continue
        sha, when, author, subject = (text(f) for f in fields)
        commits.append({"sha": sha, "time": int(when) if when.isdigit() else None,
                        "author": author[:SUBJECT_MAX], "subject": subject[:SUBJECT_MAX]})
    return commits


def git_facts(root: "StrPath", max_commits: int = 10, max_files: int = 200, timeout: float = 10,
              index: str | None = None) -> "dict[str, Any]":
    """Branch, HEAD, dirty files, diff stat and recent commits as a JSON-able dict.

    Never raises: each failing step adds a line to ``errors`` and the rest is still
    returned. {"git": False} for a non-git directory. The user's index is never written;
    with ``index`` (a path in our state dir) a refreshed copy of it is kept there.
    """
    lock: "Lock | None" = None
    try:
        top, real_index, reason = locate(root, timeout=timeout)
        if top is not None and real_index is not None and index:  # (the two are set together)
            index, lock = user_index_copy(index, real_index)
        return _git_facts(top, reason, max_commits, max_files, timeout, index)
    except Exception as exc:  # noqa: BLE001 - facts must never break a hook
        return {"git": False, "reason": "%s: %s" % (exc.__class__.__name__, exc)}
    finally:
        if lock is not None:
            if index:
                try:
                    os.chmod(index, 0o600)
                except OSError:
                    pass
            lock.release()


def _git_facts(top: str | None, reason: str | None, max_commits: int, max_files: int, timeout: float,
               index: str | None) -> "dict[str, Any]":
    if top is None:
        return {"git": False, "reason": reason}
    facts: "dict[str, Any]" = {"git": True, "root": top, "branch": None, "detached": False, "head": None,
             "dirty": [], "dirty_count": 0, "dirty_truncated": False,
             "diffstat": None, "recent_commits": [], "errors": []}

    env = git_env(dict(GIT_INDEX_FILE=index, GIT_OPTIONAL_LOCKS="1")) if index else None

    def step(name: str, args: list[str], ok: tuple[int, ...] = (0,)) -> bytes | None:
        try:
            proc = git(args, top, timeout=timeout, env=env)
        except (OSError, subprocess.SubprocessError) as exc:
            facts["errors"].append("%s: %s" % (name, exc))
            return None
        if proc.returncode not in ok:
            facts["errors"].append("%s: %s" % (name, last_line(proc.stderr) or
                                               "exit %d" % proc.returncode))
            return None
        return proc.stdout

    out = step("status", ["status", "--porcelain=v2", "--branch", "-z",
                          "--untracked-files=normal"])
    if out is not None:
        try:
            _status_facts(out, facts, max_files)
        except Exception as exc:  # noqa: BLE001
            facts["errors"].append("status: unparsable output (%s)" % exc)
    if out is None:  # e.g. a corrupt index: HEAD and branch are still readable
        head = text(step("head", ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
                          ok=(0, 1)) or b"").strip()
        branch = text(step("branch", ["symbolic-ref", "-q", "--short", "HEAD"],
                            ok=(0, 1)) or b"").strip()
        facts["head"], facts["branch"] = head or None, branch or None
        facts["detached"] = bool(head) and not branch

    base = facts["head"]
    if base is None and not facts["errors"]:
        empty = step("empty-tree", ["hash-object", "-t", "tree", "--stdin"])
        base = empty.strip().decode("ascii") if empty else None
    if base:
        # Plumbing on purpose: porcelain `git diff` refreshes the real index even
        # under GIT_OPTIONAL_LOCKS=0; diff-index never writes and drops stat-only changes.
        out = step("diffstat", ["diff-index", "--numstat", "-z", base, "--"])
        if out is not None:
            facts["diffstat"] = _diffstat(out, max_files)
    if facts["head"] and max_commits > 0:
        out = step("log", ["log", "-n", str(int(max_commits)), "--no-show-signature", "-z",
                           "--format=%H%x1f%at%x1f%an%x1f%s", facts["head"], "--"])
        if out is not None:
            facts["recent_commits"] = parse_commits(out)
    return facts
