"""``cc-continuity signal needs-human|done "<text>"``: flag the session for the user.

The agent runs this (see the CLAUDE.md block).  The flag shows in the status
line and in pushes, and the user's next prompt clears it.
"""

import os
import time

from .. import ledger, notify, session
from ._util import current_project, die


KINDS = {"needs-human": "needs_human", "done": "done"}


def register(sub):
    p = sub.add_parser("signal")
    p.add_argument("kind", choices=sorted(KINDS), help="needs-human: blocked on the user; done: task finished")
    p.add_argument("text", help="the reason or a one-line summary")
    p.add_argument("--session", help="session id (default: $CLAUDE_CODE_SESSION_ID, else the project's newest live session)")
    p.set_defaults(func=run)


def find_session(proj, session_id=None):
    """(number, dir) of the session to flag."""
    sid = session_id or os.environ.get("CLAUDE_CODE_SESSION_ID")
    if sid:
        n = proj.lookup(sid)
        if n is not None:
            return n, proj.session_dir(n)
        if session_id:
            die("no session %s in %s" % (session_id, proj.root))
    best = None
    for n in proj.numbers():
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        if rec["state"] in session.TERMINAL:
            continue
        if best is None or rec.get("updated", 0) >= best[1]:
            best = (n, rec.get("updated", 0))
    if best is None:
        die("no live cc-continuity session in %s" % proj.root)
    return best[0], proj.session_dir(best[0])


def run(args):
    text = " ".join(args.text.split())
    if not text:
        die("give a short reason or summary")
    proj = current_project()
    n, sdir = find_session(proj, args.session)
    flag = KINDS[args.kind]
    with proj.edit(sdir) as rec:
        rec.setdefault("flags", {})[flag] = {"text": text[:500], "at": round(time.time(), 3)}
        ledger.append(session.ledger_path(sdir), {"ev": "signal", "kind": args.kind, "text": text[:500]})
    _notify(args.kind, rec, text)
    print("%s flagged %s: %s" % (rec.get("name"), args.kind, text[:120]))
    return 0


def _notify(kind, rec, text):
    try:
        notify.emit("blocked" if kind == "needs-human" else "done", slug=rec.get("slug"),
                    session=rec.get("number"), text=text, project_root=rec.get("project_root"))
    except Exception:
        pass
