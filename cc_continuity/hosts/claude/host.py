"""Claude Code as the rotation's host: its transcript, its process, and the context of one of its hook calls.

* the transcript is the JSONL Claude Code keeps per session: the context reading is the
  root's meter (the per-tool-call path reads it too); the rest - the todo list, the last
  reply, the very first request's size, whether our hooks' context reached it, whether a
  tool call ran - is read here, each bounded like the meter;
* the status line leaves Claude Code's own context numbers in the session's directory,
  a reading the transcript may not hold yet at a turn's end;
* ``CLAUDE_PID`` names the process a ``/clear`` keeps;
* :class:`HookContext` fills the rotation's ports for one hook call: this host; pushes to
  the notifier's spool and tmux for the rotator, as every agent's hooks do (hosts/ports.py).
"""

from __future__ import annotations

from ... import fastjson, meter, paths
from ...holds import effects
from ...meter import rows_backwards
from ...rotation import context, limits
from ...rotation.host import Host
from ..ports import HookPorts

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import Any

    Call = Any  # a hook call (cc_continuity.hosts.claude.hooks.Call: event, payload, env, outcome, after_output ...)
    from ...rotation.host import Env, Got
    from ...session import Record

TODO_SCAN = 16 * 1024 * 1024
_TODO = b'"TodoWrite"'


def _assistant_contents(path: str, scan: int, *needles: bytes) -> "Iterator[list[Any]]":
    """The content lists of main-thread assistant rows, newest first, among lines holding every
    one of ``needles`` (a byte test before any parse).  OSError from reading propagates."""
    for row in rows_backwards(path, scan, *needles):
        msg = row.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if row.get("type") == "assistant" and not row.get("isSidechain") and isinstance(content, list):
            yield content


def open_todos(path: str, max_items: int = 30, max_chars: int = 200) -> list[dict[str, str]] | None:
    """Items of the latest TodoWrite call that are not completed, or None if there is none."""
    try:
        for content in _assistant_contents(path, TODO_SCAN, _TODO):
            for block in reversed(content):
                if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "TodoWrite":
                    todos = (block.get("input") or {}).get("todos")
                    if isinstance(todos, list):
                        return _open_items(todos, max_items, max_chars)
    except OSError:
        return None
    return None


def _open_items(todos: "list[Any]", max_items: int, max_chars: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for t in todos:
        if not isinstance(t, dict) or t.get("status") == "completed":
            continue
        text = t.get("content") or t.get("activeForm") or ""
        if isinstance(text, str) and text.strip():
            out.append({"status": t.get("status") or "pending", "content": text.strip()[:max_chars]})
        if len(out) >= max_items:
            break
    return out


def last_assistant_text(path: str, max_chars: int = 1500, scan: int = TODO_SCAN) -> str | None:
    """The text of the newest main-thread assistant reply, or None."""
    try:
        for content in _assistant_contents(path, scan, b'"assistant"', b'"text"'):
            texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str) and b["text"].strip()]
            if texts:
                text = "\n".join(texts).strip()
                return text[:max_chars] + ("…" if len(text) > max_chars else "")
    except OSError:
        return None
    return None


def first_request_tokens(path: str, limit: int = 1 << 23) -> int | None:
    """The context of the session's very first main-thread model request (its start alone), or None."""
    try:
        with open(meter.open_transcript(path), "rb") as f:
            data = f.read(limit)
    except OSError:
        return None
    for line in data.splitlines():
        if b'"assistant"' not in line:
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict) or row.get("type") != "assistant" or row.get("isSidechain"):
            continue
        u = (row.get("message") or {}).get("usage") or {}
        return sum(u.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                   if isinstance(u.get(k), int))
    return None


SPENT_SCAN = 1 << 28  # a transcript read for its tokens, at most this much (256 MiB)


def tokens_spent(path: str, limit: int = SPENT_SCAN) -> int | None:
    """Every model request's tokens in a transcript (input, cache writes, cache reads and output), subagents'
    included; a reply written as several rows (one per content block, the same message id and usage) counts
    once.  None when no request is recorded or the file cannot be read."""
    seen: dict[str, int] = {}
    try:
        with open(meter.open_transcript(path), "rb") as f:
            data = f.read(limit)
    except OSError:
        return None
    for k, line in enumerate(data.splitlines()):
        if b'"usage"' not in line or b'"assistant"' not in line:
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        msg = row.get("message") if isinstance(row, dict) and row.get("type") == "assistant" else None
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            continue
        u = msg["usage"]
        mid = msg["id"] if isinstance(msg.get("id"), str) else "row %d" % k
        seen[mid] = sum(v for v in (u.get(key) for key in ("input_tokens", "cache_creation_input_tokens",
                                                            "cache_read_input_tokens", "output_tokens"))
                        if isinstance(v, int) and not isinstance(v, bool) and v > 0)
    return sum(seen.values()) if seen else None


