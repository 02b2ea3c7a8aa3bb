"""Publishing a verified checkpoint (machine A): a detached job per checkpoint, retried, then pruned.

With ``share_remote`` set (a remote name of the user's own config; a repository's
config can never set it), every verified checkpoint is published to that remote in a
detached job (``python -m cc_continuity.share.publish '<plan>'``): the rotation never waits on
the network.  One ref per checkpoint::

    refs/continuity/shared/<machine id>/<project key>/cp-NNN  ->  the publish commit
        tree: handoff.md, manifest.json, facts.json, publisher.json, effects.json (redacted)
        parent: the work-tree snapshot commit (tracked files only unless share_untracked)
                whose parent is the machine's HEAD

When this machine's own successor has claimed the checkpoint by the time it is published
(the usual case), the same atomic push creates its lease (:mod:`.claiming`), so another
machine may take it only as a fork.
"""

import json
import os
import sys
import time

from .. import config, paths, session
from ..errors import ShareError
from ..holds import effects
from ..rotation import checkpoint
from . import data as share_data
from ..lock import Lock
from ..project import Project
from .fleet import prune_remote
from .job import behind_the_session, start_job
from .transport import (
    author, claim_ref, commit_files, commit_tree, git, git_out, lease_commit, ls_remote, machine_id, push,
    remember, remote_env, shared_ref, status_path, write_status)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config


RETRY_DELAYS_S = (2, 5, 15, 30, 60, 120, 300, 600)  # after each failed try; then the publish gives up
LOCAL_CLAIM_WAIT_S = 10  # how long the job waits for this machine's own successor to claim before pushing
FILES = ("handoff.md", "manifest.json", "facts.json", "publisher.json", "effects.json")


def plan(proj: "Project", number: int, cfg: "Config | Mapping[str, Any]") -> "dict[str, Any]":
    sdir = proj.session_dir(number)
    return {"root": proj.root, "key": proj.key, "sdir": sdir, "number": number,
            "cid": session.checkpoint_id(number), "remote": cfg["share_remote"],
            "untracked": bool(cfg["share_untracked"]), "machine": machine_id(), "status": status_path(sdir),
            "delays": list(RETRY_DELAYS_S), "local_wait_s": LOCAL_CLAIM_WAIT_S, "queued_at": round(time.time(), 3)}


def after_verified(proj: "Project", number: int, cfg: "Config | Mapping[str, Any]") -> "int | None":
    """The rotation's one call: with ``share_remote`` set, start the publish job (never waited for).

    Returns its pid, or None (sharing off, or the job could not start: recorded, never raised).
    """
    if not cfg["share_remote"]:
        return None
    try:
        p = plan(proj, number, cfg)
        write_status(p["status"], {"state": "queued", "remote": p["remote"], "machine": p["machine"],
                                    "tries": 0, "queued_at": p["queued_at"]})
        return start(p)
    except Exception as e:  # noqa: BLE001 - sharing is an extra; the rotation goes on
        try:
            write_status(status_path(proj.session_dir(number)), {"state": "failed", "error": str(e)[:300]})
        except OSError:
            pass
        return None


def start(p: "dict[str, Any]") -> int:
    """Start the publish job fully detached."""
    return start_job("cc_continuity.share.publish", json.dumps(p))


def _snapshot_entry(sdir: str, deadline: float) -> "dict[str, Any]":
    """The checkpoint's git entry, waiting (until ``deadline``) for a snapshot still being taken."""
    while True:
        git_ = checkpoint.git_entry(sdir)
        if not git_.get("pending") or time.time() > min(deadline, git_.get("until") or 0):
            return git_
        time.sleep(0.2)


def _redacted(obj: "Any") -> "Any":
    from .. import redact  # here: compiling its rules costs every verb's start ~50 ms

    if isinstance(obj, str):
        return redact.redact(obj)
    if isinstance(obj, list):
        return [_redacted(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _redacted(v) for k, v in obj.items()}
    return obj


def tracked_only(root: str, commit: str) -> str:
    """``commit`` without the files that were untracked (in neither its parent nor the user's index).

    The user's index is read now (seconds after the snapshot): a file added to it in between
    counts as tracked.  Returns ``commit`` itself when nothing was untracked.
    """
    parent = git_out(["rev-parse", "-q", "--verify", commit + "^1"], root, ok=(0, 1), timeout=30)
    base = parent or "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # (the empty tree: no HEAD yet)
    added = git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=A", base, commit],
                root, timeout=120).stdout.split(b"\0")
    added = [a for a in added if a]
    if not added:
        return commit
    cached = set(git(["ls-files", "-z", "--cached", "--", *[":(literal)" + a.decode("utf-8", "surrogateescape")
                                                            for a in added]], root, timeout=120).stdout.split(b"\0"))
    drop = [a for a in added if a not in cached]
    if not drop:
        return commit
    tmp = "%s/share-%d.index" % (paths.runtime_dir(), os.getpid())
    paths.ensure_dir(paths.runtime_dir())
    env = dict(remote_env(), GIT_INDEX_FILE=tmp)
    try:
        git(["read-tree", commit + "^{tree}"], root, env=env, timeout=120)
        git(["update-index", "--force-remove", "-z", "--stdin"], root, env=env, input=b"\0".join(drop) + b"\0",
            timeout=120)
        tree = git(["write-tree"], root, env=env, timeout=120).stdout.decode().strip()
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    msg = git(["log", "-1", "--format=%B", commit], root, timeout=30).stdout.decode("utf-8", "replace")
    msg = msg.rstrip("\n") + "\n\n(published without %d untracked file(s); share_untracked is off)\n" % len(drop)
    return commit_tree(root, tree, [parent] if parent else [], msg)


