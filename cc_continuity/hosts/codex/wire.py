"""Codex CLI 0.171's command-hook wire: the payload on stdin, the JSON a hook prints back.

What the binary sends (captured from it: tests/data/codex/hook-payloads.jsonl): every
event has ``session_id`` (the thread id), ``transcript_path`` (the rollout; null with
``exec --ephemeral``), ``cwd``, ``hook_event_name`` and ``model``; turn events add
``turn_id`` and ``permission_mode``.  SessionStart: ``source`` (startup, resume, clear,
compact, fork).  UserPromptSubmit: ``prompt``.  PreToolUse / PostToolUse: ``tool_name``
(the shell is ``"Bash"``), ``tool_input`` (``{"command"}`` for the shell),
``tool_use_id``, and PostToolUse ``tool_response``.  Stop: ``stop_hook_active``,
``last_assistant_message``.  PreCompact / PostCompact: ``trigger`` (manual, auto).
SessionEnd: ``reason``.  No payload carries the context window: that is the rollout's.

What it does with an answer (seen on the binary: tests/e2e/test_codex_e2e.py): Stop
``{"decision": "block", "reason"}`` runs another model round of the same turn with the
reason as a user message; PreToolUse ``permissionDecision: "deny"`` refuses the call and
tells the model why (deny is all it can do: the binary rejects allow and ask, per
shared/reference/codex-cli-0.171.md); SessionStart / UserPromptSubmit
``additionalContext`` arrives as a developer message (SessionStart's before the user's
prompt, UserPromptSubmit's after it), cut past ``additionalContextLimit`` (2 500 tokens
by default, a token being 4 bytes) with the whole text spilled under ``$TMPDIR``;
PreCompact ``{"continue": false}`` vetoes a compaction and interrupts the turn (``exec``:
"turn interrupted", exit 1); UserPromptSubmit ``decision: block`` drops the prompt (no
request).  No answer clears the thread or starts a new one (the reference): the TUI's
``/clear`` is typed.
"""

from ... import fastjson
from ..entry import PayloadError  # noqa: F401 (the wire's error: its callers name it wire.PayloadError)
from ..entry import payload_choice, payload_event, payload_field
from ..entry import payload_str as _str

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact",
          "PostCompact", "Stop", "SubagentStart", "SubagentStop", "SessionEnd", "Interrupt")
SOURCES = ("startup", "resume", "clear", "compact", "fork")
TRIGGERS = ("manual", "auto")
SHELL_TOOL = "Bash"
INJECT_LIMIT_TOKENS = 2500  # additionalContextLimit's default: longer context is cut and spilled
BYTES_PER_TOKEN = 4         # Codex's estimate ("original token count: 9789" for 39 156 bytes)
MAX_PAYLOAD = 1 << 22       # a hook reads at most this much stdin


def parse(raw: "bytes | str", expect: "str | None" = None) -> "dict[str, Any]":
    """A hook's stdin, checked and flattened.

    Always: ``event``, ``session_id``, ``cwd``, ``transcript_path`` (None when absent),
    ``model``, ``turn_id`` (None when the event has none).  Per event, its own keys
    (``source``; ``prompt``; ``tool_name``, ``tool_input``, ``tool_use_id``, ``command``
    for the shell, ``tool_response``; ``stop_hook_active``, ``last_assistant_message``;
    ``trigger``; ``reason``).  ``expect``: the event this hook was installed for (a
    payload for another is an error).  Raises :class:`PayloadError`.
    """
    d, event = payload_event(raw, MAX_PAYLOAD, expect)
    out: "dict[str, Any]" = {
        "event": event, "session_id": _str(d, "session_id"), "cwd": _str(d, "cwd"),
        "transcript_path": _str(d, "transcript_path", optional=True), "model": _str(d, "model", optional=True),
        "turn_id": _str(d, "turn_id", optional=True),
    }
    if event == "SessionStart":
        out["source"] = payload_choice(d, "source", SOURCES)
    elif event == "UserPromptSubmit":
        out["prompt"] = payload_field(d, "prompt", str)
    elif event in ("PreToolUse", "PostToolUse", "PermissionRequest"):
        out["tool_name"] = _str(d, "tool_name")
        tool_input = out["tool_input"] = payload_field(d, "tool_input", dict)
        out["tool_use_id"] = _str(d, "tool_use_id", optional=True)
        command = tool_input.get("command")
        out["command"] = command if out["tool_name"] == SHELL_TOOL and isinstance(command, str) else None
        if event == "PostToolUse":
            out["tool_response"] = d.get("tool_response")
    elif event == "Stop":
        out["stop_hook_active"] = payload_field(d, "stop_hook_active", bool)
        out["last_assistant_message"] = _str(d, "last_assistant_message", optional=True)
    elif event in ("PreCompact", "PostCompact"):
        out["trigger"] = payload_choice(d, "trigger", TRIGGERS)
    elif event == "SessionEnd":
        out["reason"] = _str(d, "reason", optional=True)
    return out


# -- answers (what the hook prints on stdout, exit 0) -----------------------------


def _dump(obj: "dict[str, Any]") -> "str":
    return fastjson.dumps(obj)


def block_stop(reason: "str") -> "str":
    """Stop: go on with another model round; ``reason`` reaches the model as a user message."""
    if not reason.strip():
        raise ValueError("a Stop block needs a reason (Codex sends it to the model)")
    return _dump({"decision": "block", "reason": reason})


def deny_tool(reason: "str") -> "str":
    """PreToolUse: refuse this call; the model is told "Command blocked by PreToolUse hook: <reason>"."""
    return _dump({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                         "permissionDecisionReason": reason}})


def add_context(event: "str", text: "str") -> "str":
    """SessionStart / UserPromptSubmit: ``text`` as a developer message before the prompt."""
    if event not in ("SessionStart", "UserPromptSubmit"):
        raise ValueError("additionalContext is for SessionStart and UserPromptSubmit, not %s" % event)
    return _dump({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def block_prompt(reason: "str") -> "str":
    """UserPromptSubmit: drop the prompt (no request is sent)."""
    return _dump({"decision": "block", "reason": reason})


def veto_compaction(reason: "str") -> "str":
    """PreCompact: no compaction; Codex interrupts the turn (an automatic one fails ``exec``)."""
    return _dump({"continue": False, "stopReason": reason})


def approx_tokens(text: "str") -> "int":
    """Codex's token estimate for hook output: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def fits_injection(text: "str", limit_tokens: "int" = INJECT_LIMIT_TOKENS) -> "bool":
    """Does ``text`` arrive whole as additionalContext under the hook's ``additionalContextLimit``?"""
    return approx_tokens(text) <= limit_tokens
