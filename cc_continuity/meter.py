"""How full the context is: tokens, window, ratio, level.

Tokens in context = ``input_tokens + cache_creation_input_tokens +
cache_read_input_tokens`` of the latest main-thread assistant response — the
same sum Claude Code shows.  The transcript is read **backwards in chunks**
and only candidate lines are parsed, so the cost does not grow with history
(lines of 8–64 KB are normal).  Uses ``posix``, not ``os``: this runs on
every tool call.
"""

import posix
import time

from . import fastjson, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

    from .config import Config
    from .session import Record

    Reading = dict[str, Any]  # a context reading: tokens, model, source, ... (see each function)
    Thresholds = Config | Mapping[str, Any]  # the config, or the card's copy of its thresholds

CHUNK = 256 * 1024
MAX_SCAN = 64 * 1024 * 1024  # give up (unknown) after this much history without a reading
# A line longer than this is not read to its start: the reading is unknown until a newer
# line holds one (a 64 MB tool result costs what 16 MiB of reading costs, ~10 ms, then the
# next reply is found again at once).  Chunks of such a line are kept, never re-joined or
# re-searched, so the cost is linear in what is read.
LINE_MAX = 16 * 1024 * 1024

LEVELS = ("ok", "warn", "rotate", "hard")
# Their indices (the scale's order: a fuller context has a higher index).  Compare levels
# with these or :func:`at_least`, never with bare numbers.
OK, WARN, ROTATE, HARD = range(len(LEVELS))

# Byte prefilters: only lines that can be rows of these kinds are parsed.  The
# transcript is compact JSON; the spaced form is accepted for robustness.
_ASSISTANT = (b'"type":"assistant"', b'"type": "assistant"')
_BOUNDARY = b'"compact_boundary"'

# Known windows by model-id prefix (checked longest first).  Unknown ids fall
# through to CLAUDE_CODE_MAX_CONTEXT_TOKENS, then Claude Code's own guess.
MODEL_WINDOWS = (
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-fable-5", 1_000_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-opus-4-7", 1_000_000),
    ("claude-opus-4-8", 1_000_000),
    ("claude-sonnet-4-6", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-haiku", 200_000),
    ("claude-3", 200_000),
)


def usage_tokens(usage: "object") -> "int | None":
    """input + cache_creation + cache_read (output excluded, like the status line)."""
    if not isinstance(usage, dict):
        return None
    total = 0
    for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        v = usage.get(k) or 0
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        total += int(v)
    return total


def _assistant_reading(line: "bytes") -> "tuple[int, Any] | None":
    """(tokens, model) from one transcript line, or None if it doesn't count."""
    try:
        row = fastjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(row, dict) or row.get("type") != "assistant" or row.get("isSidechain"):
        return None
    if row.get("isApiErrorMessage") or row.get("error"):
        return None
    msg = row.get("message")
    if not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
        return None
    tokens = usage_tokens(msg.get("usage"))
    if tokens is None:
        return None
    return tokens, msg.get("model")


def _boundary_reading(line: "bytes") -> "int | None":
    try:
        row = fastjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(row, dict) or row.get("type") != "system" or row.get("subtype") != "compact_boundary":
        return None
    meta = row.get("compactMetadata") or {}
    post = meta.get("postTokens") if isinstance(meta, dict) else None
    return post if isinstance(post, int) and not isinstance(post, bool) else -1


# -- opening a transcript -------------------------------------------------------
#
# Every hook payload names the agent's transcript (Claude Code's) or rollout (Codex's)
# by path, and what is there is opened on every tool call.  A FIFO's open blocks until a
# writer comes (the hook then sat out its whole budget: 4 s a tool call, 50 s at Stop) and
# a device streams without end, so only a regular file is ever opened for reading.

_S_IFMT, _S_IFREG = 0o170000, 0o100000


