"""A published checkpoint's lease on the publishing machine: the local claim takes it, its holder renews it.

publish.py publishes a checkpoint, claiming.py claims one from another machine; this module keeps
"claimed exactly once across machines" true for the publishing machine's own claims too.

**The local claim** (start.claim_for, through :class:`Gate`).  The publish job decides
each try under the project lock (``publish._before_try``): a successor that claimed here
before that point gets its lease in the same atomic push as the checkpoint.  So:

* while no try may have changed the remote (share.json: no ``ref`` yet, or ``may_be_there``
  false and no try ``in_flight`` - every try so far was refused whole or never reached the
  remote), a local claim is local: no network; the job's next try carries its lease;
* once one may have (``published``, ``in_flight``, ``may_be_there``), the remote decides:
  the claim first creates the lease on the remote (one push, create only, within
  ``LOCAL_TIMEOUT_S``), outside the project lock.  Won, or the lease is this machine's
  already: claimed here, the lease kept for renewal.  Another machine's: not claimed here,
  ever (the checkpoint moves to ROTATED, ``remote_claim`` names the holder) and the session
  is told who has it.  No answer: not claimed; the session starts fresh with the handoff
  shown as *unconfirmed*, the checkpoint stays claimable and the next claim here asks again.

**Renewal.**  Every lease this machine holds is listed in its project's leases.json
(transport.remember).  A Stop of any live session of that project (the turn's end, never a
tool call) starts, at most every ``RENEW_EVERY_S``, a detached job
(``python -m cc_continuity.share.lease <project dir>``) that renews them all in one atomic push
(a child commit of each lease with ``renewed_at``, each only if unchanged there); a lease
replaced or deleted on the remote is dropped from the list.  ``--steal`` and
``status --remote`` count a lease's age from its last renewal (transport.lease_time).
"""

import os
import sys
import time

from .. import fastjson, session
from ..rotation.claim import bootstrap_text

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from typing import Any

    from ..project import Project
    from ..session import Record

LOCAL_TIMEOUT_S = 3.0  # the local claim's one push to the remote (SessionStart's budget is 12 s)
RENEW_EVERY_S = 3600  # a live holder renews hourly; --steal needs 24 h without one
RENEW_RETRY_S = 600  # a renewal that failed (remote down) is tried again after this
RENEW_MARK = "leases.renewing"  # in the project dir: its mtime is the last renewal job's start

WON, HELD, UNCONFIRMED = "won", "held", "unconfirmed"


def _transport() -> "Any":
    """transport.py, loaded only when the remote is asked: a rotation's claim (SessionStart) reads share.json only."""
    from . import transport  # here: transport + subprocess cost the successor's SessionStart ~10 ms when no remote is asked

    return transport


def _status(sdir: str) -> "dict[str, Any]":
    """The checkpoint's share.json (the publish job's), or {}."""
    try:
        with open(session.share_status_path(sdir), "rb") as f:
            st = fastjson.loads(f.read(1 << 16))
    except (OSError, ValueError):
        return {}
    return st if isinstance(st, dict) else {}


def remote_decides(sdir: str) -> "dict[str, Any] | None":
    """The checkpoint's share.json when the remote must decide a local claim of it, else None."""
    st = _status(sdir)
    if not st.get("ref") or not st.get("remote"):
        return None  # no try yet: the job's first one carries the lease of a successor claimed before it
    may = st.get("may_be_there")
    if may is None:  # written before these fields: only a job that never tried is sure
        may = st.get("state") not in ("queued", "waiting")
    return st if (st.get("state") == "published" or st.get("in_flight") or may) else None


