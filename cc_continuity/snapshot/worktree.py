"""The work tree as a commit under ``refs/continuity/``, and the snapshots listed back.

A checkpoint must record the exact work tree without touching anything the user
owns: HEAD, the index, branches, the stash, config and the working files stay
byte for byte as they were. So the snapshot is built in a *private* index
(``build``), turned into a tree and a commit object, and published only under
``refs/continuity/<project key>/cp-<NNN>`` (``refs``).  Every git call goes through
``gitrun``, which runs no program the repository names.  Standard library only.
"""

import os
import time

from .build import build_tree, tree_stats
from .gitrun import SUBJECT_MAX, Runner, SnapshotError, git, git_env, locate, open_repo, text
from .indexes import stat_key
from .refs import REF_PREFIX, check_ref, publish

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from typing import Any

    from .build import Big
    from .gitrun import StrPath

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_FALLBACK_NAME = "cc-continuity"
_FALLBACK_EMAIL = "cc-continuity@localhost"
_TRAILER_FILES = "Continuity-Files"
_TRAILER_BYTES = "Continuity-Bytes"
_TRAILER_SKIPPED = "Continuity-Skipped-Large"


# ----------------------------------------------------------------- snapshot


def _identity_env(runner: Runner) -> dict[str, str]:
    """Fallback author/committer only where neither env nor git config names one."""
    proc = runner.run(["config", "--get-regexp", r"^(user|author|committer)\.(name|email)$"],
                      ok=(0, 1))
    keys = {line.split(b" ", 1)[0].decode("ascii", "replace").lower()
            for line in proc.stdout.splitlines() if line}
    extra: dict[str, str] = {}
    for role in ("author", "committer"):
        for field, fallback in (("name", _FALLBACK_NAME), ("email", _FALLBACK_EMAIL)):
            var = "GIT_%s_%s" % (role.upper(), field.upper())
            if os.environ.get(var) or {"user." + field, role + "." + field} & keys:
                continue
            extra[var] = fallback
    return extra


def _commit_message(message: str | None, files: int, size: int, skipped: "Big") -> bytes:
    body = (message or "").strip("\n") or "cc-continuity snapshot"
    trailers = "%s: %d\n%s: %d\n" % (_TRAILER_FILES, files, _TRAILER_BYTES, size)
    if skipped:
        trailers += "%s: %d\n" % (_TRAILER_SKIPPED, len(skipped))
    return (body + "\n\n" + trailers).encode("utf-8", "replace")


def snapshot(root: "StrPath", ref: str, message: str | None, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
             timeout: float = 30, unique: bool = False, untracked: bool = True,
             max_untracked_bytes: int | None = None, index: str | None = None,
             move: bool = False) -> "dict[str, Any]":
    """Record the whole work tree as a commit under ``ref`` without touching user state.

    ``unique``: when ``ref`` is taken, publish under the next free ``<ref>-2``, ``-3`` …
    (the result's ``ref`` says which) instead of failing; an existing ref is never
    moved either way.  ``untracked=False`` records tracked files only (untracked,
    not-ignored files are left out of the snapshot).  Files over a cap are left out
    and listed in ``skipped_large``: a modified tracked file bigger than
    ``max_file_bytes`` keeps its version in the user's index, an untracked one bigger
    than ``max_untracked_bytes`` (default: the same cap; never above it) is not recorded.
    ``index``: the path of a persistent private index (with ``<index>.state`` and
    ``<index>.flock`` beside it) that makes the next snapshot incremental.
    ``move``: ``ref`` is a rolling one (a session's turn-end snapshot): it is set to the new
    commit whatever it held (checkpoint refs are never made this way).
    Returns {"git": False, "reason": ...} for a non-git directory. Raises ValueError
    for a bad ref, SnapshotError when a git command fails (message has git's stderr).
    """
    check_ref(ref)
    started = time.monotonic()
    opened = open_repo(root, timeout)
    if isinstance(opened, str):
        return {"git": False, "reason": opened}
    runner, (top, real_index, common_dir, oid_len, parent) = opened
    runner.env = git_env(_identity_env(runner))
    ucap = max_file_bytes if max_untracked_bytes is None else min(max_file_bytes, max_untracked_bytes)
    gitdir = stat_key(os.path.dirname(real_index))
    # A state written for another repository (or one re-created at this path), or with other caps, is not reused.
    settings = {"top": top, "user_index": os.path.realpath(real_index), "common_dir": common_dir,
                "git_dir": gitdir[:2] if gitdir else None, "oid_len": oid_len,
                "cap": max_file_bytes, "ucap": ucap, "untracked": bool(untracked)}
    tree, files, size, big, warnings, mode = build_tree(runner, index, real_index, parent, settings)

    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
    msg = _commit_message(message, files, size, big)
    commit = runner.run(args, input=msg).stdout.strip().decode("ascii")
    if move:
        runner.run(["update-ref", "--no-deref", ref, commit])
    else:
        ref = publish(runner, ref, commit, unique)
    return {
        "git": True, "root": top, "ref": ref, "commit": commit, "tree": tree,
        "parent": parent, "files": files, "bytes": size,
        "skipped_large": [{"path": text(rel), "size": n, "tracked": t} for rel, n, t in big],
        "warnings": warnings, "index": mode,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
    }


# ----------------------------------------------------------------- listing


def _trailer(message: str, key: str) -> int | None:
    prefix = key + ":"
    for line in reversed(message.splitlines()):
        if line.startswith(prefix):
            value = line[len(prefix):].strip()
            return int(value) if value.isdigit() else None
    return None


def list_snapshots(root: "StrPath", prefix: str = REF_PREFIX) -> "list[dict[str, Any]]":
    """Snapshot refs under ``prefix``, newest first.

    ``size`` is read from the Continuity-Bytes trailer snapshot() writes into the
    commit message (one for-each-ref call for all refs); a ref without it (made by
    something else) is measured with ls-tree. [] for a non-git directory.
    """
    top, _, _ = locate(root)
    if top is None:
        return []
    fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents)%00%00"
    proc = git(["for-each-ref", "--sort=-refname", "--sort=-committerdate",
                 "--format=" + fmt, prefix], top)
    if proc.returncode != 0:
        return []
    rows: "list[dict[str, Any]]" = []
    for rec in proc.stdout.split(b"\0\0\n"):
        fields = rec.split(b"\0")
        if len(fields) < 4:
            continue
        ref, sha, created, contents = (text(f) for f in fields[:4])
        size = _trailer(contents, _TRAILER_BYTES)
        if size is None:
            try:
                size = tree_stats(Runner(top, git_env(), 30), sha + "^{tree}")[1]
            except SnapshotError:
                size = None
        lines = contents.splitlines()
        rows.append({
            "ref": ref, "commit": sha,
            "created": int(created) if created.isdigit() else None,
            "message": lines[0][:SUBJECT_MAX] if lines else "",
            "files": _trailer(contents, _TRAILER_FILES),
            "size": size,
        })
    return rows
