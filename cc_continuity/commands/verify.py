"""``cc-continuity verify``: check every ledger's hash chain; non-zero naming the first bad line."""

import os

from .. import ledger, paths
from ._util import print_json


def register(sub):
    p = sub.add_parser("verify")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def ledgers(root=None):
    root = root or paths.home()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".jsonl") and "ledger" in name:
                yield os.path.join(dirpath, name)


def run(args):
    results = []
    bad = 0
    for path in ledgers():
        ok, line, reason = ledger.verify(path)
        results.append({"ledger": path, "ok": ok, "line": line, "reason": reason})
        bad += not ok
    if args.json:
        print_json({"ok": bad == 0, "ledgers": results})
    else:
        for r in results:
            if r["ok"]:
                print("ok   %s (%s)" % (r["ledger"], r["reason"]))
            else:
                print("BAD  %s: line %s: %s" % (r["ledger"], r["line"], r["reason"]))
        print("%d ledgers, %d bad" % (len(results), bad))
    return 1 if bad else 0
