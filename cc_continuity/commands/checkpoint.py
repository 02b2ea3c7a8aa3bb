"""``cc-continuity checkpoint``: take a checkpoint of the current work now (no rotation).

Machine facts plus a git snapshot under ``refs/continuity/<project key>/manual/…``;
the session keeps going.  Useful before a risky step.
"""

import time

from ..rotation import checkpoint, context
from .. import ledger, redact, session
from ..snapshot import worktree, retention, job
from ..snapshot.gitrun import SnapshotError
from ..snapshot.refs import ref_name
from ._util import host_of, current_project, load_config, print_json
from .signal import find_session


def register(sub):
    p = sub.add_parser("checkpoint")
    p.add_argument("--session", help="session id (default: $CLAUDE_CODE_SESSION_ID, else the newest live session)")
    p.add_argument("-m", "--message", default="manual checkpoint", help="one line describing the moment")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args):
    proj = current_project()
    cfg = load_config(proj.root)
    n, sdir = find_session(proj, args.session)
    rec = session.load(sdir)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out_dir = session.manual_dir(sdir, stamp)
    reading = {"tokens": None, "window": None, "percent": None, "level": None}
    if rec.get("transcript"):
        reading = context.session_reading(sdir, rec, cfg, host_of(rec))
    snap = checkpoint.collect(proj.root, sdir, rec, reading, {}, cfg, host_of(rec), out_dir=out_dir)
    ref = "%smanual/%03d-%s" % (ref_name(proj.key, n).rsplit("cp-", 1)[0], n, stamp.lower())
    try:
        git = worktree.snapshot(proj.root, ref, redact.redact("%s %s: %s" % (rec.get("name"), stamp, args.message)),
                               max_file_bytes=cfg["snapshot_max_file_bytes"], unique=True,
                               max_untracked_bytes=cfg["snapshot_max_untracked_bytes"],
                               untracked=cfg["snapshot_untracked"], timeout=cfg["snapshot_timeout_s"],
                               index=job.index_path(proj.root))
    except (SnapshotError, ValueError) as e:
        git = {"git": None, "error": str(e)}
    if git.get("git"):
        try:
            retention.prune(proj, cfg)
        except (SnapshotError, OSError) as e:
            git.setdefault("warnings", []).append("pruning old snapshots failed: %s" % e)
    ledger.append(session.ledger_path(sdir), {"ev": "manual_checkpoint", "dir": out_dir, "ref": git.get("ref"),
                                              "commit": git.get("commit"), "message": args.message[:200]})
    result = {"session": rec.get("name"), "dir": out_dir, "git": git, "reading": snap["reading"]}
    if args.json:
        print_json(result)
    elif git.get("git"):
        print("checkpoint of %s: %s (%s, %d files)" % (rec.get("name"), git["ref"], git["commit"][:12], git["files"]))
    elif git.get("git") is False:
        print("checkpoint of %s: facts saved in %s (not a git repository: no snapshot)" % (rec.get("name"), out_dir))
    else:
        print("checkpoint of %s: facts saved; git snapshot failed: %s" % (rec.get("name"), git.get("error")))
        return 1
    return 0
