"""``cc-continuity snapshots``: the git snapshots of this project, with age and size."""

from .. import gitsnap
from ._util import ago, current_project, print_json


def register(sub):
    p = sub.add_parser("snapshots", help="list refs/continuity/* snapshots with age and size")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def human(n):
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return "%d %s" % (n, unit) if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024.0


def run(args):
    proj = current_project()
    snaps = gitsnap.list_snapshots(proj.root)
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
