"""What is where: the newest publish here, what stays on remotes, the fleet view, pruning old refs."""

import os
import shlex
import time

from .. import paths, session
from . import data as share_data
from ..project import Project, all_projects
from .claiming import LEASE_STEAL_AFTER_S, remote_view
from .transport import (
    claim_ref, commit_time, drop_fetched, fetch, FETCHED_PREFIX, fetched_ref, lease_time, MACHINE_ID,
    machine_id, push, read_status, SHARED_PREFIX, show_json)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config


def latest_status(proj: "Project", look: int = 5) -> "tuple[str, dict[str, Any]] | None":
    """(checkpoint id, its share.json) of the newest of the last ``look`` sessions that has one, or None."""
    newest = proj.newest_number()
    for n in range(newest, max(0, newest - look), -1):
        st = read_status(proj.session_dir(n))
        if st:
            return session.checkpoint_id(n), st
    return None


def left_on_remotes() -> "list[tuple[str, str, str]]":
    """[(remote, repository root, what removes it)] for every remote this machine published to (uninstall --purge).

    Read from the checkpoints' share.json files (no network): what was published stays there
    until it is deleted on the remote."""
    mid_path = paths.home() + "/" + MACHINE_ID
    if not os.path.exists(mid_path):
        return []
    mid = machine_id()
    seen: "dict[tuple[str, str], str]" = {}
    for proj in all_projects():
        for n in proj.numbers():
            st = read_status(proj.session_dir(n))
            if st.get("state") == "published" and isinstance(st.get("remote"), str):
                seen[(st["remote"], proj.root)] = proj.key
    out = []
    for (remote, root), key in sorted(seen.items()):
        pattern = "%s%s/*" % (SHARED_PREFIX, mid)
        cmd = "git -C %s ls-remote %s %s %s | cut -f2 | xargs -r git -C %s push %s --delete" % (
            shlex.quote(root), shlex.quote(remote), shlex.quote(pattern),
            shlex.quote("refs/continuity/%s/claims/%s/*" % (key, mid)), shlex.quote(root), shlex.quote(remote))
        out.append((remote, root, cmd))
    return out


def fleet(root: str, remote: str, now: float | None = None) -> "list[dict[str, Any]]":
    """The remote's published checkpoints with their leases, stale leases and unclaimed ones first.

    One ls-remote, then one fetch of what it lists (each ref by its checked name, into
    refs/continuity/fetched/), read, and those refs removed again."""
    now = time.time() if now is None else now
    pubs, leases = remote_view(root, remote)
    fetched = {p["ref"]: fetched_ref(p["machine"], p["key"], p["cid"]) for p in pubs}
    fetched.update({ref: "%sclaims/%s" % (FETCHED_PREFIX, ref[len("refs/continuity/"):]) for ref in leases})
    rows = []
    try:
        if fetched:
            fetch(root, remote, ["+%s:%s" % (ref, local) for ref, local in sorted(fetched.items())])
        for p in pubs:
            local = fetched[p["ref"]]
            pub = share_data.publisher(show_json(root, local, "publisher.json"), p["ref"])
            row = dict(p, author=pub.get("author"), published_at=pub.get("published_at") or commit_time(root, local),
                       session=pub.get("session"), holder=None, forks=[], lease_age_s=None)
            for ref in sorted(leases):
                base = claim_ref(p["machine"], p["key"], p["cid"])
                if ref != base and not ref.startswith(base + "-fork-"):
                    continue
                got = share_data.claim(show_json(root, fetched[ref], "claim.json"), ref)
                if ref == base:
                    row["holder"] = got
                    row["lease_age_s"] = now - (lease_time(got) or now)  # from its last renewal
                else:
                    row["forks"].append(got.get("machine"))
            if row["holder"] is None:
                row["class"] = "unclaimed"
            elif (row["lease_age_s"] or 0) > LEASE_STEAL_AFTER_S:
                row["class"] = "stale lease"
            else:
                row["class"] = "claimed"
            rows.append(row)
    finally:
        drop_fetched(root, sorted(fetched.values()))
    order = {"stale lease": 0, "unclaimed": 1, "claimed": 2}
    rows.sort(key=lambda r: (order[r["class"]], -(r["published_at"] or 0)))
    return rows


def prune_remote(root: str, remote: str, key: str, cfg: "Config | Mapping[str, Any]", now: float | None = None,
                 dry_run: bool = False) -> "dict[str, Any]":
    """The local retention rules for this machine's published checkpoints of project ``key`` on ``remote``.

    Beyond the newest ``snapshot_keep``, or older than ``snapshot_max_age_days``, a published
    checkpoint goes with its leases, in one atomic push that deletes each ref only if it is still
    what was listed; never one still claimable (no lease) or claimed and live (a lease younger
    than LEASE_STEAL_AFTER_S).  Another machine's are its own to prune."""
    now = time.time() if now is None else now
    me = machine_id()
    rows = [r for r in fleet(root, remote, now) if r["machine"] == me and r["key"] == key]
    rows.sort(key=lambda r: -(r.get("published_at") or 0))
    keep, age = cfg["snapshot_keep"], cfg["snapshot_max_age_days"]
    doomed, protected = [], []
    for rank, r in enumerate(rows):
        too_many = keep is not None and rank >= keep
        too_old = age is not None and now - (r.get("published_at") or now) > age * 86400
        if not (too_many or too_old):
            continue
        if r["class"] != "stale lease":  # claimable, or claimed and live
            protected.append(r["ref"])
            continue
        doomed.append(r)
    _, leases = remote_view(root, remote) if doomed else ({}, {})
    updates: "list[tuple[str, str, str | None]]" = []
    for r in doomed:
        updates.append(("", r["ref"], r["commit"]))
        base = claim_ref(r["machine"], r["key"], r["cid"])
        updates += [("", ref, sha) for ref, sha in sorted(leases.items()) if ref == base or
                    ref.startswith(base + "-fork-")]
    if updates and not dry_run:
        push(root, remote, updates)
    return {"published": len(rows), "deleted": [u[1] for u in updates], "protected": protected,
            "dry_run": dry_run}
