"""``cc-continuity hook <EventName>``: run one hook (reads the event JSON on stdin)."""

from ..hosts.claude import hooks


def register(sub):
    p = sub.add_parser("hook")
    p.add_argument("event", help="the event name exactly as Claude Code spells it, e.g. PostToolUse")
    p.set_defaults(func=run)


def run(args):
    hooks.main([args.event])
    return 0
