"""UserPromptSubmit: record the prompt; first prompt of a successor; flags and notes (:func:`cc_continuity.rotation.start.prompt_submitted`).

Prompts are kept in the ledger so a rotation can carry over anything typed
after the handoff was requested (it would otherwise be lost).  The first
prompt of a successor moves it to ACTIVE, tells the rotator the continuation
arrived, and names the session (``sessionTitle``).  If SessionStart could not
claim (it timed out, say), the continuation prompt claims here instead.
"""

from ....rotation import start
from . import plugin_env
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call


def handle(call: "Call") -> "dict[str, Any] | None":
    ctx = HookContext(call)
    return plugin_env.noted(ctx, start.prompt_submitted(ctx))