def open_transcript(path: "str") -> "int":
    """A read-only descriptor of the transcript or rollout at ``path``: the one way either is opened.

    ``stat`` first (a link is followed, as ``open`` does): anything but a regular file raises
    ``safefile.NotRegular`` (an OSError) at once, and the hook call's one line in hooks.log says
    so (``log.note``).  The open then has ``O_NONBLOCK`` and ``O_NOCTTY``, so a FIFO or a terminal
    swapped in after the ``stat`` blocks nothing either, and what was opened is checked again
    (``fstat``).  Other errors (missing, no permission) are ``open``'s own OSError.  (No class of
    its own here: creating one costs every tool call ~0.35 M instructions; safefile and log are
    loaded for a refusal only.)
    """
    mode = posix.stat(path).st_mode
    if mode & _S_IFMT == _S_IFREG:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY | posix.O_CLOEXEC)
        try:
            mode = posix.fstat(fd).st_mode
        except OSError:
            posix.close(fd)
            raise
        if mode & _S_IFMT == _S_IFREG:
            return fd
        posix.close(fd)
    from . import log, safefile  # (a refusal only)

    kind = {0o010000: "a FIFO", 0o020000: "a character device", 0o040000: "a directory", 0o060000: "a block device",
            0o140000: "a socket"}.get(mode & _S_IFMT, "no file")
    err = safefile.NotRegular("%s is %s, not a regular file: not read" % (path, kind))
    log.note("transcript refused: %s" % err)
    raise err


def lines_backwards(path: "str", max_scan: "int" = MAX_SCAN, chunk: "int" = CHUNK,
                    line_max: "int" = LINE_MAX) -> "Iterator[tuple[bytes, int]]":
    """Yield ``(line, bytes_scanned)`` for the complete lines of ``path``, newest first.

    Reads ``chunk`` bytes at a time from the end, so a caller that stops at
    the first match pays only for the tail.  Stops (yields no more) at a line
    longer than ``line_max``.  Raises OSError if unreadable (``safefile.NotRegular``: not a regular file).
    """
    fd = open_transcript(path)
    try:
        pos = posix.fstat(fd).st_size
        carry = b""  # the (partial) first line of the blocks read so far
        parts = []   # blocks with no newline (one long line), newest last: joined once its start is read
        partial = 0
        scanned = 0
        while pos > 0 and scanned < max_scan:
            step = chunk if pos > chunk else pos
            pos -= step
            block = posix.pread(fd, step, pos)
            scanned += step
            if pos > 0 and block.find(b"\n") == -1:  # inside one line longer than the chunk: keep reading
                parts.append(block)
                partial += step
                if partial > line_max:
                    return
                continue
            if parts:
                block += b"".join(reversed(parts))
                parts = []
            block += carry
            partial = 0
            if pos > 0:
                cut = block.find(b"\n")
                carry, block = block[:cut], block[cut + 1:]
                partial = len(carry)
            for line in reversed(block.split(b"\n")):
                if line:
                    yield line, scanned
    finally:
        posix.close(fd)


def rows_backwards(path: "str", max_scan: "int", *needles: "bytes") -> "Iterator[dict[str, Any]]":
    """The JSON object rows of ``path``'s lines holding every one of ``needles`` (a byte test before any
    parse), newest first; lines that do not parse are skipped.  Raises OSError if unreadable."""
    for line, _ in lines_backwards(path, max_scan):
        if not all(n in line for n in needles):
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(row, dict):
            yield row


