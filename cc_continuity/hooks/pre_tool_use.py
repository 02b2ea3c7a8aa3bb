"""PreToolUse: below the hard ceiling, nothing to do (card + state read only).

The rotation issue adds the hard-ceiling gate here.
"""

from .. import card


def handle(call):
    c = card.load(call.session_id)
    if c is None or not c["enabled"]:
        return None
    return None
