"""A session its model server stopped: a rate or usage limit, or a server that is gone or failing.

Each host says it in its own records (docs/HOST_LIMITS.md, seen against the real binaries): Claude Code in its
transcript's last assistant row (``isApiErrorMessage``, ``apiErrorStatus``) and, with a subscription's
headers, a reset time on its ``system/api_error`` rows; Codex in its rollout's ``task_complete.error`` and,
for a usage limit, ``token_count.rate_limits``; Gemini CLI only on its stderr.  Each host's reader
(:meth:`.host.Host.api_stop`, or its back-end's) turns that into one :func:`stop`; ``run`` ends with it.

By the time a host's process exits its own retries are spent (Claude Code's ten, over ~3 min; Gemini's ten;
Codex retries a 429 only with ``retry-after``), so a limit seen here is one the host gave up on.  Whether it
is a transient rate limit or a plan's limit no host says; a reset time, where one is recorded, says when.
"""

import time

LIMIT = "limit"    # a 429: a rate or usage limit
SERVER = "server"  # the server refused, did not answer, or answered 5xx
KINDS = (LIMIT, SERVER)
MESSAGE_KEEP = 300

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def stop(kind: str, message: object, status: "int | None" = None, resets_at: "float | None" = None,
         where: str = "") -> "dict[str, Any]":
    """One stop: its kind, the HTTP status where there was one, the host's message (cut short), the reset time
    (epoch seconds) where the host recorded one, and where it was read."""
    text = " ".join(message.split())[:MESSAGE_KEEP] if isinstance(message, str) else ""
    ok_reset = isinstance(resets_at, (int, float)) and not isinstance(resets_at, bool) and resets_at > 0
    return {"kind": kind if kind in KINDS else SERVER, "status": status if isinstance(status, int) else None,
            "message": text, "resets_at": float(resets_at) if ok_reset else None, "where": where}


def said(got: "dict[str, Any]", now: "float | None" = None) -> str:
    """The stop in words: what, the host's message, and the reset time where known."""
    now = time.time() if now is None else now
    what = ("a rate or usage limit" if got["kind"] == LIMIT else "its model server failing or gone")
    if got.get("status"):
        what += " (HTTP %d)" % got["status"]
    line = "%s: %s" % (what, got["message"] or "no message")
    reset = got.get("resets_at")
    if reset:
        left = max(0, reset - now)
        line += "; it resets at %s (in %dh%02dm)" % (time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(reset)),
                                                     left // 3600, left % 3600 // 60)
    else:
        line += "; no reset time recorded"
    return line
