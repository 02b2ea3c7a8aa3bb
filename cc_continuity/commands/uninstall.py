"""``cc-continuity uninstall [--purge]``: remove exactly what install added.

Every other byte of the user's files stays.  Safe to run twice.
"""

from .. import install


def register(sub):
    p = sub.add_parser("uninstall", help="remove what install added (hooks, blocks, skills, launcher, app copy)")
    p.add_argument("--purge", action="store_true",
                   help="also delete $CC_CONTINUITY_HOME (config, checkpoints, logs)")
    p.set_defaults(func=run)


def run(args):
    return install.uninstall(purge=args.purge)
