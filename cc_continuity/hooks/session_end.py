"""SessionEnd: mark the session ended, or cleared when ``/clear`` started a successor (:func:`cc_continuity.rotation.start.session_ended`).

A session holding a verified checkpoint stays claimable: only the fact that
its process left is recorded.  Kept tiny — SessionEnd hooks share a short budget.
"""

from ..rotation import start
from ..hosts.claude.host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from . import Call


def handle(call: "Call") -> None:
    return start.session_ended(HookContext(call))
