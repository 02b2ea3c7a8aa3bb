"""The tool-call step: before a tool runs, the rules every host's PreToolUse keeps.

A host's hook entry calls :func:`before_tool` with the call's tool, its input and its shell command as
its payload shapes them (:class:`Tool`), when its fast path saw that a rule may apply; the step
decides, in this order:

1. **the snapshot's wait**: while a checkpoint's work-tree snapshot is still being taken, the call
   waits up to ``SNAPSHOT_WAIT_S`` for it; then a call that can change files is denied (read-only
   ones and ``cc-continuity`` go on), so the snapshot records the work tree as the handoff says;
2. **the hard ceiling**: past it (recorded once, through :func:`.turn.tool_used`) every call is denied
   but the one writing the handoff file and ``cc-continuity`` itself; a resumed conversation is
   spared until its first turn end (it was told);
3. **the handoff's write**: while the handoff is requested (or past hard), writing exactly that
   file, in our own checkpoint folder, is allowed without a permission prompt;
4. **the hold** (:mod:`..holds.effects`): a command whose side effect a repeat would harm is held when
   it was done before; its intent is recorded when it runs.

The answer is ``(decision, reason)``, decision ``"allow"``, ``"deny"`` or ``"ask"``, or None to let the
call run; the host puts it in its wire (a host that takes only a deny says so: ``Host.can_ask``).  What
the model reads is in :mod:`.texts`.  Where a rule needs the agent (is a tool read-only, does it write a
file, is a command ours), it asks the host port (:mod:`.host`).
"""

from __future__ import annotations

import os
import time

from .. import meter, procs, session
from ..holds import effects
from . import texts, turn
from .checkpoint import handoff_target_ok

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs
    from collections.abc import Callable, Mapping
    from typing import Any

    from ..session import Record
    from .context import Context

    Decision = tuple[str, str]

# While a checkpoint's snapshot is still being taken (its Stop left it to its job): wait this long for it,
# then hold back tools that can change files.
SNAPSHOT_WAIT_S = 3.0


class Tool:
    """One tool call as the step reads it, whatever its host's payload shape: the tool's name, its input,
    and the shell command it runs ("" when it runs none)."""

    __slots__ = ("name", "input", "command")

    def __init__(self, name: object, tool_input: object, command: object) -> None:
        self.name = name
        self.input: Mapping[str, Any] = tool_input if isinstance(tool_input, dict) else {}
        self.command = command if isinstance(command, str) else ""


def before_tool(ctx: Context, n: int, sdir: str, rec: Record, tool: Tool,
                reading: Callable[[], dict[str, Any]]) -> Decision | None:
    """The rules, in order, for one tool call of session ``n`` (record ``rec``); ``reading()`` is the context
    this call's response took (read only when the level must be known)."""
    wait = rec.get("snapshot_wait")
    if not wait and rec["state"] in session.CLAIMABLE:
        wait = (rec.get("checkpoint") or {}).get("snapshot_wait")
    if isinstance(wait, dict):
        held = _snapshot_wait(ctx, sdir, tool, wait)
        if held is not None:
            return held
    let: Decision | None = None
    if not (rec.get("resume_grace") or rec.get("loop_stopped")):  # a resumed conversation: told, not denied
        hard = meter.notified_index(rec) >= meter.HARD
        if not hard and rec["state"] not in session.CLAIMABLE:
            got = reading()
            if got["level"] == "hard":
                hard = True
                _, rec = turn.tool_used(ctx, n, sdir, rec, got)
        if hard or rec["state"] == session.HANDOFF_REQUESTED:
            hpath = session.handoff_path(sdir)
            # (its folder first: a shell command that writes the file cannot make it, as a Write tool does)
            os.makedirs(session.checkpoint_dir(sdir), mode=0o700, exist_ok=True)
            if ctx.host.writes(tool.name, tool.input, tool.command, hpath) and handoff_target_ok(sdir, hpath):
                ctx.outcome = "handoff write allowed"
                let = ("allow", texts.HANDOFF_WRITE)
            elif hard and not (tool.command and ctx.host.our_cli(tool.command, ctx.env)):
                ctx.outcome = "denied at hard ceiling"
                pct = (rec.get("last_reading") or {}).get("percent")
                return "deny", texts.hard_ceiling_denied(pct, ctx.cfg["hard"], hpath, ctx.host.write_allowed)
    if tool.command and ctx.cfg["effects_hold"]:
        held = _hold(ctx, rec, tool)
        if held is not None:
            if held[0] == "deny" and ctx.env.get("CC_CONTINUITY_HEADLESS") == "1":  # (rotation/run.HEADLESS_ENV)
                with ctx.project.edit(sdir) as r:  # a run: no one to ask, so it ends as needing a person
                    r.setdefault("flags", {})["needs_human"] = {"text": held[1][:500], "at": round(time.time(), 3)}
            return held
    return let


