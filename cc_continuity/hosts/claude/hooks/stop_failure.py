"""StopFailure: the turn died on an API error; say so in the ledger.

Claude Code fires it (instead of Stop) once per turn that ends on an API
error, after its own retries: a dead model server, a 500/529, a rate or usage
limit, a rejected request.  Its output is ignored, so this only records
``{"ev": "stop_failure", "error": <kind>, "details": …}``: the watchdog then
knows the turn is over (not running, not frozen) and why, which decides what
it does (nudge once the server is back, leave a usage limit alone, push).

The per-tool-call path's discipline: the card and one ledger append, builtins
only (no ``os``, no config parsing); a session without a card takes the slow
path once.  ``error`` is one of Claude Code's kind names, kept only if it
looks like one; ``error_details`` (the API's message) is cut short.  Nothing
of the prompt or the reply is recorded.
"""

from .... import card, ledger

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call

DETAILS_KEEP = 200


def error_kind(value: object) -> str:
    """Claude Code's error kind (``server_error``, ``rate_limit`` …) or ``unknown``."""
    if isinstance(value, str) and 0 < len(value) <= 40 and all(c.isascii() and (c.islower() or c.isdigit()
                                                                                   or c == "_") for c in value):
        return value
    return "unknown"


def record(call: "Call") -> "dict[str, Any]":
    details = call.payload.get("error_details")
    return {"ev": "stop_failure", "error": error_kind(call.payload.get("error")),
            "details": details[:DETAILS_KEEP] if isinstance(details, str) else None,
            "prompt_id": call.payload.get("prompt_id")}


def handle(call: "Call") -> None:
    c = card.load(call.session_id)
    if c is None:
        return slow(call)
    if not c["enabled"]:
        call.outcome = "project disabled"
        return None
    rec = record(call)
    ledger.append(c["ledger"], rec)
    call.outcome = "turn failed: %s" % rec["error"]
    return None


def slow(call: "Call") -> None:
    from ..host import begin

    started = begin(call)
    if started is None:
        return None
    ctx, n, sdir, _ = started
    rec = record(call)
    ctx.log(sdir, rec)
    call.outcome = "turn failed: %s" % rec["error"]
    return None
