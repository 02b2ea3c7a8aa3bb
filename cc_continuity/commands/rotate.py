"""``cc-continuity rotate``: rotate at the next turn end, whatever the context level."""

from .. import ledger, session
from ._util import current_project, die
from .signal import find_session


def register(sub):
    p = sub.add_parser("rotate")
    p.add_argument("--session", help="session id (default: $CLAUDE_CODE_SESSION_ID, else the newest live session)")
    p.set_defaults(func=run)


def run(args):
    proj = current_project()
    n, sdir = find_session(proj, args.session)
    with proj.edit(sdir) as rec:
        if rec["state"] not in session.WORKING:
            die("%s is %s; nothing to rotate" % (rec.get("name"), rec["state"]), code=1)
        rec["rotate_requested"] = True
        ledger.append(session.ledger_path(sdir), {"ev": "rotate_requested", "by": "cli"})
    print("%s will hand off and rotate when the current turn ends." % rec.get("name"))
    return 0
