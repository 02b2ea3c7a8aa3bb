"""Sharing checkpoints through the repository's own git remote: the optional feature (opt-in, the user's config only).

With ``share_remote`` set (a remote name of the user's own config; a repository's config can never
set it), each verified checkpoint is published to that remote, and another machine may claim it
(``cc-continuity claim --from <remote>``) with a lease that keeps "claimed exactly once" across machines.

The protocol (``rotation/``) never imports this folder: it calls three ports of its context
(:meth:`~cc_continuity.rotation.context.Context.after_verified`, ``renew_leases``, ``claim_gate``),
empty in the plain context.  The hook contexts (``hosts/ports.py``) fill them with the functions
below, each of which loads the rest of the feature only when it has something to do (the publish
job and the git runner cost a hook ~10 ms: subprocess).

- :mod:`.remote`: the machine's identity, ref names, the git runner as the user (never a prompt,
  bounded), reading the remote, the leases this machine holds;
- :mod:`.publish`: machine A's detached publish job;  :mod:`.claiming`: machine B's claim from a remote;
- :mod:`.lease`: the publishing machine's own claims and the hourly renewal;  :mod:`.fleet`: what is
  where (``status --remote``, pruning);  :mod:`.data`: what a remote carries, read as data;
  :mod:`.job`: the detached jobs' start.

It imports the root, ``holds/`` and ``rotation/`` only: a separate distribution would be a file move.
"""

from __future__ import annotations

import os

from .. import session

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from ..rotation.context import ClaimGate, Context


def after_verified(ctx: Context, n: int) -> None:
    """The rotation verified checkpoint ``n``: start its publish job when the user shares."""
    if ctx.cfg["share_remote"]:
        from . import publish  # (publish, subprocess: only when the user shares)

        publish.after_verified(ctx.project, n, ctx.cfg)


def renew_leases(ctx: Context, sdir: str) -> None:
    """A turn ended: start the renewal job when a lease this project's work holds is due."""
    if not os.path.exists(ctx.project.leases_path):
        return
    from . import lease  # (lease, subprocess: only where leases are held)

    try:
        lease.renew_due(ctx.project)
    except OSError as e:
        ctx.log(sdir, {"ev": "lease_renewal_failed", "error": str(e)[:200]})


def claim_gate(ctx: Context, n: int, name: str, cands: list[int]) -> ClaimGate | None:
    """The remote's gate for session ``n``'s claim when a candidate was published, else None."""
    proj = ctx.project
    if not any(os.path.exists(session.share_status_path(proj.session_dir(c))) for c in cands):
        return None
    from . import lease  # (loaded when a candidate was published: +~10 ms)

    return lease.Gate(proj, n, name)
