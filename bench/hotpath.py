"""Hot-path benchmarks P1–P3 (issue 2).

Each figure is a ratio measured pair by pair (A, B, A, B, …) so drift in the
machine's speed cancels; the median of the ratios is reported.

  P1  PostToolUse hook, exact settings.json command line, no level change,
      200 MB transcript                       vs  python3 -S -c pass
  P2  cc-continuity meter, 500 MB transcript  vs  the same on a 1 MB one
  P3  the status line command                 vs  python3 -S -c pass
  P1p the same PostToolUse, as the plugin's hooks.json runs it (the Python its SessionStart
      linked as ${CLAUDE_PLUGIN_DATA}/python) vs  the settings.json command

Usage: python bench/hotpath.py [--runs 30] [--big-mb 500] [--p1-mb 200]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import pairs  # noqa: E402
import synth  # noqa: E402

BASE_PY = os.path.realpath(sys.executable)


def wall(cmd, stdin_bytes, env):
    if callable(stdin_bytes):  # a fresh payload per call (a repeated tool_use_id is a twin: hosts/claude/hooks' first)
        stdin_bytes = stdin_bytes()
    subprocess.run(cmd, input=stdin_bytes, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)


def paired(a, b, stdin_a, stdin_b, env, runs, warmup=3):
    return pairs.alternate(lambda: wall(a, stdin_a, env), lambda: wall(b, stdin_b, env), runs, warmup)


def plugin_command(env, work, start):
    """The plugin's PostToolUse hook as Claude Code runs it, after its SessionStart chose the Python
    (bench/plugin_python.py measures it on other PATHs: a pyenv shim, an old python3, a venv)."""
    import plugin_python

    data = os.path.join(work, "plugin-data")
    os.makedirs(data, exist_ok=True)
    return plugin_python.plugin_command(env, data, start)


def instructions(cmd, stdin_bytes, env):
    """User-space instruction count (valgrind), a noise-free second opinion."""
    if not shutil.which("valgrind"):
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd, input=stdin_bytes,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    for line in p.stderr.decode().splitlines():
        if "Collected" in line:
            return int(line.split()[-1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--p1-mb", type=int, default=200)
    ap.add_argument("--big-mb", type=int, default=500)
    ap.add_argument("--instructions", action="store_true", help="also count instructions with valgrind")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="cc-bench-")
    try:
        subprocess.run([BASE_PY, "-m", "compileall", "-q", os.path.join(REPO, "cc_continuity")], check=True,
                       stdout=subprocess.DEVNULL)
        home, proj = os.path.join(work, "home"), os.path.join(work, "proj")
        os.makedirs(home)
        os.makedirs(proj)
        subprocess.run(["git", "init", "-q", proj], check=True)
        env = dict(os.environ, HOME=home, CC_CONTINUITY_HOME=os.path.join(work, "cc"), CLAUDE_PROJECT_DIR=proj,
                   CLAUDE_PID="424242")
        env.pop("CC_CONTINUITY", None)
        t_p1 = os.path.join(work, "p1.jsonl")
        t_big = os.path.join(work, "big.jsonl")
        t_small = os.path.join(work, "small.jsonl")
        print("writing transcripts (%d MB, %d MB, 1 MB)…" % (args.p1_mb, args.big_mb), flush=True)
        synth.write(t_p1, args.p1_mb << 20)
        synth.write(t_big, args.big_mb << 20)
        synth.write(t_small, 1 << 20)

        from cc_continuity.install import settings as install_settings

        # Exactly what install writes into settings.json (exec form, -c bootstrap).
        hook = [BASE_PY, "-S", "-c", install_settings.boot_code(REPO)]
        status = [BASE_PY, "-S", os.path.join(REPO, "cc_continuity", "statusmain.py")]
        bare = [BASE_PY, "-S", "-c", "pass"]
        base = {"session_id": "bench-1", "transcript_path": t_p1, "cwd": proj}
        start = json.dumps(dict(base, hook_event_name="SessionStart", source="startup", model="claude-sonnet-4-5")).encode()
        subprocess.run(hook + ["SessionStart"], input=start, env=env, check=True)
        calls = iter(range(1, 1 << 30))

        def post():
            return json.dumps(dict(base, hook_event_name="PostToolUse", tool_name="Bash",
                                   tool_input={"command": "ls"},
                                   tool_response={"stdout": "a\nb", "stderr": "", "interrupted": False},
                                   tool_use_id="toolu_bench_%d" % next(calls))).encode()
        sl = json.dumps(dict(base, model={"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
                             context_window={"total_input_tokens": 80000, "total_output_tokens": 120,
                                             "context_window_size": 200000, "used_percentage": 40,
                                             "current_usage": {"input_tokens": 3, "output_tokens": 120,
                                                               "cache_creation_input_tokens": 2000,
                                                               "cache_read_input_tokens": 77997}})).encode()
        # First calls build the session card (slow path, once); the benchmark measures the steady state.
        for cmd, data in ((hook + ["PostToolUse"], post), (status, sl), (hook + ["PostToolUse"], post)):
            subprocess.run(cmd, input=data() if callable(data) else data, env=env, stdout=subprocess.DEVNULL,
                           check=True)

        results = {"python": BASE_PY, "runs": args.runs}
        print("P1 PostToolUse vs python3 -S -c pass …", flush=True)
        results["P1"] = paired(hook + ["PostToolUse"], bare, post, post, env, args.runs)
        print("P2 meter 500 MB vs 1 MB …", flush=True)
        meter = [BASE_PY, "-m", "cc_continuity", "meter"]
        results["P2"] = paired(meter + [t_big], meter + [t_small], b"", b"", env, args.runs)
        print("P3 statusline vs python3 -S -c pass …", flush=True)
        results["P3"] = paired(status, bare, sl, sl, env, args.runs)
        print("P1p the plugin's PostToolUse command vs the settings one …", flush=True)
        results["P1p"] = paired(plugin_command(env, work, start), hook + ["PostToolUse"], post, post, env, args.runs)
        results["P1p"]["python3"] = shutil.which("python3", path=env.get("PATH"))
        if args.instructions:
            results["instructions"] = {
                "pass": instructions(bare, post(), env),
                "post_tool_use": instructions(hook + ["PostToolUse"], post(), env),
                "statusline": instructions(status, sl, env),
            }
        log = open(os.path.join(work, "cc", "logs", "hooks.log")).read().splitlines()
        results["hook_outcomes"] = sorted({line.split("ms ", 1)[-1] for line in log if "PostToolUse" in line})
        for name, goal in (("P1", 1.15), ("P2", 1.05), ("P3", 1.15), ("P1p", 1.05)):
            r = results[name]
            print("%s  A %.2f ms  B %.2f ms  ratio median %.3f (min %.3f, max %.3f)  goal <= %.2f" % (
                name, r["a_ms"], r["b_ms"], r["ratio"], r["min"], r["max"], goal))
        if "instructions" in results:
            print("instructions: %s" % results["instructions"])
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
