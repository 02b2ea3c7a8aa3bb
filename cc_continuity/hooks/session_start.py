"""SessionStart: register the session, then claim a waiting checkpoint (:func:`cc_continuity.protocol.session_started`).

After ``/clear`` the same Claude process starts a new session id; the
SessionEnd(clear) seen just before names the predecessor.  On clear,
startup and resume the latest claimable checkpoint of the project is
claimed (exactly once, under the project lock) and the bootstrap text is
returned as ``additionalContext``.  The rotator waits for the started-marker
written here.
"""

from .. import protocol
from .common import HookContext


def handle(call):
    return protocol.session_started(HookContext(call))
