"""How far one hook call walks through the package: the files it crosses, and how often it moves.

The structural review's question (issue 27): a verifying Stop, traced call by call in
the hook's own process (the detached snapshot job is another process and not counted).

  files    the package files whose code ran
  moves    how often the running code changes file (a call into another file, or a
           return back into a caller's)
  back     those of them that are returns: the walk climbing back up
  hub      the file most moves go into, and how many (a hub, not a line, when high)

``--domain`` leaves the foundation out (the files every step uses: JSON, files, locks, the
config, the record, the ledger ...): the walk over the domain and the adapters alone.  The
foundation is the package root as of issue 27, named here so that the count means the same
on a tree from before it (when the domain's modules were at the root too).

Usage: python bench/walk.py [--event Stop|StopRequest|SessionStart|PostToolUse] [--json]
"""

import argparse
import collections
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from helpers.hookdriver import HookDriver, compact, handoff_text, tokens_at  # noqa: E402

PKG = os.path.join(REPO, "cc_continuity") + os.sep
FOUNDATION = {"atomic", "card", "config", "digest", "errors", "fastjson", "faults", "ledger", "lock", "log", "meter",
              "paths", "procs", "project", "redact", "safefile", "session", "statusline"}
CO_OPTIMIZED = 0x1  # a function's code (a module or class body has not this flag)
S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000b2"


def _foundation(rel):
    """Is the package file ``rel`` (``cc_continuity/x.py``) one of the foundation's?

    (``cc_continuity/redact/*.py`` too: redact.py was a root module as of issue 27, cut into a folder since.)
    """
    parts = rel.split(os.sep)
    return len(parts) == 2 and parts[1][:-3] in FOUNDATION or len(parts) == 3 and parts[1] == "redact"


def trace(fn, domain=False):
    """Run ``fn()`` under a profiler; (files, moves, back, into) over the package's own functions.

    The walk is the file whose code runs, over time: a call into another package file
    is a move down, a return into another is a move back up.  Module bodies (imports)
    and class bodies (imports) are not steps of the walk: only functions are.
    """
    stack = []  # the package file of each open frame (None: outside the package or a module body)
    files, into = set(), collections.Counter()
    counts = {"moves": 0, "back": 0}
    here = [None]  # the package file running now

    def move(to, back):
        if to is not None and here[0] is not None and to != here[0]:
            counts["moves"] += 1
            counts["back"] += back
            into[to] += 1
        if to is not None:
            here[0] = to

    def prof(frame, event, arg):
        if event == "call":
            path = frame.f_code.co_filename
            mine = (os.path.relpath(path, REPO) if path.startswith(PKG) and frame.f_code.co_flags & CO_OPTIMIZED
                    else None)
            if mine is not None and domain and _foundation(mine):
                mine = None
            if mine is not None:
                files.add(mine)
            move(mine, 0)
            stack.append(mine)
        elif event == "return" and stack:
            stack.pop()
            move(next((f for f in reversed(stack) if f is not None), None), 1)

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return files, counts["moves"], counts["back"], into


def scenario(root, event):
    """A session at the moment of ``event``; returns the call to trace (the hook as dispatched).

    Stop is the verifying one (a valid handoff is there); StopRequest the one that asks for it.
    """
    from cc_continuity import config
    from cc_continuity.hosts.claude import hooks

    drv = HookDriver(os.path.join(root, "proj"), files={"README.md": "hello\n", "src/app.py": "print(1)\n"})
    os.environ.update(drv.env(S1))
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("UserPromptSubmit", S1, prompt="build the parser")
    drv.transcript(S1).assistant(tokens_at(65), "Step finished.")
    if event == "StopRequest":  # the Stop that asks for the handoff
        raw = compact(drv.payload("Stop", S1)).encode()
        env = drv.env(S1)
        return lambda: hooks.dispatch("Stop", raw, env)
    out = drv.hook("Stop", S1)
    path = re.search(r"Handoff file \(absolute path\): (\S+)", out["reason"]).group(1)
    with open(path, "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py` (modified)"}))
    sid, fields = S1, {}
    if event == "SessionStart":
        drv.hook("Stop", S1)
        drv.hook("SessionEnd", S1, reason="clear")
        drv.transcript(S2)
        sid, fields = S2, {"source": "clear"}
    elif event == "PostToolUse":
        drv.transcript(S1).assistant(tokens_at(66), tool_uses=[("Bash", {"command": "ls"})])
    raw = compact(drv.payload(event, sid, **fields)).encode()
    env = drv.env(sid)
    return lambda: hooks.dispatch(event, raw, env)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--event", default="Stop", choices=("Stop", "StopRequest", "SessionStart", "PostToolUse"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--domain", action="store_true", help="leave the foundation's files out of the walk")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        os.environ["CC_CONTINUITY_HOME"] = os.path.join(root, "state")
        os.environ["HOME"] = root
        for k in ("AUTHOR", "COMMITTER"):
            os.environ.setdefault("GIT_%s_NAME" % k, "walk")
            os.environ.setdefault("GIT_%s_EMAIL" % k, "walk@example.invalid")
        call = scenario(root, args.event)
        files, moves, back, into = trace(call, args.domain)
    hub, hub_n = into.most_common(1)[0] if into else ("-", 0)
    result = {"event": args.event, "files": len(files), "moves": moves, "back": back, "hub": hub, "hub_moves": hub_n,
              "list": sorted(files)}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print("%s: %d files, %d moves, %d of them back up; most moves into %s (%d)"
              % (args.event, len(files), moves, back, hub, hub_n))
        for f in sorted(files):
            print("  " + f)


if __name__ == "__main__":
    main()
