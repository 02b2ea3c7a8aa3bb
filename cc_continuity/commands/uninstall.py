"""``cc-continuity uninstall [--agent claude|codex|gemini] [--purge]``: remove exactly what install added.

Every other byte of the user's files stays.  Both agents' installs by default; the app copy
goes with the last of them.  Safe to run twice.
"""

from ..hosts import setup


def register(sub):
    p = sub.add_parser("uninstall")
    p.add_argument("--agent", choices=setup.AGENTS,
                   help="take out only this agent's install (default: both; the app copy and launcher stay while "
                        "the other's hooks run them)")
    p.add_argument("--purge", action="store_true",
                   help="also delete $CC_CONTINUITY_HOME (config, checkpoints, logs)")
    p.set_defaults(func=run)


def run(args):
    return setup.uninstall(purge=args.purge, agents=(args.agent,) if args.agent else setup.AGENTS)
