"""The continuity benchmark (issue 24): five failure scenarios and an ordinary replay, through the real hooks.

Prints the table of cc_continuity.rehearse.continuity (per scenario: side effects
attempted again, executed again, held, the handoff's claims confirmed / contradicted),
then the same with the hold switched off as a control, and the hooks' cost per call.

Usage: python bench/continuity.py [--json FILE]
"""

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from cc_continuity.rehearse import continuity  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rows = continuity.run()
    print("with the hold (as installed):")
    print(continuity.table(rows))
    control = continuity.run(hold=False)
    print("\ncontrol, effects_hold off:")
    print(continuity.table(control))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"hold": rows, "control": control}, f, indent=1)
    return 1 if any(r["executed_again"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
