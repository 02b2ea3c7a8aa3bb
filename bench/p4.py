"""P4 on the mod path: the predecessor's last model request to the successor's first, and where it goes.

Runs chains of in-process rotations (cc-continuity installed as a plugin, its mod handing
over) against a real Claude Code binary and the scripted model server, and prints, per
rotation, the server's interval and its breakdown from our own logs:

  stop      the verifying Stop hook's own time (hooks.log; the interpreter's start is not in it)
  to_stop   the last request -> that Stop's end, less ``stop``: the reply, Claude Code's turn end,
            the hook's process start
  to_clear  the Stop's end -> the mod's /clear (turn.complete, taking the offer)
  clear     /clear (SessionEnd and SessionStart run inside it), as the mod measured it
  end, start  the SessionEnd and SessionStart hooks' own times
  submit    the /clear's end -> UserPromptSubmit's end (the submit, the UPS hook)
  ups       the UserPromptSubmit hook's own time
  build     UserPromptSubmit's end -> the successor's first request: Claude Code's request build

``--floor`` runs the same chain with every hook of ours answering nothing at once
(``/bin/true``) and a mod that only does /clear + submit after each turn: what Claude Code
itself costs.  The load average is printed beside each chain.

Usage: python bench/p4.py [--claude BIN] [--chains 3] [--rotations 4] [--floor] [--json]
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from cc_continuity import ledger  # noqa: E402
from cc_continuity.rehearse import CONTINUATION, MODEL, rotation_scenario  # noqa: E402
from e2e.common import prompt  # noqa: E402
from e2e.harness import ClaudeSandbox, find_claude_bin  # noqa: E402

TASK = "P4 bench task: keep a work log"
TRACE = os.environ.get("P4_TRACE") == "1"

# The floor's mod: after each of the first ``ROTATIONS`` turns, /clear and submit the continuation.
FLOOR_MOD = """
let done = 0;
let handing = false;
export function register(on) {
  on("turn.complete", async ($, e, next) => {
    const out = await next(e);
    if (!e.agentId && !handing && done < %(rotations)d) {
      handing = true;
      done += 1;
      const t0 = Date.now();
      void (async () => {
        try {
          await $.command.run({ command: "clear" });
          const t1 = Date.now();
          await $.prompt.submit({ text: %(continuation)s, asUser: true });
          const t2 = Date.now();
          const line = `mod ${t0 / 1000} ${t1 / 1000} ${t2 / 1000}`;
          await $.process.run(["sh", "-c", 'echo "$1" >> "$2"', "sh", line, %(log)s], { timeoutMs: 5000 });
        } finally {
          handing = false;
        }
      })();
    }
    return out;
  });
}
"""


def stamp_time(text):
    """hooks.log's UTC stamp (``2026-12-07T11:43:15.123Z``) -> epoch seconds."""
    base, ms = text[:-1].split(".")
    return time.mktime(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) - time.timezone + int(ms) / 1000.0


def hook_lines(cc_home):
    """[(end, event, sid8, ms)] from hooks.log."""
    out = []
    try:
        with open(os.path.join(cc_home, "logs", "hooks.log"), encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2].startswith("sid=") and parts[3].endswith("ms"):
                    out.append((stamp_time(parts[0]), parts[1], parts[2][4:], float(parts[3][:-2])))
    except OSError:
        pass
    return out


def floor_plugin(sb, rotations):
    """Every hook of the installed plugin answers nothing at once; its mod only clears and submits.

    Both copies: the marketplace's directory (where Claude Code reads a local marketplace's hooks
    from) and the versioned cache."""
    tables = glob.glob(os.path.join(sb.home, ".claude", "plugins", "cache", "*", "*", "*", "hooks", "hooks.json"))
    tables.append(os.path.join(sb.cc_home, "plugin", "hooks", "hooks.json"))
    trace = os.path.join(sb.root, "floor.log")
    for path in tables:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
        for event, groups in table["hooks"].items():
            for group in groups:
                for hook in group["hooks"]:
                    if hook.get("type") == "command" and TRACE:
                        hook["command"] = "/bin/sh"
                        hook["args"] = ["-c", 'echo "$0 $(date +%%s.%%N)" >> %s' % trace, event]
                    elif hook.get("type") == "command":
                        hook["command"], hook["args"] = "/bin/true", []
        with open(path, "w", encoding="utf-8") as f:
            json.dump(table, f)
        with open(os.path.join(os.path.dirname(path), "mod.js"), "w", encoding="utf-8") as f:
            f.write(FLOOR_MOD % {"rotations": rotations, "continuation": json.dumps(CONTINUATION),
                                 "log": json.dumps(trace)})


