"""``cc-continuity statusline``: print the status line for the JSON on stdin."""

from .. import statusline


def register(sub):
    p = sub.add_parser("statusline", help="render the status line (Claude Code statusLine JSON on stdin)")
    p.set_defaults(func=run)


def run(args):
    statusline.main()
    return 0
