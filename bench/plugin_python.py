"""P1p: the plugin's PostToolUse hook against the settings.json command, on any PATH (issue 20).

The plugin cannot know the interpreter; its SessionStart (plugin/hooks/python.sh) chooses
one and keeps it as ``$CLAUDE_PLUGIN_DATA/python``, which every other hook runs. Each row
runs that chooser for real under one PATH, then times, pair by pair, the plugin's
PostToolUse command as Claude Code runs it (``${CLAUDE_PLUGIN_*}`` filled in) against the
command a settings install writes for the same Python (its absolute path). A third column
is the old form (``python3`` found on PATH, a version manager's shim included) against the
same settings command.

  shim   pyenv's shims first on PATH (PYENV_VERSION pins a 3.11+; python3 is a bash script)
  old    a python3 3.9.18 first on PATH, a python3.12 later
  venv   PATH as an activated venv has it (venv/bin first, its python3 a link to the base)

Each row also times the plugin's UserPromptSubmit (once a prompt, not a tool call: it runs
through the chooser, one sh that execs the link, so that a plugin installed in a live session
links its Python at the first prompt) against the settings command for that event.

Usage: python bench/plugin_python.py [--runs 40] [--json out.json]
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
PLUGIN = os.path.join(REPO, "plugin")
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import pairs  # noqa: E402

PYENV = os.path.expanduser("~/.pyenv")
GOAL = 1.05


def table():
    with open(os.path.join(PLUGIN, "hooks", "hooks.json"), encoding="utf-8") as f:
        return json.load(f)["hooks"]


def fill(text, data):
    return text.replace("${CLAUDE_PLUGIN_ROOT}", PLUGIN).replace("${CLAUDE_PLUGIN_DATA}", data)


def choose(env, data, payload):
    """Run the plugin's SessionStart (the chooser) as Claude Code would; the Python it linked."""
    (h,) = table()["SessionStart"][0]["hooks"]
    subprocess.run([fill(h["command"], data)] + [fill(a, data) for a in h["args"]], input=payload,
                   env=dict(env, CLAUDE_PLUGIN_DATA=data), stdout=subprocess.DEVNULL, check=True, timeout=60)
    return os.readlink(os.path.join(data, "python"))


def plugin_command(env, data, payload, event="PostToolUse"):
    """The plugin's hook for ``event`` as Claude Code runs it, after its SessionStart chose the Python."""
    choose(env, data, payload)
    h = table()[event][0]["hooks"][0]
    return [fill(h["command"], data)] + [fill(a, data) for a in h["args"]]


def settings_command(python, event="PostToolUse"):
    from cc_continuity.install import settings as install_settings
    return [python, "-S", "-c", install_settings.boot_code(PLUGIN), event]


def old_command(env):
    """The hooks.json of before issue 20: ``python3`` from PATH, whatever it is."""
    from cc_continuity.install import settings as install_settings
    return [shutil.which("python3", path=env["PATH"]), "-S", "-c", install_settings.boot_code(PLUGIN), "PostToolUse"]


def instructions(cmd, payload, env):
    """User-space instructions of ``cmd`` and every process it execs (valgrind), or None: a noise-free
    second opinion beside the paired wall clock on a loaded machine."""
    if not shutil.which("valgrind"):
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--trace-children=yes"]
                       + cmd, input=payload, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=dict(env, PYTHONHASHSEED="0"))
    counts = [int(line.split()[-1]) for line in p.stderr.decode().splitlines() if "Collected" in line]
    return sum(counts) if counts else None


def run(cmd, data, env):
    subprocess.run(cmd, input=data() if callable(data) else data, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env, check=False)


