"""PostToolUse (and PostToolUseFailure): the per-tool-call meter update and the action record.

The common case — a fresh session card and no level change — reads the card,
the state record and the transcript tail, appends one ledger line and
returns: no lock, no subprocess, no ``os``, no config parsing.  The ledger line
carries the action (``record`` below: tool, target, failed), so a successor
learns what was done after the checkpoint it resumes.  Anything else
(no card yet, a stale card, a level crossing) takes the slow path once.
"""

import posix

from .... import card, ledger, meter, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from . import Call

FAILURE = "PostToolUseFailure"


def handle(call: "Call") -> "dict[str, Any] | None":
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
    line = _line(call, tokens, None if tokens is None else round(100.0 * tokens / c["window"], 1))
    ledger.append(c["ledger"], line)
    if line.get("tool") == "Bash":
        _effect_outcome(call, c, line.get("exit"))
    if meter.level_index(lvl) == meter.notified_index(rec):
        return None
    return slow(call, logged=True)


def slow(call: "Call", logged: "bool" = False) -> "dict[str, Any] | None":
    """Register or refresh the session, then record a level change if there is one."""
    from ....rotation import context, turn
    from ..host import HookContext

    ctx = HookContext(call)
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    built = context.refresh_card(ctx, n, sdir, rec)
    reading = ctx.reading(sdir, rec)
    if not logged:
        line = _line(call, reading["tokens"], reading["percent"])
        ctx.log(sdir, line)
        if line.get("tool") == "Bash":
            _effect_outcome(call, built, line.get("exit"))
    if not turn.needs_level_change(rec, reading):
        ctx.outcome = "card refreshed"
        return None
    note, rec = turn.tool_used(ctx, n, sdir, rec, reading)
    ctx.outcome = "level %s" % reading["level"]
    if not note:
        return None
    return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": note}}


def _effect_outcome(call: "Call", c: "dict[str, Any]", code: "int | None") -> None:
    """A Bash call whose intent PreToolUse recorded (its marker is there): record the outcome (effects.outcome).

    One ``access`` otherwise: no pre-filter here, no exception (P1 counts every instruction of this path)."""
    tid = call.payload.get("tool_use_id")
    pdir = c["sdir"].rstrip("/").rsplit("/", 2)[0]
    if isinstance(tid, str) and tid and "/" not in tid and posix.access(pdir + "/effects.pending/" + tid, posix.F_OK):
        from ....holds import effects

        effects.outcome(pdir, call.payload, code, call.session_id)


def _line(call: "Call", tokens: "int | None", percent: "float | None") -> "dict[str, Any]":
    """The ``tool`` ledger line: the meter reading and the action (tool, target, failed)."""
    tool = call.payload.get("tool_name")
    rec = {"ev": "tool", "tool": tool if isinstance(tool, str) else None, "tokens": tokens, "percent": percent}
    rec.update(record(call.payload, failed=call.event == FAILURE))
    return rec


# -- the action record ------------------------------------------------------------------------------
# The ``tool`` line carries ``target`` (ledger.target: masked with string rules alone, the first line of
# a shell command or the path it names) and ``failed``: no extra file, no extra write.

def record(payload: "dict[str, Any]", failed: "bool" = False) -> "dict[str, Any]":
    """The action fields of a ``tool`` ledger line for one PostToolUse/PostToolUseFailure payload."""
    tool = payload.get("tool_name")
    tool = tool if isinstance(tool, str) else None
    out: "dict[str, Any]" = {"target": ledger.target(payload.get("tool_input"))}
    resp = payload.get("tool_response")
    if failed or (isinstance(resp, dict) and (resp.get("interrupted") is True or resp.get("is_error") is True)):
        out["failed"] = True
    if tool == "Bash":
        out["exit"] = exit_code(payload, failed)
    return out


def exit_code(payload: "dict[str, Any]", failed: "bool") -> "int | None":
    """A Bash call's exit code: 0 after PostToolUse, the number PostToolUseFailure's ``error`` starts with
    ("Exit code 3"); None when it was interrupted or the error names none."""
    if not failed:
        resp = payload.get("tool_response")
        return None if isinstance(resp, dict) and resp.get("interrupted") is True else 0
    err = payload.get("error")
    if not isinstance(err, str) or not err.startswith("Exit code "):
        return None
    num = err[10:].split(None, 1)[0] if err[10:].strip() else ""
    return int(num) if num.isdigit() else None