class Gate:
    """One local claim's questions to the remote: each candidate asked at most once."""

    def __init__(self, proj: "Project", me: int, me_name: str) -> None:
        self.proj, self.me, self.me_name = proj, me, me_name
        self.asked: "dict[int, tuple[str, dict[str, Any]]]" = {}

    def allowed(self, cands: "list[int]") -> "list[int]":
        """The candidates not refused or left unconfirmed by the remote."""
        return [c for c in cands if self.asked.get(c, (WON, {}))[0] == WON]

    def pick(self, cands: "list[int]") -> "int | None":
        """Under the project lock: the candidate the claim would take, when the remote must decide it first.

        After one question went unanswered, every further candidate the remote must decide is left
        unconfirmed without asking (one bounded wait per claim, however many are waiting)."""
        for c in cands:
            try:
                rec = session.load(self.proj.session_dir(c))
            except (OSError, ValueError):
                continue
            if rec.get("successor") == self.me and rec["state"] == session.ROTATED:
                return None  # ours already (a claim cut short): it is finished, not claimed again
            if rec["state"] in session.CLAIMABLE and not rec.get("successor"):
                got = self.asked.get(c)
                if got is not None:
                    if got[0] == WON:
                        return None
                    continue  # refused or unconfirmed: allowed() leaves it out
                if not remote_decides(self.proj.session_dir(c)):
                    return None  # claimed locally: the publish job's next try carries its lease
                silent = [i for o, i in self.asked.values() if o == UNCONFIRMED]
                if silent:
                    self.asked[c] = (UNCONFIRMED, dict(silent[0], ref=None))
                    continue
                return c
        return None

    def ask(self, c: int) -> "tuple[str, dict[str, Any]]":
        """Outside the lock: take candidate ``c``'s lease on the remote (bounded); the outcome, kept."""
        got = self.asked[c] = take(self.proj, c, self.me_name)
        return got

    def settle(self, c: int, prec: "Record") -> None:
        """Under the lock, after the claim took ``c``: its lease is kept and renewed."""
        out, info = self.asked.get(c, (None, {}))
        if out != WON:
            return
        transport = _transport()
        prec["remote_lease"] = info
        session.save(self.proj.session_dir(c), prec)
        transport.remember(self.proj.dir, self.proj.root, info["remote"], info["ref"], info["sha"])

    def refuse(self) -> None:
        """Under the lock: each checkpoint another machine holds is claimed there, never here (ROTATED)."""
        transport = _transport()
        for c, (out, info) in self.asked.items():
            if out != HELD:
                continue
            pdir = self.proj.session_dir(c)
            try:
                prec = session.load(pdir)
            except (OSError, ValueError):
                continue
            if prec["state"] in session.CLAIMABLE and not prec.get("successor"):
                session.transition(pdir, prec, session.ROTATED, "claimed on %s by machine %s" % (
                    info.get("remote"), transport.plain(info.get("machine"))), remote_claim=info)

    def notice(self, sdir: str, cfg: "Any") -> "str | None":
        """The text for a session that claimed nothing because of the remote (refused, or unconfirmed)."""
        transport = _transport()
        held = [(c, i) for c, (o, i) in self.asked.items() if o == HELD]
        unsure = [(c, i) for c, (o, i) in self.asked.items() if o == UNCONFIRMED]
        parts = []
        for c, info in held:
            parts.append("cc-continuity: checkpoint %s was published to the git remote %s and is claimed there by %s; "
                         "it continues on that machine, so this session does not take it and starts fresh. "
                         "(`cc-continuity status --remote %s` lists who holds what.)" % (
                             session.checkpoint_id(c), info.get("remote"), transport.describe(info), info.get("remote")))
        if unsure:
            c, info = unsure[0]
            rec = session.load(sdir)
            rec["unconfirmed"] = {"checkpoint": session.checkpoint_id(c), "remote": info.get("remote"),
                                  "at": round(time.time(), 3), "error": str(info.get("error"))[:300]}
            session.save(sdir, rec)
            session.log(sdir, {"ev": "claim_unconfirmed", **rec["unconfirmed"]})
            parts.append(unconfirmed_text(self.proj, c, self.me_name, info, cfg))
        return "\n\n".join(parts) or None


def unconfirmed_text(proj: "Project", c: int, me_name: str, info: "dict[str, Any]", cfg: "Any") -> str:
    """The handoff of checkpoint ``c``, shown to a session that could not claim it (the remote did not answer)."""
    pdir = proj.session_dir(c)
    prec = session.load(pdir)
    head = ("UNCONFIRMED - cc-continuity could not claim checkpoint %s: it is published to the git remote %s, which "
            "did not answer (%s), so another machine may be continuing it. This session has NOT claimed it: its "
            "handoff follows for reference. Check the work tree and `git log` before acting on it, and tell the "
            "user; the next session started here asks the remote again." % (
                session.checkpoint_id(c), info.get("remote"), str(info.get("error") or "no answer")[:200]))
    return head + "\n\n" + bootstrap_text(proj, c, prec, me_name, cfg["bootstrap_max_tokens"])


def take(proj: "Project", c: int, me_name: str, timeout: float | None = None) -> "tuple[str, dict[str, Any]]":
    """Create this machine's lease on published checkpoint ``c`` (create only, bounded): WON / HELD / UNCONFIRMED."""
    transport = _transport()
    timeout = LOCAL_TIMEOUT_S if timeout is None else timeout
    deadline = time.monotonic() + timeout
    sdir = proj.session_dir(c)
    st = _status(sdir)
    remote, mid, cid = str(st.get("remote") or ""), st.get("machine") or transport.machine_id(), session.checkpoint_id(c)
    ref = transport.claim_ref(mid, proj.key, cid)
    base = {"remote": remote, "ref": ref}
    now = time.time()
    try:
        sha = transport.lease_commit(proj.root, {"machine": mid, "author": transport.author(proj.root), "project_key": proj.key,
                                             "checkpoint": cid, "published_by": mid, "at": round(now, 3),
                                             "local_successor": me_name, "fork": False, "stolen_from": None})
        transport.push(proj.root, remote, [(sha, ref, "")], timeout=max(0.5, deadline - time.monotonic()))
        return WON, dict(base, sha=sha, at=round(now, 3))
    except transport.ShareError as e:
        if not (e.nothing_landed and "stale info" in str(e)):  # not "it exists": no answer, or refused for another reason
            return UNCONFIRMED, dict(base, error=str(e)[:300])
    try:  # the lease exists: whose?
        held = transport.holder(proj.root, remote, ref, timeout=max(0.5, deadline - time.monotonic() + 1))
    except transport.ShareError as e:
        return UNCONFIRMED, dict(base, error="the lease exists; its holder could not be read: %s" % str(e)[:200])
    if held.get("machine") == mid:  # this machine's (the publish carried it, or an earlier claim here timed out)
        return WON, dict(base, sha=held.get("object"), at=held.get("at"), again=True)
    return HELD, dict(held, **base)


