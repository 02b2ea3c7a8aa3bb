"""Gemini CLI's hook entry: read the payload, run one rotation step with the Gemini context, answer, fail open.

The command runs ``<python> -S -c <BOOT> <Event>``, which calls :func:`main`: whatever happens inside
(a payload that is not what Gemini 0.61 sends, a corrupt state file, a full disk, a bug) the process
exits 0 with nothing on stdout and one line in ``logs/hooks.log``; a budget (SIGALRM) below the
timeout the hook table gives ends it first (Gemini's timeouts are milliseconds: :data:`TIMEOUTS_MS`).

Per event (the answers are Gemini's own: :mod:`.wire`):

* SessionStart  register; claim a waiting checkpoint; its bootstrap as ``additionalContext`` on startup
                and resume.  After a typed ``/clear`` Gemini drops that context, so nothing is said to
                have been sent: the next BeforeAgent delivers it;
* BeforeAgent   the prompt (UserPromptSubmit's step): a successor's first prompt claims and gets its
                bootstrap, a bootstrap not delivered yet is added;
* BeforeTool    the tool-call step (rotation/toolcall.py): a checkpoint's snapshot waited for, past the
                hard ceiling every call denied but the handoff's own write, a harmful repeat denied;
* AfterTool     the level after the call, recorded once;
* AfterAgent    the turn's end (Stop's step): ask for the handoff (block), check it, make the checkpoint
                and hand over in the same answer (``native``: clearContext, the continuation first).
                Gemini's file tools write only inside the workspace and the project's temp folder, so
                the handoff is asked for there (:func:`draft_path`) and taken into the checkpoint;
* PreCompress   nothing: it fires before every model round and cannot veto (rotation sits below
                ``model.compressionThreshold`` instead);
* SessionEnd    ENDED (told again, as Gemini does on one exit, it is one line: the step's own rule).

A tool call's BeforeTool and AfterTool take the fast path (hosts/toolpath.py: the card and the session
file's tail) unless something must be decided; they are paired by :func:`call_id` (Gemini sends no call
id).  Before any of it, :func:`main` unsets what a repository's ``.env`` gave Gemini's environment
(:mod:`.envfile`).  Installed by ``install --agent gemini`` (:mod:`.install`), checked by doctor
(:mod:`.doctor`).
"""

import os
import posix

from ... import atomic, card, fastjson, ledger, paths, safefile, session
from ...digest import sha256
from .. import entry, toolpath
from . import chats, envfile, generations, wire

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

    from .host import GeminiContext

EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd")
# Seconds; the hook table's timeouts (milliseconds) are one second more.
BUDGET = {"SessionStart": 12.0, "BeforeAgent": 8.0, "BeforeTool": 4.0, "AfterTool": 4.0, "AfterAgent": 50.0,
          "PreCompress": 2.0, "SessionEnd": 2.0}
TIMEOUTS_MS = {e: (int(b) + 1) * 1000 for e, b in BUDGET.items()}
HOOK_MARK = "from cc_continuity.hosts.gemini.hooks import main"
DRAFT = "continuity-handoff-%03d.md"  # in the project's temp folder: what the model writes, taken at AfterAgent
MAX_DRAFT = 1 << 21


def answer(event: str, raw: "bytes | str", env: "Mapping[str, str] | None" = None
           ) -> "tuple[str | None, str, str | None, list[Any]]":
    """(stdout text or None, outcome for the log, session id, what to run once the answer is out) for one
    hook call; raises what a step raises."""
    p = wire.parse(raw, expect=event)
    sid = p["session_id"]
    if entry.getenv(env, "CC_CONTINUITY") == "0":
        return None, "disabled", sid, []
    if event not in EVENTS or event == "PreCompress":
        return None, "ignored", sid, []
    if not card.valid_session_id(sid):  # it names files of ours (its key, its card): safe characters only
        return None, "session id not usable", None, []
    key = generations.key(sid)
    if event in ("BeforeTool", "AfterTool"):
        p["tool_use_id"] = call_id(key, p["tool_name"], p["tool_input"])
    if event == "AfterTool":
        done = toolpath.after_tool(key, p.get("transcript_path"), _read, p["tool_use_id"],
                                   lambda reading: _tool_line(p, reading))
        if done is not toolpath.SLOW:
            return None, done, key, []
    elif event == "BeforeTool" and _draft_write(p) is None:  # (a write of the handoff's draft: the steps decide)
        fast = toolpath.before_tool(key, p.get("transcript_path"), _read, p["tool_name"], p["tool_input"])
        if fast is not toolpath.SLOW:
            return fast[0], fast[1], key, []
    elif event == "BeforeAgent" and _ours(key, p["prompt"]):  # our AfterAgent's block, not the user's prompt
        return None, "our own request", key, []
    from ...rotation import start  # the steps' world: not on a tool call's path unless it must decide
    from .host import GeminiContext  # (the same world: the context, the project, config)

    payload = fastjson.loads(raw)
    if "tool_use_id" in p:
        payload["tool_use_id"] = p["tool_use_id"]
    ctx = GeminiContext(event, payload, env, key)
    text: "str | None" = None
    after = True  # the answer carries what the steps said it would (a dropped context did not go out)
    if event == "SessionStart":
        out = start.session_started(ctx)
        if p["source"] == "clear":  # Gemini drops SessionStart's context after a typed /clear
            after = False
            text = _notice(out)
        else:
            text = _context(event, out)
    elif event == "BeforeAgent":
        text = _context(event, start.prompt_submitted(ctx))
    elif event == "BeforeTool":
        text = _before_tool(ctx, p)
    elif event == "AfterTool":
        _after_tool(ctx, p)
    elif event == "AfterAgent":
        text = _after_agent(ctx, p)
    elif event == "SessionEnd":
        from ...rotation import turn  # (its event's step only)

        turn.session_ended(ctx)
    return text, ctx.outcome, ctx.session_id, ctx.after_output if (text is not None and after) else []


