"""``cc-continuity checkpoint``: take a checkpoint of the current work now (no rotation).

Machine facts plus a git snapshot under ``refs/continuity/<project key>/manual/…``;
the session keeps going.  Useful before a risky step.
"""

from ..rotation import manual
from .. import session
from ._util import host_of, current_project, load_config, print_json
from .signal import find_session


def register(sub):
    p = sub.add_parser("checkpoint")
    p.add_argument("--session", help="session id (default: $CLAUDE_CODE_SESSION_ID, else the newest live session)")
    p.add_argument("-m", "--message", default="manual checkpoint", help="one line describing the moment")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args):
    proj = current_project()
    cfg = load_config(proj.root)
    n, sdir = find_session(proj, args.session)
    result = manual.take(proj, n, sdir, cfg, host_of(session.load(sdir)), args.message)
    git = result["git"]
    if args.json:
        print_json(result)
    elif git.get("git"):
        print("checkpoint of %s: %s (%s, %d files)" % (result["session"], git["ref"], git["commit"][:12], git["files"]))
    elif git.get("git") is False:
        print("checkpoint of %s: facts saved in %s (not a git repository: no snapshot)" % (result["session"], result["dir"]))
    else:
        print("checkpoint of %s: facts saved; git snapshot failed: %s" % (result["session"], git.get("error")))
        return 1
    return 0
