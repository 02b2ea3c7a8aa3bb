"""P4 on Gemini CLI: the predecessor's last model request to the successor's first, in ``gemini -p``.

Runs chains of rotations against the real Gemini CLI (0.61) and the scripted Gemini API: cc-continuity
installed into a throwaway HOME as a user installs it (``install --agent gemini``), the rehearsal's
rotation script, no ``--yolo`` (our policy rule writes the handoff, a user rule the work).  Per rotation
it prints the server's interval and, from our hooks.log, the two hooks on that path:

  verify   the verifying AfterAgent's own time (handoff taken, checkpoint, the clearing answer)
  claim    the successor's first BeforeAgent's own time (the claim, the bootstrap)
  rest     the interval less both: Gemini's turn end, two interpreter starts, its clear, its next request

``--floor`` runs the same chain shape with an AfterAgent that is a few lines of shell answering the
clear at once (no rotation of ours, no other hook): what Gemini itself costs for a hook's clear.

Usage: python bench/p4_gemini.py [--gemini BIN] [--chains 3] [--rotations 4] [--floor] [--json]
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from cc_continuity.rehearse import CONTINUATION, WINDOW, rotation_scenario  # noqa: E402
from helpers.gemini import GeminiSandbox, find_gemini_bin  # noqa: E402
from helpers.gemini_model import GeminiModel  # noqa: E402
from e2e.test_gemini_rotation_e2e import _gemini_tools  # noqa: E402  (the rehearsal's script in Gemini's tools)

TASK = "P4 chain task: keep a work log"
FLOOR_MARK = "Continuing from floor"
USER_RULE = ("[[rule]]\ntoolName = \"write_file\"\n"
             "argsPattern = '\\x00\"file_path\":\"%s/work-[0-9]+\\.txt\"\\x00'\ndecision = \"allow\"\npriority = 50\n")
# The floor's AfterAgent: clear and continue after each turn but the last (a count in a file), nothing else.
FLOOR_HOOK = """n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"
if [ "$n" -le "$2" ]; then
  printf '{"decision":"block","reason":"%s %d.","hookSpecificOutput":{"hookEventName":"AfterAgent","clearContext":true}}' "$3" "$n"
fi
"""


def _intervals(model, mark):
    """``[(interval_s, predecessor's last request, successor's first)]`` for each fresh context carrying ``mark``."""
    reqs = sorted(model.main_requests(), key=lambda r: r.time)
    out = []
    for i, r in enumerate(reqs):
        if i and len(r.contents) == 1 and mark in r.text:
            out.append((r.time - reqs[i - 1].time, reqs[i - 1], r))
    return out


def _hook_ms(cc_home):
    """``[(event, ms, outcome)]`` of hooks.log's gemini lines, in order."""
    out = []
    try:
        with open(os.path.join(cc_home, "logs", "hooks.log")) as f:
            for line in f:
                m = re.match(r"\S+ gemini:(\w+) sid=\S+ ([\d.]+)ms (.*)", line)
                if m:
                    out.append((m.group(1), float(m.group(2)), m.group(3)))
    except FileNotFoundError:
        pass
    return out


def chain(binary, rotations, floor):
    if floor:
        scenario = {"rules": [], "default": {"reply": "Step done.", "usage": {"input_tokens": 1000}}}
    else:
        scenario = None
    model = GeminiModel(scenario).start()
    box = GeminiSandbox(binary, model)
    try:
        env = {}
        if floor:
            hook = os.path.join(box.root, "floor.sh")
            with open(hook, "w") as f:
                f.write(FLOOR_HOOK)
            box.add_hook("AfterAgent", "sh %s %s %d '%s'" % (hook, os.path.join(box.root, "count"), rotations,
                                                              FLOOR_MARK), timeout_ms=10000)
        else:
            model.set_scenario(_gemini_tools(rotation_scenario(box.project, rotations=rotations, task=TASK)))
            cc_home = env["CC_CONTINUITY_HOME"] = os.path.join(box.root, "cchome")
            box.install_ours(cc_home, config={"window": WINDOW})
            with open(os.path.join(box.gemini_dir, "policies", "user-work.toml"), "w") as f:
                f.write(USER_RULE % re.escape(box.project))
        load = os.getloadavg()[0]
        run = box.run_print(TASK, timeout=300, env=env)
        if run.returncode != 0:
            raise SystemExit("gemini -p failed: %r" % run)
        got = _intervals(model, FLOOR_MARK if floor else CONTINUATION)
        rows = []
        hooks = [] if floor else _hook_ms(env["CC_CONTINUITY_HOME"])
        verifies = [ms for ev, ms, what in hooks if ev == "AfterAgent" and "verified" in what]
        claims = [ms for ev, ms, what in hooks if ev == "BeforeAgent" and what.startswith("claimed")]
        for k, (interval, _prev, _succ) in enumerate(got):
            row = {"interval_ms": round(interval * 1000, 1)}
            if not floor and k < len(verifies) and k < len(claims):
                row.update(verify_ms=verifies[k], claim_ms=claims[k],
                           rest_ms=round(interval * 1000 - verifies[k] - claims[k], 1))
            rows.append(row)
        return {"load": round(load, 2), "rotations": rows}
    finally:
        box.close()
        model.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gemini", default=None)
    ap.add_argument("--chains", type=int, default=3)
    ap.add_argument("--rotations", type=int, default=4)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    binary = args.gemini or find_gemini_bin()
    if not binary:
        raise SystemExit("no Gemini CLI: bash .ci/install-gemini.sh, or --gemini BIN")
    results = []
    for n in range(args.chains):
        started = time.monotonic()
        got = chain(binary, args.rotations, args.floor)
        results.append(got)
        ints = [r["interval_ms"] for r in got["rotations"]]
        print("chain %d (%s, load %.2f, %.1f s): %s" % (n + 1, "floor" if args.floor else "ours", got["load"],
                                                      time.monotonic() - started,
                                                      " ".join("%.0f" % i for i in ints)), flush=True)
        for r in got["rotations"]:
            if "verify_ms" in r:
                print("  interval %7.1f ms  verify %6.1f  claim %6.1f  rest %7.1f" % (
                    r["interval_ms"], r["verify_ms"], r["claim_ms"], r["rest_ms"]))
    every = [r["interval_ms"] for g in results for r in g["rotations"]]
    if every:
        print("median %.0f ms over %d rotations (min %.0f, max %.0f)" % (statistics.median(every), len(every),
                                                                        min(every), max(every)))
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
