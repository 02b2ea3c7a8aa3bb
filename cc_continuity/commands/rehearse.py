"""``cc-continuity rehearse [--claude PATH] [--keep] [--json] [--timeout S]``

Runs one full rotation with your installed ``claude`` and your installed
cc-continuity hooks, offline, in a throwaway HOME and git repo against a
built-in scripted model on 127.0.0.1, and prints each step with its
milliseconds and a verdict.  Spends no tokens, touches none of your files.
Exit 0 only when the rotation completed; 1 when it did not; 2 when it could
not start (no claude, nothing installed, no tmux).
"""

import sys

from ._util import print_json


def register(sub):
    p = sub.add_parser("rehearse", help="run one full rotation offline with your claude and hooks; timed report",
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("--claude", metavar="PATH", help="the claude executable (default: the first on PATH)")
    p.add_argument("--keep", action="store_true", help="keep the throwaway sandbox for inspection")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--timeout", type=_seconds, default=120.0, metavar="S",
                   help="give up after S seconds (default 120)")
    p.set_defaults(func=run)


def _seconds(text):
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("expected a number of seconds in (0, 3600], got %r" % text)
    return value


def run(args):
    from .. import rehearse

    try:
        result = rehearse.rehearse(claude=args.claude, keep=args.keep, timeout=args.timeout)
    except rehearse.RehearsalError as e:
        sys.stderr.write("cc-continuity rehearse: %s\n" % e)
        return 2
    if args.json:
        print_json(result)
    else:
        sys.stdout.write(rehearse.format_report(result))
    return 0 if result.get("ok") else 1
