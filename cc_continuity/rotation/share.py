"""Sharing checkpoints through the repository's own git remote (opt-in, the user's config only).

With ``share_remote`` set (a remote name of the user's own config; a repository's
config can never set it), every verified checkpoint is published to that remote in a
detached job (``python -m cc_continuity.rotation.share '<plan>'``): the rotation never waits on
the network.  One ref per checkpoint::

    refs/continuity/shared/<machine id>/<project key>/cp-NNN  ->  the publish commit
        tree: handoff.md, manifest.json, facts.json, publisher.json (redacted)
        parent: the work-tree snapshot commit (tracked files only unless share_untracked)
                whose parent is the machine's HEAD

The machine id is random, made once per state directory (the project key is built from
a checkout's path and checkpoint numbers count per key: two machines would collide).

Another machine claims one with a lease: a push that must *create*
``refs/continuity/<project key>/claims/<machine id>/cp-NNN`` (``--force-with-lease=<ref>:``, checked by
the remote under its ref lock): of N machines claiming at once exactly one wins.  When
this machine's own successor has claimed the checkpoint by the time it is published (the
usual case), the same atomic push creates that lease for it, so another machine may take
it only as a fork (``claims/<machine id>/cp-NNN-fork-<its machine id>``).  The publisher's machine id is
in the lease's name because two machines' project keys are equal when their checkouts have the
same path.

Every call that talks to the remote runs here with the user's own environment (their
credentials, ssh agent and credential helpers), never a prompt (``GIT_TERMINAL_PROMPT=0``,
ssh in batch mode, no askpass, stdin from /dev/null, a session of its own), each try
bounded (``TRY_TIMEOUT_S``), with no hook of the repository run (``--no-verify``) and
never a ref outside ``refs/continuity/`` named.  Standard library only.
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

from .. import atomic, config, faults, paths, procs, safefile, session
from ..errors import ShareError
from ..holds import effects
from . import checkpoint, revalidation, share_data
from .claim import bootstrap_text
from ..lock import Lock
from ..project import LEASES, Project, all_projects

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from ..config import Config
    from ..session import Record

SHARED_PREFIX = "refs/continuity/shared/"
FETCHED_PREFIX = "refs/continuity/fetched/"  # what a claim fetched, in the claimer's own repository
MACHINE_ID = "machine-id"
TRY_TIMEOUT_S = 60
RETRY_DELAYS_S = (2, 5, 15, 30, 60, 120, 300, 600)  # after each failed try; then the publish gives up
LOCAL_CLAIM_WAIT_S = 10  # how long the job waits for this machine's own successor to claim before pushing
LEASE_STEAL_AFTER_S = 24 * 3600
FILES = ("handoff.md", "manifest.json", "facts.json", "publisher.json", "effects.json")
# Variables that point git at another repository/index; removed for every call made here.
_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_DIR", "GIT_INDEX_FILE",
              "GIT_OBJECT_DIRECTORY", "GIT_WORK_TREE", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_ASKPASS",
              "SSH_ASKPASS")
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class LeaseHeld(ShareError):
    """The checkpoint is claimed already; ``holder`` is the lease's claim.json (machine, author, at)."""

    exit_code = 3

    def __init__(self, message: str, holder: "dict[str, Any]") -> None:
        super().__init__(message)
        self.holder = holder


# -- identity -------------------------------------------------------------------------------------

def machine_id() -> str:
    """This state directory's machine id: 12 random hex digits, made once (O_EXCL), then read."""
    path = paths.home() + "/" + MACHINE_ID
    try:
        got = safefile.read_regular(path, 100).decode("ascii", "replace").strip()
        if len(got) == 12 and all(c in "0123456789abcdef" for c in got):
            return got
    except FileNotFoundError:
        pass
    paths.ensure_dir(paths.home())
    new = os.urandom(6).hex()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, paths.FILE_MODE)
    except FileExistsError:  # another process made it first: theirs is the id
        time.sleep(0.05)
        return safefile.read_regular(path, 100).decode("ascii", "replace").strip()
    with os.fdopen(fd, "w") as f:
        f.write(new + "\n")
    return new


def shared_ref(mid: str, key: str, cid: str) -> str:
    return "%s%s/%s/%s" % (SHARED_PREFIX, mid, key, cid)


def claim_ref(mid: str, key: str, cid: str) -> str:
    """The lease on publisher ``mid``'s checkpoint ``cid`` of project ``key`` (two machines' keys can be equal:
    a key is built from the checkout's path)."""
    return "refs/continuity/%s/claims/%s/%s" % (key, mid, cid)


