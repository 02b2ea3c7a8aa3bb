"""The late Stop: a second look at the turn's end, for a crossing the Stop hook could not see.

Installed as an *async* Stop hook with ``asyncRewake``: Claude Code does not wait
for it, and when it exits 2 its stderr wakes the model at once, even in an idle
session (checked on 2.1.328 and 2.1.332: the model receives "Stop hook blocking
error from command ...: <stderr>" as a background-task notification).

Why it exists: the transcript can lag the turn's last reply by more than the
Stop hook may wait.  When the Stop hook's reading was not caught up, a session
could otherwise sit idle past *rotate* forever (seen on 2.1.328 in three runs
of four).  This hook waits much longer (``WAIT_S``) for the transcript or the
status line's reading and, if the turn did end past *rotate* with no handoff
requested and nothing happened since, requests the handoff itself - in
process, no tmux, no typing into the user's input box.

It does nothing when the Stop hook saw a caught-up reading (the common case:
one ledger read), when the session moved on (a new prompt or tool call), or
when the reading never arrives.
"""

import time

from .. import ledger, session
from . import common, stop

WAIT_S = 30.0
SYNC_WAIT_S = 10.0
ACTIVE_STATES = (session.ACTIVE, session.WARNED, session.ROTATION_PENDING, session.BOOTSTRAPPING)
NEWER = ("prompt", "tool", "stop")


def handle(call):
    since = time.time()
    ctx = common.HookContext(call)
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    sdir = ctx.session_dir(n)
    seen = _sync_stop(sdir, ctx.payload.get("prompt_id"), since)
    if seen is not None and seen.get("caught_up") is not False:
        ctx.outcome = "the Stop hook saw the turn's end"
        return None
    rec = session.load(sdir)
    if rec["state"] not in ACTIVE_STATES:
        ctx.outcome = "nothing to do in %s" % rec["state"]
        return None
    reading, caught, waited = common.measure_turn_end(ctx, sdir, rec, WAIT_S, since)
    if not caught:
        ctx.outcome = "transcript still behind after %d ms" % waited
        ctx.log(sdir, {"ev": "late_stop", "caught_up": False, "waited_ms": waited})
        return None
    if seen is not None and _moved_on(sdir, seen):
        ctx.outcome = "the session moved on"
        return None
    rec = session.load(sdir)
    if rec["state"] not in ACTIVE_STATES:
        return None
    ctx.log(sdir, {"ev": "late_stop", "caught_up": True, "waited_ms": waited, "tokens": reading["tokens"],
                   "percent": reading["percent"], "level": reading["level"], "source": reading["source"]})
    out = stop.decide(ctx, n, sdir, rec, reading, True, waited)
    if isinstance(out, dict) and out.get("decision") == "block":
        call.rewake = out["reason"]
        ctx.outcome = "handoff requested late (after %d ms)" % waited
    return None


def _sync_stop(sdir, prompt_id, since, timeout=SYNC_WAIT_S):
    """The Stop hook's ledger line for this turn end, waiting for it (None if it never comes)."""
    deadline = time.monotonic() + timeout
    path = session.ledger_path(sdir)
    while True:
        for rec in reversed(ledger.tail(path, 40)):
            if rec.get("ev") != "stop" or rec.get("ts", 0) < since - 5:
                continue
            if prompt_id is None or rec.get("prompt_id") == prompt_id:
                return rec
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def _moved_on(sdir, seen):
    """A prompt, tool call or another turn end after the Stop line ``seen``."""
    return any(r.get("n", 0) > seen.get("n", 0) and r.get("ev") in NEWER
               for r in ledger.tail(session.ledger_path(sdir), 40))
