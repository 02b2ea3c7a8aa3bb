"""Codex CLI's hook entry: read the payload, run one rotation step with the Codex context, answer, fail open.

What ``install --agent codex`` writes into ``$CODEX_HOME/hooks.json`` runs
``<python> -S -c <BOOT> <Event>`` (:func:`command`), which calls :func:`main`.  The same
promise as Claude Code's hooks: whatever happens inside — a payload that is not what
Codex 0.171 sends, a corrupt state file, a full disk, a bug — the process exits 0 with
nothing on stdout and one line in ``logs/hooks.log``; a budget (SIGALRM) below the
timeout written into hooks.json ends it first.

Per event (the answers are Codex's own: :mod:`.wire`):

* SessionStart      register; claim a waiting checkpoint; its bootstrap as ``additionalContext``
                    (Codex fires it at the thread's first prompt: after ``/clear``, the continuation's);
* UserPromptSubmit  record the prompt; a successor's first prompt; a bootstrap not yet delivered;
* PreToolUse        past the hard ceiling, deny every call but the one writing the handoff (deny is all
                    Codex takes); a repeat of a side effect already done is denied, never asked;
* PostToolUse       the level after the call, recorded once (Codex takes no note back here);
* Stop              the turn's end: ask for the handoff (block with the request), check it, make the
                    checkpoint, hand over (in tmux the rotator types /clear and the continuation into
                    the TUI: hosts/ports.py, tmux/rotator.py);
* PreCompact        an emergency record of the facts; never a veto (Codex then interrupts the turn):
                    the rotation's levels sit below Codex's automatic compaction instead;
* SessionEnd        ENDED (Codex ends a thread late, when it unloads it, or at exit).
"""

import os
import posix
import signal
import time

from ... import fastjson, log, meter, session
from ...rotation import context, effects
from . import wire
from .host import CodexContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
# Seconds; the timeout written into hooks.json is one more.  Codex clamps SessionEnd's to 3 s.
BUDGET = {"SessionStart": 12.0, "UserPromptSubmit": 8.0, "PreToolUse": 4.0, "PostToolUse": 4.0, "Stop": 50.0,
          "PreCompact": 25.0, "SessionEnd": 2.0}
TIMEOUTS = {e: int(b) + 1 for e, b in BUDGET.items()}
HOOK_MARK = "from cc_continuity.hosts.codex.hooks import main"
MAX_STDIN = wire.MAX_PAYLOAD


class BudgetExceeded(BaseException):
    """Raised by SIGALRM when a step runs past its event's budget."""


def _on_alarm(signum: "int", frame: "object") -> "NoReturn":
    raise BudgetExceeded()


def answer(event: str, raw: "bytes | str", env: "dict[str, str] | None" = None
           ) -> "tuple[str | None, str, str | None, list[Any]]":
    """(stdout text or None, outcome for the log, session id, what to run once the answer is out) for one
    hook call; raises what a step raises."""
    p = wire.parse(raw, expect=event)
    payload = fastjson.loads(raw)
    ctx = CodexContext(event, payload, env)
    sid = p["session_id"]
    if ctx.env.get("CC_CONTINUITY") == "0":
        return None, "disabled", sid, []
    out: "dict[str, Any] | None" = None
    text: "str | None" = None
    if event in ("SessionStart", "UserPromptSubmit", "SessionEnd"):
        from ...rotation import start  # (not on a tool call's path: claim, revalidation, effects +~9 ms)
    elif event in ("PostToolUse", "Stop", "PreCompact"):
        from ...rotation import turn  # (a tool call loads it only when its level changed: see _post_tool_use)
    if event == "SessionStart":
        out = start.session_started(ctx)
    elif event == "UserPromptSubmit":
        out = start.prompt_submitted(ctx)
    elif event == "PreToolUse":
        text = _pre_tool_use(ctx, p)
    elif event == "PostToolUse":
        _post_tool_use(ctx)
    elif event == "Stop":
        out = turn.turn_ended(ctx)
    elif event == "PreCompact":
        out = turn.before_compact(ctx)
        if out and out.get("decision") == "block":  # a veto would interrupt the turn: let it compact
            ctx.outcome += "; compaction let through (a veto interrupts Codex's turn)"
            out = None
    elif event == "SessionEnd":
        start.session_ended(ctx)
    else:
        return None, "ignored", sid, []
    if text is None and out:
        text = _wire(event, out)
    return text, ctx.outcome, sid, ctx.after_output if text is not None else []


def _wire(event: str, out: "dict[str, Any]") -> "str | None":
    """A step's answer (Claude Code's shapes) as Codex takes it: only the fields it knows."""
    got = out.get("hookSpecificOutput")
    hso: "dict[str, Any]" = got if isinstance(got, dict) else {}
    added = hso.get("additionalContext")
    fields: "dict[str, Any]" = {}
    if out.get("decision") == "block" and isinstance(out.get("reason"), str):
        return wire.block_stop(out["reason"]) if event == "Stop" else None
    if event in ("SessionStart", "UserPromptSubmit") and isinstance(added, str) and added:
        fields = fastjson.loads(wire.add_context(event, added))
    if isinstance(out.get("systemMessage"), str):
        fields["systemMessage"] = out["systemMessage"]
    return fastjson.dumps(fields) if fields else None