def parse_shared(ref: str, refused: "list[str] | None" = None) -> "tuple[str, str, str] | None":
    """(machine id, project key, checkpoint id) of a published ref, or None.

    A ref under the prefix whose parts do not have the shapes this program makes (a machine id of 12
    hex digits, a project key, ``cp-NNN[-k]``) is refused: one line in the log and in ``refused``."""
    if not ref.startswith(SHARED_PREFIX):
        return None
    parts = ref[len(SHARED_PREFIX):].split("/")
    why = "not <machine>/<key>/cp-NNN" if len(parts) != 3 else share_data.name_problem(*parts)
    if why:
        line = share_data.refused(ref, why)
        if refused is not None:
            refused.append(line)
        return None
    return parts[0], parts[1], parts[2]


# -- git, as the user, never prompting ------------------------------------------------------------

def remote_env(base: "Mapping[str, str] | None" = None) -> dict[str, str]:
    """The user's environment (credentials kept) with every way of prompting switched off."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _LOCAL_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GCM_INTERACTIVE"] = "never"
    env["SSH_ASKPASS_REQUIRE"] = "never"
    ssh = env.get("GIT_SSH_COMMAND") or "ssh"
    env["GIT_SSH_COMMAND"] = ssh + " -o BatchMode=yes -o ConnectTimeout=30"
    env.setdefault("LC_ALL", "C")
    return env


def git(args: "Sequence[str]", cwd: str, *, input: bytes | None = None, timeout: float = TRY_TIMEOUT_S,
        ok: "tuple[int, ...]" = (0,), env: "Mapping[str, str] | None" = None) -> "subprocess.CompletedProcess[bytes]":
    """Run git in ``cwd`` (its own session: a timeout kills git and its ssh); ShareError unless rc in ``ok``."""
    cmd = ["git", *_NO_HOOKS, *args]
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=remote_env() if env is None else dict(env),
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise ShareError("cannot run git: %s" % e) from None
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise ShareError("git %s: no answer within %d s" % (args[0], timeout)) from None
    if proc.returncode not in ok:
        lines = [x for x in err.decode("utf-8", "replace").strip().splitlines() if x.strip()]
        raise ShareError("git %s failed (%d): %s" % (args[0], proc.returncode, " / ".join(lines[-3:])[:400]))
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _out(args: "Sequence[str]", cwd: str, **kw: "Any") -> str:
    return git(args, cwd, **kw).stdout.decode("utf-8", "replace").strip()


def ls_remote(root: str, remote: str, pattern: str = "refs/continuity/*",
              timeout: float = TRY_TIMEOUT_S) -> dict[str, str]:
    """{ref: object id} on ``remote`` matching ``pattern`` (one bounded call; a line not of git's shape is skipped)."""
    out = _out(["ls-remote", remote, pattern], root, timeout=timeout)
    refs = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.startswith("refs/continuity/") and share_data.SHA_RE.match(sha):
            refs[ref] = sha
    return refs


# What git says when it never reached the remote's ref update (so a failed push changed nothing there).
_NOT_SENT = ("unable to connect", "connection refused", "could not resolve", "failed to connect", "no route to host",
             "network is unreachable", "does not appear to be a git repository", "permission denied (publickey",
             "host key verification failed", "connection timed out", "ssh: connect to host", "authentication failed",
             "terminal prompts disabled", "repository not found", "couldn't connect to server")


def push(root: str, remote: str, updates: "Sequence[tuple[str, str, str | None]]",
         timeout: float = TRY_TIMEOUT_S) -> str:
    """One ``git push --atomic`` of [(object, ref, expected)]: object "" deletes; expected "" = must not
    exist, a sha = must be it, None = create or fast-forward.  Every ref must be under refs/continuity/.  The porcelain output.

    A refusal raises ShareError with ``nothing_landed`` True when the remote answered and refused every
    ref (atomic: it changed nothing) or git could not reach it; a timeout or a connection lost midway
    leaves it False (the remote may have applied the push)."""
    args = ["push", "--atomic", "--porcelain", "--no-verify", "--no-follow-tags"]
    specs = []
    for sha, ref, expect in updates:
        if not ref.startswith("refs/continuity/") or ".." in ref:
            raise ValueError("refusing to push outside refs/continuity/: %r" % ref)
        if expect is not None:
            args.append("--force-with-lease=%s:%s" % (ref, expect))
        specs.append("%s:%s" % (sha, ref))  # an empty sha deletes the ref
    proc = git([*args, remote, *specs], root, ok=(0, 1, 128), timeout=timeout)
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode:
        rows = [line for line in out.splitlines() if line[:1] in "!*+-= " and "\t" in line]
        refused = [line.split("\t", 2)[-1] for line in rows if line.startswith("!")]
        err = proc.stderr.decode("utf-8", "replace")
        said = [x for x in err.splitlines() if x.startswith("remote:") or x.startswith("fatal:")]
        e = ShareError("git push to %s refused: %s" % (remote, " / ".join(refused + said[-2:])[:400] or
                                                        "exit %d" % proc.returncode))
        e.nothing_landed = (bool(rows) and len(refused) == len(rows)) or \
            (not rows and any(x in err.lower() for x in _NOT_SENT))
        raise e
    return out


def author(root: str) -> str:
    """``Name <email>`` of the user's git identity (``git var``: their config and environment), or "unknown"."""
    ident = _out(["var", "GIT_AUTHOR_IDENT"], root, ok=(0, 128), timeout=10)
    return ident.rsplit(" ", 2)[0] if ident.count(" ") >= 2 else "unknown"


def _commit(root: str, files: "Mapping[str, bytes]", parents: "Sequence[str]", message: str) -> str:
    """A commit holding ``files`` (blobs at the tree's top) with ``parents``; written into ``root``'s objects."""
    rows = []
    for name in sorted(files):
        blob = _out(["hash-object", "-w", "--stdin"], root, input=files[name], timeout=30)
        rows.append("100644 blob %s\t%s\n" % (blob, name))
    tree = _out(["mktree"], root, input="".join(rows).encode(), timeout=30)
    return _commit_tree(root, tree, parents, message)


# -- the leases this machine holds (renewed by lease.py while their project has a live session) ---------------

HELD_MAX = 50  # leases kept per project (the newest): the renewal pushes them all at once


def held(proj_dir: str) -> "list[dict[str, Any]]":
    """The leases this machine holds for the project whose state dir is ``proj_dir`` (leases.json)."""
    try:
        doc = json.loads(safefile.read_regular(os.path.join(proj_dir, LEASES), 1 << 20))
    except (OSError, ValueError):
        return []
    rows = doc.get("leases") if isinstance(doc, dict) else None
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("ref"), str)] if isinstance(rows, list) else []


