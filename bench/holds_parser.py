"""What the shell parser adds to a classified PreToolUse (issue 33), measured pair by pair.

The installed PreToolUse command (the hook table rendered for an app-shaped root, the way an install
writes it) runs for a call the pre-filter sends on (``curl -X POST <url>``: classified, an intent
recorded) and for one it stops (``ls``), alternately, in one real git project: once with tree-sitter in
the root's ``lib/`` (what an install or a plugin's built packages give the hooks), once without (the
tokenizer).  The figure is the classified call's median minus the ``ls`` call's, each way, and their
difference: the parser's added cost.  Each classified call has its own URL (a repeat would be held).

Usage: python bench/holds_parser.py [--runs 40]
"""

import argparse
import importlib.util
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
sys.path.insert(0, os.path.join(REPO, "tests"))

import pairs  # noqa: E402
from helpers.hookdriver import HookDriver, tokens_at  # noqa: E402
from helpers.transcripts import hook_command  # noqa: E402


def app_root(where, with_parser):
    root = os.path.join(where, "app-parser" if with_parser else "app-tokenizer")
    os.makedirs(os.path.join(root, "lib"))
    os.symlink(os.path.join(REPO, "cc_continuity"), os.path.join(root, "cc_continuity"))
    if with_parser:
        for name in ("tree_sitter", "tree_sitter_bash"):
            os.symlink(importlib.util.find_spec(name).submodule_search_locations[0], os.path.join(root, "lib", name))
    return root


def measure(where, root, runs, sid):
    drv = HookDriver(os.path.join(where, "proj-%s" % os.path.basename(root)))
    drv.command = lambda event: hook_command(event, root=root)
    drv.transcript(sid).assistant(tokens_at(5))
    drv.hook("SessionStart", sid, source="startup")
    cmd = hook_command("PreToolUse", root=root)
    env = drv.env(sid)
    t = drv.transcript(sid)
    counter = [0]

    def prepared(command):
        """The assistant row that holds this call (PreToolUse waits for it, as live), then the timed call."""
        counter[0] += 1
        t.assistant(tokens_at(6), tool_uses=[("Bash", {"command": command})])
        with open(t.path) as f:
            tid = json.loads(f.read().splitlines()[-1])["message"]["content"][0]["id"]
        payload = json.dumps(drv.payload("PreToolUse", sid, tool_name="Bash", tool_use_id=tid,
                                         tool_input={"command": command})).encode()
        return lambda: subprocess.run(cmd, input=payload, env=env, cwd=drv.root, capture_output=True, check=True)

    ta, tb = [], []
    for i in range(runs + 3):
        a = prepared("curl -X POST https://api.example.com/hooks/%d -d a=1" % counter[0])
        da = pairs.timed(a)[0]
        b = prepared("ls -la")
        db = pairs.timed(b)[0]
        if i >= 3:  # warm-up
            ta.append(da)
            tb.append(db)
    return pairs.summary(ta, tb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    where = tempfile.mkdtemp(prefix="cc-bench-holds-")
    os.environ["HOME"] = os.path.join(where, "home")
    os.environ["CC_CONTINUITY_HOME"] = os.path.join(where, "cc")
    os.makedirs(os.environ["HOME"])
    for k in ("AUTHOR", "COMMITTER"):
        os.environ["GIT_%s_NAME" % k], os.environ["GIT_%s_EMAIL" % k] = "Bench", "bench@example.invalid"
    try:
        out = {}
        for i, with_parser in enumerate((True, False)):
            s = measure(where, app_root(where, with_parser), args.runs, "b%07d-0000-4000-8000-00000000000%d" % (i, i))
            s["added_ms"] = round(s["a_ms"] - s["b_ms"], 2)
            out["parser" if with_parser else "tokenizer"] = s
        out["parser_adds_ms"] = round(out["parser"]["added_ms"] - out["tokenizer"]["added_ms"], 2)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