def read_transcript(path: "str", max_scan: "int" = MAX_SCAN, chunk: "int | None" = None) -> "Reading":
    """Latest context reading from a transcript.

    Returns ``{"tokens", "model", "source", "scanned"}``; ``tokens`` is None when
    unknown (no assistant row yet, or compacted with no postTokens).  Raises
    OSError when the file cannot be opened.

    Searches the tail in place (``rfind`` for the row markers) and parses only
    the candidate line: splitting a 256 KiB tail into lines costs more than the
    rest of the hook together.
    """
    chunk = chunk or CHUNK
    fd = open_transcript(path)
    try:
        pos = posix.fstat(fd).st_size
        buf = b""       # bytes [pos, pos + len(buf)) of the file not searched yet (and the partial first line)
        hi = 0          # search below this offset in buf (lines above it are done)
        parts = []      # chunks with no newline (one long line), newest last: joined once its start is read
        scanned = 0
        step = chunk // 4  # start small (a big first read costs page faults), then grow
        while True:
            if pos > 0 and scanned < max_scan:
                step = min(step * 2 if scanned else step, chunk, pos)
                pos -= step
                data = posix.pread(fd, step, pos)
                scanned += step
                if pos > 0 and data.find(b"\n") == -1:
                    parts.append(data)
                    if hi + step * len(parts) > LINE_MAX:  # a line too long to read to its start
                        return {"tokens": None, "model": None, "source": "transcript", "scanned": scanned,
                                "long_line": True}
                    continue
                if parts:
                    data += b"".join(reversed(parts))
                    parts = []
                buf = data + buf[:hi]  # what is above hi is done: never copied again
                hi += len(data)
            elif pos > 0 or hi <= 0:
                return {"tokens": None, "model": None, "source": "transcript", "scanned": scanned}
            # Only lines that start inside buf are complete (the first may be cut).
            if pos == 0:
                lo = 0
            else:
                nl = buf.find(b"\n")
                lo = len(buf) if nl < 0 else nl + 1  # no newline yet: all of buf is one partial line
            while hi > lo:
                # The compact marker first; the rarer ones only where they could be newer.
                j = buf.rfind(_ASSISTANT[0], lo, hi)
                newer = j if j >= 0 else lo
                j = max(j, buf.rfind(_ASSISTANT[1], newer, hi), buf.rfind(_BOUNDARY, newer, hi))
                if j < 0:
                    hi = lo
                    break
                start = buf.rfind(b"\n", 0, j) + 1
                if start < lo:  # that line starts before what we have read: read more first
                    break
                end = buf.find(b"\n", j, hi)
                line = buf[start:hi if end < 0 else end]
                got = _line_reading(line)
                if got is not None:
                    got["scanned"] = scanned
                    return got
                hi = start - 1 if start > 0 else 0
            if pos == 0 and hi <= lo:
                return {"tokens": None, "model": None, "source": "transcript", "scanned": scanned}
    finally:
        posix.close(fd)


def _line_reading(line: "bytes") -> "Reading | None":
    """A reading from one candidate line (compact boundary or assistant row), or None."""
    if _BOUNDARY in line:
        post = _boundary_reading(line)
        if post is not None:
            return {"tokens": None if post < 0 else post, "model": None, "source": "compact_boundary"}
    if _ASSISTANT[0] in line or _ASSISTANT[1] in line:
        got = _assistant_reading(line)
        if got is not None:
            return {"tokens": got[0], "model": got[1], "source": "transcript"}
    return None


# -- readings that wait for the transcript to catch up --------------------------
#
# Claude Code appends transcript rows asynchronously: a hook can run before the
# row of the response it is about is on disk (seen: PreToolUse 26-80 ms early for
# the first tool of a response, Stop missing the turn's last reply on 2.1.328).
# Both hooks know which row must be there - PreToolUse its ``tool_use_id``, Stop
# the ``last_assistant_message`` - so they wait for that row, bounded, instead of
# trusting an old one.

POLL_S = 0.01


def _squash(text: "object") -> "str":
    return "".join(text.split()) if isinstance(text, str) else ""


def _row_reading(row: "dict[str, Any]") -> "Reading | None":
    """The reading of one parsed main-thread assistant row (None if it has no usable usage)."""
    msg = row.get("message") if isinstance(row, dict) else None
    if not isinstance(msg, dict) or msg.get("model") == "<synthetic>" or row.get("isApiErrorMessage"):
        return None
    tokens = usage_tokens(msg.get("usage"))
    if tokens is None:
        return None
    version = row.get("version")  # the Claude Code that wrote the row
    return {"tokens": tokens, "model": msg.get("model"), "source": "transcript", "message_id": msg.get("id"),
            "cc_version": version if isinstance(version, str) else None}


