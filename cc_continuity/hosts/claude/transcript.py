"""Machine facts read from a Claude Code transcript (beyond the meter).

The model should not be trusted to remember its own todo list at the moment
its context is fullest, so the checkpoint reads it from the transcript.
Bounded backwards scan, like the meter.
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
