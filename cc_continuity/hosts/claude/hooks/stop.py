"""Stop: the rotation gate, at the end of each turn (:func:`cc_continuity.rotation.turn.turn_ended`).

- below *rotate*: update the meter; a level note is parked for the next prompt
  (Stop output would make the turn continue);
- at *rotate*/*hard* (or after ``cc-continuity rotate``): take machine facts,
  and block once with the handoff path and template (HANDOFF_REQUESTED);
- on the following Stops: validate the handoff; block again with the exact
  problems, at most ``handoff_max_tries`` times, then fall back to a machine
  handoff marked degraded - a rotation never waits on the model;
- valid: git snapshot + manifest (CHECKPOINT_VERIFIED), then hand over to the
  tmux rotator (ROTATING) or ask the user for ``/clear`` (AWAITING_MANUAL_CLEAR).

The reading that decides is the turn's *last* reply, and the transcript can lag
it: this hook waits (at most ``turn.STOP_WAIT_S``) for the row the payload's
``last_assistant_message`` names, or for the status line's own reading.  If
neither arrives, it does not act on the stale one: the late Stop
(``stop_late``, an async hook that can wake the model) waits longer and
requests the handoff then.
"""

from ....rotation import turn
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call


def handle(call: "Call") -> "dict[str, Any] | None":
    return turn.turn_ended(HookContext(call))
