"""``cc-continuity run --agent codex "<task>"``: an unattended Codex task, rotated with no typing."""

import argparse
import os

from ..hosts.codex import headless
from ._util import die


def register(sub):
    p = sub.add_parser("run",
                       description="Run TASK with `codex exec` and rotate it at the context threshold with no "
                                   "typing: each session is one `codex exec`; when one hands over, the next "
                                   "starts with the continuation and claims the checkpoint. Exits with the last "
                                   "session's status. Needs the Codex hooks installed and trusted "
                                   "(`cc-continuity install --agent codex`).")
    p.add_argument("--agent", choices=("codex",), required=True,
                   help="the agent to drive (Claude Code runs in tmux or with the plugin instead)")
    p.add_argument("--codex", help="the codex executable (default: $CC_CONTINUITY_CODEX, else codex on PATH)")
    p.add_argument("--max-rotations", type=int, default=headless.MAX_ROTATIONS,
                   help="stop after this many rotations (default %%(default)s); exit status %d" % headless.LOOP_STOPPED)
    p.add_argument("task", help="what to do (the first session's prompt)")
    p.add_argument("exec_args", nargs=argparse.REMAINDER,
                   help="after --: more arguments for every `codex exec` (a model, -c key=value ...)")
    p.set_defaults(func=run)


def run(args):
    if args.max_rotations < 0:
        die("--max-rotations must be 0 or more", code=2)
    codex = headless.find_codex(os.environ, args.codex)
    if codex is None:
        die("no codex executable: install Codex CLI (npm install -g @openai/codex) or pass --codex PATH", code=2)
    extra = args.exec_args[1:] if args.exec_args[:1] == ["--"] else list(args.exec_args)
    return headless.run(args.task, codex, os.getcwd(), extra, os.environ, args.max_rotations)
