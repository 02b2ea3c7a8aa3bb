"""PreToolUse: the hard-ceiling gate, and a clear path for writing the handoff.

Runs before every tool call, so the common case reads the card, the state
record and the transcript tail, and returns.  Past the hard ceiling every
tool is denied except writing the handoff file and running ``cc-continuity``
— one burst of reads cannot overflow the window.  The meter is read here too
(not only after tools): the tools of the very response that crossed the
ceiling are the burst to stop.  While a handoff is requested, writing exactly
that file is allowed without a permission prompt (it lives outside the
project, in cc-continuity's own state dir).
"""

from .. import card, meter, session

WRITE_TOOLS = ("Write", "Edit", "MultiEdit")


def handle(call):
    c = card.load(call.session_id)
    if c is None or not c["enabled"]:
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return None
    hard = session.notified_index(rec) >= 3
    if not hard and rec["state"] not in session.CLAIMABLE:
        path = call.payload.get("transcript_path") or c["transcript"]
        try:
            tokens = meter.read_transcript(path)["tokens"] if isinstance(path, str) and path else None
        except OSError:
            tokens = None
        if meter.level(tokens, c["window"], c) == "hard":
            hard = True
            rec = _record_hard(call) or rec
    requested = rec["state"] == session.HANDOFF_REQUESTED
    if not hard and not requested:
        return None
    tool = call.payload.get("tool_name")
    tin = call.payload.get("tool_input")
    tin = tin if isinstance(tin, dict) else {}
    hpath = c["sdir"] + "/checkpoint/handoff.md"
    if tool in WRITE_TOOLS and tin.get("file_path") == hpath and _handoff_target_ok(c["sdir"], hpath):
        call.outcome = "handoff write allowed"
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                       "permissionDecisionReason": "cc-continuity: writing the session handoff"}}
    if not hard:
        return None
    if tool == "Bash" and _is_our_cli(tin.get("command")):
        return None
    call.outcome = "denied at hard ceiling"
    pct = (rec.get("last_reading") or {}).get("percent")
    return {"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": (
            "cc-continuity: the context is at %s%% of the window, past the hard ceiling of %g%%, so tool calls "
            "are denied to keep the window from overflowing. The session's state belongs in the handoff file "
            "%s (the Write tool is allowed for it); after that, ending the turn lets the work continue in a "
            "fresh session." % ("?" if pct is None else pct, c["hard"], hpath)),
    }}


def _is_our_cli(command):
    if not isinstance(command, str):
        return False
    if any(ch in command for ch in ";&|`$<>()\n"):
        return False  # no chaining something else behind our name
    first = command.strip().split(None, 1)[0] if command.strip() else ""
    return first == "cc-continuity" or first.endswith("/cc-continuity")


def _handoff_target_ok(sdir, path):
    """Only a plain file (or nothing yet) in our own 0700 checkpoint dir: a link there would redirect the write."""
    import os

    from ..checkpoint import handoff_target_ok

    os.makedirs(sdir + "/checkpoint", mode=0o700, exist_ok=True)
    return handoff_target_ok(sdir, path)


def _record_hard(call):
    """First sight of the hard level: record it (state, note, push) through the slow path."""
    from . import common

    ctx = common.HookContext(call)
    n, sdir, rec = ctx.load_session()
    reading = common.measure(ctx, sdir, rec)
    if common.needs_level_change(rec, reading):
        _, rec = common.apply_level(ctx, n, sdir, reading)
    return rec
