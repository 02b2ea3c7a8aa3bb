"""``cc-continuity statusline``: print the status line for the JSON on stdin."""

from .. import statusline


def register(sub):
    p = sub.add_parser("statusline")
    p.set_defaults(func=run)


def run(args):
    statusline.main()
    return 0