def chain(claude_bin, rotations, floor, env=None):
    with ClaudeSandbox(claude_bin, model_name=MODEL, extra_env=env) as sb:
        scenario = rotation_scenario(sb.project, rotations=rotations, task=TASK)
        sb.model.set_scenario(scenario)
        proc = sb.cli("install", "--plugin", "--no-wrapper", timeout=240)
        if proc.returncode != 0:
            raise SystemExit(proc.stdout + proc.stderr)
        if floor:
            floor_plugin(sb, rotations)
        sb.start_claude()
        prompt(sb, TASK)
        sb.model.wait_for(lambda r: r.rule == "finish", timeout=60 + 30 * rotations)
        time.sleep(0.5)  # the last hooks' log lines
        load = os.getloadavg()[0]
        sessions = [s for s in sb.model.session_ids() if sb.model.main_requests(s)]
        if len(sessions) != rotations + 1:
            raise SystemExit("expected %d sessions, the server saw %d" % (rotations + 1, len(sessions)))
        rows = []
        hooks = hook_lines(sb.cc_home)
        for a, b in zip(sessions, sessions[1:]):
            last = max(r.time for r in sb.model.main_requests(a))
            first = sb.model.main_requests(b)[0].time
            row = {"p4_ms": round((first - last) * 1000), "load": round(load, 2)}
            if not floor:
                row.update(breakdown(sb, hooks, a, b, last, first))
            rows.append(row)
        return rows


def _hook(hooks, event, sid, after, before=None, last=False):
    found = [h for h in hooks if h[1] == event and h[2] == sid[:8] and h[0] >= after
             and (before is None or h[0] <= before)]
    return (found[-1] if last else found[0]) if found else None


def breakdown(sb, hooks, a, b, last, first):
    """The rotation a -> b's pieces, ms (None where a log line is missing)."""
    ms = lambda x: None if x is None else round(x * 1000)  # noqa: E731
    stop = _hook(hooks, "Stop", a, last, first, last=True)
    end = _hook(hooks, "SessionEnd", a, last, first)
    start = _hook(hooks, "SessionStart", b, last, first)
    ups = _hook(hooks, "UserPromptSubmit", b, last, first)
    mod = None
    for path in glob.glob(os.path.join(sb.cc_home, "projects", "*", "sessions", "*", "ledger.jsonl")):
        for r in ledger.read(path):
            if r.get("ev") == "mod" and r.get("step") == "submitted" and r.get("new_session_id") == b:
                mod = r
    row = {"stop": stop and round(stop[3]), "end": end and round(end[3]), "start": start and round(start[3]),
           "ups": ups and round(ups[3])}
    if stop:
        row["to_stop"] = ms(stop[0] - last - stop[3] / 1000)
    if mod and stop:
        # ModDone's ledger line is written after the submit: the /clear began submitted_ms before the submit's end.
        clear_at = mod["ts"] - mod["submitted_ms"] / 1000.0
        if ups:
            clear_at = min(clear_at, ups[0] - mod["submitted_ms"] / 1000.0)
        row["to_clear"] = ms(clear_at - stop[0])
        row["clear"] = mod["cleared_ms"]
        if ups:
            row["submit"] = ms(ups[0] - clear_at - mod["cleared_ms"] / 1000.0)
    if ups:
        row["build"] = ms(first - ups[0])
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claude", default=None, help="the claude binary (default: as the e2e suite finds it)")
    ap.add_argument("--chains", type=int, default=3)
    ap.add_argument("--rotations", type=int, default=4)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="a variable for Claude Code and our hooks (repeatable)")
    args = ap.parse_args(argv)
    claude_bin = args.claude or find_claude_bin()
    if not claude_bin:
        raise SystemExit("no claude binary: pass --claude")
    rows = []
    for _ in range(args.chains):
        rows.extend(chain(claude_bin, args.rotations, args.floor, dict(e.split("=", 1) for e in args.env)))
    if args.json:
        print(json.dumps(rows))
        return
    keys = [k for k in ("p4_ms", "to_stop", "stop", "to_clear", "clear", "end", "start", "submit", "ups", "build",
                        "load") if any(k in r for r in rows)]
    print(" ".join("%8s" % k for k in keys))
    for r in rows:
        print(" ".join("%8s" % ("-" if r.get(k) is None else r[k]) for k in keys))
    med = {k: statistics.median([r[k] for r in rows if r.get(k) is not None]) for k in keys
           if any(r.get(k) is not None for r in rows)}
    print(" ".join("%8s" % (round(med[k], 2) if k in med else "-") for k in keys), " (median)")


if __name__ == "__main__":
    main()
