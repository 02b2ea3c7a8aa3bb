"""``cc-continuity off``: disable rotation for the current project."""

from .on import toggle


def register(sub):
    p = sub.add_parser("off", help="disable rotation for this project (hooks stay installed, do nothing)")
    p.set_defaults(func=run)


def run(args):
    return toggle(False)
