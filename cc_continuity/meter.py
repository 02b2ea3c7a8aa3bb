"""How full the context is: tokens, window, ratio, level.

Tokens in context = ``input_tokens + cache_creation_input_tokens +
cache_read_input_tokens`` of the latest main-thread assistant response — the
same sum Claude Code shows.  The transcript is read **backwards in chunks**
and only candidate lines are parsed, so the cost does not grow with history
(lines of 8–64 KB are normal).  Uses ``posix``, not ``os``: this runs on
every tool call.
"""

import posix

from . import fastjson

CHUNK = 256 * 1024
MAX_SCAN = 64 * 1024 * 1024  # give up (unknown) after this much history without a reading

LEVELS = ("ok", "warn", "rotate", "hard")

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


def usage_tokens(usage):
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


def _assistant_reading(line):
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


def _boundary_reading(line):
    try:
        row = fastjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(row, dict) or row.get("type") != "system" or row.get("subtype") != "compact_boundary":
        return None
    meta = row.get("compactMetadata") or {}
    post = meta.get("postTokens") if isinstance(meta, dict) else None
    return post if isinstance(post, int) and not isinstance(post, bool) else -1


def lines_backwards(path, max_scan=MAX_SCAN, chunk=CHUNK):
    """Yield ``(line, bytes_scanned)`` for the complete lines of ``path``, newest first.

    Reads ``chunk`` bytes at a time from the end, so a caller that stops at
    the first match pays only for the tail.  Raises OSError if unreadable.
    """
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        pos = posix.fstat(fd).st_size
        carry = b""  # the (partial) first line of the chunk read last
        scanned = 0
        while pos > 0 and scanned < max_scan:
            step = chunk if pos > chunk else pos
            pos -= step
            block = posix.pread(fd, step, pos) + carry
            scanned += step
            if pos > 0:
                cut = block.find(b"\n")
                if cut == -1:  # one line longer than the chunk: keep reading
                    carry = block
                    continue
                carry, block = block[:cut], block[cut + 1:]
            for line in reversed(block.split(b"\n")):
                if line:
                    yield line, scanned
    finally:
        posix.close(fd)


def read_transcript(path, max_scan=MAX_SCAN, chunk=None):
    """Latest context reading from a transcript.

    Returns ``{"tokens", "model", "source", "scanned"}``; ``tokens`` is None when
    unknown (no assistant row yet, or compacted with no postTokens).  Raises
    OSError when the file cannot be opened.

    Searches the tail in place (``rfind`` for the row markers) and parses only
    the candidate line: splitting a 256 KiB tail into lines costs more than the
    rest of the hook together.
    """
    chunk = chunk or CHUNK
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        pos = posix.fstat(fd).st_size
        buf = b""       # bytes [pos, pos + len(buf)) of the file
        hi = 0          # search below this offset in buf (lines above it are done)
        scanned = 0
        step = chunk // 4  # start small (a big first read costs page faults), then grow
        while True:
            if pos > 0 and scanned < max_scan:
                step = min(step * 2 if scanned else step, chunk, pos)
                pos -= step
                buf = posix.pread(fd, step, pos) + buf
                hi += step
                scanned += step
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


def _line_reading(line):
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


def model_window(model):
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


def resolve_window(cfg_window=None, statusline_window=None, model=None, env=None):
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


def level(tokens, window, cfg):
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


def level_index(name):
    return LEVELS.index(name) if name in LEVELS else 0


def reading(tokens, window, window_source, cfg, source):
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


def from_statusline(payload):
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
