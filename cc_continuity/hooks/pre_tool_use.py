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

import posix
import time

from .. import card, meter, paths, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..session import Record
    from . import Call

WRITE_TOOLS = ("Write", "Edit", "MultiEdit")
WAIT_S = 2.0
# While a checkpoint's snapshot is still being taken (hooks/stop.py left it to its job):
# wait this long for it, then hold back tools that can change files.
SNAPSHOT_WAIT_S = 3.0
READ_ONLY_TOOLS = frozenset(("Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite",
                             "Task", "AskUserQuestion", "ExitPlanMode"))


def handle(call: "Call") -> "dict[str, Any] | None":
    c = card.load(call.session_id) or _fresh_card(call)
    if c is None or not c["enabled"]:
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return None
    out = _gates(call, c, rec)
    if out is None and card.may_have_effect(c, call.payload.get("tool_name"), call.payload.get("tool_input")):
        return _effect_gate(call, c, rec)
    return out


def _gates(call: "Call", c: "dict[str, Any]", rec: "Record") -> "dict[str, Any] | None":
    """The snapshot gate, the hard ceiling, the handoff write: None lets the call go on."""
    wait = rec.get("snapshot_wait")
    if not wait and rec["state"] in session.CLAIMABLE:
        wait = (rec.get("checkpoint") or {}).get("snapshot_wait")
    if isinstance(wait, dict):
        held = _snapshot_gate(call, c, wait)
        if held is not None:
            return held
    if rec.get("resume_grace") or rec.get("loop_stopped"):
        return None  # a resumed conversation: nothing is denied before its first turn end (it was told)
    hard = meter.notified_index(rec) >= meter.HARD
    if not hard and rec["state"] not in session.CLAIMABLE:
        tokens = this_response_tokens(call, c)
        if meter.level(tokens, c["window"], c) == "hard":
            hard = True
            rec = _record_hard(call, tokens) or rec
        elif call.outcome == "card refreshed":
            call.outcome = "card refreshed, below hard (%s tokens)" % tokens  # why it let the tool through
    requested = rec["state"] == session.HANDOFF_REQUESTED
    if not hard and not requested:
        return None
    tool = call.payload.get("tool_name")
    tin = call.payload.get("tool_input")
    tin = tin if isinstance(tin, dict) else {}
    hpath = session.handoff_path(c["sdir"])
    if tool in WRITE_TOOLS and tin.get("file_path") == hpath and _handoff_target_ok(c["sdir"], hpath):
        call.outcome = "handoff write allowed"
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                       "permissionDecisionReason": "cc-continuity: writing the session handoff"}}
    if not hard:
        return None
    if tool == "Bash" and _is_our_cli(tin.get("command"), call.getenv):
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


def _effect_gate(call: "Call", c: "dict[str, Any]", rec: "Record") -> "dict[str, Any] | None":
    """A call that may have a side effect outside the work tree: hold a harmful repeat, record the intent (slow path)."""
    from ..hosts.claude.host import CLAUDE
    from ..holds import effects
    from .. import fastjson

    sdir = c["sdir"]
    pdir = sdir.rstrip("/").rsplit("/", 2)[0]
    command = call.payload["tool_input"]["command"]
    if "effects.jsonl" in command or "effects.pending" in command:
        call.outcome = "refused: a tool call touching the side-effect records"
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": (
            "cc-continuity: the side-effect records are not for tool calls to change. A held repeat is let through "
            "only by the user's own prompt (\"repeat <code>\", as the hold said).")}}
    try:
        with open(pdir + "/project.json", "rb") as f:
            root = fastjson.loads(f.read()).get("root")
    except (OSError, ValueError, AttributeError):
        root = None
    fx = c["fx"]
    cwd = call.payload.get("cwd")
    env = {"cwd": cwd if isinstance(cwd, str) else root, "harmful": fx.get("harmful"), "harmless": fx.get("harmless"),
           "local_exempt": fx.get("local_exempt", True), "aliases": effects.snapshot_aliases(
               effects.snapshots_dir({"CLAUDE_CONFIG_DIR": call.getenv("CLAUDE_CONFIG_DIR") or "",
                                      "HOME": call.getenv("HOME") or ""}))}
    unattended = bool(rec.get("unattended")) or call.getenv("CC_CONTINUITY_UNATTENDED") == "1"
    what, out = effects.decide(pdir, command, env, call.payload, call.session_id, rec.get("name"),
                               root if isinstance(root, str) else None, unattended, CLAUDE.call_ran)
    call.outcome = what
    return out


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
    from ..rotation import context
    from ..hosts.claude.host import HookContext

    ctx = HookContext(call)
    if not ctx.cfg["enabled"]:
        return None
    n, sdir, rec = ctx.load_session()
    call.outcome = "card refreshed"
    # The card just built, not a re-read: a file it depends on may change in between (the
    # status line noting the window), and a re-read would then say "stale" and skip the gate
    # (seen on 2.1.328: the crossing response's first tool let through, 1 run in 10).
    return context.refresh_card(ctx, n, sdir, rec)


