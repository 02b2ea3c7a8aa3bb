"""PostToolUse (and PostToolUseFailure): the per-tool-call meter update and the action record.

The common case — a fresh session card and no level change — reads the card,
the state record and the transcript tail, appends one ledger line and
returns: no lock, no subprocess, no ``os``, no config parsing.  The ledger line
carries the action (``actions.record``: tool, target, failed), so a successor
learns what was done after the checkpoint it resumes.  Anything else
(no card yet, a stale card, a level crossing) takes the slow path once.
"""

from .. import actions, card, ledger, meter, session

FAILURE = "PostToolUseFailure"


def handle(call):
    c = card.load(call.session_id)
    if c is None:
        return slow(call)
    if not c["enabled"]:
        call.outcome = "project disabled"
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return slow(call)
    path = call.payload.get("transcript_path") or c["transcript"]
    try:
        tokens = meter.read_transcript(path)["tokens"] if isinstance(path, str) and path else None
    except OSError:
        tokens = None
    lvl = meter.level(tokens, c["window"], c)
    ledger.append(c["ledger"], _line(call, tokens, None if tokens is None else round(100.0 * tokens / c["window"], 1)))
    if meter.level_index(lvl) == session.notified_index(rec):
        return None
    return slow(call, logged=True)


def slow(call, logged=False):
    """Register or refresh the session, then record a level change if there is one."""
    from . import common

    ctx = common.HookContext(call)
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    n, sdir, rec = ctx.load_session()
    common.refresh_card(ctx, n, sdir, rec)
    reading = common.measure(ctx, sdir, rec)
    if not logged:
        ctx.log(sdir, _line(call, reading["tokens"], reading["percent"]))
    if not common.needs_level_change(rec, reading):
        ctx.outcome = "card refreshed"
        return None
    note, rec = common.apply_level(ctx, n, sdir, reading)
    ctx.outcome = "level %s" % reading["level"]
    if not note:
        return None
    return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": note}}


def _line(call, tokens, percent):
    """The ``tool`` ledger line: the meter reading and the action (tool, target, failed)."""
    tool = call.payload.get("tool_name")
    rec = {"ev": "tool", "tool": tool if isinstance(tool, str) else None, "tokens": tokens, "percent": percent}
    rec.update(actions.record(call.payload, failed=call.event == FAILURE))
    return rec
