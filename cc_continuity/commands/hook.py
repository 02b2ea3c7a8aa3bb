"""``cc-continuity hook <EventName>``: run one hook (reads the event JSON on stdin)."""

from .. import hooks


def register(sub):
    p = sub.add_parser("hook", help="run a Claude Code hook (JSON on stdin; always exits 0)")
    p.add_argument("event", help="the event name exactly as Claude Code spells it, e.g. PostToolUse")
    p.set_defaults(func=run)


def run(args):
    hooks.main([args.event])
    return 0