STOP_SCAN = 1 << 21  # the transcript's tail read for the turn's last answer (2 MiB)


def api_stop(path: str, max_scan: int = STOP_SCAN) -> dict[str, Any] | None:
    """The model server's stop the session ended on (:func:`...rotation.limits.stop`), from its transcript: the
    last assistant row is Claude Code's API error (``isApiErrorMessage``) with its status (429: a limit; 5xx,
    a refused or timed-out connection: the server); the reset time from the newest ``system/api_error`` row's
    ``error.rateLimits.resetsAt`` (only a subscription's headers give one).  None when the last answer is the
    model's, or the file cannot be read."""
    reset, last = None, None
    try:
        for row in rows_backwards(path, max_scan, b'"type"'):
            kind = row.get("type")
            if kind == "assistant" and last is None:
                last = row
                if row.get("isApiErrorMessage") is not True:
                    return None
            elif kind == "system" and row.get("subtype") == "api_error" and reset is None:
                err: dict[str, Any] = row["error"] if isinstance(row.get("error"), dict) else {}
                rl: dict[str, Any] = err["rateLimits"] if isinstance(err.get("rateLimits"), dict) else {}
                reset = rl.get("resetsAt") or 0
            elif kind == "user" and last is not None:
                break  # the turn's start: no api_error row of this turn beyond it
    except OSError:
        return None
    if last is None:
        return None
    status = last.get("apiErrorStatus")
    content = (last.get("message") or {}).get("content") if isinstance(last.get("message"), dict) else None
    text = " ".join(b.get("text", "") for b in content if isinstance(b, dict)) if isinstance(content, list) else ""
    kind = limits.LIMIT if status == 429 or last.get("error") == "rate_limit" else limits.SERVER
    return limits.stop(kind, text, status if isinstance(status, int) else None, reset or None, where=path)


def holds_context(path: str | None, needle: object, limit: int = 1 << 23) -> bool | None:
    """Does the transcript hold ``needle`` in a hook's added context?  None: no transcript, or no hook
    context recorded in it yet (Claude Code writes one as a ``hook_additional_context`` attachment)."""
    if not path or not isinstance(needle, str):
        return None
    want = fastjson.dumps(needle)[1:-1].encode("utf-8")
    try:
        with open(meter.open_transcript(path), "rb") as f:
            data = f.read(limit)
    except OSError:
        return None
    if b'"attachment"' not in data:
        return None
    return any(b'"hook_additional_context"' in line and want in line for line in data.splitlines())


def call_ran(path: str | None, tool_use_id: str, scan: int = 8 << 20) -> str | None:
    """What the transcript says of a call with no recorded outcome: "not run" (denied by a hook, declined at
    the prompt), "ran", or None (nothing: uncertain)."""
    if not path:
        return None
    try:
        for row in rows_backwards(path, scan, tool_use_id.encode(), b'"tool_result"'):
            for part in (row.get("message") or {}).get("content") or []:
                if not isinstance(part, dict) or part.get("tool_use_id") != tool_use_id:
                    continue
                body = part.get("content")
                body = body if isinstance(body, str) else fastjson.dumps(body)
                if part.get("is_error") and ("hook error" in body or "doesn't want to proceed" in body
                                             or "was rejected" in body or "denied" in body.lower()):
                    return "not run"
                return "ran"
    except OSError:
        return None
    return None


WRITE_TOOLS = ("Write", "Edit", "MultiEdit")
READ_ONLY_TOOLS = frozenset(("Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite",
                             "Task", "AskUserQuestion", "ExitPlanMode"))


def is_our_cli(command: object, env: Env) -> bool:
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
    plugin_root = env.get("CLAUDE_PLUGIN_ROOT")
    if plugin_root:
        ours.add(plugin_root.rstrip("/") + "/bin/cc-continuity")
    return first in ours