def paths(work):
    """{name: PATH} for the shapes this machine can make."""
    out = {}
    shims = os.path.join(PYENV, "shims")
    if os.access(os.path.join(shims, "python3"), os.X_OK):
        out["shim"] = shims + ":/usr/bin:/bin"
    old = os.path.join(PYENV, "versions", "3.9.18", "bin", "python3")
    new = shutil.which("python3.12") and os.path.join(PYENV, "versions", "3.12.1", "bin", "python3.12")
    if os.access(old, os.X_OK) and new and os.access(new, os.X_OK):
        for name, target in (("old", old), ("new", new)):
            os.makedirs(os.path.join(work, name))
            os.symlink(target, os.path.join(work, name, "python3" if name == "old" else "python3.12"))
        out["old"] = "%s:%s:/usr/bin:/bin" % (os.path.join(work, "old"), os.path.join(work, "new"))
    venv = os.path.join(work, "venv")
    subprocess.run([os.path.realpath(sys.executable), "-m", "venv", "--without-pip", venv], check=True)
    out["venv"] = os.path.join(venv, "bin") + ":/usr/bin:/bin"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cc-bench-p1p-")
    results = {}
    try:
        proj = os.path.join(work, "proj")
        subprocess.run(["git", "init", "-q", proj], check=True)
        base = {"session_id": "bench-p1p", "transcript_path": os.path.join(work, "t.jsonl"), "cwd": proj}
        with open(base["transcript_path"], "w") as f:
            f.write("")
        start = json.dumps(dict(base, hook_event_name="SessionStart", source="startup")).encode()
        calls = iter(range(1, 1 << 30))

        def post():
            return json.dumps(dict(base, hook_event_name="PostToolUse", tool_name="Bash", tool_input={"command": "ls"},
                                   tool_response={"stdout": "", "stderr": ""},
                                   tool_use_id="toolu_p1p_%d" % next(calls))).encode()

        def prompt():
            return json.dumps(dict(base, hook_event_name="UserPromptSubmit", prompt="hello")).encode()

        for name, path in paths(work).items():
            env = {"PATH": path, "HOME": os.path.join(work, "home-" + name), "CC_CONTINUITY_HOME": os.path.join(
                work, "cc-" + name), "CLAUDE_PROJECT_DIR": proj, "PYENV_ROOT": PYENV, "PYENV_VERSION": "3.11.7"}
            os.makedirs(env["HOME"])
            data = os.path.join(work, "data-" + name)
            os.makedirs(data)
            plugin = plugin_command(env, data, start)
            chosen = os.readlink(os.path.join(data, "python"))
            settings = settings_command(chosen)  # what a settings install writes for that Python
            subprocess.run([chosen, "-m", "compileall", "-q",
                            os.path.join(REPO, "cc_continuity")], env=env, stdout=subprocess.DEVNULL, check=False)
            for cmd in (plugin, settings):  # the session card and .pyc are made once, as in a session
                run(cmd, post, env)
            row = pairs.alternate(lambda: run(plugin, post, env), lambda: run(settings, post, env), args.runs, 3)
            row["before"] = pairs.alternate(lambda: run(old_command(env), post, env),
                                            lambda: run(settings, post, env), args.runs, 3)
            row["chosen"] = chosen
            plugin_ups, settings_ups = plugin_command(env, data, start, "UserPromptSubmit"), \
                settings_command(chosen, "UserPromptSubmit")
            penv = dict(env, CLAUDE_PLUGIN_DATA=data)  # as Claude Code runs a plugin's hooks (the chooser reads it)
            row["prompt"] = pairs.alternate(lambda: run(plugin_ups, prompt, penv),
                                            lambda: run(settings_ups, prompt, penv), args.runs, 3)
            ups = {k: instructions(c, prompt(), penv) for k, c in (("plugin", plugin_ups), ("settings", settings_ups))}
            if None not in ups.values():
                row["prompt"]["instructions"] = dict(ups, ratio=round(ups["plugin"] / ups["settings"], 4))
            counts = {k: instructions(c, post(), env) for k, c in (("plugin", plugin), ("settings", settings),
                                                                    ("before", old_command(env)))}
            if None not in counts.values():
                row["instructions"] = dict(counts, ratio=round(counts["plugin"] / counts["settings"], 4),
                                           before_ratio=round(counts["before"] / counts["settings"], 4))
            row["python3_on_path"] = shutil.which("python3", path=path)
            results[name] = row
            print("P1p %-5s plugin %.2f ms  settings %.2f ms  ratio %.3f (min %.3f, max %.3f, load %s)  goal <= %.2f"
                  "   [python3 from PATH, before: %.3f]   chose %s" % (
                      name, row["a_ms"], row["b_ms"], row["ratio"], row["min"], row["max"], row["load"], GOAL,
                      row["before"]["ratio"], chosen), flush=True)
            if "instructions" in row:
                print("          instructions: plugin/settings %.4f, python3-from-PATH/settings %.4f" % (
                    row["instructions"]["ratio"], row["instructions"]["before_ratio"]), flush=True)
            up = row["prompt"]
            print("      UserPromptSubmit plugin %.2f ms  settings %.2f ms  ratio %.3f (min %.3f, max %.3f)%s" % (
                up["a_ms"], up["b_ms"], up["ratio"], up["min"], up["max"],
                "  instructions %.4f" % up["instructions"]["ratio"] if "instructions" in up else ""), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
