"""A checkpoint taken now, with no rotation (``cc-continuity checkpoint``, the MCP server's ``take_checkpoint``).

Machine facts in the session's ``manual/<stamp>/`` and a git snapshot under
``refs/continuity/<project key>/manual/<n>-<stamp>``; the session keeps going.  The host the session runs in is
a port (its transcript gives the context's reading and the facts), handed in by the caller.
"""

import time

from .. import ledger, redact, session
from ..snapshot import job, retention, worktree
from ..snapshot.gitrun import SnapshotError
from ..snapshot.refs import ref_name
from . import checkpoint, context

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..project import Project
    from .host import Host


def take(proj: "Project", n: int, sdir: str, cfg: "Any", host: "Host", message: str,
         by: "str | None" = None, timeout: "float | None" = None) -> "dict[str, Any]":
    """Take the checkpoint of session ``n`` now; ``by``: who asked for it when not the user (``"agent"``, recorded
    as such); ``timeout``: the snapshot's bound when shorter than the config's (an agent waits on it).  Returns the session's name, the facts' folder, the snapshot (``git``: None when it failed, False
    outside a git repository) and the reading."""
    rec = session.load(sdir)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out_dir = session.manual_dir(sdir, stamp)
    reading = {"tokens": None, "window": None, "percent": None, "level": None}
    if rec.get("transcript"):
        reading = context.session_reading(sdir, rec, cfg, host)
    snap = checkpoint.collect(proj.root, sdir, rec, reading, {}, cfg, host, out_dir=out_dir)
    ref = "%smanual/%03d-%s" % (ref_name(proj.key, n).rsplit("cp-", 1)[0], n, stamp.lower())
    try:
        git = worktree.snapshot(proj.root, ref, redact.redact("%s %s: %s" % (rec.get("name"), stamp, message)),
                                max_file_bytes=cfg["snapshot_max_file_bytes"], unique=True,
                                max_untracked_bytes=cfg["snapshot_max_untracked_bytes"],
                                untracked=cfg["snapshot_untracked"],
                                timeout=min(cfg["snapshot_timeout_s"], timeout or cfg["snapshot_timeout_s"]),
                                index=job.index_path(proj.root))
    except (SnapshotError, ValueError) as e:
        git = {"git": None, "error": str(e)}
    if git.get("git"):
        try:
            retention.prune(proj, cfg)
        except (SnapshotError, OSError) as e:
            git.setdefault("warnings", []).append("pruning old snapshots failed: %s" % e)
    line = {"ev": "manual_checkpoint", "dir": out_dir, "ref": git.get("ref"), "commit": git.get("commit"),
            "message": message[:200]}
    if by:
        line["by"] = by
    ledger.append(session.ledger_path(sdir), line)
    return {"session": rec.get("name"), "dir": out_dir, "git": git, "reading": snap["reading"]}
