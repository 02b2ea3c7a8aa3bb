"""How full a Gemini CLI session's context is, from its session file (the ``transcript_path`` every hook gets).

Gemini CLI 0.61 keeps a session as JSON lines under ``~/.gemini/tmp/<project>/chats/``
(``session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.jsonl``):

* a header ``{"sessionId", "projectHash", "startTime", "lastUpdated", "kind": "main"}``;
* ``{"$set": {...}}`` updates (the environment message, ``lastUpdated``);
* one record a message: ``{"id", "timestamp", "type": "user" | "gemini", "content", "tokens": {"input",
  "output", "cached", "thoughts", "tool", "total"}, "model", "toolCalls"?}``.

A ``gemini`` record's ``tokens.input`` is that request's ``promptTokenCount``: the context it was sent
with.  It is on disk before AfterAgent runs.  A clear an AfterAgent hook asks for
(``clearContext``) keeps the session id and, in the same file, starts again with a new header: what
came before it is another context.  So the reading is the newest ``gemini`` record *after the newest
header*, and each header is a *generation* of the session, told apart by its ``startTime``.

No record carries the window (Gemini assumes 1,048,576 for every model): the reading names the model,
the window comes from our config.  Read backwards in bounded chunks (``meter.lines_backwards``).
"""

from ... import fastjson
from ...meter import CHUNK, lines_backwards

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    Reading = dict[str, Any]

MAX_SCAN = 16 * 1024 * 1024  # give up (unknown) after this much history without a reading


def _count(v: "object") -> "int | None":
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def is_header(row: "dict[str, Any]") -> bool:
    return isinstance(row.get("sessionId"), str) and "startTime" in row and "type" not in row


def _row(line: "bytes") -> "dict[str, Any] | None":
    if b'"sessionId"' not in line and b'"gemini"' not in line:  # (a byte test before any parse)
        return None
    try:
        row = fastjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) else None


def read_session(path: "str", max_scan: "int" = MAX_SCAN, chunk: "int" = CHUNK) -> "Reading":
    """The newest reading of a session file: ``{"tokens", "model", "generation", "session_id", "source",
    "scanned"}``.

    ``tokens``: the newest ``gemini`` record's ``tokens.input`` after the newest header; None when that
    generation has no model reply yet (a fresh clear, a session before its first reply) or none was
    found within ``max_scan``.  ``generation``: the newest header's ``startTime`` (None when no header
    was found).  Raises OSError when the file cannot be opened.
    """
    tokens = model = generation = sid = None
    scanned = 0
    for line, scanned in lines_backwards(path, max_scan, chunk):
        row = _row(line)
        if row is None:
            continue
        if is_header(row):
            generation, sid = row.get("startTime"), row.get("sessionId")
            break
        if tokens is None and row.get("type") == "gemini" and isinstance(row.get("tokens"), dict):
            tokens = _count(row["tokens"].get("input"))
            if tokens is not None:
                model = row.get("model") if isinstance(row.get("model"), str) else None
    return {"tokens": tokens, "model": model, "generation": generation if isinstance(generation, str) else None,
            "session_id": sid if isinstance(sid, str) else None,
            "source": "session" if tokens is not None else "none", "scanned": scanned}


SPENT_SCAN = 1 << 28  # a session file read for its tokens, at most this much (256 MiB)


def tokens_spent(path: "str", limit: "int" = SPENT_SCAN) -> "int | None":
    """Every model reply's tokens in a session file, all its generations (``tokens.total``: the prompt, cached
    included, the reply, thoughts and tool prompts); a reply recorded again (its ``id``) counts once.  None
    when there is none.  Raises OSError when the file cannot be opened."""
    seen: "dict[str, int]" = {}
    with open(path, "rb") as f:
        data = f.read(limit)
    for k, line in enumerate(data.splitlines()):
        row = _row(line) if b'"tokens"' in line else None
        if row is None or row.get("type") != "gemini" or not isinstance(row.get("tokens"), dict):
            continue
        tokens = row["tokens"]
        total = _count(tokens.get("total"))
        if total is None:
            parts = [_count(tokens.get(key)) for key in ("input", "output")]
            total = None if None in parts else sum(p for p in parts if p is not None)
        if total is not None:
            seen[row["id"] if isinstance(row.get("id"), str) else "row %d" % k] = total
    return sum(seen.values()) if seen else None


def generation_rows(path: "str", max_scan: "int" = MAX_SCAN) -> "list[dict[str, Any]]":
    """The records of the newest generation, oldest first (the header excluded); OSError propagates."""
    rows: "list[dict[str, Any]]" = []
    for line, _ in lines_backwards(path, max_scan):
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict):
            continue
        if is_header(row):
            break
        rows.append(row)
    rows.reverse()
    return rows


def text_of(row: "dict[str, Any]") -> str:
    """A message record's text: ``content`` as a string, or the text parts of a list of parts."""
    content = row.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