class ClaudeHost(Host):
    name = "claude"
    label = "Claude Code"
    write_with = "with the Write tool"
    write_allowed = "the Write tool is allowed for it"
    reads_meanwhile = "reading (Read, Grep, Glob) works meanwhile"

    def read_only(self, tool: object) -> bool:
        return tool in READ_ONLY_TOOLS

    def writes(self, tool: object, tool_input: Mapping[str, Any], command: str, path: str) -> bool:
        return tool in WRITE_TOOLS and tool_input.get("file_path") == path

    def our_cli(self, command: str, env: Env) -> bool:
        return is_our_cli(command, env)

    def shell_aliases(self, env: Env) -> dict[str, str]:
        """Claude Code's shell snapshots (its config dir's): the aliases its Bash tool runs with."""
        return effects.snapshot_aliases(effects.snapshots_dir({"CLAUDE_CONFIG_DIR": env.get("CLAUDE_CONFIG_DIR") or "",
                                                               "HOME": env.get("HOME") or ""}))

    def agent_pid(self, env: Env) -> int | None:
        raw = env.get("CLAUDE_PID", "")
        return int(raw) if raw.isdigit() else None

    def reading(self, transcript_path: str) -> Got:
        got: Got = meter.read_transcript(transcript_path)
        return got

    def reply_reading(self, transcript_path: str, last_message: object) -> tuple[bool, Got | None]:
        return meter.reply_reading(transcript_path, last_message)

    def own_reading(self, sdir: str, session_id: str | None, since: float) -> Got | None:
        st = meter.load_status_reading(sdir)
        if not (st and st.get("session_id") == session_id and isinstance(st.get("at"), (int, float))
                and st["at"] >= since and isinstance(st.get("tokens"), int)):
            return None
        version = st.get("version")
        return {"tokens": st["tokens"], "model": None, "source": "statusline",
                "cc_version": version if isinstance(version, str) else None}

    def first_request_tokens(self, transcript_path: str) -> int | None:
        return first_request_tokens(transcript_path)

    def tokens_spent(self, transcript_path: str) -> int | None:
        return tokens_spent(transcript_path)

    def api_stop(self, transcript_path: str) -> dict[str, Any] | None:
        return api_stop(transcript_path)

    def holds_context(self, transcript_path: str | None, needle: object) -> bool | None:
        return holds_context(transcript_path, needle)

    def open_todos(self, transcript_path: str) -> list[dict[str, str]] | None:
        return open_todos(transcript_path)

    def last_reply(self, transcript_path: str) -> str | None:
        return last_assistant_text(transcript_path)

    def call_ran(self, transcript_path: str | None, tool_use_id: str) -> str | None:
        return call_ran(transcript_path, tool_use_id)


CLAUDE = ClaudeHost()


class HookContext(HookPorts):
    """The rotation's context for one Claude Code hook call (:class:`~cc_continuity.hosts.claude.hooks.Call`): the host is
    :data:`CLAUDE`; pushes and the rotator are the hook ports' (:class:`~..ports.HookPorts`).  The outcome goes
    back to the call."""

    session_id: str  # hooks.dispatch runs no handler without a usable session id (the same check as here)

    def __init__(self, call: "Call", tidy: "Callable[[], object] | None" = None) -> None:
        self.call = call
        self.tidy = tidy  # what a startup sweeps (SessionStart's: the router's twin markers, hooks.sweep)
        super().__init__(call.event, call.payload, call.env, host=CLAUDE)
        self.after_output = call.after_output  # hooks.main runs them once the answer is written

    @property
    def outcome(self) -> str:
        said: str = self.call.outcome
        return said

    @outcome.setter
    def outcome(self, value: str) -> None:
        self.call.outcome = value

    def tidy_at_startup(self) -> None:
        if self.tidy is not None:
            self.tidy()

    @property
    def agent_version(self) -> str | None:
        version: str | None = self.call.claude_version
        return version

    @agent_version.setter
    def agent_version(self, value: str | None) -> None:
        self.call.claude_version = value

    def own_driver(self) -> str | None:
        """``headless`` under ``cc-continuity run`` (its loop starts the successor once ``claude -p`` ends);
        else None: the rotation chooses (the mod, tmux, the user's /clear)."""
        return "headless" if self.env.get("CC_CONTINUITY_HEADLESS") == "1" else None  # (rotation/run.HEADLESS_ENV)


def begin(call: "Call") -> "tuple[HookContext, int, str, Record] | None":
    """(ctx, n, sdir, rec) for this call's session of an enabled project, or None (:func:`context.begin`)."""
    ctx = HookContext(call)
    started = context.begin(ctx)
    return None if started is None else (ctx,) + started
