"""``cc-continuity doctor [--fix] [--json] [--notify-test]``: is everything wired, and if not, how to fix it.

One line per check (see :mod:`cc_continuity.doctor.checks`), green or red,
each red one followed by its exact fix.  Exit status 1 when anything is red.
``--fix`` removes leftovers of ours and takes other users' access away from our
state directory; everything else is for the user (or ``cc-continuity install``) to
do, because doctor never edits their files.
"""

import json
import os
import sys

from ..doctor import checks

_GREEN, _RED, _DIM, _RESET = "\033[32m", "\033[31m", "\033[2m", "\033[0m"


def register(subparsers):
    p = subparsers.add_parser("doctor",
                              description="Check every part cc-continuity depends on; exit 1 when anything is red.")
    p.add_argument("--fix", action="store_true",
                   help="remove our leftover temp files, unused launch files and stale locks, and make "
                   "our state directory private again")
    p.add_argument("--json", action="store_true", help="print a JSON list of {name, ok, detail, fix}")
    p.add_argument("--notify-test", action="store_true", help="send one test push to the configured ntfy URL")
    p.set_defaults(func=run)


def run(args):
    ctx = checks.Context(fix=args.fix, notify_test=args.notify_test)
    results = checks.run_checks(ctx)
    if args.json:
        sys.stdout.write(json.dumps([r.as_dict() for r in results], indent=2) + "\n")
    else:
        sys.stdout.write(render(results, color=_use_color()))
    return 0 if all(r.ok for r in results) else 1


def _use_color():
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def render(results, color=False):
    """The human report: one line per check, a ``fix:`` line under each red one."""
    def paint(code, text):
        return code + text + _RESET if color else text

    width = max(len(r.name) for r in results)
    lines = []
    for r in results:
        mark = paint(_GREEN, "ok  ") if r.ok else paint(_RED, "FAIL")
        lines.append("%s  %-*s  %s" % (mark, width, r.name, r.detail))
        if not r.ok and r.fix:
            lines.append("%s  %-*s  fix: %s" % ("    ", width, "", r.fix))
    bad = sum(not r.ok for r in results)
    lines.append("")
    lines.append("%d of %d checks failed." % (bad, len(results)) if bad else "All %d checks passed." % len(results))
    lines.append(paint(_DIM, "Next: `cc-continuity rehearse` runs one full rotation in a scratch project "
                             "to prove the chain end to end."))
    return "\n".join(lines) + "\n"