def update_held(proj_dir: str, change: "Any") -> "list[dict[str, Any]]":
    """``change(rows)`` -> rows, applied to leases.json under its own lock (the project lock may be held)."""
    paths.ensure_dir(proj_dir)
    path = os.path.join(proj_dir, LEASES)
    with Lock(path + ".lock"):
        rows: "list[dict[str, Any]]" = list(change(held(proj_dir)))[-HELD_MAX:]
        atomic.write_text(path, json.dumps({"leases": rows}) + "\n", mode=paths.FILE_MODE, fsync=False)
    return rows


def remember(proj_dir: str, root: str, remote: str, ref: str, sha: str, now: float | None = None) -> None:
    """This machine holds the lease ``ref`` (object ``sha``) on ``remote``: renewed from now on."""
    now = time.time() if now is None else now
    row = {"ref": ref, "remote": remote, "root": root, "sha": sha, "taken_at": round(now, 3),
           "renewed_at": round(now, 3)}
    update_held(proj_dir, lambda rows: [r for r in rows if (r["ref"], r.get("remote")) != (ref, remote)] + [row])


def lease_time(claim: "Mapping[str, Any]") -> float:
    """When a lease was last renewed (or taken): what its age and ``--steal`` count from."""
    for k in ("renewed_at", "at"):
        v = claim.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v:
            return float(v)
    return 0.0


# -- publishing (machine A) -----------------------------------------------------------------------

def status_path(sdir: str) -> str:
    return session.share_status_path(sdir)


