"""A tool call's fast path, for the hosts whose hook runs once per tool call on its own (Codex CLI, Gemini CLI).

Most tool calls change nothing the rotation acts on: the level is the one already told, no checkpoint's
snapshot is being taken, the call cannot be a harmful repeat.  Those are answered from the session's
card, its record and the transcript's tail (the host's reader), with no context, no project, no config:
the steps' world (~80 ms of imports) loads only when something must be decided (:data:`SLOW`).
Claude Code's tool hooks keep their own, tighter path (hosts/claude/hooks/pre_tool_use.py and
post_tool_use.py: pinned module sets, P1).  Standard library builtins and our foundation only.
"""

import posix

from .. import card, ledger, meter, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..rotation.context import Context

    # the host's reader: (tokens, window or None) of the transcript's newest request; OSError when unreadable
    Read = Callable[[str], tuple[int | None, int | None]]

SLOW = None  # what the fast path returns when the slow path (the steps, the host's context) must decide


def steady(sid: "str", path: "object", read: "Read") -> "tuple[dict[str, Any], session.Record, dict[str, Any]] | None":
    """(card, record, reading) of a registered session whose card is current; None: the slow path decides."""
    c = card.load(sid)
    if c is None:
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return None
    path = path if isinstance(path, str) and path else c["transcript"]
    try:
        tokens, window = read(path) if isinstance(path, str) and path else (None, None)
    except OSError:
        tokens, window = None, None
    window = window or c["window"]
    return c, rec, {"tokens": tokens, "window": window, "level": meter.level(tokens, window, c),
                    "percent": None if tokens is None else round(100.0 * tokens / window, 1)}


def after_tool(sid: "str", path: "object", read: "Read", tool_use_id: "object",
               line: "Callable[[dict[str, Any]], dict[str, Any]]") -> "str | None":
    """The outcome when the level is unchanged (the action recorded: ``line(reading)``); SLOW for a level change,
    an effect's outcome to record (``tool_use_id`` marked pending), or a session whose card is not current."""
    got = steady(sid, path, read)
    if got is None:
        return SLOW
    c, rec, reading = got
    if not c["enabled"]:
        return "project disabled"
    pdir = c["sdir"].rstrip("/").rsplit("/", 2)[0]
    if isinstance(tool_use_id, str) and tool_use_id and "/" not in tool_use_id and \
            posix.access(pdir + "/effects.pending/" + tool_use_id, posix.F_OK):
        return SLOW
    if meter.level_index(reading["level"]) != meter.notified_index(rec):
        return SLOW
    ledger.append(c["ledger"], line(reading))
    return "ok"


def before_tool(sid: "str", path: "object", read: "Read", tool_name: "object",
                tool_input: "object") -> "tuple[str | None, str] | None":
    """(answer, outcome) when nothing is to decide: below the hard ceiling and no possible side effect; SLOW else."""
    got = steady(sid, path, read)
    if got is None:
        return SLOW
    c, rec, reading = got
    if not c["enabled"]:
        return None, "project disabled"
    if rec.get("snapshot_wait") or (rec["state"] in session.CLAIMABLE
                                    and (rec.get("checkpoint") or {}).get("snapshot_wait")):
        return SLOW  # a checkpoint's snapshot is still being taken
    if card.may_have_effect(c, tool_name, tool_input):
        return SLOW  # a side effect a repeat of which is held
    if rec.get("resume_grace") or rec.get("loop_stopped"):
        return None, "ok"
    if meter.notified_index(rec) >= meter.HARD or (rec["state"] not in session.CLAIMABLE
                                                    and reading["level"] == "hard"):
        return SLOW
    return None, "ok"


def after_tool_steps(ctx: "Context", tool_use_id: "object", line: "Callable[[dict[str, Any]], dict[str, Any]]") -> None:
    """The slow path after a tool call: register (or refresh the card), the action recorded (``line(reading)``),
    an effect's outcome (``tool_use_id`` marked pending), a level change told once."""
    from ..holds import effects  # (the record and the hold: only when a tool call must be decided)
    from ..rotation import context, turn  # (the steps' world: only when a tool call must be decided)

    started = context.begin(ctx)
    if started is None:
        return
    n, sdir, rec = started
    context.refresh_card(ctx, n, sdir, rec)
    reading = ctx.reading(sdir, rec)
    said = line(reading)
    ctx.log(sdir, said)
    if isinstance(tool_use_id, str) and tool_use_id and "/" not in tool_use_id and \
            posix.access(effects.pending_dir(ctx.project.dir) + "/" + tool_use_id, posix.F_OK):
        effects.outcome(ctx.project.dir, ctx.payload, said.get("exit"), ctx.session_id)  # (None: done, unknown code)
    if meter.level_index(reading["level"]) != meter.notified_index(rec):
        turn.tool_used(ctx, n, sdir, rec, reading)
        ctx.outcome = "level %s" % reading["level"]
