"""SessionEnd: mark the session ended, or cleared when ``/clear`` started a successor (:func:`cc_continuity.rotation.turn.session_ended`).

A session holding a verified checkpoint stays claimable: only the fact that
its process left is recorded; one whose Stop died before it verified a written
handoff has it verified now.  Kept tiny — SessionEnd hooks share a short budget.
"""

from ....rotation import turn
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from . import Call


def handle(call: "Call") -> None:
    return turn.session_ended(HookContext(call))
