"""Gemini CLI 0.61's command-hook wire: the payload on stdin, the JSON a hook prints back.

What the binary sends (../shared/reference/gemini-cli-0.61.md §2): every event has
``session_id``, ``transcript_path`` (the session file), ``cwd``, ``hook_event_name`` and
``timestamp``.  SessionStart: ``source`` (startup, resume, clear: no compact).  SessionEnd:
``reason``.  BeforeAgent: ``prompt`` (headless: with SessionStart's context prepended).
AfterAgent: ``prompt`` (the turn's original one), ``prompt_response`` (cumulative, not exact
text) and ``stop_hook_active`` (false after a continuation that used a tool: not a latch to
trust).  BeforeTool / AfterTool: ``tool_name`` (the shell is ``run_shell_command``),
``tool_input`` (``{"command", "description"}`` for the shell, ``file_path`` for the file
tools), AfterTool ``tool_response``.  PreCompress: ``trigger`` (auto, manual).  No payload
carries the context window, and none a tool call's id.

What it does with an answer: AfterAgent ``{"decision": "block", "reason"}`` runs a new round
with the reason as a plain user message; with ``hookSpecificOutput.clearContext`` the history
is cleared first (the same session id, no SessionEnd/SessionStart: a silent clear).
BeforeTool ``{"decision": "deny", "reason"}`` refuses the call and the model reads
``Tool execution blocked: <reason>``.  ``additionalContext`` (SessionStart on startup and
resume, BeforeAgent) reaches the model HTML-escaped inside ``<hook_context>``; after a typed
``/clear`` SessionStart's is dropped.  PreCompress cannot veto.  Timeouts are milliseconds.
"""

from ... import fastjson
from ..entry import PayloadError, payload_choice, payload_event, payload_field
from ..entry import payload_str as _str

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
          "BeforeToolSelection", "BeforeTool", "AfterTool", "PreCompress", "Notification")
SOURCES = ("startup", "resume", "clear")
TRIGGERS = ("auto", "manual")
SHELL_TOOL = "run_shell_command"
MAX_PAYLOAD = 1 << 22  # a hook reads at most this much stdin
CONTEXT_EVENTS = ("SessionStart", "BeforeAgent")  # the events whose additionalContext reaches the model

__all__ = ["PayloadError", "parse", "block_turn", "clear_and_continue", "deny_tool", "add_context", "escaped"]


def parse(raw: "bytes | str", expect: "str | None" = None) -> "dict[str, Any]":
    """A hook's stdin, checked and flattened.

    Always: ``event``, ``session_id``, ``cwd``, ``transcript_path`` (None when absent).  Per event,
    its own keys (``source``; ``reason``; ``prompt``; ``stop_hook_active``; ``tool_name``,
    ``tool_input``, ``command`` for the shell, ``tool_response``; ``trigger``).  ``expect``: the event
    this hook was installed for (a payload for another is an error).  Raises :class:`PayloadError`.
    """
    d, event = payload_event(raw, MAX_PAYLOAD, expect)
    out: "dict[str, Any]" = {"event": event, "session_id": _str(d, "session_id"), "cwd": _str(d, "cwd"),
                             "transcript_path": _str(d, "transcript_path", optional=True)}
    if event == "SessionStart":
        out["source"] = payload_choice(d, "source", SOURCES)
    elif event == "SessionEnd":
        out["reason"] = _str(d, "reason", optional=True)
    elif event in ("BeforeAgent", "AfterAgent"):
        out["prompt"] = payload_field(d, "prompt", str)
        if event == "AfterAgent":
            out["stop_hook_active"] = payload_field(d, "stop_hook_active", bool)
    elif event in ("BeforeTool", "AfterTool"):
        out["tool_name"] = _str(d, "tool_name")
        tool_input = out["tool_input"] = payload_field(d, "tool_input", dict)
        command = tool_input.get("command")
        out["command"] = command if out["tool_name"] == SHELL_TOOL and isinstance(command, str) else None
        if event == "AfterTool":
            out["tool_response"] = d.get("tool_response")
    elif event == "PreCompress":
        out["trigger"] = payload_choice(d, "trigger", TRIGGERS)
    return out


# -- answers (what the hook prints on stdout, exit 0) -----------------------------

def block_turn(reason: "str") -> "str":
    """AfterAgent: another round, ``reason`` reaching the model as a plain user message (not escaped)."""
    if not reason.strip():
        raise ValueError("an AfterAgent block needs a reason (Gemini sends it to the model)")
    return fastjson.dumps({"decision": "block", "reason": reason})


def clear_and_continue(reason: "str", notice: "str | None" = None) -> "str":
    """AfterAgent: clear the history, then a new round whose first message is ``reason`` (the hand-over,
    in-process: the same session id, no SessionEnd/SessionStart).  ``notice``: what the user sees."""
    if not reason.strip():
        raise ValueError("a clear needs the continuation as its reason")
    out: "dict[str, Any]" = {"decision": "block", "reason": reason,
                             "hookSpecificOutput": {"hookEventName": "AfterAgent", "clearContext": True}}
    if notice:
        out["systemMessage"] = notice
    return fastjson.dumps(out)


def deny_tool(reason: "str") -> "str":
    """BeforeTool: refuse this call; the model reads ``Tool execution blocked: <reason>``."""
    return fastjson.dumps({"decision": "deny", "reason": reason})


def add_context(event: "str", text: "str", notice: "str | None" = None) -> "str":
    """SessionStart (startup, resume) / BeforeAgent: ``text`` for the model (Gemini escapes it, see
    :func:`escaped`).  ``notice``: what the user sees."""
    if event not in CONTEXT_EVENTS:
        raise ValueError("additionalContext reaches the model from %s, not %s" % (" and ".join(CONTEXT_EVENTS), event))
    out: "dict[str, Any]" = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if notice:
        out["systemMessage"] = notice
    return fastjson.dumps(out)


def escaped(text: "str") -> "str":
    """``text`` as the model reads it from ``additionalContext`` (Gemini 0.61 was seen to write ``<`` and
    ``>`` as ``&lt;`` and ``&gt;``): what a check that a bootstrap arrived looks for."""
    return text.replace("<", "&lt;").replace(">", "&gt;")