def _blocks(row: "dict[str, Any]") -> "list[dict[str, Any]]":
    msg = row.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def tool_reading(path: "str", tool_use_id: "str", max_scan: "int" = MAX_SCAN, chunk: "int" = CHUNK) -> "Reading | None":
    """The reading of the assistant row holding ``tool_use_id``, or None while it is not written.

    Searches backwards for the id's bytes and parses only the lines holding
    them (the row is among the newest when PreToolUse runs).  Raises OSError
    when the transcript cannot be opened.
    """
    needle = tool_use_id.encode("utf-8", "surrogateescape")
    fd = open_transcript(path)
    try:
        pos = posix.fstat(fd).st_size
        buf = b""
        hi = 0
        parts = []  # as in read_transcript: a long line's chunks, joined once
        scanned = 0
        while True:
            if pos > 0 and scanned < max_scan:
                step = min(chunk, pos)
                pos -= step
                data = posix.pread(fd, step, pos)
                scanned += step
                if pos > 0 and data.find(b"\n") == -1:
                    parts.append(data)
                    if hi + step * len(parts) > LINE_MAX:
                        return None
                    continue
                if parts:
                    data += b"".join(reversed(parts))
                    parts = []
                buf = data + buf[:hi]
                hi += len(data)
            elif hi <= 0 or pos > 0:
                return None
            lo = 0 if pos == 0 else (buf.find(b"\n") + 1 or len(buf))
            while hi > lo:
                j = buf.rfind(needle, lo, hi)
                if j < 0:
                    hi = lo
                    break
                start = buf.rfind(b"\n", 0, j) + 1
                if start < lo:
                    break
                end = buf.find(b"\n", j)
                line = buf[start:] if end < 0 else buf[start:end]
                try:
                    row = fastjson.loads(line)
                except (ValueError, UnicodeDecodeError):
                    row = None
                if (isinstance(row, dict) and row.get("type") == "assistant" and not row.get("isSidechain")
                        and any(b.get("type") == "tool_use" and b.get("id") == tool_use_id for b in _blocks(row))):
                    return _row_reading(row)
                hi = start - 1 if start > 0 else 0
            if pos == 0:
                return None
    finally:
        posix.close(fd)


_ROW_MARKS = (b'"type":"assistant"', b'"type": "assistant"', b'"type":"user"', b'"type": "user"', _BOUNDARY)


