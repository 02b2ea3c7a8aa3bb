"""The continuity benchmark (issue 24): five failure scenarios and an ordinary replay, through the real hooks.

Prints the table of cc_continuity.rehearse.continuity (per scenario: side effects
attempted again, executed again, held, the handoff's claims confirmed / contradicted),
then the same with the hold switched off as a control, and the hooks' cost per call.

``--cost N``: instead, the added wall time of a classified call, N pairs (A, B, A, B …):
PreToolUse of a POST with a new body each time, and of ``npm publish`` (its key takes HEAD
and the work-tree state: one ``git status``), each against PreToolUse of ``ls`` (unclassified);
PostToolUse after a recorded intent against one after ``ls``.  The median of the paired
differences, in ms.

Usage: python bench/continuity.py [--json FILE] [--cost N]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from cc_continuity.rehearse import continuity  # noqa: E402


def _pre(w, sid, command):
    tid = "toolu_cost_" + uuid.uuid4().hex[:16]
    w._row(sid, {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}})
    t0 = time.perf_counter()
    w.hook("PreToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid)
    return time.perf_counter() - t0, tid


def _post(w, sid, command, tid):
    t0 = time.perf_counter()
    w.hook("PostToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid,
           tool_response={"stdout": "", "stderr": "", "interrupted": False})
    return time.perf_counter() - t0


def cost(n):
    work = tempfile.mkdtemp(prefix="cc-continuity-cost-")
    try:
        w = continuity.World(work)
        for i in range(30):
            w.write("src/f%d.py" % i, "x = %d\n" % i)  # a work tree with some changes for git status to list
        sid = str(uuid.uuid4())
        w.start(sid)
        out = {}
        for name, make in (("POST, new body", lambda i: "curl -s -X POST -d n=%d http://api.example.com/x" % i),
                           ("npm publish (git state)", lambda i: "npm publish --tag t%d" % i)):
            pre, post = [], []
            for i in range(n + 3):
                a, tid_a = _pre(w, sid, make(i))
                b, tid_b = _pre(w, sid, "ls")
                pa = _post(w, sid, make(i), tid_a)
                pb = _post(w, sid, "ls", tid_b)
                if i >= 3:  # warm-up
                    pre.append((a - b) * 1000)
                    post.append((pa - pb) * 1000)
            out[name] = {"pre_added_ms": round(statistics.median(pre), 1), "post_added_ms": round(statistics.median(post), 1),
                         "runs": n, "load": "%.2f" % os.getloadavg()[0]}
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--cost", type=int, metavar="N", help="measure the added cost of a classified call instead")
    args = ap.parse_args()
    if args.cost:
        print(json.dumps(cost(args.cost), indent=1))
        return 0
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