def _pre_tool_use(ctx: CodexContext, p: "dict[str, Any]") -> "str | None":
    """None lets the call run; a deny past the hard ceiling (but for the handoff's own write), or for a repeat."""
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    command = p.get("command") or ""
    if rec.get("resume_grace") or rec.get("loop_stopped") or rec["state"] in session.CLAIMABLE:
        return None
    hard = meter.notified_index(rec) >= meter.HARD
    if not hard:
        reading = ctx.reading(sdir, rec)
        if reading["level"] == "hard":
            from ...rotation import turn  # (the first sight of the hard level only)

            _, rec = turn.tool_used(ctx, n, sdir, rec, reading)
            hard = True
    hpath = session.handoff_path(sdir)
    if hard and hpath not in command and not command.strip().startswith("cc-continuity"):
        ctx.outcome = "denied at hard ceiling"
        # The deny names the handoff file before any Stop asked for it (and made its folder): the shell
        # command that writes it (cat > <path>) cannot make the folder, as Claude Code's Write tool does.
        os.makedirs(session.checkpoint_dir(sdir), mode=0o700, exist_ok=True)
        return wire.deny_tool(
            "cc-continuity: the context is past the hard ceiling of %g%% of the window, so tool calls are denied "
            "to keep it from overflowing. Write the session's state to the handoff file %s (one command that "
            "writes that file is allowed); then end the turn so the work continues in a fresh session."
            % (ctx.cfg["hard"], hpath))
    if command and ctx.cfg["effects_hold"]:
        what, out = effects.decide(ctx.project.dir, command, {"cwd": p.get("cwd"), "harmful": ctx.cfg["effects_harmful"],
                                                              "harmless": ctx.cfg["effects_harmless"],
                                                              "local_exempt": ctx.cfg["effects_local_exempt"],
                                                              "aliases": {}},
                                   dict(ctx.payload), ctx.session_id, rec.get("name"), ctx.project.root, True)
        ctx.outcome = what
        hso = (out or {}).get("hookSpecificOutput") or {}
        if hso.get("permissionDecision") in ("deny", "ask"):
            return wire.deny_tool(str(hso.get("permissionDecisionReason") or "cc-continuity: held"))
    return None


def _post_tool_use(ctx: CodexContext) -> None:
    started = context.begin(ctx)
    if started is None:
        return
    n, sdir, rec = started
    reading = ctx.reading(sdir, rec)
    from ...redact import redact  # (~100 patterns compile: a tool call without a command does not pay)

    command = (ctx.payload.get("tool_input") or {}).get("command")
    # Codex 0.171 sends the shell's output as tool_response, no exit code: "exit" stays unknown.
    ctx.log(sdir, {"ev": "tool", "tool": ctx.payload.get("tool_name"), "tokens": reading["tokens"],
                   "percent": reading["percent"], "exit": None,
                   "target": redact(command.splitlines()[0][:300]) if isinstance(command, str) and command else None})
    tid = ctx.payload.get("tool_use_id")
    if isinstance(tid, str) and tid and "/" not in tid and os.path.exists(effects.pending_dir(ctx.project.dir) + "/" + tid):
        effects.outcome(ctx.project.dir, ctx.payload, None, ctx.session_id)
    if meter.level_index(reading["level"]) != meter.notified_index(rec):
        from ...rotation import turn  # (a level change only)

        turn.tool_used(ctx, n, sdir, rec, reading)
        ctx.outcome = "level %s" % reading["level"]


def main(argv: "list[str]") -> "NoReturn":
    """Entry for the bootstrap install writes into hooks.json; always exits 0."""
    t0 = time.monotonic()
    event = argv[0] if argv else "?"
    out: "str | None" = None
    outcome, sid = "error", None
    after: "list[Any]" = []
    raw = b""
    try:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, BUDGET.get(event, 4.0))
        try:
            raw = _read_stdin()
            out, outcome, sid, after = answer(event, raw)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BudgetExceeded:
        out, outcome = None, "budget-exceeded"
    except wire.PayloadError as e:
        out, outcome = None, "bad payload: %s" % str(e)[:120]
    except BaseException as e:  # fail open: log, print nothing, exit 0
        out, outcome = None, "error: %s(%s)" % (type(e).__name__, str(e)[:200])
    if out is not None:
        try:
            posix.write(1, out.encode("utf-8"))
            for then in after:
                then()  # the answer is out: what it carried was sent
        except Exception:  # noqa: BLE001 - the answer is out; a failed note about it costs nothing more
            pass
    try:
        log.hook("codex:" + event, sid, (time.monotonic() - t0) * 1000, outcome)
    except BaseException:
        pass
    posix._exit(0)


def _read_stdin() -> bytes:
    chunks: "list[bytes]" = []
    total = 0
    while True:
        b = posix.read(0, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        total += len(b)
        if total > MAX_STDIN:
            raise wire.PayloadError("stdin over %d bytes" % MAX_STDIN)