def reply_reading(path: "str", last_message: "object", max_scan: "int" = MAX_SCAN) -> "tuple[bool, Reading | None]":
    """(caught_up, reading) at a turn's end.

    Caught up means the newest main-thread row is the turn's final reply: an
    assistant row with no tool call whose text ends ``last_message`` (the
    Stop payload's ``last_assistant_message``), and no user row (prompt or
    tool result) after it.  The reading is that row's; when not caught up it
    is the newest assistant reading found (stale, for reference only).
    """
    want = _squash(last_message)
    stale = None
    for line, _ in lines_backwards(path, max_scan):
        if not any(m in line for m in _ROW_MARKS):
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict) or row.get("isSidechain"):
            continue
        kind = row.get("type")
        if kind == "system" and row.get("subtype") == "compact_boundary":
            post = _boundary_reading(line)
            return True, {"tokens": None if post is None or post < 0 else post, "model": None,
                          "source": "compact_boundary"}
        if kind == "user":
            stale = stale or _newest_assistant(path, max_scan)
            return False, stale
        if kind != "assistant":
            continue
        got = _row_reading(row)
        if got is None:
            continue
        blocks = _blocks(row)
        if any(b.get("type") == "tool_use" for b in blocks):
            return False, got
        texts = [b.get("text") for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        if not want:
            return True, got  # nothing to compare with: the newest reply row is all there is
        have = _squash(texts[-1]) if texts else ""
        if have and (want.endswith(have) or have.endswith(want)):
            return True, got
        return False, got
    return False, stale


def _newest_assistant(path: "str", max_scan: "int") -> "Reading | None":
    got = read_transcript(path, max_scan)
    return got if got.get("tokens") is not None else None


def await_tool_reading(path: "str", tool_use_id: "str", bound_s: "float",
                       quiet_s: "float" = 0.3) -> "tuple[Reading | None, int]":
    """Poll :func:`tool_reading` until the row is there; ``(reading_or_None, waited_ms)``.

    Gives up after ``bound_s``, or earlier once the transcript has not grown
    for ``quiet_s`` (a transcript that is not being written will not catch up).
    """
    t0 = time.monotonic()
    deadline = t0 + bound_s
    size, still_since = -1, t0
    polled = False
    while True:
        got = tool_reading(path, tool_use_id)
        now = time.monotonic()
        if got is not None:  # there at the first read: no wait, however long that read took (a loaded machine)
            return got, int((now - t0) * 1000) if polled else 0
        polled = True
        try:
            cur = posix.stat(path).st_size
        except OSError:
            cur = -1
        if cur != size:
            size, still_since = cur, now
        if now >= deadline or now - still_since >= quiet_s:
            return None, int((now - t0) * 1000)
        time.sleep(POLL_S)


# -- the status line's own reading --------------------------------------------
#
# Hooks get no usage from Claude Code, but the status line does
# (``context_window``, computed by Claude Code itself, after every response).
# It leaves its reading in the session dir; a hook that cannot trust the
# transcript yet (Stop, right after the turn's last reply) can use it.

def save_status_reading(sdir: "str", session_id: "str", tokens: "int | None", window: "int | None",
                        now: "float | None" = None, version: "str | None" = None) -> "bool":
    """Remember the status line's reading for ``session_id`` (only when it changed).  Never raises."""
    path = session.status_reading_path(sdir)
    try:
        old = load_status_reading(sdir)
        if old and old.get("session_id") == session_id and old.get("tokens") == tokens and old.get("window") == window \
                and old.get("version") == version:
            return False
        doc = {"session_id": session_id, "tokens": tokens, "window": window,
               "at": round(time.time() if now is None else now, 3)}
        if version:
            doc["version"] = version
        data = fastjson.dumps(doc).encode("utf-8")
        tmp = "%s.tmp.%d" % (path, posix.getpid())
        fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_CLOEXEC | posix.O_NOFOLLOW, 0o600)
        try:
            posix.write(fd, data)
        finally:
            posix.close(fd)
        posix.rename(tmp, path)
        return True
    except (OSError, ValueError):
        return False


