"""``cc-continuity snapshots``: the git snapshots of this project, with age and size; ``--prune`` applies the retention policy."""

from ..snapshot import worktree, retention
from ._util import ago, current_project, load_config, print_json


def register(sub):
    p = sub.add_parser("snapshots")
    p.add_argument("--json", action="store_true")
    p.add_argument("--prune", action="store_true",
                   help="delete this project's snapshots beyond snapshot_keep or older than snapshot_max_age_days "
                        "(never a claimable checkpoint's, never the newest of a session)")
    p.add_argument("--dry-run", action="store_true", help="with --prune: only say what would be deleted")
    p.set_defaults(func=run)


def human(n):
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return "%d %s" % (n, unit) if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024.0


def prune(proj, args):
    cfg = load_config(proj.root)
    res = retention.prune(proj, cfg, dry_run=args.dry_run)
    if args.json:
        print_json(dict(res, project=proj.root))
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    gone = res["prune"] if args.dry_run else res["deleted"]
    print("%s: %d snapshot(s), %s %d (keep %s, max age %s days), %d protected" % (
        proj.slug, res["snapshots"], verb, len(gone), cfg["snapshot_keep"], cfg["snapshot_max_age_days"],
        len(res["protected"])))
    for ref in gone:
        print("  %s %s" % ("-" if not args.dry_run else "?", ref))
    left = sorted(set(res["prune"]) - set(res["deleted"])) if not args.dry_run else []
    if left:
        print("  not deleted (moved or gone meanwhile): %s" % ", ".join(left))
    return 0


def run(args):
    proj = current_project()
    if args.prune:
        return prune(proj, args)
    snaps = worktree.list_snapshots(proj.root)
    if args.json:
        print_json({"project": proj.root, "snapshots": snaps})
        return 0
    if not snaps:
        print("no snapshots in %s" % proj.root)
        return 0
    for s in snaps:
        print("%-48s %s  %-12s %9s  %s" % (s.get("ref"), (s.get("commit") or "")[:10], ago(s.get("created")),
                                         human(s.get("bytes") if "bytes" in s else s.get("size")),
                                         (s.get("subject") or s.get("message") or "")[:60]))
    return 0
