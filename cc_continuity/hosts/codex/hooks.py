"""Codex CLI's hook entry: read the payload, run one rotation step with the Codex context, answer, fail open.

What ``install --agent codex`` writes into ``$CODEX_HOME/hooks.json`` runs
``<python> -S -c <BOOT> <Event>`` (``files.command``), which calls :func:`main`.  The same
promise as Claude Code's hooks: whatever happens inside — a payload that is not what
Codex 0.171 sends, a corrupt state file, a full disk, a bug — the process exits 0 with
nothing on stdout and one line in ``logs/hooks.log``; a budget (SIGALRM) below the
timeout written into hooks.json ends it first.

Per event (the answers are Codex's own: :mod:`.wire`):

* SessionStart      register; claim a waiting checkpoint; its bootstrap as ``additionalContext``
                    (Codex fires it at the thread's first prompt: after ``/clear``, the continuation's);
* UserPromptSubmit  record the prompt; a successor's first prompt; a bootstrap not yet delivered;
* PreToolUse        the tool-call step (rotation/toolcall.py, every host's): a checkpoint's snapshot waited
                    for, past the hard ceiling every call denied but the one writing the handoff (deny is
                    all Codex takes), a repeat of a side effect already done denied, never asked;
* PostToolUse       the level after the call, recorded once (Codex takes no note back here);
* Stop              the turn's end: ask for the handoff (block with the request), check it, make the
                    checkpoint, hand over (in tmux the rotator types /clear and the continuation into
                    the TUI: hosts/ports.py, tmux/rotator.py);
* PreCompact        an emergency record of the facts; never a veto (Codex then interrupts the turn):
                    the rotation's levels sit below Codex's automatic compaction instead;
* SessionEnd        ENDED (Codex ends a thread late, when it unloads it, or at exit).
"""

