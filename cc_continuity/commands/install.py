"""``cc-continuity install``: hooks, status line, CLAUDE.md block, shell wrapper, skills, launcher.

Safe to re-run (a second run changes nothing; an upgrade replaces ours in
place).  ``--dry-run`` prints the diff of every file and writes nothing.
"""

import argparse
import sys

from .. import errors


def register(sub):
    p = sub.add_parser("install", help="install hooks, status line, CLAUDE.md block, shell wrapper and skills")
    p.add_argument("--window", type=int, metavar="N", help="context window in tokens (default: detect)")
    p.add_argument("--thresholds", type=thresholds, metavar="WARN,ROTATE,HARD",
                   help="percent of the window, e.g. 55,62,72")
    p.add_argument("--ntfy", metavar="URL", help="ntfy topic URL for phone notifications")
    p.add_argument("--unattended", action="store_true",
                   help="run the whole rotation chain without permission prompts")
    p.add_argument("--shell", choices=("auto", "zsh", "bash", "fish"), default="auto",
                   help="which shell rc gets the claude() wrapper (default: from $SHELL)")
    p.add_argument("--no-wrapper", action="store_true", help="do not add the claude() shell wrapper")
    p.add_argument("--plugin", action="store_true",
                   help="carry the hooks, skills and the in-process mod as a Claude Code plugin (claude plugin "
                        "install) instead of settings.json; the status line stays in settings.json")
    p.add_argument("--dry-run", action="store_true", help="print the diff of every file; write nothing")
    p.set_defaults(func=run)


def thresholds(text):
    """``WARN,ROTATE,HARD``: three percentages, each > 0 and <= 100, in that order."""
    parts = text.split(",")
    try:
        values = [float(x) for x in parts]
    except ValueError:
        values = []
    if len(values) != 3:
        raise argparse.ArgumentTypeError("expected three numbers WARN,ROTATE,HARD, got %r" % text)
    if not all(0 < v <= 100 for v in values):
        raise argparse.ArgumentTypeError("each threshold must be > 0 and <= 100")
    if not values[0] <= values[1] <= values[2]:
        raise argparse.ArgumentTypeError("thresholds must satisfy WARN <= ROTATE <= HARD")
    return tuple(int(v) if v == int(v) else v for v in values)


def run(args):
    from .. import install

    opts = install.Options(window=args.window, thresholds=args.thresholds, ntfy=args.ntfy,
                           unattended=args.unattended, shell=args.shell, no_wrapper=args.no_wrapper,
                           dry_run=args.dry_run, plugin=args.plugin)
    try:
        return install.install(opts)
    except errors.Error as e:  # every install and config error: nothing half-done is left
        sys.stderr.write("cc-continuity install: %s\n" % e)
        sys.stderr.write("cc-continuity install: nothing was changed\n")
        return 1
