"""Claiming a published checkpoint from the remote (machine B): list, fetch one, restore, lease, import.

Another machine claims one with a lease: a push that must *create*
``refs/continuity/<project key>/claims/<machine id>/cp-NNN`` (``--force-with-lease=<ref>:``, checked by
the remote under its ref lock): of N machines claiming at once exactly one wins; past a lease of the
publisher's own successor only as a fork (``claims/<machine id>/cp-NNN-fork-<its machine id>``).  The
publisher's machine id is in the lease's name because two machines' project keys are equal when their
checkouts have the same path.  Everything read from the remote is data (:mod:`.data`).
"""

import json
import os
import shutil
import time

from .. import atomic, faults, paths, session
from ..errors import ShareError
from ..holds import effects
from ..rotation import revalidation
from ..rotation.claim import bootstrap_text
from . import data as share_data
from ..project import Project, all_projects
from .transport import (
    author, claim_ref, describe, drop_fetched, fetch, fetched_ref, git, git_out, held, holder, JSON_MAX,
    lease_commit, lease_time, LeaseHeld, ls_remote, machine_id, parse_shared, push, remember, remote_env,
    SHARED_PREFIX, show_json, TRY_TIMEOUT_S)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ..config import Config
    from ..session import Record


LEASE_STEAL_AFTER_S = 24 * 3600


def remote_view(root: str, remote: str, refused: "list[str] | None" = None,
                timeout: float = TRY_TIMEOUT_S) -> "tuple[list[dict[str, Any]], dict[str, str]]":
    """([published {machine, key, cid, ref, commit}], {lease ref: object}) on ``remote``: one ls-remote.

    A published ref whose name is not of our shapes is left out (``refused`` gets its one line)."""
    refs = ls_remote(root, remote, timeout=timeout)
    pubs = []
    for ref, sha in refs.items():
        got = parse_shared(ref, refused)
        if got:
            pubs.append({"machine": got[0], "key": got[1], "cid": got[2], "ref": ref, "commit": sha})
    leases = {ref: sha for ref, sha in refs.items() if "/claims/" in ref and not ref.startswith(SHARED_PREFIX)}
    return pubs, leases


def _number(cid: str) -> "tuple[int, int]":
    n, _, k = cid[len(session.CHECKPOINT_PREFIX):].partition("-")
    return int(n), int(k or 0)


def listing(pubs: "list[dict[str, Any]]", leases: "Mapping[str, str]", limit: int = 20) -> str:
    """What is published there, one line each (every part has our shapes: parse_shared checked them)."""
    rows = sorted(pubs, key=lambda p: (p["machine"], p["key"], _number(p["cid"])))
    lines = ["  %s/%s/%s%s" % (p["machine"], p["key"], p["cid"],
                               "  (claimed)" if claim_ref(p["machine"], p["key"], p["cid"]) in leases else "")
             for p in rows[:limit]]
    if len(rows) > limit:
        lines.append("  … and %d more (`cc-continuity status --remote`)" % (len(rows) - limit))
    return "\n".join(lines)


def choose(pubs: "list[dict[str, Any]]", leases: "Mapping[str, str]", spec: str | None) -> "dict[str, Any]":
    """The published checkpoint ``spec`` names (``[<machine>/]<key>/cp-NNN``); without one, the newest unclaimed
    checkpoint when every unclaimed one is of one machine and project (numbers count per project there), and
    otherwise a ShareError asking for one (nothing is fetched to choose: the claim lists them first)."""
    if spec:
        parts = spec.strip("/").split("/")
        hits = [p for p in pubs if (len(parts) == 2 and [p["key"], p["cid"]] == parts) or
                (len(parts) == 3 and [p["machine"], p["key"], p["cid"]] == parts)]
        if not hits:
            raise ShareError("%s is not published there (%d checkpoint(s) are: `cc-continuity status --remote`)"
                             % (spec, len(pubs)))
        if len(hits) > 1:
            raise ShareError("%s was published by %d machines (%s): name one as <machine>/%s" % (
                spec, len(hits), ", ".join(h["machine"] for h in hits), spec))
        return hits[0]
    free = [p for p in pubs if claim_ref(p["machine"], p["key"], p["cid"]) not in leases]
    if not free:
        raise ShareError("nothing unclaimed there (%d published; `cc-continuity status --remote` lists them)"
                         % len(pubs))
    if len({(p["machine"], p["key"]) for p in free}) > 1:
        raise ShareError("%d unclaimed checkpoints of several machines or projects there: name one as "
                         "[MACHINE/]KEY/CP-NNN" % len(free))
    return max(free, key=lambda p: _number(p["cid"]))


