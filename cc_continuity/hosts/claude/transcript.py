"""What the rotation reads from a Claude Code transcript beyond the meter (bounded reads, like it).

The model should not be trusted to remember its own todo list at the moment its
context is fullest, so the checkpoint reads it from the transcript; the same goes for
its last reply, its very first request's size, whether our hooks' context reached it,
and whether a tool call ran.
"""

from ... import fastjson
from ...meter import lines_backwards

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

TODO_SCAN = 16 * 1024 * 1024
_TODO = b'"TodoWrite"'


def _assistant_contents(path: str, scan: int, *needles: bytes) -> "Iterator[list[Any]]":
    """The content lists of main-thread assistant rows, newest first, among lines holding every
    one of ``needles`` (a byte test before any parse).  OSError from reading propagates."""
    for line, _ in lines_backwards(path, scan):
        if b'"isSidechain":true' in line or not all(n in line for n in needles):
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        msg = row.get("message") if isinstance(row, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if row.get("type") == "assistant" and isinstance(content, list):
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
        with open(path, "rb") as f:
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


def holds_context(path: str | None, needle: object, limit: int = 1 << 23) -> bool | None:
    """Does the transcript hold ``needle`` in a hook's added context?  None: no transcript, or no hook
    context recorded in it yet (Claude Code writes one as a ``hook_additional_context`` attachment)."""
    if not path or not isinstance(needle, str):
        return None
    want = fastjson.dumps(needle)[1:-1].encode("utf-8")
    try:
        with open(path, "rb") as f:
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
    needle = ('"tool_use_id":"%s"' % tool_use_id).encode()
    try:
        for ln, _ in lines_backwards(path, scan):
            if needle not in ln.replace(b'": "', b'":"') or b'"tool_result"' not in ln:
                continue
            try:
                row = fastjson.loads(ln)
            except (ValueError, UnicodeDecodeError):
                continue
            for part in ((row.get("message") or {}).get("content") or []) if isinstance(row, dict) else []:
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
