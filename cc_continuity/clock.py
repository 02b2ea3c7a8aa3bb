"""Ages in words, the same in every view (status, history, the fleet, the watchdog)."""

import time


def ago(ts: float | None, now: float | None = None) -> str:
    """``12s ago``, ``5m ago``, ``3h07m ago``, ``2d ago``; ``-`` when there is no time."""
    if not ts:
        return "-"
    s = max(0, int((now or time.time()) - ts))
    if s < 60:
        return "%ds ago" % s
    if s < 3600:
        return "%dm ago" % (s // 60)
    if s < 86400:
        return "%dh%02dm ago" % (s // 3600, (s % 3600) // 60)
    return "%dd ago" % (s // 86400)
