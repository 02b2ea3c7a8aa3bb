"""``cc-continuity run --agent claude|codex|gemini "<task>"``: a task run unattended to its end, rotated with no typing,
within caps a loop cannot ignore (rotation/run.py)."""

import argparse
import json
import os
import shutil
import sys

from ..hosts import runs
from ..rotation import run as loop
from ._util import die
from .configure import parse_tokens


def register(sub):
    p = sub.add_parser("run",
                       description="Run TASK unattended and rotate it at the context threshold with no typing, "
                                   "session after session, until it is done or a cap is reached. Claude Code: each "
                                   "session one `claude -p`. Codex CLI: each "
                                   "session one `codex exec`. Gemini CLI: `gemini -p` rotates in-process. Every "
                                   "session is unattended (a harmful repeat is denied, never asked). Exit status: "
                                   "0 done, 3 a cap reached (the newest checkpoint waits: --resume goes on), 4 a "
                                   "person is needed (a session said so, a harmful repeat was held, or the chain "
                                   "goes round), 5 the agent failed, 2 nothing to resume. Needs the agent's hooks "
                                   "installed (`cc-continuity install --agent ...`).")
    p.add_argument("--agent", choices=runs.AGENTS, required=True,
                   help="the agent to drive")
    p.add_argument("--claude", help="--agent claude: the claude executable (default: $CC_CONTINUITY_CLAUDE, else "
                                    "the first claude on PATH that is not ours)")
    p.add_argument("--codex", help="--agent codex: the codex executable (default: $CC_CONTINUITY_CODEX, else "
                                   "codex on PATH)")
    p.add_argument("--gemini", help="--agent gemini: the gemini executable (default: $CC_CONTINUITY_GEMINI, else "
                                    "gemini on PATH)")
    p.add_argument("--max-rotations", type=int, default=loop.MAX_ROTATIONS,
                   help="rotations the run may make (default %(default)s); past it the checkpoint waits and the "
                        "exit status is 3")
    p.add_argument("--max-time", type=float, metavar="SECONDS",
                   help="no new session after this many seconds (a session is never cut mid-turn); exit status 3")
    p.add_argument("--max-tokens", metavar="TOKENS", type=parse_tokens,
                   help="no new session once the run's sessions spent this many tokens (every request's input, "
                        "cached included, and output; e.g. 2000000 or 2m); exit status 3")
    p.add_argument("--resume", action="store_true",
                   help="continue from this project's newest checkpoint that waits for a successor (after a cap, or a "
                        "run that died) instead of starting TASK")
    p.add_argument("--same-tree", type=int, default=loop.SAME_TREE, metavar="N",
                   help="stop when the work tree is the same at N checkpoints in a row (default %(default)s; 0: never, "
                        "for a task that changes no file)")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON on stdout at its end")
    p.add_argument("task", nargs="?", help="what to do (the first session's prompt; not with --resume)")
    p.add_argument("exec_args", nargs=argparse.REMAINDER,
                   help="after --: more arguments for every session (`codex exec`'s or `gemini`'s: a model, "
                        "-c key=value, --yolo ...)")
    p.set_defaults(func=run)


def run(args):
    if args.max_rotations < 0:
        die("--max-rotations must be 0 or more", code=2)
    if args.max_time is not None and args.max_time <= 0:
        die("--max-time must be more than 0 seconds", code=2)
    if args.same_tree < 0:
        die("--same-tree must be 0 or more", code=2)
    if args.resume and args.task and args.task.startswith("-"):  # `run --resume -- --flag ...`: argparse gave the
        args.exec_args, args.task = ["--", args.task] + [a for a in args.exec_args if a != "--"], None  # task slot
    if bool(args.task) == args.resume:
        die("give a TASK, or --resume to continue the newest waiting checkpoint (not both)", code=2)
    piece = runs.PIECES[args.agent]
    other = [opt for name, opt in (("claude", "--claude"), ("codex", "--codex"), ("gemini", "--gemini"))
             if name != args.agent and getattr(args, name)]
    if other:
        die("%s: not for --agent %s" % (", ".join(other), args.agent), code=2)
    binary = piece.BACKEND.find(os.environ, getattr(args, args.agent))
    if binary is None:
        die(piece.NO_BINARY, code=2)
    extra = args.exec_args[1:] if args.exec_args[:1] == ["--"] else list(args.exec_args)
    report = (lambda facts: print(json.dumps(facts), flush=True)) if args.json else None
    live = _live_line if sys.stderr.isatty() else None  # a terminal: one line, rewritten; a log: event lines only
    return loop.run(piece.BACKEND, binary, args.task, os.getcwd(), extra, os.environ, args.max_rotations,
                    args.max_time, say=_say_over_the_line if live else None, resume=args.resume,
                    same_tree=args.same_tree, report=report, live=live, max_tokens=args.max_tokens)


def _say_over_the_line(text):
    sys.stderr.write("\r\033[K%s\n" % text)  # (the progress line is redrawn under it a second later)
    sys.stderr.flush()


def _live_line(text):
    width = shutil.get_terminal_size((100, 20)).columns - 1
    sys.stderr.write("\r\033[K" + text[:width])
    sys.stderr.flush()
