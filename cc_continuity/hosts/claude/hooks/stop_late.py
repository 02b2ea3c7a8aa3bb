"""The late Stop: a second look at the turn's end, for a crossing the Stop hook could not see (:func:`cc_continuity.rotation.turn.late_turn_end`).

Installed as an *async* Stop hook with ``asyncRewake``: Claude Code does not wait
for it, and when it exits 2 its stderr wakes the model at once, even in an idle
session (checked on 2.1.328 and 2.1.332: the model receives "Stop hook blocking
error from command ...: <stderr>" as a background-task notification).

Why it exists: the transcript can lag the turn's last reply by more than the
Stop hook may wait.  When the Stop hook's reading was not caught up, a session
could otherwise sit idle past *rotate* forever (seen on 2.1.328 in three runs
of four).  This hook waits much longer (``turn.LATE_WAIT_S``) for the transcript or the
status line's reading and, if the turn did end past *rotate* with no handoff
requested and nothing happened since, requests the handoff itself - in
process, no tmux, no typing into the user's input box.

It does nothing when the Stop hook saw a caught-up reading (the common case:
one ledger read), when the session moved on (a new prompt or tool call), or
when the reading never arrives.
"""

from ....rotation import turn
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from . import Call


def handle(call: "Call") -> None:
    call.rewake = turn.late_turn_end(HookContext(call))
    return None