def take_lease(root: str, remote: str, pub: "dict[str, Any]", leases: "Mapping[str, str]", *, fork: bool = False,
               steal: bool = False, now: float | None = None, timeout: float = TRY_TIMEOUT_S) -> "dict[str, Any]":
    """Create this machine's lease on ``pub`` on the remote (an atomic ref creation); its claim.json.

    LeaseHeld names the holder when another machine has it (``--fork`` only past a lease of the
    publisher's own successor, ``--steal`` only past one older than LEASE_STEAL_AFTER_S)."""
    now = time.time() if now is None else now
    me = machine_id()
    main = claim_ref(pub["machine"], pub["key"], pub["cid"])
    claim: "dict[str, Any]" = {"machine": me, "author": author(root), "project_key": pub["key"],
                               "checkpoint": pub["cid"], "published_by": pub["machine"], "at": round(now, 3),
                               "fork": False, "stolen_from": None}
    ref, expect = main, ""
    if main in leases:
        held = holder(root, remote, main, timeout=timeout)
        if held.get("machine") == me and not held.get("local_successor") and not fork:
            return dict(held, again=True, lease=main, sha=leases[main])  # ours already (a claim repeated here)
        if fork:
            if not held.get("local_successor"):
                raise LeaseHeld("%s/%s is claimed by %s; --fork is only for a checkpoint its own machine's "
                                "successor continues" % (pub["key"], pub["cid"], describe(held)), held)
            ref = claim_ref(pub["machine"], pub["key"], "%s-fork-%s" % (pub["cid"], me))
            claim.update(fork=True, forked_from=held)
            if ref in leases:
                return dict(holder(root, remote, ref, timeout=timeout), again=True, lease=ref, sha=leases[ref])
        elif steal:
            age = now - lease_time(held)  # from its last renewal: a live holder renews it hourly (lease.py)
            if age < LEASE_STEAL_AFTER_S:
                raise LeaseHeld("%s/%s is claimed by %s, renewed %.1f h ago; --steal takes a lease only after %d h" % (
                    pub["key"], pub["cid"], describe(held), age / 3600, LEASE_STEAL_AFTER_S // 3600), held)
            expect = leases[main]
            claim["stolen_from"] = held
        else:
            hint = " (--fork continues it here as a fork)" if held.get("local_successor") else \
                " (--steal takes it once the lease is %d h old)" % (LEASE_STEAL_AFTER_S // 3600)
            raise LeaseHeld("%s/%s is claimed by %s%s" % (pub["key"], pub["cid"], describe(held), hint), held)
    sha = lease_commit(root, claim)
    try:
        push(root, remote, [(sha, ref, expect)], timeout=timeout)
    except ShareError as e:
        try:  # lost a race: say who won
            held = holder(root, remote, ref, timeout=timeout)
        except ShareError:
            raise e from None
        if held.get("machine"):
            raise LeaseHeld("%s/%s was just claimed by %s" % (pub["key"], pub["cid"], describe(held)), held) from None
        raise
    claim.update(lease=ref, sha=sha)
    return claim


def restore(root: str, snap: str, head: str, cid: str, dest: str | None = None) -> "tuple[str, str]":
    """A new worktree on a new branch ``continuity/<cid>`` at ``head`` with ``snap``'s changes uncommitted.

    The work tree is the snapshot's, the index and HEAD are ``head``'s: the user's next commit lands on
    the branch, on top of the machine's HEAD, never on the synthetic snapshot commit.  (worktree, branch)
    """
    dest = dest or "%s-%s" % (root.rstrip("/"), cid)
    if os.path.exists(dest):
        raise ShareError("%s exists; pass --dir for the new worktree" % dest)
    branch = "continuity/" + cid
    k = 1
    while git_out(["rev-parse", "-q", "--verify", "refs/heads/" + branch], root, ok=(0, 1), timeout=30):
        k += 1
        branch = "continuity/%s-%d" % (cid, k)
    git(["worktree", "add", "--quiet", "-b", branch, dest, head], root, timeout=600)
    out = git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", head, snap], dest, timeout=120).stdout
    fields = out.split(b"\0")
    changed: "list[bytes]" = []
    gone: "list[bytes]" = []
    for status, rel in zip(fields[0::2], fields[1::2]):
        (gone if status == b"D" else changed).append(rel)
    for rel in gone:
        try:
            os.unlink(os.path.join(dest.encode(), rel))
        except FileNotFoundError:
            pass
    if changed:  # only the paths that differ: a large tree is not written twice
        env = dict(remote_env(), GIT_LITERAL_PATHSPECS="1")
        listed = b"\0".join(changed) + b"\0"
        git(["checkout", snap, "--pathspec-from-file=-", "--pathspec-file-nul"], dest, input=listed, env=env,
            timeout=600)
        # the index back to HEAD for them: the changes are uncommitted (new files untracked)
        git(["reset", "--quiet", "--pathspec-from-file=-", "--pathspec-file-nul"], dest, input=listed, env=env,
            timeout=600)
    return dest, branch


def import_checkpoint(dest: str, branch: str, remote: str, pub: "dict[str, Any]", local: str, snap: str,
                      claim: "dict[str, Any]", ms: "dict[str, int] | None" = None) -> "tuple[Project, int, Record]":
    """Make the fetched checkpoint a claimable one of the new worktree's project (the successor claims it).

    Every file read from the remote is data: its fields are checked (share_data), what is not of its shape
    dropped with a line in the log; the publisher's effect records join this project's (they can only hold)."""
    proj = Project(dest)
    src = pub["ref"]
    meta = share_data.manifest(show_json(dest, local, "manifest.json"), src)
    facts = share_data.facts(show_json(dest, local, "facts.json"), src)
    publisher = share_data.publisher(show_json(dest, local, "publisher.json"), src)
    recs = share_data.imported_effects(show_json(dest, local, share_data.EFFECTS_FILE), src, pub["machine"], pub["cid"])
    size = git_out(["cat-file", "-s", local + ":handoff.md"], dest, timeout=30)
    if not size.isdigit() or int(size) > JSON_MAX:
        raise ShareError("%s/%s: its handoff.md is missing or larger than %d bytes" % (pub["key"], pub["cid"], JSON_MAX))
    handoff = git(["cat-file", "blob", local + ":handoff.md"], dest, timeout=30).stdout
    snap_ref = local + "-snapshot"
    git(["update-ref", snap_ref, snap], dest, timeout=30)
    g: "dict[str, Any]" = dict(facts.get("git") or {})
    g.update(branch=branch, branch_on_publisher=g.get("branch"))
    facts = dict(facts, git=g, project_root=dest)
    with proj.lock():
        proj.ensure()
        proj.ensure_open_index()
        n = proj.allocate_number()
        sdir = proj.session_dir(n)
        cdir = session.checkpoint_dir(sdir)
        paths.ensure_dir(cdir)
        atomic.write_bytes(session.handoff_path(sdir), handoff, mode=paths.FILE_MODE)
        atomic.write_text(session.facts_path(sdir), json.dumps(facts), mode=paths.FILE_MODE)
        manifest = dict(meta, git={"git": True, "ref": snap_ref, "commit": snap, "parent": publisher.get("head")})
        atomic.write_text(session.manifest_path(sdir), json.dumps(manifest), mode=paths.FILE_MODE)
        for r in recs:
            effects.append(proj.dir, r)
        hs: "dict[str, Any]" = meta.get("handoff") or {}
        imported = {"remote": remote, "machine": pub["machine"], "author": publisher.get("author"),
                    "session": publisher.get("session"),
                    "published_at": publisher.get("published_at"), "ref": pub["ref"], "lease": claim.get("lease"),
                    "fork": bool(claim.get("fork")), "stolen_from": claim.get("stolen_from"),
                    "forked_from": claim.get("forked_from"), "effects": len(recs)}
        rec = session.new_record(n, proj.session_name(n), "remote-%s-%s" % (pub["machine"], pub["cid"]),
                                 state=session.CHECKPOINT_VERIFIED, project_root=dest, project_key=proj.key,
                                 slug=proj.slug, pid=None, imported=imported,
                                 checkpoint={"id": pub["cid"], "ref": snap_ref, "verified_at": meta.get("verified_at"),
                                             "validation": hs.get("validation"), "degraded": bool(meta.get("degraded")),
                                             "tries": hs.get("tries"), "percent": (facts.get("reading") or {})
                                             .get("percent")})
        session.save(sdir, rec)
        session.log(sdir, {"ev": "imported", **imported, "ms": ms})
    return proj, n, rec


def claimed_here(pub: "Mapping[str, Any]") -> "str | None":
    """The worktree of this machine that already continues ``pub`` (a lease it holds, its root still there)."""
    base = claim_ref(pub["machine"], pub["key"], pub["cid"])
    for proj in all_projects():
        for row in held(proj.dir):
            ref, root = row.get("ref"), row.get("root")
            if (ref == base or str(ref).startswith(base + "-fork-")) and isinstance(root, str) and os.path.isdir(root):
                return root
    return None


def release(root: str, remote: str, lease: "Mapping[str, Any]", before: "str | None") -> "str | None":
    """Give back a lease this claim took (on its failure): the remote's ref back to ``before`` (a stolen lease's
    old object) or deleted.  None, or why it could not (the lease then ages out: 24 h)."""
    try:
        if before:
            push(root, remote, [(before, lease["lease"], lease["sha"])])
        else:
            push(root, remote, [("", lease["lease"], lease["sha"])])
    except (ShareError, OSError) as e:
        return str(e)[:300]
    return None


def _undo_worktree(root: str, wt: str, branch: "str | None") -> None:
    """Remove a worktree this claim made (and its branch); never raises."""
    for args in (["worktree", "remove", "--force", wt], ["worktree", "prune"]):
        try:
            git(args, root, timeout=120, ok=(0, 128))
        except ShareError:
            pass
    if os.path.isdir(wt):
        shutil.rmtree(wt, ignore_errors=True)
    if branch:
        try:
            git(["branch", "-D", branch], root, timeout=30, ok=(0, 1))
        except ShareError:
            pass


def claim_from(root: str, remote: str, spec: str | None = None, *, fork: bool = False, steal: bool = False,
               dest: str | None = None, timeout: float = TRY_TIMEOUT_S,
               say: "Callable[[str], None] | None" = None) -> "dict[str, Any]":
    """``cc-continuity claim --from``: list, fetch, restore, then lease, then import; what the verb prints and starts.

    The lease comes last: everything that can fail on this machine (the checkpoint's names and files,
    the worktree, which is made in a temporary place and moved to ``dest`` only once the lease is
    taken) is done first, and a failure after the lease gives it back.  A checkpoint this machine
    already continues is refused.  Every call to the remote is bounded by ``timeout`` and announced
    through ``say`` before it starts.  Only the claimed checkpoint is fetched; a fetched ref it does not
    keep is removed.  The stages' times go into the imported checkpoint's ledger line (``imported``: ``ms``)."""
    tell = say or (lambda _line: None)
    ms: "dict[str, int]" = {}
    t = time.monotonic()

    def lap(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        ms[name] = int((now - t) * 1000)
        t = now

    tell("asking %s for its published checkpoints (git ls-remote, up to %d s)" % (remote, timeout))
    refused: "list[str]" = []
    pubs, leases = remote_view(root, remote, refused, timeout=timeout)
    for line in refused[:10]:
        tell(line)
    if not spec and pubs:
        tell("published there (%d):\n%s" % (len(pubs), listing(pubs, leases)))
    pub = choose(pubs, leases, spec)
    dest = dest or "%s-%s" % (root.rstrip("/"), pub["cid"])
    if os.path.lexists(dest):
        raise ShareError("%s exists; pass --dir for the new worktree" % dest)
    there = claimed_here(pub)
    if there:
        raise ShareError("%s/%s/%s is continued on this machine already, in %s (cd there and run claude; a second "
                         "claim would repeat its work)" % (pub["machine"], pub["key"], pub["cid"], there))
    local = fetched_ref(pub["machine"], pub["key"], pub["cid"])
    partial = "%s.cc-continuity-partial-%d" % (dest.rstrip("/"), os.getpid())
    wt: "str | None" = None
    branch: "str | None" = None
    lease: "dict[str, Any] | None" = None
    before: "str | None" = None
    try:
        tell("fetching %s (git fetch, up to %d s)" % (pub["ref"], timeout))
        fetch(root, remote, ["+%s:%s" % (pub["ref"], local)], timeout=timeout)
        snap = git_out(["rev-parse", "-q", "--verify", local + "^1"], root, ok=(0, 1), timeout=30)
        head = git_out(["rev-parse", "-q", "--verify", snap + "^1"], root, ok=(0, 1), timeout=30) if snap else ""
        if not head:
            raise ShareError("%s/%s has no commit under its snapshot (the publisher had no HEAD)" % (
                pub["key"], pub["cid"]))
        lap("fetch")
        wt, branch = restore(root, snap, head, pub["cid"], partial)
        lap("worktree")
        tell("taking the lease on %s (git push, up to %d s)" % (remote, timeout))
        before = leases.get(claim_ref(pub["machine"], pub["key"], pub["cid"])) if steal else None
        lease = take_lease(root, remote, pub, leases, fork=fork, steal=steal, timeout=timeout)
        if lease.get("again"):
            before = None
        lap("lease")
        faults.fail("claim:after-lease")
        git(["worktree", "move", wt, dest], root, timeout=120)
        wt = dest
        proj, n, rec = import_checkpoint(wt, branch, remote, pub, local, snap, lease, ms)
        publisher = share_data.publisher(show_json(root, local, "publisher.json"), pub["ref"])
    except BaseException:
        if lease is not None and not lease.get("again"):
            why = release(root, remote, lease, before)
            if why:
                tell("could not give the lease back (%s): it ages out in %d h" % (why, LEASE_STEAL_AFTER_S // 3600))
            else:
                tell("the lease is given back")
        if wt is not None:
            _undo_worktree(root, wt, branch)
            try:
                git(["update-ref", "-d", local + "-snapshot"], root, timeout=30, ok=(0, 1))
            except ShareError:
                pass
        raise
    finally:
        drop_fetched(root, [local])  # what it keeps is the snapshot's ref (<local>-snapshot), made by the import
    if lease.get("sha"):  # renewed while the worktree's project has a live session (lease.py)
        remember(proj.dir, wt, remote, lease["lease"], lease["sha"])
    return {"worktree": wt, "branch": branch, "head": head, "snapshot": snap, "checkpoint": pub, "claim": lease,
            "publisher": publisher, "project": proj, "number": n, "record": rec}


def bootstrap(proj: "Project", n: int, rec: "Record", cfg: "Config | Mapping[str, Any]") -> str:
    """The text the successor in the new worktree gets (revalidated against its tree), without claiming it."""
    try:
        _, since = revalidation.since_text(proj.root, proj.session_dir(n), rec, cfg)
    except Exception:  # noqa: BLE001 - the handoff still goes through, as at a local claim
        since = ""
    return bootstrap_text(proj, n, rec, proj.session_name(proj.peek_next_number()), cfg["bootstrap_max_tokens"],
                                since=since)
