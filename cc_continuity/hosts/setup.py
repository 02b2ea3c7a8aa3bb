"""``cc-continuity install`` / ``uninstall`` across the hosts: which host's piece runs, on install/'s library.

Above both: install/ is the library (the plan, the lock, what every agent's install shares) and names
no host; each host folder named in :data:`~cc_continuity.hosts.HOSTS` has its piece,
``hosts/<name>/install.py`` (``install(opts, out, check_only)``, ``uninstall(out, record)``,
``still_installed(record)``, its ``NAME``, ``RECORD_KEYS`` and ``HOOK_FILE``).  This module finds
them by the registry's names, so a new host is its folder and its registry line, and hands them to
install/ (``commands/install.py`` and ``commands/uninstall.py`` call here).  Not in hosts/__init__:
that one is on every tool call's path and imports nothing.
"""

import importlib

from .. import install as library
from . import HOSTS

# Every host's install piece, by its --agent name, in the registry's order (the order uninstall names them).
PIECES = {name: importlib.import_module(".%s.install" % name, __package__) for name in HOSTS}
AGENTS = tuple(PIECES)  # install's and uninstall's --agent values


def install(opts, out=print):
    """Install (or re-install / upgrade) ``opts.agent``'s piece; with ``opts.dry_run`` print diffs and write
    nothing."""
    return library.install(PIECES[opts.agent], opts, out)


def check(opts):
    """Raise what :func:`install` would refuse (options, files it cannot use), writing nothing; else 0."""
    return library.check(PIECES[opts.agent], opts)


def uninstall(purge=False, out=print, agents=AGENTS):
    """Remove what install added for ``agents`` (every one by default); ``purge`` also deletes
    ``$CC_CONTINUITY_HOME`` once no agent's install is left.  Returns an exit status."""
    return library.uninstall(PIECES, agents, purge, out)
