"""``cc-continuity share cp-NNN``: publish a verified checkpoint to a git remote now, by hand.

What the rotation does in the background when ``share_remote`` is set (share.py), once, in
the foreground: the remote's answer is printed, nothing is retried.
"""

import os

from .. import session
from ..share.publish import plan, publish
from ._util import current_project, die, load_config, print_json


def register(sub):
    p = sub.add_parser("share")
    p.add_argument("checkpoint", help="the checkpoint id, e.g. cp-003")
    p.add_argument("--remote", help="the git remote (default: share_remote from your config)")
    p.add_argument("--untracked", action="store_true",
                   help="publish the snapshot's untracked files too (default: share_untracked)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args):
    proj = current_project()
    cfg = load_config(proj.root)
    cid = args.checkpoint
    num = cid[len(session.CHECKPOINT_PREFIX):] if cid.startswith(session.CHECKPOINT_PREFIX) else ""
    if not num.isdigit():
        die("%r is not a checkpoint id (cp-NNN)" % cid)
    number = int(num)
    sdir = proj.session_dir(number)
    if not os.path.exists(session.manifest_path(sdir)):
        die("%s has no verified checkpoint in %s (see `cc-continuity history`)" % (cid, proj.slug))
    remote = args.remote or cfg["share_remote"]
    if not remote:
        die("no remote: pass --remote <name>, or set share_remote with "
            "`cc-continuity configure --share-remote <name>` (add --project for this project only)")
    p = plan(proj, number, {"share_remote": remote, "share_untracked": args.untracked or cfg["share_untracked"]})
    p.update(delays=[], local_wait_s=0)  # by hand: one try, and this machine's lease only if already claimed
    st = publish(p)
    if args.json:
        print_json(st)
    elif st["state"] == "published":
        print("%s %s to %s as %s%s" % (session.checkpoint_id(number), "was already published" if st.get("already")
                                       else "published", remote, st["ref"],
                                       " (claimed here by its own successor)" if st.get("local_claim") else ""))
    else:
        die("%s not published to %s: %s" % (session.checkpoint_id(number), remote, st.get("error")), code=1)
    return 0 if st["state"] == "published" else 1
