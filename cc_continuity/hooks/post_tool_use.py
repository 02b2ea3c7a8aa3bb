"""PostToolUse: the per-tool-call meter update.

The common case (no level crossing) reads the state file and the transcript
tail, appends one ledger line and exits: no lock, no subprocess, stdlib only.
A crossing takes the slow path once and returns a short factual note.
"""

from . import common


def handle(ctx):
    n, sdir, rec = ctx.load_session()
    reading = common.measure(ctx, sdir, rec)
    tool = ctx.payload.get("tool_name")
    ctx.log(sdir, {"ev": "tool", "tool": tool if isinstance(tool, str) else None,
                   "tokens": reading["tokens"], "percent": reading["percent"]})
    if not common.needs_level_change(rec, reading):
        return None
    note, rec = common.apply_level(ctx, n, sdir, reading)
    ctx.outcome = "level %s" % reading["level"]
    if not note:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": note}}