def load_status_reading(sdir: "str") -> "dict[str, Any] | None":
    """``{"session_id", "tokens", "window", "at"[, "version"]}`` the status line left, or None."""
    try:
        fd = posix.open(session.status_reading_path(sdir), posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = posix.read(fd, 4096)
    finally:
        posix.close(fd)
    try:
        got = fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return got if isinstance(got, dict) else None


def model_window(model: "object") -> "int | None":
    """Window for a model id, or None when the id is not one we know."""
    if not isinstance(model, str) or not model:
        return None
    m = model.lower()
    if "[1m]" in m:
        return 1_000_000
    for prefix, window in MODEL_WINDOWS:
        if m.startswith(prefix):
            return window
    return None


def window_guessed(source: "object", model: "object", max_context: "str | None") -> "bool":
    """Is the window a guess: not set in our config (by hand or from the server, ``configure --window``), and
    the model is an id Claude Code does not know (its status line then reports the 1,000,000 it assumes)
    with no ``CLAUDE_CODE_MAX_CONTEXT_TOKENS`` given (``max_context``: its value)?  (An absent model: not
    said to be one.)"""
    if source == "config" or not isinstance(model, str) or not model or model_window(model):
        return False
    return not (max_context and max_context.isdigit() and int(max_context) > 0)


def reported_window(sdir: "str") -> "int | None":
    """The window the status line last reported for this session (``statusline.json``), or None.

    Claude Code computes it itself (``context_window.context_window_size``), so it beats a guess."""
    try:
        with open(session.statusline_path(sdir), "rb") as f:
            w = fastjson.loads(f.read()).get("window")
        return w if isinstance(w, int) else None
    except (OSError, ValueError, AttributeError):
        return None


def resolve_window(cfg_window: "int | None" = None, statusline_window: "int | None" = None, model: "object" = None,
                   env: "Mapping[str, str] | None" = None) -> "tuple[int, str]":
    """(window, source): config > status line > model id > CLAUDE_CODE_MAX_CONTEXT_TOKENS > guess."""
    if cfg_window:
        return int(cfg_window), "config"
    if isinstance(statusline_window, int) and statusline_window > 0:
        return statusline_window, "statusline"
    w = model_window(model)
    if w:
        return w, "model"
    if env is None:
        import os

        env = os.environ
    raw = env.get("CLAUDE_CODE_MAX_CONTEXT_TOKENS", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw), "env"
    if isinstance(model, str) and model and not model.startswith("claude-"):
        return 1_000_000, "guess (unknown model: Claude Code assumes 1M)"
    return 200_000, "guess"


def level(tokens: "int | None", window: "int | None", cfg: "Thresholds") -> "str":
    """ok / warn / rotate / hard for ``tokens`` of ``window`` under ``cfg``."""
    if tokens is None or not window:
        return "ok"
    pct = 100.0 * tokens / window
    warn, rotate, hard = cfg["warn"], cfg["rotate"], cfg["hard"]
    cap = cfg["rotate_tokens"]
    if pct >= hard or (cap and tokens >= cap * hard / rotate):
        return "hard"
    if pct >= rotate or (cap and tokens >= cap):
        return "rotate"
    if pct >= warn or (cap and tokens >= cap * warn / rotate):
        return "warn"
    return "ok"


def level_index(name: "object") -> "int":
    """The index of the level ``name`` in :data:`LEVELS` (:data:`OK` for a name that is none)."""
    return LEVELS.index(name) if name in LEVELS else OK


def at_least(level: "int | str", name: "str") -> "bool":
    """Is ``level`` (a level's name or index) at or past the level ``name``?"""
    return (level if isinstance(level, int) else level_index(level)) >= level_index(name)


def notified_through(index: "int") -> "list[str]":
    """The levels above ok up to ``index``: what a session at that level has been told about."""
    return list(LEVELS[WARN:index + 1])


def notified_index(rec: "Record") -> "int":
    """The highest level a session record says it was told about (:data:`OK` for none)."""
    best = OK
    for name in rec.get("levels_notified") or ():
        best = max(best, level_index(name))
    return best


def reading(tokens: "int | None", window: "int | None", window_source: "str | None", cfg: "Thresholds",
            source: "str | None") -> "Reading":
    ratio = (tokens / window) if (tokens is not None and window) else None
    return {
        "tokens": tokens,
        "window": window,
        "window_source": window_source,
        "ratio": ratio,
        "percent": None if ratio is None else round(100 * ratio, 1),
        "level": level(tokens, window, cfg),
        "source": source,
    }


def from_statusline(payload: "object") -> "tuple[int | None, int | None]":
    """(tokens, window) from the status line's ``context_window``, or (None, None)."""
    cw = payload.get("context_window") if isinstance(payload, dict) else None
    if not isinstance(cw, dict):
        return None, None
    window = cw.get("context_window_size")
    window = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
    if cw.get("current_usage") is None and cw.get("used_percentage") is None:
        return None, window
    tokens = cw.get("total_input_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        tokens = usage_tokens(cw.get("current_usage"))
    return tokens, window