# -- renewal -----------------------------------------------------------------------------------------

def renew_due(proj: "Project", now: float | None = None) -> "int | None":
    """The Stop hook's slow path (no network): start the renewal job when a lease is due; its pid, or None."""
    now = time.time() if now is None else now
    transport = _transport()
    rows = transport.held(proj.dir)
    if not rows or min(float(r.get("renewed_at") or 0) for r in rows) > now - RENEW_EVERY_S:
        return None
    mark = os.path.join(proj.dir, RENEW_MARK)
    try:
        if os.stat(mark).st_mtime > now - RENEW_RETRY_S:
            return None  # one is running, or failed a moment ago
    except FileNotFoundError:
        pass
    with open(mark, "w") as f:
        f.write("%d\n" % os.getpid())
    return start(proj.dir)


def start(proj_dir: str) -> int:
    """The renewal job, detached (job.start_job: the publish job's way)."""
    from .job import start_job  # (subprocess: only when a renewal is due)

    return start_job("cc_continuity.share.lease", proj_dir)


def renew(proj_dir: str, now: float | None = None) -> "dict[str, list[str]]":
    """Renew every lease held for the project (one atomic push per repository and remote).

    Returns {"renewed": [...], "dropped": [...], "failed": [...]} (refs).  A lease that is gone
    from the remote, or is another machine's now (stolen after 24 h), is dropped from leases.json."""
    transport = _transport()
    now = time.time() if now is None else now
    done: "dict[str, list[str]]" = {"renewed": [], "dropped": [], "failed": []}
    groups: "dict[tuple[str, str], list[dict[str, Any]]]" = {}
    for r in transport.held(proj_dir):
        groups.setdefault((r["root"], r["remote"]), []).append(r)
    new: "dict[tuple[str, str], str]" = {}
    drop: "set[tuple[str, str]]" = set()
    for (root, remote), rows in groups.items():
        try:
            updates = []
            for r in rows:
                claim = transport.show_json(root, r["sha"], "claim.json")
                claim.update(renewed_at=round(now, 3), renewals=int(claim.get("renewals") or 0) + 1)
                sha = transport.lease_commit(root, claim, [r["sha"]])
                updates.append((sha, r["ref"], r["sha"]))
            try:
                transport.push(root, remote, updates)
            except transport.ShareError:  # one was replaced or deleted there: find which, renew the rest
                there = transport.ls_remote(root, remote)
                for sha, ref, old in updates:
                    if there.get(ref) != old:
                        drop.add((ref, remote))
                        done["dropped"].append(ref)
                updates = [u for u in updates if (u[1], remote) not in drop]
                if updates:
                    transport.push(root, remote, updates)
            for sha, ref, _ in updates:
                new[(ref, remote)] = sha
                done["renewed"].append(ref)
        except (transport.ShareError, OSError, ValueError) as e:
            done["failed"] += [r["ref"] for r in rows if (r["ref"], remote) not in drop]
            print("lease: renewing on %s failed: %s" % (remote, str(e)[:300]), file=sys.stderr)

    def change(rows: "list[dict[str, Any]]") -> "list[dict[str, Any]]":
        out = []
        for r in rows:
            k = (r["ref"], r.get("remote"))
            if k in drop:
                continue
            if k in new:
                r = dict(r, sha=new[k], renewed_at=round(now, 3))
            out.append(r)
        return out

    transport.update_held(proj_dir, change)
    return done


def main(argv: "list[str]") -> int:
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: python -m cc_continuity.share.lease <project state dir>", file=sys.stderr)
        return 2
    from .job import behind_the_session  # (the job's own start)

    behind_the_session()
    res = renew(argv[0])
    print("%s lease renewal %s: %d renewed, %d dropped (gone or taken over), %d failed" % (
        time.strftime("%Y-%m-%dT%H:%M:%S"), argv[0], len(res["renewed"]), len(res["dropped"]), len(res["failed"])))
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