def _is_our_cli(command: "object", env_get: "Callable[[str], str | None]") -> "bool":
    """A plain ``cc-continuity ...``: the name on PATH, our launcher, or the plugin's ``bin/`` one.

    Any other file called ``cc-continuity`` (``./cc-continuity`` in a repository)
    is not us and does not pass the hard-ceiling gate.
    """
    if not isinstance(command, str):
        return False
    if any(ch in command for ch in ";&|`$<>()\n"):
        return False  # no chaining something else behind our name
    first = command.strip().split(None, 1)[0] if command.strip() else ""
    ours = {"cc-continuity", paths.home() + "/bin/cc-continuity"}
    plugin_root = env_get("CLAUDE_PLUGIN_ROOT")
    if plugin_root:
        ours.add(plugin_root.rstrip("/") + "/bin/cc-continuity")
    return first in ours


def _handoff_target_ok(sdir: "str", path: "str") -> "bool":
    """Only a plain file (or nothing yet) in our own 0700 checkpoint dir: a link there would redirect the write."""
    import os

    from ..rotation.checkpoint import handoff_target_ok

    os.makedirs(session.checkpoint_dir(sdir), mode=0o700, exist_ok=True)
    return handoff_target_ok(sdir, path)


def _record_hard(call: "Call", tokens: "int | None") -> "Record":
    """First sight of the hard level: record it (state, note, push) through the slow path."""
    from ..rotation import turn
    from ..hosts.claude.host import HookContext

    ctx = HookContext(call)
    n, sdir, rec = ctx.load_session()
    _, rec = turn.tool_used(ctx, n, sdir, rec, ctx.reading_for(sdir, rec, tokens, "transcript"))
    return rec


def _snapshot_gate(call: "Call", c: "dict[str, Any]", wait: "dict[str, Any]") -> "dict[str, Any] | None":
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
    tool = call.payload.get("tool_name")
    tin = call.payload.get("tool_input")
    passes = tool in READ_ONLY_TOOLS or (tool == "Bash" and isinstance(tin, dict) and _is_our_cli(tin.get("command"), call.getenv))
    t0 = time.monotonic()
    while True:
        if _exists(result):
            _forget_wait(call, "snapshot_ready", int((time.monotonic() - t0) * 1000), result)
            return None
        if passes:
            return None
        until = wait.get("until")
        if not _alive(wait.get("pid")) or (isinstance(until, (int, float)) and time.time() > until):
            if not _exists(result):
                _forget_wait(call, "snapshot_missing", int((time.monotonic() - t0) * 1000))
                return None
        if time.monotonic() - t0 >= SNAPSHOT_WAIT_S:
            break
        time.sleep(0.05)
    call.outcome = "held: the checkpoint's snapshot is still being taken"
    return {"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": (
            "cc-continuity: the work-tree snapshot of the checkpoint this session continues from (%s) is still "
            "being taken in the background. Tools that can change files wait for it, so that it records the work "
            "tree as the handoff describes it; reading (Read, Grep, Glob) works meanwhile. Retry this call in a few "
            "seconds." % (wait.get("ref") or "cp-?")),
    }}


def _exists(path: "str") -> "bool":
    try:
        posix.stat(path)
        return True
    except OSError:
        return False


def _alive(pid: "object") -> "bool":
    """Is job ``pid`` still running (a zombie is not)?  Unknown counts as running.

    ``procs.pid_alive`` without ``os``: this module is on the per-tool-call path."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return True
    try:
        posix.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:
        return True
    try:
        fd = posix.open("/proc/%d/stat" % pid, posix.O_RDONLY)
        try:
            stat = posix.read(fd, 512)
        finally:
            posix.close(fd)
        return stat.rpartition(b")")[2][:3] != b" Z "
    except OSError:
        return True


def _forget_wait(call: "Call", event: "str", waited_ms: "int", result: "str | None" = None) -> None:
    """The snapshot is there (or never will be): stop checking, once, on the slow path."""
    from ..snapshot.job import read_result
    from ..hosts.claude.host import HookContext

    got = read_result(result) if result else None

    ctx = HookContext(call)
    _, sdir, _rec = ctx.load_session()
    with ctx.project.edit(sdir) as rec:
        cp = rec.get("checkpoint")
        gone: object = rec.pop("snapshot_wait", None)
        if isinstance(cp, dict) and cp.pop("snapshot_wait", None) is not None:
            gone = True
            if got and got.get("ref"):
                cp["ref"] = got["ref"]
        if gone:
            ctx.log(sdir, {"ev": event, "waited_ms": waited_ms})
    if call.outcome == "ok":
        call.outcome = "%s after %d ms" % (event.replace("_", " "), waited_ms)
