"""PreToolUse: the hard-ceiling gate, and a clear path for writing the handoff.

Runs before every tool call, so the common case reads the card, the state
record and the transcript tail, and returns.  Past the hard ceiling every
tool is denied except writing the handoff file and running ``cc-continuity``
— one burst of reads cannot overflow the window.  The meter is read here too
(not only after tools): the tools of the very response that crossed the
ceiling are the burst to stop.  While a handoff is requested, writing exactly
that file is allowed without a permission prompt (it lives outside the
project, in cc-continuity's own state dir).

The reading is the one of *this* call's response: the row holding its
``tool_use_id``.  Claude Code may run this hook before that row is on disk
(seen 26-80 ms early for the first tool of a response, and then the first tool
of a crossing burst ran), so the hook waits for it, at most ``WAIT_S``; the
wait ends early when the transcript stops growing.
"""

from .... import card, meter, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from ....session import Record
    from . import Call

WAIT_S = 2.0


def handle(call: "Call") -> "dict[str, Any] | None":
    c = card.load(call.session_id) or _fresh_card(call)
    if c is None or not c["enabled"]:
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return None
    tokens: "list[int | None]" = []  # this response's tokens, once read
    if not _may_apply(call, c, rec, tokens):
        return None
    return _decide(call, c, tokens)


def _may_apply(call: "Call", c: "dict[str, Any]", rec: "Record", tokens: "list[int | None]") -> "bool":
    """May a rule of the tool-call step (rotation/toolcall.py) apply to this call?  False: it goes on, on the
    fast path (a tool call's steady state); True: the step decides, on the slow path."""
    if rec.get("snapshot_wait") or (rec["state"] in session.CLAIMABLE
                                    and (rec.get("checkpoint") or {}).get("snapshot_wait")):
        return True  # a checkpoint's snapshot is still being taken
    if card.may_have_effect(c, call.payload.get("tool_name"), call.payload.get("tool_input")):
        return True  # a side effect a repeat of which is held
    if rec.get("resume_grace") or rec.get("loop_stopped"):
        return False  # a resumed conversation: nothing is denied before its first turn end (it was told)
    if meter.notified_index(rec) >= meter.HARD or rec["state"] == session.HANDOFF_REQUESTED:
        return True
    if rec["state"] in session.CLAIMABLE:
        return False
    tokens.append(this_response_tokens(call, c))
    if meter.level(tokens[0], c["window"], c) == "hard":
        return True
    if call.outcome == "card refreshed":
        call.outcome = "card refreshed, below hard (%s tokens)" % tokens[0]  # why it let the tool through
    return False


def _decide(call: "Call", c: "dict[str, Any]", tokens: "list[int | None]") -> "dict[str, Any] | None":
    """The tool-call step, with the Claude host's context: its answer as Claude Code takes it."""
    from ....rotation import toolcall
    from ..host import HookContext

    ctx = HookContext(call)
    n, sdir, rec = ctx.load_session()

    def reading() -> "dict[str, Any]":
        if not tokens:
            tokens.append(this_response_tokens(call, c))
        got: "dict[str, Any]" = ctx.reading_for(sdir, rec, tokens[0], "transcript")
        return got

    tool = call.payload.get("tool_name")
    tin = call.payload.get("tool_input")
    command = tin.get("command") if tool == "Bash" and isinstance(tin, dict) else None
    said = toolcall.before_tool(ctx, n, sdir, rec, toolcall.Tool(tool, tin, command), reading)
    if said is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": said[0],
                                   "permissionDecisionReason": said[1]}}


def this_response_tokens(call: "Call", c: "dict[str, Any]") -> "int | None":
    """Context tokens of the response that asked for this tool call (None when unknown)."""
    path = call.payload.get("transcript_path") or c["transcript"]
    if not isinstance(path, str) or not path:
        return None
    tid = call.payload.get("tool_use_id")
    try:
        if isinstance(tid, str) and tid:
            got, waited = meter.await_tool_reading(path, tid, WAIT_S)
            if got is not None:
                if waited:
                    call.outcome = "waited %d ms for the transcript" % waited
                tokens: int | None = got["tokens"]
                return tokens
            call.outcome = "row of %s not in the transcript after %d ms" % (tid[:16], waited)
        tokens = meter.read_transcript(path)["tokens"]
        return tokens
    except OSError:
        return None


def _fresh_card(call: "Call") -> "dict[str, Any] | None":
    """No card, or a stale one (the status line noted a new window): rebuild it on the slow path.

    Skipping the gate instead would let the first tool of a crossing response
    through whenever the card happened to be stale (seen on the real binary:
    the status line's first render invalidates the card SessionStart made).
    """
    from ....rotation import context
    from ..host import HookContext

    ctx = HookContext(call)
    if not ctx.cfg["enabled"]:
        return None
    n, sdir, rec = ctx.load_session()
    call.outcome = "card refreshed"
    # The card just built, not a re-read: a file it depends on may change in between (the
    # status line noting the window), and a re-read would then say "stale" and skip the gate
    # (seen on 2.1.328: the crossing response's first tool let through, 1 run in 10).
    return context.refresh_card(ctx, n, sdir, rec)
