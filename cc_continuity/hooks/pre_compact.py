"""PreCompact: note the compaction in the ledger (the rotation issue adds the guard)."""

from . import common


def handle(call):
    ctx = common.HookContext(call)
    n, sdir, rec = ctx.load_session()
    trigger = ctx.payload.get("trigger")
    ctx.log(sdir, {"ev": "precompact", "trigger": trigger if isinstance(trigger, str) else None})
    return None
