"""The ports a hook call's context fills the same way whatever the agent: pushes go to the notifier's
spool, a verified checkpoint is handed over by the detached tmux rotator, and sharing through a git
remote (``share/``, the optional feature) publishes, renews leases and gates claims.

Claude Code's :class:`~.claude.host.HookContext` and Codex CLI's :class:`~.codex.host.CodexContext`
both are a :class:`HookPorts`; what differs between them (the host, a turn's id, the outcome's
home) stays in their own folder.  The rotator learns whose TUI it types into from its plan: the
session's ``host`` (put there by ``rotation.handover.plan``) and the host's screen reader
(:attr:`HookPorts.SCREEN_READER`, put there by :meth:`HookPorts.start_rotator`: tmux/ imports no host).  tmux, notify and share are
imported when used: Claude Code's mod calls in at every turn's end and should not pay for loading them.
"""

from __future__ import annotations

import os

from ..rotation import context

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from ..rotation.context import ClaimGate
    from ..session import Record


class HookPorts(context.Context):
    """A rotation context whose ports are the real adapters: notify for pushes, tmux for the hand-over."""

    # How the tmux rotator reads this host's TUI ("module:Class", in the rotator's plan); None: Claude Code's,
    # the rotator's own default (tmux/pane.ClaudeScreen).
    SCREEN_READER: str | None = None

    def deliver(self, push: "dict[str, Any]") -> None:
        if not self.cfg.get("ntfy_url"):  # pushes off: notify (subprocess, urllib: ~12 ms) is not imported
            return
        from .. import notify  # (when a push goes out: the mod's every turn does not pay for it)

        notify.emit(push["event"], slug=push["slug"], session=push["session"], ratio=push["ratio"],
                    text=push["text"], project_root=push["project_root"],
                    agent=None if self.host.name == "claude" else self.host.label)  # (Claude Code: the first host)

    def can_drive(self, rec: "Record") -> bool:
        from .. import tmux  # (when a hand-over needs a driver)

        usable: bool = tmux.can_drive(rec, self.cfg)  # (tmux/ is not typed yet)
        return usable

    def start_rotator(self, rec: "Record", sdir: str, successor_name: str, project_lock: str | None,
                      standby_s: float | None) -> int:
        from ..tmux import rotator  # (when one is started)

        pid: int = rotator.start(rec, sdir, self.cfg, successor_name, project_lock, standby_s,
                                 reader=self.SCREEN_READER)  # (tmux/ is not typed yet)
        return pid

    def after_verified(self, n: int) -> None:
        from .. import share  # (its __init__: the feature loads more only when the user shares)

        share.after_verified(self, n)

    def renew_leases(self, sdir: str) -> None:
        if not os.path.exists(self.project.leases_path):
            return  # (every turn's end: nothing of share/ is loaded where no lease is held)
        from .. import share  # (where leases are held)

        share.renew_leases(self, sdir)

    def claim_gate(self, n: int, name: str, cands: list[int]) -> "ClaimGate | None":
        from .. import share  # (its __init__: the feature loads more only when a candidate was published)

        return share.claim_gate(self, n, name, cands)
