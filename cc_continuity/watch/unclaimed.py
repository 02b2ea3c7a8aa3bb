"""Checkpoints this machine published that nobody claimed: one look at the remote now and then, one push each.

Only with ``share_remote`` set and ``share_unclaimed_alert_min`` > 0 (both user-level).  The
look runs in a background thread (one ``git ls-remote`` per project and remote, share/transport.py's
never-prompting runner, each bounded by ``transport.TRY_TIMEOUT_S``); the daemon's cycle only
starts it and, a later cycle, takes its answer -- it never waits on the network.  Nothing to
look for (no published checkpoint past the limit, unclaimed here, not pushed yet) means no
network at all.  A remote that cannot be reached is not an alert.  What was pushed (or seen
claimed or gone) is remembered in the watchdog's state.json, so a checkpoint is pushed once.
"""

import threading

from .. import config, log, session
from ..share.claiming import remote_view
from ..share.transport import ShareError, claim_ref, parse_shared, read_status
from ..project import all_projects
from . import LOG

LOOK_EVERY_S = 300        # at most one look per project per this long
LOOK_SESSIONS = 20        # the newest sessions of each project whose checkpoints are considered
KEEP = 500                # settled checkpoints remembered


def unclaimed_text(cid, remote, waited_s, spec):
    """The push's wording (its one place)."""
    return "%s published to %s %d min ago is still unclaimed; claim it elsewhere: cc-continuity claim --from %s %s" % (
        cid, remote, int(waited_s // 60), remote, spec)


def candidates(now, settled):
    """{(root, remote): [checkpoint]} of this machine's published checkpoints waiting past their limit."""
    out = {}
    for proj in all_projects():
        try:
            cfg = config.load(proj.root)
        except Exception:  # a broken config or a vanished repository: nothing to look at there
            continue
        limit_s = float(cfg["share_unclaimed_alert_min"] or 0) * 60
        if not cfg["share_remote"] or limit_s <= 0:
            continue
        newest = proj.newest_number()
        for n in range(newest, max(0, newest - LOOK_SESSIONS), -1):
            sdir = proj.session_dir(n)
            st = read_status(sdir)
            ref, remote, at = st.get("ref"), st.get("remote"), st.get("published_at")
            if st.get("state") != "published" or st.get("local_claim") or not isinstance(ref, str) \
                    or not isinstance(remote, str) or not isinstance(at, (int, float)) or ref in settled:
                continue
            if now - at < limit_s:
                continue
            try:
                if session.load(sdir).get("successor") is not None:  # claimed here after all
                    continue
            except (OSError, ValueError):
                continue
            got = parse_shared(ref)
            if not got:
                continue
            out.setdefault((proj.root, remote), []).append(
                {"ref": ref, "cid": got[2], "key": got[1], "machine": got[0], "remote": remote,
                 "slug": proj.slug, "session": n, "published_at": at})
    return out


def look(todo):
    """[(checkpoint, "unclaimed"|"claimed"|"gone")] for what the remotes answered; an unreachable one is skipped."""
    found = []
    for (root, remote), cps in todo.items():
        try:
            pubs, leases = remote_view(root, remote)
        except (ShareError, OSError) as e:
            log.write(LOG, "unclaimed check: %s not reachable from %s: %s" % (remote, root, e))
            continue
        there = {p["ref"] for p in pubs}
        for cp in cps:
            if cp["ref"] not in there:
                found.append((cp, "gone"))
            elif claim_ref(cp["machine"], cp["key"], cp["cid"]) in leases:
                found.append((cp, "claimed"))
            else:
                found.append((cp, "unclaimed"))
    return found


class UnclaimedWatch:
    """Started and harvested by the daemon's cycle; ``settled`` {ref: outcome} survives restarts."""

    def __init__(self, push_fn, doc=None, every=LOOK_EVERY_S):
        self.push = push_fn
        self.every = every
        doc = doc if isinstance(doc, dict) else {}
        settled = doc.get("settled")
        self.settled = {k: v for k, v in settled.items() if isinstance(k, str)} if isinstance(settled, dict) else {}
        self.next_look = 0.0
        self._thread = None
        self._found = None

    def tick(self, now):
        """Push what the last look found; start the next one when due.  [(ref, outcome)] settled now."""
        done = []
        if self._thread is not None and not self._thread.is_alive():
            self._thread = None
            for cp, outcome in self._found or ():
                if cp["ref"] in self.settled:
                    continue
                if outcome == "unclaimed":
                    text = unclaimed_text(cp["cid"], cp["remote"], now - cp["published_at"],
                                          "%s/%s" % (cp["key"], cp["cid"]))
                    sent = self.push("checkpoint-unclaimed", text=text, slug=cp["slug"], session=cp["session"])
                    outcome = "pushed" if sent else "not sent"  # notifications off or failing: not retried either
                self.settled[cp["ref"]] = outcome
                done.append((cp["ref"], outcome))
            self._found = None
            while len(self.settled) > KEEP:
                self.settled.pop(next(iter(self.settled)))
        if self._thread is None and now >= self.next_look:
            self.next_look = now + self.every
            todo = candidates(now, self.settled)
            if todo:
                self._thread = threading.Thread(target=self._run, args=(todo,), name="unclaimed-look", daemon=True)
                self._thread.start()
        return done

    def _run(self, todo):
        try:
            self._found = look(todo)
        except Exception as e:  # never the daemon's problem
            log.write(LOG, "unclaimed check failed: %r" % e)
            self._found = []

    def wait(self, timeout=None):
        """Until the running look ends (tests); True when none runs."""
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def to_json(self):
        return {"settled": dict(self.settled)}
