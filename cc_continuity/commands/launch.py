"""``cc-continuity launch [--unattended] [--print] -- <claude args...>``: what the ``claude()`` wrapper runs.

How claude is run is decided in :mod:`cc_continuity.hosts.claude.launch`; this verb
execs that plan, or, for a new tmux session, runs the tmux client and waits for it:
then claude's own exit status is this verb's, and the pane's last lines are printed
when claude could not start or failed (``launch.report``).  Any failure before that exits with
``install.wrapper.FALLTHROUGH_STATUS`` after one line on stderr, and the wrapper
runs the real claude itself.
"""

import argparse
import json
import os
import signal
import sys
import time

from ..hosts.claude import launchenv
from ..install.wrapper import FALLTHROUGH_STATUS
from ..hosts.claude.launch import discard, one_line, plan, report, wait_attached


def register(subparsers):
    p = subparsers.add_parser(
        "launch",
        description="Start or attach the tmux session <slug>-<NNN> running the real claude with the given "
        "arguments, or run claude directly when rotation does not apply.",
    )
    p.add_argument("--unattended", action="store_true",
                   help="add --dangerously-skip-permissions for the whole rotation chain")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print what would be exec'd as JSON instead of running it")
    p.add_argument("claude_args", nargs=argparse.REMAINDER, help="arguments for claude, after --")
    p.set_defaults(func=run)


def run(args):
    claude_args = list(args.claude_args)
    if claude_args[:1] == ["--"]:
        claude_args = claude_args[1:]
    try:
        p = plan(claude_args, unattended=args.unattended, env=dict(os.environ), cwd=os.getcwd(),
                 interactive=os.isatty(0) and os.isatty(1))
    except Exception as e:  # any bug here must leave the user with a working claude
        sys.stderr.write("cc-continuity: %s; starting claude without it\n" % one_line(e))
        return FALLTHROUGH_STATUS
    if args.print_only:
        print(json.dumps(p.describe()))
        return 0
    for note in p.notes:
        sys.stderr.write("cc-continuity: %s\n" % note)
    try:
        if p.env_file:
            launchenv.write(*p.env_file)
        sys.stdout.flush()
        sys.stderr.flush()
        if p.exit_file is None:
            os.execve(p.argv[0], p.argv, p.env)
        started = time.monotonic()
        # The terminal is tmux's now (raw mode): a ^C typed is claude's, not ours.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        client = wait_attached(p.argv, p.env, p.exit_file)
    except Exception as e:
        if p.env_file:
            discard(p.env_file[0])
        sys.stderr.write("cc-continuity: cannot run %s: %s; starting claude without it\n" % (p.argv[0], one_line(e)))
        return FALLTHROUGH_STATUS
    status, lines = report(p.exit_file, client, time.monotonic() - started)
    if lines:
        sys.stderr.write("".join(line + "\n" for line in lines))
    return status
