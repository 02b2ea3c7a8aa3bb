"""``cc-continuity claim --from <remote> [<key>/cp-NNN]``: continue a checkpoint another machine published.

In a clone of the same repository: takes the lease on the remote (exactly one machine wins),
fetches the checkpoint, restores it into a new worktree on a new branch ``continuity/cp-NNN``
at the publisher's HEAD with the snapshot's changes uncommitted, and starts ``claude`` there;
its SessionStart claims the checkpoint and revalidates it against that tree (share/claiming.py).
"""

import argparse
import os
import subprocess
import sys

from ..share.claiming import bootstrap, claim_from
from ..share.transport import LeaseHeld, TRY_TIMEOUT_S, describe, plain
from ..hosts.claude.executable import find_real_claude
from ._util import current_project, die, load_config


def register(sub):
    p = sub.add_parser("claim")
    p.add_argument("spec", nargs="?", metavar="[MACHINE/]KEY/CP-NNN",
                   help="the published checkpoint (default: the newest unclaimed one when all are of one machine and "
                        "project; otherwise they are listed)")
    p.add_argument("--from", dest="remote", required=True, help="the git remote it was published to")
    p.add_argument("--dir", help="where the new worktree goes (default: <this checkout>-cp-NNN)")
    p.add_argument("--fork", action="store_true",
                   help="continue it although the publisher's own successor claimed it (a fork; both are told)")
    p.add_argument("--steal", action="store_true", help="take a lease not renewed for 24 h (names the old holder)")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="take the lease and print the bootstrap instead of starting claude")
    p.add_argument("--timeout", type=_seconds, default=TRY_TIMEOUT_S, metavar="SECONDS",
                   help="give up on a remote that does not answer within this many seconds, per call "
                        "(default %(default)s)")
    p.add_argument("claude_args", nargs="*", metavar="-- CLAUDE-ARGS", help="passed to claude after --")
    p.set_defaults(func=run)


def _seconds(text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 1 <= v <= 3600:
        raise argparse.ArgumentTypeError("%r is not a number of seconds from 1 to 3600" % text)
    return v


def _say(line):
    sys.stderr.write("cc-continuity: %s\n" % line)
    sys.stderr.flush()


def run(args):
    proj = current_project()
    try:
        got = claim_from(proj.root, args.remote, args.spec, fork=args.fork, steal=args.steal,
                         dest=os.path.abspath(args.dir) if args.dir else None, timeout=args.timeout, say=_say)
    except LeaseHeld as e:
        die(str(e), code=e.exit_code)
    pub, claim = got["publisher"], got["claim"]
    say = sys.stderr.write
    say("cc-continuity: %s/%s published by machine %s (its author, as the remote says: %s)%s\n" % (
        got["checkpoint"]["key"], got["checkpoint"]["cid"], got["checkpoint"]["machine"],
        plain(pub.get("author") or "?"), "; its lease was this machine's already" if claim.get("again") else ""))
    if claim.get("stolen_from"):
        say("cc-continuity: lease taken over from %s\n" % describe(claim["stolen_from"]))
    if claim.get("fork"):
        say("cc-continuity: a fork: %s continues it there too\n" % describe(claim.get("forked_from") or {}))
    say("cc-continuity: worktree %s on branch %s at %s (the snapshot's changes uncommitted)\n" % (
        got["worktree"], got["branch"], got["head"][:12]))
    cfg = load_config(got["worktree"])
    if args.print_only:
        sys.stdout.write(bootstrap(got["project"], got["number"], got["record"], cfg) + "\n")
        return 0
    claude = find_real_claude(os.environ)
    if not claude:
        die("no claude on PATH; the checkpoint waits in %s: start claude there" % got["worktree"])
    return subprocess.call([claude, *args.claude_args], cwd=got["worktree"])
