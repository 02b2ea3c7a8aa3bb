"""The per-tool-call path's module set, pinned: changing it is a visible decision.

A PreToolUse and a PostToolUse that change no level, and a status line render,
each in a fresh ``python -S`` as installed; what they import beyond the
interpreter's start is compared with the set below, both ways (a module more
costs ~0.5 M instructions on every tool call; one less means this list is stale).
"""

import ast
import json
import os
import subprocess
import sys

from helpers.hookdriver import REPO, HookDriver, tokens_at

S1 = "f1f1f1f1-0000-4000-8000-0000000000f1"
BUILTINS = {"posix", "_json", "time", "_signal"}
SHA = {"_sha256", "_sha2"}  # the SHA-256 builtin: its name moved in Python 3.12
HOOK_CORE = {"cc_continuity", "cc_continuity.hosts", "cc_continuity.hosts.claude", "cc_continuity.hosts.claude.hooks",
             "cc_continuity.fastjson", "cc_continuity.card",
             "cc_continuity.paths", "cc_continuity.meter", "cc_continuity.session", "cc_continuity.ledger"}
EXPECTED = {
    "PreToolUse": HOOK_CORE | {"cc_continuity.hosts.claude.hooks.pre_tool_use"},  # no SHA-256: no ledger line
    "PostToolUse": HOOK_CORE | {"cc_continuity.hosts.claude.hooks.post_tool_use", "cc_continuity.digest"},
    "statusline": {"cc_continuity", "cc_continuity.statusline", "cc_continuity.fastjson", "cc_continuity.card",
                   "cc_continuity.paths", "cc_continuity.meter", "cc_continuity.session", "cc_continuity.ledger"},
}

HOOK = ("import sys, posix\n"
        "sys.path.insert(0, %r)\n"
        "before = set(sys.modules)\n"
        "import cc_continuity.hosts.claude.hooks as h\n"
        "out = h.dispatch(sys.argv[1], posix.read(0, 1 << 20))\n"
        "sys.stdout.write(repr((out[1], sorted(set(sys.modules) - before))))\n" % REPO)
# The status line ends with posix._exit (no teardown): the set is reported from there.
STATUS = ("import sys, posix\n"
          "sys.path.insert(0, %r)\n"
          "before = set(sys.modules)\n"
          "real_exit = posix._exit\n"
          "def report(code):\n"
          "    posix.write(2, repr(sorted(set(sys.modules) - before)).encode())\n"
          "    real_exit(code)\n"
          "posix._exit = report\n"
          "from cc_continuity import statusline\n"
          "statusline.main()\n" % REPO)


def world(tmp_path):
    drv = HookDriver(tmp_path / "proj")
    drv.transcript(S1).assistant(tokens_at(10), tool_uses=[("Bash", {"command": "ls"})])
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("PostToolUse", S1)  # the card is built: what follows is the steady state
    with open(drv.transcript(S1).path) as f:
        row = json.loads(f.read().splitlines()[-1])
    return drv, row["message"]["content"][0]["id"]


def loaded(new):
    """(builtins and stdlib loaded, our modules loaded), with the SHA builtin under one name."""
    outside = {("_sha256" if m in SHA else m) for m in new if m.split(".")[0] != "cc_continuity"}
    return outside, {m for m in new if m.split(".")[0] == "cc_continuity"}


def test_the_tool_hooks_load_only_their_pinned_modules(tmp_path):
    drv, tool_id = world(tmp_path)
    for event in ("PreToolUse", "PostToolUse"):
        payload = drv.payload(event, S1, **({"tool_use_id": tool_id} if event == "PreToolUse" else {}))
        res = subprocess.run([sys.executable, "-S", "-c", HOOK, event], input=json.dumps(payload).encode(),
                             env=drv.env(S1), capture_output=True, timeout=60)
        assert res.returncode == 0, res.stderr
        outcome, new = ast.literal_eval(res.stdout.decode())
        assert outcome == "ok", (event, outcome)
        outside, ours = loaded(new)
        assert ours == EXPECTED[event], (event, sorted(ours ^ EXPECTED[event]))
        allowed = BUILTINS | ({"_sha256"} if event == "PostToolUse" else set())  # it chains a ledger line
        assert outside <= allowed, (event, sorted(outside - allowed))


def test_the_status_line_loads_only_its_pinned_modules(tmp_path):
    drv, _ = world(tmp_path)
    drv.statusline(S1, percent=10)  # its first render notes the window, which makes the card stale,
    drv.hook("PostToolUse", S1)      # until the next hook rebuilds it: the steady state is after that
    payload = {"session_id": S1, "transcript_path": drv.transcript(S1).path, "cwd": drv.root,
               "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"}, "version": "2.1.328",
               "workspace": {"current_dir": drv.root, "project_dir": drv.root, "added_dirs": []},
               "context_window": {"total_input_tokens": 20000, "total_output_tokens": 50, "context_window_size": 200000,
                                  "current_usage": {"input_tokens": 3, "output_tokens": 50,
                                                    "cache_creation_input_tokens": 0,
                                                    "cache_read_input_tokens": 19997},
                                  "used_percentage": 10, "remaining_percentage": 90}}
    res = subprocess.run([sys.executable, "-S", "-c", STATUS], input=json.dumps(payload).encode(),
                         env=drv.env(S1, NO_COLOR="1"), capture_output=True, timeout=60)
    assert res.returncode == 0 and res.stdout.decode().startswith("ctx 10%"), (res.stdout, res.stderr)
    outside, ours = loaded(ast.literal_eval(res.stderr.decode()))
    assert ours == EXPECTED["statusline"], sorted(ours ^ EXPECTED["statusline"])
    assert outside <= BUILTINS, sorted(outside - BUILTINS)
    assert os.path.basename(drv.root) in res.stdout.decode()