def publish_commit(p: "dict[str, Any]", git_: "dict[str, Any]") -> "tuple[str, dict[str, Any]]":
    """(the publish commit, its publisher.json) for plan ``p`` whose snapshot is ``git_``."""
    from .. import redact  # here: compiling its rules costs every verb's start ~50 ms

    root, sdir = p["root"], p["sdir"]
    snap = git_["commit"] if p["untracked"] else tracked_only(root, git_["commit"])
    facts, manifest = checkpoint.facts_and_manifest(sdir)

    handoff = redact.redact(checkpoint.read_handoff(sdir).decode("utf-8", "replace"))
    publisher = {"machine": p["machine"], "author": author(root), "project_key": p["key"], "checkpoint": p["cid"],
                 "session": manifest.get("session"), "published_at": round(time.time(), 3),
                 "verified_at": manifest.get("verified_at"), "snapshot": snap, "head": git_.get("parent"),
                 "branch": (facts.get("git") or {}).get("branch"), "untracked": p["untracked"],
                 "format": 1}
    # The project's effect records travel with the checkpoint (digests and outcomes only, no command text):
    # the machine that claims it holds a repeat of what ran here (share_data.imported_effects).
    now = time.time()
    recs = share_data.effect_records([r for r in effects.read(_proj_dir(p))
                                      if not isinstance(r.get("ts"), (int, float)) or r["ts"] <= now])
    files = {"handoff.md": handoff.encode(),
             "manifest.json": json.dumps(_redacted(manifest), indent=1).encode(),
             "facts.json": json.dumps(_redacted(facts), indent=1).encode(),
             "publisher.json": json.dumps(publisher, indent=1).encode(),
             share_data.EFFECTS_FILE: json.dumps({"records": recs}).encode()}
    msg = "cc-continuity: %s/%s published by %s\n" % (p["key"], p["cid"], p["machine"])
    return commit_files(root, files, [snap], msg), publisher


def _local_successor(sdir: str, wait_s: float) -> "dict[str, Any] | None":
    """This machine's own successor, if it claims the checkpoint within ``wait_s``: its name, or None."""
    deadline = time.time() + wait_s
    while True:
        try:
            rec = session.load(sdir)
        except (OSError, ValueError):
            return None
        if rec.get("successor") is not None:
            return {"successor": rec["successor"], "name": rec.get("name")}
        if time.time() >= deadline:
            return None
        time.sleep(0.2)


