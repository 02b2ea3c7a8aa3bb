"""How full a Codex thread's context is, from its rollout (the ``transcript_path`` every hook gets).

Codex 0.171 appends ``{"timestamp","ordinal","type","payload"}`` lines to
``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<thread>.jsonl``.  After every model
request it writes ``event_msg`` / ``token_count`` with ``info.last_token_usage``
(that request's usage) and ``info.model_context_window`` (the *effective* window:
95 % of the configured ``model_context_window``), and it has flushed it by the time
Stop runs.  ``last_token_usage.total_tokens`` is the context the next request
starts from: after a compaction Codex writes its own estimate there (the other
fields 0).  The compaction request's usage is written *before* the ``compacted``
line, so a ``compacted`` newer than every ``token_count`` means: not known yet.

Each request's usage is first written as a ``token_usage_record`` line (``usage``), the
``token_count`` later (after the tools it called ran): a PreToolUse or PostToolUse finds
only the record of the request that called it, so both count; the newest wins.

Read backwards in bounded chunks (``meter.lines_backwards``): the cost follows the
tail, not the history (the first line alone, ``session_meta`` with the base
instructions, is ~22 KB).  ``posix``, not ``os``: a PreToolUse may call this.
"""

from ... import fastjson
from ...rotation import limits
from ...meter import CHUNK, lines_backwards, rows_backwards

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    Reading = dict[str, Any]

MAX_SCAN = 16 * 1024 * 1024  # give up (unknown) after this much history without a reading
EFFECTIVE_PERCENT = 95       # model_context_window in the rollout = configured * 95 / 100 (20000 -> 19000, seen)
BASELINE_TOKENS = 12_000     # the TUI's "% left" leaves out this much (the base prompt): /status
AUTO_COMPACT_PERCENT = 90    # automatic compaction once a request's total reaches 90 % of the configured window

_MARKS = (b'"token_count"', b'"compacted"', b'"task_started"', b'"token_usage_record"')


def _count(v: "object") -> "int | None":
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _row(line: "bytes") -> "tuple[str, dict[str, Any]] | None":
    """(kind, payload) for a line that can carry a reading: token_count, compacted, task_started."""
    try:
        row = fastjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(row, dict) or not isinstance(row.get("payload"), dict):
        return None
    payload = row["payload"]
    if row.get("type") in ("compacted", "token_usage_record"):
        return row["type"], payload
    if row.get("type") == "event_msg" and payload.get("type") in ("token_count", "task_started"):
        return payload["type"], payload
    return None


def usage_tokens(usage: "object") -> "int | None":
    """The context a request leaves: ``total_tokens`` (else input + output), or None."""
    if not isinstance(usage, dict):
        return None
    total = _count(usage.get("total_tokens"))
    if total is not None:
        return total
    inp, out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    return None if inp is None or out is None else inp + out


def read_rollout(path: "str", max_scan: "int" = MAX_SCAN, chunk: "int" = CHUNK) -> "Reading":
    """The newest reading of a rollout: ``{"tokens", "window", "source", "scanned"}``.

    ``tokens``: the newest request's total (a ``token_count``'s ``last_token_usage``, or a
    ``token_usage_record``'s ``usage`` when that is newer); None before the
    first request, or when a compaction is newer than every count (``source``
    ``"compacted"``).  ``window``: the newest ``model_context_window`` seen (a
    ``token_count``'s or a turn's ``task_started``), the effective window; None if none
    within ``max_scan``.  Raises OSError when the file cannot be opened.
    """
    tokens: "int | None" = None
    window: "int | None" = None
    source = "rollout"
    have_tokens = False
    scanned = 0
    for line, scanned in lines_backwards(path, max_scan=max_scan, chunk=chunk):
        if not any(m in line for m in _MARKS):
            continue
        got = _row(line)
        if got is None:
            continue
        kind, payload = got
        if kind == "compacted":
            have_tokens = True  # nothing older counts
            source = "compacted" if tokens is None else source
            continue
        if kind == "token_usage_record":
            if not have_tokens:
                tokens = usage_tokens(payload.get("usage"))
                have_tokens = tokens is not None
            continue
        info = payload.get("info") if kind == "token_count" else payload
        if not isinstance(info, dict):  # a token_count with info null: rate limits only
            continue
        if window is None:
            window = _count(info.get("model_context_window")) or None
        if kind == "token_count" and not have_tokens:
            tokens = usage_tokens(info.get("last_token_usage"))
            have_tokens = tokens is not None
        if have_tokens and window is not None:
            break
    return {"tokens": tokens, "window": window, "source": source, "scanned": scanned}


