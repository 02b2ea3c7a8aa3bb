"""PreCompact: an auto-compaction we did not want.

At or past *rotate*, an automatic compaction is blocked (configurable) and a
handoff is requested at the next turn end instead — compaction is slow and
forgets intent.  Otherwise an emergency machine checkpoint (facts only, not
claimable: the session goes on) is written and compaction proceeds.
"""

from .. import checkpoint, session
from . import common


def handle(call):
    started = common.begin(call)
    if started is None:
        return None
    ctx, n, sdir, rec = started
    trigger = ctx.payload.get("trigger")
    trigger = trigger if isinstance(trigger, str) else None
    level = session.notified_index(rec)
    ctx.log(sdir, {"ev": "precompact", "trigger": trigger, "level_index": level})
    if trigger == "auto" and level >= 2 and ctx.cfg["precompact_block"] and rec["state"] in session.LIVE:
        with ctx.project.lock():
            rec = session.load(sdir)
            rec["rotate_requested"] = True
            session.save(sdir, rec)
        ctx.outcome = "auto-compaction blocked; rotation requested"
        return {"decision": "block",
                "reason": "cc-continuity: the session is past its rotate level; it hands off to a fresh session "
                          "at the end of this turn instead of compacting."}
    reading = common.measure(ctx, sdir, rec)
    out = sdir + "/emergency"
    checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg, out_dir=out)
    ctx.log(sdir, {"ev": "emergency_checkpoint", "trigger": trigger, "path": out + "/snapshot.json"})
    ctx.outcome = "emergency checkpoint"
    return None
