"""``cc-continuity notify-flush``: deliver queued pushes now.

Pushes are normally delivered by the flusher :func:`notify.emit` starts; this
verb is for the watchdog's periodic sweep and for a user who wants to see what
is stuck.  ``--linger`` behaves like that detached flusher (stays to retry).
"""

from .. import notify


def register(sub):
    p = sub.add_parser("notify-flush", description="Deliver queued push notifications now.")
    p.add_argument("--linger", action="store_true", help="stay and retry with backoff until the spool is empty")
    p.set_defaults(func=run)


def run(args):
    if args.linger:
        return notify.main()
    stats = notify.flush()
    if stats["busy"]:
        print("another flusher is delivering right now")
        return 0
    print("sent %(sent)d, retry later %(retry)d, deferred %(deferred)d, waiting %(waiting)d, dropped %(dropped)d"
          % stats)
    return 0
