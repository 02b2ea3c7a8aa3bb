"""The old name of Claude Code's hook entry, kept for one release (issue 35).

Claude Code's hooks now live with the rest of its host in :mod:`cc_continuity.hosts.claude.hooks`,
and a new install's bootstrap imports them from there (``install.settings.HOOK_MARK``).  A
settings.json written by an earlier version still runs ``from cc_continuity.hooks import main``
(``OLD_HOOK_MARK``) until ``cc-continuity install`` replaces its groups where they stand; until
then this name answers those hooks exactly as before.  ``cc-continuity doctor`` names such an
install.  Nothing in the package imports this module.
"""

from ..hosts.claude.hooks import main

__all__ = ["main"]
