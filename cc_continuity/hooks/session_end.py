"""SessionEnd: mark the session ended, or cleared when ``/clear`` started a successor.

A session holding a verified checkpoint stays claimable: only the fact that
its process left is recorded.  Kept tiny — SessionEnd hooks share a short budget.
"""

import time

from .. import session
from . import common


def handle(call):
    ctx = common.HookContext(call)
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    sdir = ctx.session_dir(n)
    reason = ctx.payload.get("reason")
    reason = reason if isinstance(reason, str) else "other"
    with ctx.project.lock():
        rec = session.load(sdir)
        ctx.log(sdir, {"ev": "session_end", "reason": reason})
        rec["ended"] = {"reason": reason, "at": round(time.time(), 3)}
        if rec["state"] in session.LIVE:
            session.transition(sdir, rec, session.ENDED, "session_end:%s" % reason)
        else:
            session.save(sdir, rec)
    if reason == "clear":
        common.remember_clear(ctx, n)
    else:
        common.notify(ctx, rec, "session-ended", reason)
    return None
