"""Which snapshot refs may go: keep the newest N and nothing older than a maximum age.

Two kinds are never pruned, whatever the limits say: the snapshot of a checkpoint that
is still claimable (a rotation in flight, or one a crash left for the next session), and
the newest snapshot of each session (the last state of its work).  Only refs under this
project's own ``refs/continuity/<key>/`` are considered; another worktree's are its own.

Runs after every checkpoint's snapshot (in the snapshot job) and for
``cc-continuity snapshots --prune``.  Deleting a ref frees nothing at once: git's own
gc drops the objects no ref reaches any more (after ``gc.pruneExpire``, two weeks).
"""

import time

from .refs import REF_PREFIX, delete_refs, list_refs
from .. import session

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from ..config import Config
    from ..project import Project


def session_of(ref: str, prefix: str) -> int | None:
    """The session number a snapshot ref belongs to (``cp-NNN[-k]``, ``turn-NNN``, ``manual/NNN-…``), or None."""
    rest = ref[len(prefix):] if ref.startswith(prefix) else ""
    if rest.startswith("cp-"):
        num = rest[3:].split("-", 1)[0]
    elif rest.startswith("turn-"):
        num = rest[5:]
    elif rest.startswith("manual/"):
        num = rest[7:].split("-", 1)[0]
    else:
        return None
    return int(num) if num.isdigit() else None


def claimable_refs(proj: "Project") -> set[str]:
    """Refs of checkpoints still waiting for a successor (read through the open-session index)."""
    refs: set[str] = set()
    for n in proj.open_numbers():
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        cp = rec.get("checkpoint") or {}
        if rec["state"] in session.CLAIMABLE and not rec.get("successor") and cp.get("ref"):
            refs.add(cp["ref"])
    return refs


def choose(rows: "Sequence[tuple[str, str, float]]", prefix: str, keep: int | None, max_age_s: float | None,
           protected: "Iterable[str]", now: float) -> tuple[list[tuple[str, str]], list[str]]:
    """(to delete [(ref, commit)], protected refs kept) for ``rows`` [(ref, commit, time)], newest first."""
    newest: dict[str | int, str] = {}
    for ref, _, _ in rows:
        group = session_of(ref, prefix)
        newest.setdefault(group if group is not None else ref, ref)  # rows are newest first
    guard = set(protected) | set(newest.values())
    doomed: list[tuple[str, str]] = []
    for rank, (ref, sha, created) in enumerate(rows):
        if ref in guard:
            continue
        too_many = keep is not None and rank >= keep
        too_old = max_age_s is not None and now - created > max_age_s
        if too_many or too_old:
            doomed.append((ref, sha))
    return doomed, sorted(guard & {r for r, _, _ in rows})


def prune(proj: "Project", cfg: "Config | Mapping[str, Any]", dry_run: bool = False,
          now: float | None = None) -> "dict[str, Any]":
    """Apply ``snapshot_keep`` / ``snapshot_max_age_days`` to this project's snapshots."""
    prefix = "%s%s/" % (REF_PREFIX, proj.key)
    rows = list_refs(proj.root, prefix)
    age = cfg["snapshot_max_age_days"]
    doomed, guarded = choose(rows, prefix, cfg["snapshot_keep"], None if age is None else age * 86400,
                             claimable_refs(proj), time.time() if now is None else now)
    deleted = [] if dry_run else delete_refs(proj.root, doomed)
    return {"snapshots": len(rows), "prune": [r for r, _ in doomed], "deleted": deleted, "protected": guarded,
            "dry_run": dry_run}
