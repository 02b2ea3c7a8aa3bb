"""SessionStart: register the session, then claim a waiting checkpoint (:func:`cc_continuity.rotation.start.session_started`).

After ``/clear`` the same Claude process starts a new session id; the
SessionEnd(clear) seen just before names the predecessor.  On clear,
startup and resume the latest claimable checkpoint of the project is
claimed (exactly once, under the project lock) and the bootstrap text is
returned as ``additionalContext``.  The rotator waits for the started-marker
written here.
"""

from ....rotation import start
from . import plugin_env, sweep
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from . import Call


def handle(call: "Call") -> "dict[str, Any] | None":
    ctx = HookContext(call, tidy=sweep)
    return plugin_env.noted(ctx, start.session_started(ctx))
