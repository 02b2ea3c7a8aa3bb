"""PreToolUse: nothing to do below the hard ceiling (the rotation issue adds the gate)."""


def handle(ctx):
    return None
