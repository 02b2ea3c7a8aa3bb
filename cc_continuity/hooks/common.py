"""The hook side of :class:`cc_continuity.rotation.context.Context`: a Claude Code hook call's facts and effects.

The rotation names its ports; here they are filled for Claude Code: the host is
:data:`~cc_continuity.hosts.claude.host.CLAUDE` (its transcript, ``CLAUDE_PID``), a
push goes to the notifier's spool (a detached flusher sends it), whether tmux can
drive and the rotator's spawn go to ``tmux/``.  Those two are imported when used:
the mod calls in at every turn's end and should not pay for loading tmux.
"""

from ..hosts.claude.host import CLAUDE
from ..rotation import context

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from ..session import Record
    from . import Call


class HookContext(context.Context):
    """The rotation's context for one :class:`~cc_continuity.hooks.Call`; the outcome goes back to the call."""

    session_id: str  # hooks.dispatch runs no handler without a usable session id (the same check as here)

    def __init__(self, call: "Call") -> None:
        self.call = call
        super().__init__(call.event, call.payload, call.env, host=CLAUDE)
        self.after_output = call.after_output  # hooks.main runs them once the answer is written

    @property
    def outcome(self) -> str:
        return self.call.outcome

    @outcome.setter
    def outcome(self, value: str) -> None:
        self.call.outcome = value

    @property
    def agent_version(self) -> str | None:
        return self.call.claude_version

    @agent_version.setter
    def agent_version(self, value: str | None) -> None:
        self.call.claude_version = value

    def deliver(self, push: "dict[str, Any]") -> None:
        from .. import notify

        notify.emit(push["event"], slug=push["slug"], session=push["session"], ratio=push["ratio"],
                    text=push["text"], project_root=push["project_root"])

    def can_drive(self, rec: "Record") -> bool:
        from .. import tmux

        usable: bool = tmux.can_drive(rec, self.cfg)  # (tmux/ is not typed yet)
        return usable

    def start_rotator(self, rec: "Record", sdir: str, successor_name: str, project_lock: str | None,
                      standby_s: float | None) -> int:
        from ..tmux import rotator

        pid: int = rotator.start(rec, sdir, self.cfg, successor_name, project_lock, standby_s)  # (tmux/ is not typed yet)
        return pid


def begin(call: "Call") -> "tuple[HookContext, int, str, Record] | None":
    """(ctx, n, sdir, rec) for this call's session of an enabled project, or None (:func:`context.begin`)."""
    ctx = HookContext(call)
    started = context.begin(ctx)
    return None if started is None else (ctx,) + started
