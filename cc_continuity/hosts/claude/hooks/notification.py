"""Notification: record the ones the watchdog acts on (usage-limit auto-resume).

Claude Code waits out a usage limit by itself and says how it went with
``quota_auto_resume_fired`` (the limit reset, it is continuing),
``quota_auto_resume_stale`` (it reset while the machine slept: Enter is
needed) and ``quota_auto_resume_disabled`` (it will not resume on its own).
The installed matcher runs this hook for those types only; anything else is
ignored here too.  The record is ``{"ev": "notification", "type": …}`` plus
Claude Code's own one-line message, cut short: the watchdog leaves such a
session alone and forwards the news as a push.

Same discipline as the per-tool-call path: the card and one ledger append.
"""

from .... import card, ledger

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call

FORWARDED = ("quota_auto_resume_fired", "quota_auto_resume_stale", "quota_auto_resume_disabled")
MESSAGE_KEEP = 200


def record(call: "Call") -> "dict[str, Any]":
    msg = call.payload.get("message")
    return {"ev": "notification", "type": call.payload.get("notification_type"),
            "message": msg[:MESSAGE_KEEP] if isinstance(msg, str) else None}


def handle(call: "Call") -> None:
    if call.payload.get("notification_type") not in FORWARDED:
        call.outcome = "ignored"
        return None
    c = card.load(call.session_id)
    if c is None:
        from ..host import begin

        started = begin(call)
        if started is None:
            return None
        ctx, n, sdir, _ = started
        ctx.log(sdir, record(call))
    elif not c["enabled"]:
        call.outcome = "project disabled"
        return None
    else:
        ledger.append(c["ledger"], record(call))
    call.outcome = "recorded %s" % call.payload.get("notification_type")
    return None