def read_status(sdir: str) -> "dict[str, Any]":
    try:
        with open(status_path(sdir), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _write_status(path: str, doc: "dict[str, Any]") -> None:
    atomic.write_text(path, json.dumps(doc) + "\n", mode=paths.FILE_MODE, fsync=False)


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
        _write_status(p["status"], {"state": "queued", "remote": p["remote"], "machine": p["machine"],
                                    "tries": 0, "queued_at": p["queued_at"]})
        return start(p)
    except Exception as e:  # noqa: BLE001 - sharing is an extra; the rotation goes on
        try:
            _write_status(status_path(proj.session_dir(number)), {"state": "failed", "error": str(e)[:300]})
        except OSError:
            pass
        return None


def start(p: "dict[str, Any]") -> int:
    """Start the publish job fully detached."""
    return start_job("cc_continuity.rotation.share", json.dumps(p))


JOB_NICE = 10  # a job started by start_job yields the CPU to the session it serves (as the turn snapshot does)


def start_job(module: str, arg: str) -> int:
    """Start ``python -m <module> <arg>`` fully detached (own session, stdin from /dev/null, output to the
    share log): the publish job here, the lease renewal (lease.start).  Its main calls :func:`behind_the_session`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (paths.package_parent(), env.get("PYTHONPATH", "")) if x)
    log = paths.logs_dir() + "/share.log"
    paths.ensure_dir(os.path.dirname(log))
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, paths.FILE_MODE)
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-m", module, arg],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd="/", env=env,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(out)
    return proc.pid


def behind_the_session() -> None:
    """Lower this job's priority: it starts while the successor starts, and must not slow it down."""
    procs.yield_cpu(JOB_NICE)


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
    parent = _out(["rev-parse", "-q", "--verify", commit + "^1"], root, ok=(0, 1), timeout=30)
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
    return _commit_tree(root, tree, [parent] if parent else [], msg)


def _commit_tree(root: str, tree: str, parents: "Sequence[str]", message: str) -> str:
    """commit-tree as the user (their git identity), or as cc-continuity where they have none."""
    args = ["commit-tree", tree, "-F", "-"]
    for p in parents:
        args += ["-p", p]
    env = remote_env()
    if author(root) == "unknown":
        for who in ("AUTHOR", "COMMITTER"):
            env["GIT_%s_NAME" % who], env["GIT_%s_EMAIL" % who] = "cc-continuity", "cc-continuity@localhost"
    return _out(args, root, input=message.encode(), env=env, timeout=30)


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
    return _commit(root, files, [snap], msg), publisher


def lease_commit(root: str, claim: "dict[str, Any]", parents: "Sequence[str]" = ()) -> str:
    """A lease: a commit holding claim.json (who holds it, since when); parentless, or a renewal's child."""
    msg = "cc-continuity: %s %s/%s by %s (%s)\n" % ("renew" if parents else "claim", claim.get("project_key"),
                                                    claim.get("checkpoint"), claim.get("machine"), claim.get("author"))
    return _commit(root, {"claim.json": json.dumps(claim, indent=1).encode()}, list(parents), msg)


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
        _write_status(p["status"], st)
    return lease


def publish(p: "dict[str, Any]", sleep: "Any" = time.sleep) -> "dict[str, Any]":
    """Publish the checkpoint of plan ``p`` (the job's body): the final status, also written to ``p["status"]``.

    ``may_be_there`` in share.json: a try may have changed the remote (it landed, is in flight, or
    ended without proof that it changed nothing); the local claim then asks the remote (lease.py)."""
    started = time.time()
    st: "dict[str, Any]" = {"state": "waiting", "remote": p["remote"], "machine": p["machine"], "tries": 0,
                            "queued_at": p.get("queued_at"), "pid": os.getpid(), "may_be_there": False}
    _write_status(p["status"], st)
    git_ = _snapshot_entry(p["sdir"], started + 3600)
    if not git_.get("commit"):
        st.update(state="failed", error="no work-tree snapshot to publish (%s)" % (git_.get("error") or
                                                                                  git_.get("reason") or "pending"))
        _write_status(p["status"], st)
        return st
    try:
        commit, publisher = publish_commit(p, git_)
    except (ShareError, OSError, ValueError) as e:
        st.update(state="failed", error=str(e)[:400])
        _write_status(p["status"], st)
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
                _write_status(p["status"], st)
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
                _write_status(p["status"], st)
                return st
            unchanged = True  # the remote answered and the ref is not there: this try changed nothing
        except ShareError:
            pass
        st.update(in_flight=False, may_be_there=bool(st.get("may_be_there")) or not unchanged)
        if not delays:
            st.update(state="failed", error=err[:400], failed_at=round(time.time(), 3))
            _write_status(p["status"], st)
            return st
        wait = delays.pop(0)
        st.update(state="retrying", error=err[:400], next_try_at=round(time.time() + wait, 3))
        _write_status(p["status"], st)
        sleep(wait)


# -- claiming (machine B) ------------------------------------------------------------------------

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


def fetched_ref(machine: str, key: str, cid: str) -> str:
    return "%s%s/%s/%s" % (FETCHED_PREFIX, machine, key, cid)


def fetch(root: str, remote: str, refspecs: "Sequence[str]", timeout: float = TRY_TIMEOUT_S * 5) -> None:
    """Fetch ``refspecs`` (into refs/continuity/fetched/ only): no tags, no FETCH_HEAD, nothing else moved."""
    for spec in refspecs:
        dst = spec.rsplit(":", 1)[-1]
        if not dst.startswith(FETCHED_PREFIX):
            raise ValueError("refusing to fetch into %r" % dst)
    git(["fetch", "--no-tags", "--no-write-fetch-head", "--quiet", remote, *refspecs], root, timeout=timeout)


JSON_MAX = 4 << 20  # a remote's JSON file larger than this is not read


def show_json(root: str, rev: str, name: str) -> "dict[str, Any]":
    """A JSON object from the commit ``rev`` (remote data: check its fields with share_data), {} if none."""
    try:
        size = _out(["cat-file", "-s", "%s:%s" % (rev, name)], root, timeout=30)
        if not size.isdigit() or int(size) > JSON_MAX:
            return {}
        doc = json.loads(git(["cat-file", "blob", "%s:%s" % (rev, name)], root, timeout=30).stdout)
    except (ShareError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def commit_time(root: str, rev: str) -> int:
    out = _out(["log", "-1", "--format=%ct", rev], root, ok=(0, 128), timeout=30)
    return int(out) if out.isdigit() else 0


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


def holder(root: str, remote: str, ref: str, timeout: float = TRY_TIMEOUT_S * 5,
           keep: bool = False) -> "dict[str, Any]":
    """The claim.json of the lease at ``ref`` on ``remote``, its fields checked (share_data.claim), with
    ``object``: the lease commit's id.  Fetched into refs/continuity/fetched/claims/ and, unless ``keep``, that ref removed again once read
    (the object stays until git's gc: a stolen lease can be put back)."""
    local = FETCHED_PREFIX + "claims/" + ref[len("refs/continuity/"):]
    fetch(root, remote, ["+%s:%s" % (ref, local)], timeout=timeout)
    try:
        doc = share_data.claim(show_json(root, local, "claim.json"), ref)
        doc.setdefault("at", commit_time(root, local))
        doc["object"] = _out(["rev-parse", "-q", "--verify", local], root, ok=(0, 1), timeout=30)
    finally:
        if not keep:
            drop_fetched(root, [local])
    return doc


def drop_fetched(root: str, refs: "Sequence[str]") -> None:
    """Delete refs this machine fetched (only under refs/continuity/fetched/); never raises."""
    lines = "".join("delete %s\n" % ref for ref in refs if ref.startswith(FETCHED_PREFIX) and "\n" not in ref)
    if lines:
        try:  # one call for them all (a missing ref is no error for --stdin's delete without an old value)
            git(["update-ref", "--stdin"], root, input=lines.encode(), timeout=60, ok=(0, 1, 128))
        except ShareError:
            pass


def plain(value: object, limit: int = 120) -> str:
    """A value read from the remote, fit for a terminal line: no control or direction characters."""
    return "".join(c if c.isprintable() else "?" for c in share_data.plain(value, limit))


def describe(h: "Mapping[str, Any]") -> str:
    """Who holds a lease, in one line (every part is remote text: made plain)."""
    who = "machine %s (%s)" % (plain(h.get("machine", "?")), plain(h.get("author", "?")))
    if h.get("local_successor"):
        who += ", its own successor %s" % plain(h["local_successor"])
    at = h.get("at")
    if isinstance(at, (int, float)) and at:
        who += ", since %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    return who


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
    while _out(["rev-parse", "-q", "--verify", "refs/heads/" + branch], root, ok=(0, 1), timeout=30):
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
    size = _out(["cat-file", "-s", local + ":handoff.md"], dest, timeout=30)
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
        snap = _out(["rev-parse", "-q", "--verify", local + "^1"], root, ok=(0, 1), timeout=30)
        head = _out(["rev-parse", "-q", "--verify", snap + "^1"], root, ok=(0, 1), timeout=30) if snap else ""
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


# -- what is where ---------------------------------------------------------------------------------

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


def main(argv: "list[str]") -> int:
    try:
        p = json.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        p = None
    need = ("root", "key", "sdir", "cid", "remote", "machine", "status")
    if not isinstance(p, dict) or any(k not in p for k in need):
        print("usage: python -m cc_continuity.rotation.share '<plan JSON>' (keys: %s)" % ", ".join(need), file=sys.stderr)
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
