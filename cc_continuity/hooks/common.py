"""The hook side of :class:`cc_continuity.protocol.Context`: a hook call's facts and its effects.

The protocol names three ports; here they are filled: a push goes to the
notifier's spool (a detached flusher sends it), whether tmux can drive and the
rotator's spawn go to ``tmux/``.  Those two are imported when used: the mod
calls in at every turn's end and should not pay for loading tmux.
"""

from .. import protocol


class HookContext(protocol.Context):
    """The protocol's context for one :class:`~cc_continuity.hooks.Call`; the outcome goes back to the call."""

    def __init__(self, call):
        self.call = call
        super().__init__(call.event, call.payload, call.env)

    @property
    def outcome(self):
        return self.call.outcome

    @outcome.setter
    def outcome(self, value):
        self.call.outcome = value

    @property
    def claude_version(self):
        return self.call.claude_version

    @claude_version.setter
    def claude_version(self, value):
        self.call.claude_version = value

    def deliver(self, push):
        from .. import notify

        notify.emit(push["event"], slug=push["slug"], session=push["session"], ratio=push["ratio"],
                    text=push["text"], project_root=push["project_root"])

    def can_drive(self, rec):
        from .. import tmux

        return tmux.can_drive(rec, self.cfg)

    def start_rotator(self, rec, sdir, successor_name, project_lock, standby_s):
        from ..tmux import rotator

        return rotator.start(rec, sdir, self.cfg, successor_name, project_lock, standby_s)


def begin(call):
    """(ctx, n, sdir, rec) for this call's session of an enabled project, or None (:func:`protocol.begin`)."""
    ctx = HookContext(call)
    started = protocol.begin(ctx)
    return None if started is None else (ctx,) + started
