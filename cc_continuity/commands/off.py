"""``cc-continuity off``: disable rotation for the current project."""

from .on import toggle


def register(sub):
    p = sub.add_parser("off")
    p.set_defaults(func=run)


def run(args):
    return toggle(False)
