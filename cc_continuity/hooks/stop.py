"""Stop: update the meter and the state at the end of each turn.

A level note cannot be returned here (Stop output makes the turn continue),
so it is parked in the record and delivered with the next prompt.
"""

from .. import session
from . import common


def handle(call):
    ctx = common.HookContext(call)
    n, sdir, rec = ctx.load_session()
    reading = common.measure(ctx, sdir, rec)
    ctx.log(sdir, {"ev": "stop", "tokens": reading["tokens"], "percent": reading["percent"],
                   "level": reading["level"], "stop_hook_active": bool(ctx.payload.get("stop_hook_active"))})
    if common.needs_level_change(rec, reading):
        note, rec = common.apply_level(ctx, n, sdir, reading)
        if note:
            with ctx.project.lock():
                rec = session.load(sdir)
                rec["pending_note"] = note
                session.save(sdir, rec)
    return None