def _notice(out: "dict[str, Any] | None") -> "str | None":
    said = (out or {}).get("systemMessage")
    return fastjson.dumps({"systemMessage": said}) if isinstance(said, str) and said else None


def _context(event: str, out: "dict[str, Any] | None") -> "str | None":
    """A step's answer (Claude Code's shapes) as Gemini takes it at SessionStart and BeforeAgent."""
    hso = (out or {}).get("hookSpecificOutput")
    added = hso.get("additionalContext") if isinstance(hso, dict) else None
    said = (out or {}).get("systemMessage")
    said = said if isinstance(said, str) and said else None
    if isinstance(added, str) and added:
        return wire.add_context(event, added, said)
    return _notice(out)


# -- what our AfterAgent said: Gemini sends a block's reason on as the next round's prompt (BeforeAgent) --------

def _said_path(key: str) -> str:
    return generations.folder() + "/" + key + ".said"


def _say(key: str, reason: str) -> None:
    """Remember this block's reason for session ``key``: the BeforeAgent it starts is ours, not the user's."""
    generations.private_folder()
    atomic.write_text(_said_path(key), _hash(reason), fsync=False, follow=False)


def _hash(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()


def _ours(key: str, prompt: str) -> bool:
    try:
        with open(_said_path(key), "rb") as f:
            said = f.read(64).decode("ascii", "replace")
    except OSError:
        return False
    return said == _hash(prompt)


# -- the handoff: written by the model in Gemini's temp folder, taken into the checkpoint ---------------------

def _temp_folder(transcript: object) -> "str | None":
    """The project's temp folder (the one above the session file's ``chats/``), where Gemini's file tools may
    write; None when the payload names no such file."""
    if not isinstance(transcript, str) or not transcript:
        return None
    chats = os.path.dirname(transcript)
    return os.path.dirname(chats) if os.path.basename(chats) == "chats" else None


def draft_path(transcript: object, number: int) -> "str | None":
    """Where the model writes session ``number``'s handoff, in the project's temp folder (None: no such folder)."""
    folder = _temp_folder(transcript)
    return os.path.join(folder, DRAFT % number) if folder else None


def _take_draft(ctx: "GeminiContext", n: int, sdir: str, draft: str) -> bool:
    """The model's draft moved into the checkpoint folder (a plain file of ours, read without following a link,
    bounded: ``safefile.read_regular``); True when one was taken."""
    try:
        data = safefile.read_regular(draft, MAX_DRAFT + 1)
    except FileNotFoundError:
        return False
    except OSError as e:  # a link, a FIFO, another user's file: refused, left where it is
        ctx.log(sdir, {"ev": "handoff_draft_refused", "path": draft, "why": str(e)[:200]})
        return False
    if len(data) > MAX_DRAFT:
        ctx.log(sdir, {"ev": "handoff_draft_refused", "path": draft, "why": "over %d bytes" % MAX_DRAFT})
        return False
    os.makedirs(session.checkpoint_dir(sdir), mode=0o700, exist_ok=True)
    atomic.write_bytes(session.handoff_path(sdir), data, mode=paths.FILE_MODE, follow=False)
    try:
        posix.unlink(draft)
    except OSError:
        pass
    ctx.log(sdir, {"ev": "handoff_taken", "from": draft, "bytes": len(data)})
    return True


def _after_agent(ctx: "GeminiContext", p: "dict[str, Any]") -> "str | None":
    from ...rotation import context, turn  # (its event's step only)

    found = context.known(ctx)
    draft = None
    if found is not None:
        n, sdir = found
        draft = draft_path(p.get("transcript_path"), n)
        if draft and session.load(sdir)["state"] == session.HANDOFF_REQUESTED:
            _take_draft(ctx, n, sdir, draft)
    out = turn.turn_ended(ctx)
    if not out:
        return None
    hso = out.get("hookSpecificOutput")
    if out.get("decision") == "block" and isinstance(hso, dict) and hso.get("clearContext"):
        sid = ctx.gemini_session_id
        if sid and found is not None:  # (a verified checkpoint: the session was registered before this turn's end)
            gen = generations.next_generation(sid)
            ctx.log(found[1], {"ev": "generation", "gemini_session": sid, "next": gen})
        return wire.clear_and_continue(out["reason"], out.get("systemMessage"))
    if out.get("decision") == "block" and isinstance(out.get("reason"), str):
        reason = out["reason"]
        if draft and found is not None:
            reason = reason.replace(session.handoff_path(found[1]), draft)
        if ctx.session_id:
            _say(ctx.session_id, reason)
        return wire.block_turn(reason)
    return _notice(out)


# -- a tool call ----------------------------------------------------------------------------------------

def _tool(ctx: "GeminiContext", p: "dict[str, Any]", n: int) -> "Any":
    """The call as the tool-call step reads it: a write of the handoff's draft is the handoff's write."""
    from ...rotation import toolcall  # (the steps' world: only when a tool call must be decided)

    tool_input = p["tool_input"]
    draft = draft_path(p.get("transcript_path"), n)
    if draft and tool_input.get("file_path") == draft:
        tool_input = dict(tool_input, file_path=session.handoff_path(ctx.session_dir(n)))
    return toolcall.Tool(p["tool_name"], tool_input, p.get("command"))


def _before_tool(ctx: "GeminiContext", p: "dict[str, Any]") -> "str | None":
    """The tool-call step (rotation/toolcall.py) with the Gemini context; its deny in Gemini's wire (the
    handoff's own write just runs: an allow is Gemini's default)."""
    from ...rotation import context, toolcall  # (the steps' world: only when a tool call must be decided)

    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    said = toolcall.before_tool(ctx, n, sdir, rec, _tool(ctx, p, n), lambda: ctx.reading(sdir, rec))
    if said is None or said[0] == "allow":
        return None
    return wire.deny_tool(said[1])


def _after_tool(ctx: "GeminiContext", p: "dict[str, Any]") -> None:
    """The slow path of a tool call (hosts/toolpath.py): the card, the action, an effect's outcome (by the
    call's :func:`call_id`), a level change."""
    toolpath.after_tool_steps(ctx, p["tool_use_id"], lambda reading: _tool_line(p, reading))


def call_id(key: str, tool: object, tool_input: object) -> str:
    """The id of one call, the same at its BeforeTool and its AfterTool: Gemini's payloads carry none, so it is
    the call itself (the session's key, the tool, its arguments as Gemini sends both times).  Two identical
    calls in a row share it; the second is a repeat, which is what a hold asks about."""
    return "g" + sha256(("%s\0%s\0%r" % (key, tool, tool_input)).encode("utf-8", "surrogateescape")).hexdigest()[:32]


# -- a tool call's fast path (hosts/toolpath.py): the card, the record and the session file's tail -----------

def _read(path: str) -> "tuple[int | None, int | None]":
    return chats.read_session(path)["tokens"], None  # (no window in Gemini's files: the card's, from our config)


def _tool_line(p: "dict[str, Any]", reading: "dict[str, Any]") -> "dict[str, Any]":
    """The ``tool`` ledger line: the reading, the action and its exit as far as Gemini says: 127 when the tool
    could not run at all (its own ``error`` object), else None (the code is only in the output's text, which
    the command's own output can imitate: an effect's outcome then counts as done)."""
    resp = p.get("tool_response")
    failed = isinstance(resp, dict) and isinstance(resp.get("error"), dict)
    return {"ev": "tool", "tool": p["tool_name"], "tokens": reading["tokens"], "percent": reading["percent"],
            "target": ledger.target(p["tool_input"]), "exit": 127 if failed else None, "tu": p.get("tool_use_id")}


def _draft_write(p: "dict[str, Any]") -> "str | None":
    """The handoff's draft, when this call writes one (the steps let it through past the hard ceiling)."""
    path, folder = p["tool_input"].get("file_path"), _temp_folder(p.get("transcript_path"))
    if not isinstance(path, str) or folder is None:
        return None
    return path if os.path.dirname(path) == folder and os.path.basename(path).startswith(DRAFT.split("%")[0]) else None


def main(argv: "list[str]") -> "NoReturn":
    """Entry for the bootstrap the hook table runs; always exits 0 (the runner: hosts.run_hook)."""
    event = argv[0] if argv else "?"
    try:
        envfile.scrub()  # a repository's .env is not the user: what it gave Gemini's environment is not ours
    except Exception:  # (fail open: the runner below logs whatever else goes wrong)
        pass
    entry.run_entry("gemini", event, BUDGET.get(event, 4.0), answer, wire.MAX_PAYLOAD)
