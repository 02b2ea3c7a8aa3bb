"""The remote as this machine talks to it: identity, ref names, the git runner, the leases held.

Every call that talks to the remote runs here on the package's sharing profile
(:data:`cc_continuity.gitrun.SHARING`): the user's own environment (their credentials, ssh
agent and credential helpers), never a prompt (``GIT_TERMINAL_PROMPT=0``, ssh in batch
mode, no askpass, stdin from /dev/null, a session of its own), each try bounded
(``TRY_TIMEOUT_S``) and killed with its process group at the bound, with no hook of the
repository run (``--no-verify`` too) and never a ref outside ``refs/continuity/`` named.
Standard library only.

The machine id is random, made once per state directory (the project key is built from
a checkout's path and checkpoint numbers count per key: two machines would collide).
"""

import json
import os
import subprocess
import time

from .. import atomic, gitrun, paths, safefile, session
from ..errors import LeaseHeld as LeaseHeld, ShareError
from . import data as share_data
from ..lock import Lock
from ..rotation.texts import MACHINE_ID_LEN, is_machine_id
from ..project import LEASES

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


SHARED_PREFIX = "refs/continuity/shared/"
FETCHED_PREFIX = "refs/continuity/fetched/"  # what a claim fetched, in the claimer's own repository
MACHINE_ID = "machine-id"
TRY_TIMEOUT_S = int(gitrun.SHARING.timeout)  # a try's bound: the sharing profile's (60 s)


def machine_id() -> str:
    """This state directory's machine id: 12 random hex digits (rotation/texts.py), made once (O_EXCL), then read."""
    path = paths.home() + "/" + MACHINE_ID
    try:
        got = safefile.read_regular(path, 100).decode("ascii", "replace").strip()
        if is_machine_id(got):
            return got
    except FileNotFoundError:
        pass
    paths.ensure_dir(paths.home())
    new = os.urandom(MACHINE_ID_LEN // 2).hex()
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


def remote_env(base: "Mapping[str, str] | None" = None) -> dict[str, str]:
    """The user's environment (credentials kept) with every way of prompting switched off (the sharing profile)."""
    return gitrun.environ(gitrun.SHARING, base)


def git(args: "Sequence[str]", cwd: str, *, input: bytes | None = None, timeout: float = TRY_TIMEOUT_S,
        ok: "tuple[int, ...]" = (0,), env: "Mapping[str, str] | None" = None) -> "subprocess.CompletedProcess[bytes]":
    """Run git in ``cwd`` on the sharing profile (its own session: a timeout kills git and its ssh);
    ShareError unless rc in ``ok``."""
    try:
        proc = gitrun.run(args, cwd, gitrun.SHARING, env=env, input=input, timeout=timeout)
    except OSError as e:
        raise ShareError("cannot run git: %s" % e) from None
    except subprocess.TimeoutExpired:
        raise ShareError("git %s: no answer within %d s" % (args[0], timeout)) from None
    if proc.returncode not in ok:
        lines = [x for x in proc.stderr.decode("utf-8", "replace").strip().splitlines() if x.strip()]
        raise ShareError("git %s failed (%d): %s" % (args[0], proc.returncode, " / ".join(lines[-3:])[:400]))
    return proc


def git_out(args: "Sequence[str]", cwd: str, **kw: "Any") -> str:
    return git(args, cwd, **kw).stdout.decode("utf-8", "replace").strip()


def ls_remote(root: str, remote: str, pattern: str = "refs/continuity/*",
              timeout: float = TRY_TIMEOUT_S) -> dict[str, str]:
    """{ref: object id} on ``remote`` matching ``pattern`` (one bounded call; a line not of git's shape is skipped)."""
    out = git_out(["ls-remote", remote, pattern], root, timeout=timeout)
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
    ident = git_out(["var", "GIT_AUTHOR_IDENT"], root, ok=(0, 128), timeout=10)
    return ident.rsplit(" ", 2)[0] if ident.count(" ") >= 2 else "unknown"


def commit_files(root: str, files: "Mapping[str, bytes]", parents: "Sequence[str]", message: str) -> str:
    """A commit holding ``files`` (blobs at the tree's top) with ``parents``; written into ``root``'s objects."""
    rows = []
    for name in sorted(files):
        blob = git_out(["hash-object", "-w", "--stdin"], root, input=files[name], timeout=30)
        rows.append("100644 blob %s\t%s\n" % (blob, name))
    tree = git_out(["mktree"], root, input="".join(rows).encode(), timeout=30)
    return commit_tree(root, tree, parents, message)


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


def status_path(sdir: str) -> str:
    return session.share_status_path(sdir)


def read_status(sdir: str) -> "dict[str, Any]":
    try:
        with open(status_path(sdir), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_status(path: str, doc: "dict[str, Any]") -> None:
    atomic.write_text(path, json.dumps(doc) + "\n", mode=paths.FILE_MODE, fsync=False)


def commit_tree(root: str, tree: str, parents: "Sequence[str]", message: str) -> str:
    """commit-tree as the user (their git identity), or as cc-continuity where they have none."""
    args = ["commit-tree", tree, "-F", "-"]
    for p in parents:
        args += ["-p", p]
    env = remote_env()
    if author(root) == "unknown":
        for who in ("AUTHOR", "COMMITTER"):
            env["GIT_%s_NAME" % who], env["GIT_%s_EMAIL" % who] = "cc-continuity", "cc-continuity@localhost"
    return git_out(args, root, input=message.encode(), env=env, timeout=30)


def lease_commit(root: str, claim: "dict[str, Any]", parents: "Sequence[str]" = ()) -> str:
    """A lease: a commit holding claim.json (who holds it, since when); parentless, or a renewal's child."""
    msg = "cc-continuity: %s %s/%s by %s (%s)\n" % ("renew" if parents else "claim", claim.get("project_key"),
                                                    claim.get("checkpoint"), claim.get("machine"), claim.get("author"))
    return commit_files(root, {"claim.json": json.dumps(claim, indent=1).encode()}, list(parents), msg)


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
        size = git_out(["cat-file", "-s", "%s:%s" % (rev, name)], root, timeout=30)
        if not size.isdigit() or int(size) > JSON_MAX:
            return {}
        doc = json.loads(git(["cat-file", "blob", "%s:%s" % (rev, name)], root, timeout=30).stdout)
    except (ShareError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def commit_time(root: str, rev: str) -> int:
    out = git_out(["log", "-1", "--format=%ct", rev], root, ok=(0, 128), timeout=30)
    return int(out) if out.isdigit() else 0


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
        doc["object"] = git_out(["rev-parse", "-q", "--verify", local], root, ok=(0, 1), timeout=30)
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
