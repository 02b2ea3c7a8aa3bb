"""``cc-continuity bench [--json] [--keep] [--control]``: are side effects ever repeated?

Runs five failure scenarios (a process crash, the environment changed under the
checkpoint, a side effect of unknown outcome, a partly completed task, a crash
before any checkpoint) and a replay of an ordinary session, each in a throwaway
HOME and git repo against a counting HTTP server on 127.0.0.1, with a scripted
model that redoes everything its plan names through the real hooks.  Prints, per
scenario, the side effects attempted again, executed again (must be 0), held, and
the handoff's claims confirmed / contradicted.  Exit 0 when nothing was executed
twice and nothing ordinary was held, else 1.  --control runs the same with the
hold switched off (to see what it prevents).
"""

import sys

from ..rehearse import continuity
from ._util import print_json


def register(sub):
    p = sub.add_parser("bench", description=__doc__.split("\n\n", 1)[1])
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--keep", action="store_true", help="keep the throwaway worlds for inspection")
    p.add_argument("--control", action="store_true", help="the same with effects_hold off (no holds)")
    p.set_defaults(func=run)


def run(args):
    rows = continuity.run(keep=args.keep, hold=not args.control)
    if args.json:
        print_json(rows)
    else:
        sys.stdout.write(continuity.table(rows) + "\n")
    bad = any(r["executed_again"] for r in rows) or any(r["held"] for r in rows if r["attempted_again"] == 0)
    return 1 if bad else 0