from ... import fastjson, ledger, session
from .. import entry, toolpath
from . import rollout, wire

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (a tool call's path)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

    from .host import CodexContext

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
# Seconds; the timeout written into hooks.json is one more.  Codex clamps SessionEnd's to 3 s.
BUDGET = {"SessionStart": 12.0, "UserPromptSubmit": 8.0, "PreToolUse": 4.0, "PostToolUse": 4.0, "Stop": 50.0,
          "PreCompact": 25.0, "SessionEnd": 2.0}
TIMEOUTS = {e: int(b) + 1 for e, b in BUDGET.items()}
HOOK_MARK = "from cc_continuity.hosts.codex.hooks import main"
# Codex cuts a hook's added context past 2 500 tokens of 4 UTF-8 bytes (10 000 bytes) and spills the whole
# text to a file it names to the model.  A bootstrap stays under claim.SPILL_LIMIT (9 500 chars): whole
# unless its text is mostly non-ASCII.  (A handler's ``additionalContextLimit`` would raise the cut, but it
# changes the entry's trust hash in a way not yet checked against the binary: not written.)
MAX_STDIN = wire.MAX_PAYLOAD
SLOW = toolpath.SLOW  # what a tool call's fast path returns when the slow path (the steps, the Codex context) must decide


def answer(event: str, raw: "bytes | str", env: "Mapping[str, str] | None" = None
           ) -> "tuple[str | None, str, str | None, list[Any]]":
    """(stdout text or None, outcome for the log, session id, what to run once the answer is out) for one
    hook call; raises what a step raises."""
    p = wire.parse(raw, expect=event)
    sid = p["session_id"]
    if entry.getenv(env, "CC_CONTINUITY") == "0":
        return None, "disabled", sid, []
    if event == "PostToolUse":
        done = _post_tool_use_fast(p)
        if done is not SLOW:
            return None, done, sid, []
    elif event == "PreToolUse":
        fast = _pre_tool_use_fast(p)
        if fast is not SLOW:
            return fast[0], fast[1], sid, []
    from .host import CodexContext  # the steps' world: not on a tool call's path unless it must decide

    ctx = CodexContext(event, fastjson.loads(raw), env)
    out: "dict[str, Any] | None" = None
    text: "str | None" = None
    if event == "SessionStart":
        from ...rotation import start  # (its event's step only)

        out = start.session_started(ctx)
    elif event == "UserPromptSubmit":
        from ...rotation import start  # (its event's step only)

        out = start.prompt_submitted(ctx)
    elif event == "SessionEnd":
        from ...rotation import turn  # (its event's step only)

        turn.session_ended(ctx)
    elif event == "PreToolUse":
        text = _pre_tool_use(ctx, p)
    elif event == "PostToolUse":
        _post_tool_use(ctx, p)
    elif event == "Stop":
        from ...rotation import turn  # (its event's step only)

        _settle_exits(ctx)
        out = turn.turn_ended(ctx)
    elif event == "PreCompact":
        from ...rotation import turn  # (its event's step only)

        out = turn.before_compact(ctx)
        if out and out.get("decision") == "block":  # a veto would interrupt the turn: let it compact
            ctx.outcome += "; compaction let through (a veto interrupts Codex's turn)"
            out = None
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


# -- a tool call: the card, the record and the rollout's tail (hosts/toolpath.py); the steps only when something
#    changes -------

def _read(path: str) -> "tuple[int | None, int | None]":
    got = rollout.read_rollout(path)
    return got["tokens"], got["window"]


def _post_tool_use_fast(p: "dict[str, Any]") -> "str | None":
    """The outcome when the level is unchanged (the action recorded); SLOW for a level change, an effect's
    outcome to record, or a session whose card is not current."""
    return toolpath.after_tool(p["session_id"], p.get("transcript_path"), _read, p.get("tool_use_id"),
                               lambda reading: _tool_line(p, reading))


def _pre_tool_use_fast(p: "dict[str, Any]") -> "tuple[str | None, str] | None":
    """(answer, outcome) when nothing is to decide: below the hard ceiling and no possible side effect; SLOW else."""
    return toolpath.before_tool(p["session_id"], p.get("transcript_path"), _read, p.get("tool_name"),
                                p.get("tool_input"))


def _tool_line(p: "dict[str, Any]", reading: "dict[str, Any]") -> "dict[str, Any]":
    """The ``tool`` ledger line: the reading and the action.  Codex 0.171 sends only the shell's output as
    ``tool_response`` and writes the exit code into its rollout after this hook: the line names its call
    (``tu``) and the turn's end settles the code (:func:`_settle_exits`)."""
    tid = p.get("tool_use_id")
    return {"ev": "tool", "tool": p.get("tool_name"), "tokens": reading["tokens"], "percent": reading["percent"],
            "target": ledger.target(p.get("tool_input")), "exit": None,
            "tu": tid if isinstance(tid, str) and p.get("tool_name") == wire.SHELL_TOOL else None}


def _settle_exits(ctx: "CodexContext") -> None:
    """At a turn's end (the rollout has every call's record by then): a ``tool_exit`` line for each shell call
    of this session whose exit code its line could not know (what a handoff's "tests pass" is checked
    against).  Bounded: the ledger's last 200 lines."""
    from ...rotation import context  # (the Stop's own world: loaded for it anyway)

    found = context.known(ctx)
    path = ctx.payload.get("transcript_path")
    if found is None or not isinstance(path, str):
        return
    led = session.ledger_path(found[1])
    recent = ledger.tail(led, 200)
    settled = {r.get("tu") for r in recent if r.get("ev") == "tool_exit"}
    for r in recent:
        tu = r.get("tu")
        if r.get("ev") != "tool" or r.get("exit") is not None or not isinstance(tu, str) or tu in settled:
            continue
        try:
            code = rollout.exit_code(path, tu)
        except OSError:
            return
        if code is not None:
            ledger.append(led, {"ev": "tool_exit", "tu": tu, "exit": code})


def _pre_tool_use(ctx: "CodexContext", p: "dict[str, Any]") -> "str | None":
    """The tool-call step (rotation/toolcall.py) with the Codex context; a deny in Codex's wire, None lets the
    call run (Codex takes no allow: the handoff's own write just runs)."""
    from ...rotation import context, toolcall  # (the steps' world: only when a tool call must be decided)

    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    said = toolcall.before_tool(ctx, n, sdir, rec, toolcall.Tool(p.get("tool_name"), p.get("tool_input"),
                                                                 p.get("command")), lambda: ctx.reading(sdir, rec))
    if said is None or said[0] == "allow":
        return None
    return wire.deny_tool(said[1])


def _post_tool_use(ctx: "CodexContext", p: "dict[str, Any]") -> None:
    """The slow path of a tool call (hosts/toolpath.py): the card, the action, an effect's outcome, a level change."""
    toolpath.after_tool_steps(ctx, p.get("tool_use_id"), lambda reading: _tool_line(p, reading))


def main(argv: "list[str]") -> "NoReturn":
    """Entry for the bootstrap install writes into hooks.json; always exits 0 (the runner: hosts.run_hook)."""
    event = argv[0] if argv else "?"
    entry.run_entry("codex", event, BUDGET.get(event, 4.0), answer, MAX_STDIN)