def _proj_dir(p: "dict[str, Any]") -> str:
    """The project state dir of plan ``p``'s checkpoint (its session dir is <project dir>/sessions/NNN)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(str(p["sdir"]) + "/")))


def _lock_path(p: "dict[str, Any]") -> str:
    return os.path.join(_proj_dir(p), "lock")


def _before_try(p: "dict[str, Any]", st: "dict[str, Any]", publisher: "dict[str, Any]",
                lease: "str | None") -> "str | None":
    """Under the project lock: this try's lease, and the try marked in flight (share.json), one step.

    The local claim reads share.json under the same lock (lease.py): a successor that claimed without
    the remote before this point gets its lease in this very push; from this point until the try
    proves it changed nothing, a local claim must take the lease on the remote itself."""
    with Lock(_lock_path(p)):
        try:
            rec = session.load(p["sdir"])
            succ = rec.get("successor")
        except (OSError, ValueError):
            rec, succ = None, None
        if lease is None and rec is not None and succ is not None and not rec.get("remote_lease"):
            lease = lease_commit(p["root"], {"machine": p["machine"], "author": publisher["author"],
                                             "project_key": p["key"], "checkpoint": p["cid"],
                                             "at": round(time.time(), 3),
                                             "local_successor": "%s-%03d" % (rec.get("slug") or "session", succ)})
        st.update(sealed=True, in_flight=True, local_claim=bool(lease))
        write_status(p["status"], st)
    return lease


def publish(p: "dict[str, Any]", sleep: "Any" = time.sleep) -> "dict[str, Any]":
    """Publish the checkpoint of plan ``p`` (the job's body): the final status, also written to ``p["status"]``.

    ``may_be_there`` in share.json: a try may have changed the remote (it landed, is in flight, or
    ended without proof that it changed nothing); the local claim then asks the remote (lease.py)."""
    started = time.time()
    st: "dict[str, Any]" = {"state": "waiting", "remote": p["remote"], "machine": p["machine"], "tries": 0,
                            "queued_at": p.get("queued_at"), "pid": os.getpid(), "may_be_there": False}
    write_status(p["status"], st)
    git_ = _snapshot_entry(p["sdir"], started + 3600)
    if not git_.get("commit"):
        st.update(state="failed", error="no work-tree snapshot to publish (%s)" % (git_.get("error") or
                                                                                  git_.get("reason") or "pending"))
        write_status(p["status"], st)
        return st
    try:
        commit, publisher = publish_commit(p, git_)
    except (ShareError, OSError, ValueError) as e:
        st.update(state="failed", error=str(e)[:400])
        write_status(p["status"], st)
        return st
    ref = shared_ref(p["machine"], p["key"], p["cid"])
    _local_successor(p["sdir"], p.get("local_wait_s", LOCAL_CLAIM_WAIT_S))
    lease: "str | None" = None
    lref = claim_ref(p["machine"], p["key"], p["cid"])
    st.update(ref=ref, commit=commit, snapshot=publisher["snapshot"])
    delays = list(p.get("delays") or RETRY_DELAYS_S)
    while True:
        st["tries"] += 1
        try:
            lease = _before_try(p, st, publisher, lease)
        except (TimeoutError, ShareError, OSError) as e:  # the lock stayed held, or the lease could not be made:
            err, unchanged = "not tried: %s" % e, True  # no try without that decision
        else:
            updates: "list[tuple[str, str, str | None]]" = [(commit, ref, "")]
            if lease:
                updates.append((lease, lref, ""))
            t0 = time.time()
            try:
                push(p["root"], p["remote"], updates)
                st.update(state="published", published_at=round(time.time(), 3), error=None, in_flight=False,
                          may_be_there=True, push_ms=int((time.time() - t0) * 1000),
                          elapsed_ms=int((time.time() - started) * 1000))
                if lease:
                    remember(_proj_dir(p), p["root"], p["remote"], lref, lease)
                write_status(p["status"], st)
                return st
            except ShareError as e:
                err, unchanged = str(e), e.nothing_landed
        try:  # published before (a lost answer, a second job, `share` by hand): the ref names this checkpoint
            there = ls_remote(p["root"], p["remote"], ref)  # (a machine id dies with its state dir: no reuse)
            if there.get(ref):
                st.update(state="published", published_at=round(time.time(), 3), error=None, commit=there[ref],
                          already=there[ref] != commit, in_flight=False, may_be_there=True,
                          elapsed_ms=int((time.time() - started) * 1000))
                if lease:  # the successor's lease did not go with it: on its own now (create only)
                    try:
                        push(p["root"], p["remote"], [(lease, lref, "")])
                        remember(_proj_dir(p), p["root"], p["remote"], lref, lease)
                    except ShareError as e2:
                        st.update(local_claim=False, lease_error=str(e2)[:300])
                write_status(p["status"], st)
                return st
            unchanged = True  # the remote answered and the ref is not there: this try changed nothing
        except ShareError:
            pass
        st.update(in_flight=False, may_be_there=bool(st.get("may_be_there")) or not unchanged)
        if not delays:
            st.update(state="failed", error=err[:400], failed_at=round(time.time(), 3))
            write_status(p["status"], st)
            return st
        wait = delays.pop(0)
        st.update(state="retrying", error=err[:400], next_try_at=round(time.time() + wait, 3))
        write_status(p["status"], st)
        sleep(wait)


def main(argv: "list[str]") -> int:
    try:
        p = json.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        p = None
    need = ("root", "key", "sdir", "cid", "remote", "machine", "status")
    if not isinstance(p, dict) or any(k not in p for k in need):
        print("usage: python -m cc_continuity.share.publish '<plan JSON>' (keys: %s)" % ", ".join(need), file=sys.stderr)
        return 2
    behind_the_session()
    st = publish(p)
    if st["state"] == "published":
        try:
            res = prune_remote(p["root"], p["remote"], p["key"], config.load(p["root"]))
            if res["deleted"]:
                print("share: pruned %s" % ", ".join(res["deleted"]))
        except Exception as e:  # noqa: BLE001 - pruning is housekeeping; the publish is done
            print("share: prune on %s failed: %s: %s" % (p["remote"], type(e).__name__, e), file=sys.stderr)
    print("%s share %s/%s -> %s: %s%s" % (time.strftime("%Y-%m-%dT%H:%M:%S"), p["key"], p["cid"], p["remote"],
                                          st["state"], (" (%s)" % st["error"]) if st.get("error") else ""))
    return 0 if st["state"] == "published" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
