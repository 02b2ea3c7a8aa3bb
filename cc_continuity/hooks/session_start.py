"""SessionStart: register the session (pid, tmux pane, model, transcript, project).

After ``/clear`` the same Claude process starts a new session id; the
SessionEnd(clear) we saw just before links the two (predecessor → successor).
"""

from . import common


def handle(call):
    ctx = common.HookContext(call)
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    source = ctx.payload.get("source")
    source = source if isinstance(source, str) else None
    n, sdir, rec = common.register(ctx, source)
    ctx.outcome = "registered %s (%s)" % (rec["name"], source)
    return None
