"""PreCompact: an auto-compaction we did not want (:func:`cc_continuity.rotation.turn.before_compact`).

At or past *rotate*, an automatic compaction is blocked (configurable) and a
handoff is requested at the next turn end instead — compaction is slow and
forgets intent.  Otherwise an emergency machine checkpoint (facts only, not
claimable: the session goes on) is written and compaction proceeds.
"""

from ....rotation import turn
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call


def handle(call: "Call") -> "dict[str, Any] | None":
    return turn.before_compact(HookContext(call))
