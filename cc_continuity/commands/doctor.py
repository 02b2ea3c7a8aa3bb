"""``cc-continuity doctor [--agent {claude,codex,all}] [--fix] [--json] [--notify-test]``: is everything
wired, and if not, how to fix it.

One line per check (see :mod:`cc_continuity.hosts.checkup`), green or red, each red one followed by
its exact fix.  Exit status 1 when anything is red.  Without ``--agent`` the agents set up here are
judged (what ``cc-continuity install`` recorded for each); an agent not set up gets one neutral line.
``--fix`` removes leftovers of ours and takes other users' access away from our state directory;
everything else is for the user (or ``cc-continuity install``) to do, because doctor never edits their
files.
"""

import json
import os
import sys

from ..hosts import checkup


def register(subparsers):
    p = subparsers.add_parser("doctor",
                              description="Check every part cc-continuity depends on; exit 1 when anything is "
                              "red. Without --agent, the agents cc-continuity is installed for are checked.")
    p.add_argument("--agent", choices=checkup.AGENTS + ("all",),
                   help="check this agent's wiring (all: both), installed or not; default: the agents "
                   "installed here (an agent not set up gets one neutral line)")
    p.add_argument("--fix", action="store_true",
                   help="remove our leftover temp files, unused launch files and stale locks, and make "
                   "our state directory private again")
    p.add_argument("--json", action="store_true", help="print a JSON list of {name, ok, detail, fix}")
    p.add_argument("--notify-test", action="store_true", help="send one test push to the configured ntfy URL")
    p.set_defaults(func=run)


def run(args):
    agents = checkup.AGENTS if args.agent == "all" else (args.agent,) if args.agent else None
    ctx = checkup.Context(fix=args.fix, notify_test=args.notify_test, agents=agents)
    results = checkup.run_checks(ctx)
    if args.json:
        sys.stdout.write(json.dumps([r.as_dict() for r in results], indent=2) + "\n")
    else:
        sys.stdout.write(checkup.render(results, color=_use_color(), next_line=checkup.closing(ctx, results)))
    return 0 if all(r.ok for r in results) else 1


def _use_color():
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