def tokens_spent(path: "str", max_scan: "int" = MAX_SCAN, chunk: "int" = CHUNK) -> "int | None":
    """The thread's tokens so far: the newest ``token_count``'s ``total_token_usage`` (Codex sums every request:
    input, cached included, and output), or None.  Raises OSError when the file cannot be opened."""
    for line, _ in lines_backwards(path, max_scan=max_scan, chunk=chunk):
        if b'"token_count"' not in line:
            continue
        got = _row(line)
        info = got[1].get("info") if got and got[0] == "token_count" else None
        if isinstance(info, dict):
            total = usage_tokens(info.get("total_token_usage"))
            if total is not None:
                return total
    return None


def effective_window(configured: "int") -> "int":
    """The window Codex reports (and compacts against) for a configured ``model_context_window``."""
    return configured * EFFECTIVE_PERCENT // 100


def auto_compact_limit(configured: "int", override: "int | None" = None) -> "int":
    """Tokens at which Codex compacts on its own: ``model_auto_compact_token_limit`` when set,
    else 90 % of the configured window.  Before a turn the last request's total is compared
    (20000 -> 18000: 17,999 did not compact, 18,000 did); within a turn that total plus what
    is about to be sent (a tool's output: 17,999 + ~26 compacted, 17,970 did not)."""
    return override if override else configured * AUTO_COMPACT_PERCENT // 100


def percent_left(tokens: "int", window: "int") -> "int":
    """The TUI's "N% left" for ``tokens`` of the effective ``window`` (its 12 000-token baseline left out)."""
    if window <= BASELINE_TOKENS:
        return 0
    usable = window - BASELINE_TOKENS
    used = max(tokens - BASELINE_TOKENS, 0)
    return max(0, min(100, round(100 * (usable - used) / usable)))


_EXITED = "Process exited with code "


def exit_code(path: "str", call_id: "str", max_scan: "int" = 1 << 20) -> "int | None":
    """A shell call's exit code as the rollout's ``function_call_output`` for ``call_id`` says it ("Process
    exited with code N"): Codex's PostToolUse payload carries only the output.  None when it is not there
    (yet), or says none.  Raises OSError when the file cannot be opened."""
    for row in rows_backwards(path, max_scan, call_id.encode("utf-8"), b'"function_call_output"'):
        payload = row.get("payload")
        if not isinstance(payload, dict) or payload.get("call_id") != call_id:
            continue
        out = payload.get("output")
        if not isinstance(out, str) or _EXITED not in out:
            return None
        rest = out[out.index(_EXITED) + len(_EXITED):]
        num = rest.split(None, 1)[0] if rest.strip() else ""
        return int(num) if num.lstrip("-").isdigit() else None
    return None


def api_stop(path: "str", max_scan: "int" = MAX_SCAN) -> "dict[str, Any] | None":
    """The model server's stop the thread's last turn ended on (:func:`...rotation.limits.stop`), from the
    rollout: its last ``task_complete`` carries ``error.codex_error_info`` (``usage_limit_exceeded`` or
    ``response_too_many_failed_attempts`` with 429: a limit; ``internal_server_error``, a failed connection,
    ``other``: the server); the reset time from the newest ``token_count.rate_limits`` window at 100 %.  None
    when the last turn completed, or the file cannot be read."""
    done, reset = None, None
    try:
        for row in rows_backwards(path, max_scan, b'"event_msg"'):
            payload: "dict[str, Any]" = row["payload"] if isinstance(row.get("payload"), dict) else {}
            kind = payload.get("type")
            if kind == "task_complete" and done is None:
                done = payload
                if not isinstance(payload.get("error"), dict):
                    return None
            elif kind == "token_count" and done is not None and reset is None:
                reset = _reset(payload.get("rate_limits"))
            elif kind == "task_started" and done is not None:
                break
    except OSError:
        return None
    if done is None:
        return None
    err = done["error"]
    info = err.get("codex_error_info")
    status = None
    if isinstance(info, dict):
        inner = next(iter(info.values()), None)
        status = inner.get("http_status_code") if isinstance(inner, dict) else None
    kind = limits.LIMIT if info == "usage_limit_exceeded" or status == 429 else limits.SERVER
    return limits.stop(kind, err.get("message"), status if isinstance(status, int) else None, reset, where=path)


def _reset(rate_limits: "object") -> "float | None":
    """The reset time of a rate-limit window Codex recorded as used up (``used_percent`` 100), or None."""
    if not isinstance(rate_limits, dict):
        return None
    for window in ("primary", "secondary"):
        w = rate_limits.get(window)
        if isinstance(w, dict) and (w.get("used_percent") or 0) >= 100 and isinstance(w.get("resets_at"), (int, float)):
            return float(w["resets_at"])
    return None