def _hold(ctx: Context, rec: Record, tool: Tool) -> Decision | None:
    """A command that may have a side effect outside the work tree: hold a harmful repeat, record the intent."""
    command = tool.command
    if "effects.jsonl" in command or "effects.pending" in command:
        ctx.outcome = "refused: a tool call touching the side-effect records"
        return "deny", texts.EFFECT_RECORDS_REFUSED
    root = ctx.project.root
    cwd = ctx.payload.get("cwd")
    env = {"cwd": cwd if isinstance(cwd, str) else root, "harmful": ctx.cfg["effects_harmful"],
           "harmless": ctx.cfg["effects_harmless"], "local_exempt": ctx.cfg["effects_local_exempt"],
           "aliases": ctx.host.shell_aliases(ctx.env)}
    unattended = not ctx.host.can_ask or bool(rec.get("unattended")) or ctx.env.get("CC_CONTINUITY_UNATTENDED") == "1"
    what, out = effects.decide(ctx.project.dir, command, env, ctx.payload, ctx.session_id, rec.get("name"), root,
                               unattended, ctx.host.call_ran)
    ctx.outcome = what
    hso = (out or {}).get("hookSpecificOutput") or {}
    decision = hso.get("permissionDecision")
    if decision in ("deny", "ask"):
        return decision, str(hso.get("permissionDecisionReason") or "cc-continuity: held")
    return None


def _snapshot_wait(ctx: Context, sdir: str, tool: Tool, wait: dict[str, Any]) -> Decision | None:
    """None to go on; a deny while the checkpoint's work-tree snapshot is still being taken.

    The snapshot must record the work tree as the handoff describes it, so nothing may
    change files first: this call waits up to ``SNAPSHOT_WAIT_S`` for the job's result
    file, then a tool that can change files is denied (retrying works once the job is
    done); read-only tools go ahead.  A job that died, or ran past its deadline, no
    longer holds anything back (the claim said the snapshot may be missing).
    """
    result = wait.get("result")
    if not isinstance(result, str):
        return None
    passes = ctx.host.read_only(tool.name) or bool(tool.command and ctx.host.our_cli(tool.command, ctx.env))
    t0 = time.monotonic()
    while True:
        if os.path.exists(result):
            _forget_wait(ctx, sdir, "snapshot_ready", int((time.monotonic() - t0) * 1000), result)
            return None
        if passes:
            return None
        until = wait.get("until")
        pid = wait.get("pid")
        running = not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or procs.pid_alive(pid)
        if not running or (isinstance(until, (int, float)) and time.time() > until):
            if not os.path.exists(result):
                _forget_wait(ctx, sdir, "snapshot_missing", int((time.monotonic() - t0) * 1000))
                return None
        if time.monotonic() - t0 >= SNAPSHOT_WAIT_S:
            break
        time.sleep(0.05)
    ctx.outcome = "held: the checkpoint's snapshot is still being taken"
    return "deny", texts.snapshot_still_taken(wait.get("ref") or "cp-?", ctx.host.reads_meanwhile)


def _forget_wait(ctx: Context, sdir: str, event: str, waited_ms: int, result: str | None = None) -> None:
    """The snapshot is there (or never will be): stop checking, once."""
    from ..snapshot.job import read_result  # (the snapshot job's module: only once its wait ends)

    got = read_result(result) if result else None
    with ctx.project.edit(sdir) as rec:
        cp = rec.get("checkpoint")
        gone: object = rec.pop("snapshot_wait", None)
        if isinstance(cp, dict) and cp.pop("snapshot_wait", None) is not None:
            gone = True
            if got and got.get("ref"):
                cp["ref"] = got["ref"]
        if gone:
            ctx.log(sdir, {"ev": event, "waited_ms": waited_ms})
    if ctx.outcome == "ok":
        ctx.outcome = "%s after %d ms" % (event.replace("_", " "), waited_ms)
