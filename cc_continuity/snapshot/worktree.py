"""Non-invasive git snapshots and machine-derived git facts.

A checkpoint must record the exact work tree without touching anything the user
owns: HEAD, the index, branches, the stash, config and the working files stay
byte for byte as they were. So the snapshot is built in a *private* index
(``GIT_INDEX_FILE`` in a temp dir), turned into a tree and a commit object, and
published only under ``refs/continuity/<project key>/cp-<NNN>``.  A ref that
exists is never moved or deleted: a name that is taken (a purge restarted the
counter, a crashed attempt left one) makes a new one (``cp-<NNN>-2`` …).

Every git call runs with ``cwd`` = the work tree, the repository-locating
environment (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) scrubbed so an outer git
process (e.g. a pre-commit hook running us) cannot redirect us,
``GIT_OPTIONAL_LOCKS=0`` so read-only commands never refresh the real index,
and hooks disabled. Standard library only.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

from .. import errors

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from ..lock import Lock

    StrPath = str | os.PathLike[str]
    Done = subprocess.CompletedProcess[bytes]  # a git call's result (bytes out and err)
    # _locate_repo: (toplevel, index, common git dir, object id length, HEAD, None), or five Nones and why
    Located = tuple[str, str, str, int, str | None, None] | tuple[None, None, None, None, None, str]
    Entry = tuple[bytes, bytes]  # an index entry: (mode, object id)
    Big = list[tuple[bytes, int, bool]]  # files left out for their size: (path, size, tracked)
    State = dict[str, Any]  # a private index's state file (see _Build)

REF_PREFIX = "refs/continuity/"
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_SUBJECT_MAX = 200
_FALLBACK_NAME = "cc-continuity"
_FALLBACK_EMAIL = "cc-continuity@localhost"
_TRAILER_FILES = "Continuity-Files"
_TRAILER_BYTES = "Continuity-Bytes"
_TRAILER_SKIPPED = "Continuity-Skipped-Large"

# Variables that point git at another repository/index (git rev-parse --local-env-vars).
_LOCAL_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_DIR", "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE", "GIT_WORK_TREE", "GIT_NAMESPACE",
)
# Per-command config: no hooks (post-index-change, reference-transaction), no fsmonitor
# daemon, no split index (it would write sharedindex.* files into the user's .git).
# And no program the repository names (issue 22: a snapshot runs nothing the repository defined):
# a command set here wins over every config file.  An empty helper list, no external diff, and
# programs we never need (no remote, no signing, no editor, no pager) set to one that does nothing.
_SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.splitIndex=false",
    "-c", "advice.addEmbeddedRepo=false",
    "-c", "diff.external=",
    "-c", "core.sshCommand=false",
    "-c", "core.askPass=false",
    "-c", "credential.helper=",
    "-c", "gpg.program=false",
    "-c", "gpg.ssh.program=false",
    "-c", "gpg.x509.program=false",
    "-c", "commit.gpgSign=false",
    "-c", "core.editor=false",
    "-c", "sequence.editor=false",
    "-c", "core.pager=cat",
    "-c", "gc.auto=0",
)
# Drivers are named by the repository (filter.<name>.clean, diff.<name>.textconv): each one the
# config names is emptied (``_without_drivers``); a filter marked required would then fail the add.
_DRIVER_KEYS = re.compile(rb"^(filter|diff)\.(.+)\.(clean|smudge|process|required|textconv|command)$")
_drivers_of: "dict[str, tuple[tuple[str, str], ...]]" = {}


class SnapshotError(errors.RotationError, RuntimeError):
    """git is present but a command needed for the snapshot failed."""

    def __init__(self, message: str, cmd: "Sequence[str] | None" = None, returncode: int | None = None,
                 stderr: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


# ----------------------------------------------------------------- plumbing


def _env(extra: "Mapping[str, str] | None" = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_ENV}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    if extra:
        env.update(extra)
    return env


def _git(args: "Sequence[str]", cwd: str, *, env: "Mapping[str, str] | None" = None, input: bytes | None = None,
         timeout: float = 30.0) -> "Done":
    """Run git; return CompletedProcess with bytes stdout/stderr (never raises on rc).

    With ``GIT_INDEX_FILE`` (only ever one of our private indexes: ``_env`` drops the
    caller's) git runs under umask 077, so the index it writes is 0600 from its first
    byte: a snapshot killed before its chmod leaves no readable index behind.
    """
    env = env or _env()
    return subprocess.run(
        ["git", *_SAFE_CONFIG, *args], cwd=cwd, env=_without_drivers(env, cwd, timeout), input=input,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL, umask=0o077 if "GIT_INDEX_FILE" in env else -1,
    )


def _without_drivers(env: "Mapping[str, str]", cwd: str, timeout: float) -> "Mapping[str, str]":
    """``env`` plus config that empties every filter and diff driver the config of ``cwd`` defines.

    Through ``GIT_CONFIG_COUNT`` (a driver's name may hold any character, ``=``
    too, which ``-c`` cannot carry), after any such entries already there.  A
    filter left without its commands stores the file as it is (an unchanged
    file keeps its index blob: git does not read it again).  One query per place.
    """
    found = _drivers_of.get(cwd)
    if found is None:
        try:
            out = subprocess.run(["git", *_SAFE_CONFIG, "config", "-z", "--name-only", "--get-regexp",
                                  r"^(filter|diff)\..*\.(clean|smudge|process|required|textconv|command)$"],
                                 cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 stdin=subprocess.DEVNULL, timeout=timeout).stdout
        except (OSError, subprocess.SubprocessError):
            out = b""  # (no git, no such directory: the call itself will say so)
        keys = []
        for raw in out.split(b"\0"):
            m = _DRIVER_KEYS.match(raw)
            if m:
                keys.append((os.fsdecode(raw), "false" if m.group(3) == b"required" else ""))
        found = _drivers_of[cwd] = tuple(keys)
    if not found:
        return env
    out_env = dict(env)
    try:
        n = int(out_env.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        n = 0
    for i, (key, value) in enumerate(found, n):
        out_env["GIT_CONFIG_KEY_%d" % i], out_env["GIT_CONFIG_VALUE_%d" % i] = key, value
    out_env["GIT_CONFIG_COUNT"] = str(n + len(found))
    return out_env


def _text(data: bytes) -> str:
    """Bytes from git -> str for reports; undecodable bytes stay visible as escapes."""
    return data.decode("utf-8", "backslashreplace")


def _last_line(data: bytes) -> str:
    """git's stderr ends with its one-line verdict (``fatal: ...``)."""
    lines = _text(data).strip().splitlines()
    return lines[-1] if lines else ""


class _Runner:
    """git calls for one snapshot: a shared deadline, failures become SnapshotError."""

    def __init__(self, top: str, env: dict[str, str], timeout: float) -> None:
        self.top, self.env = top, env
        self.deadline = time.monotonic() + timeout

    def run(self, args: list[str], *, input: bytes | None = None, ok: tuple[int, ...] = (0,),
            env: "Mapping[str, str] | None" = None) -> "Done":
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise SnapshotError("snapshot timed out before git %s" % args[0], cmd=args, timed_out=True)
        try:
            proc = _git(args, self.top, env=env or self.env, input=input, timeout=remaining)
        except subprocess.TimeoutExpired:
            raise SnapshotError("git %s timed out" % args[0], cmd=args, timed_out=True) from None
        if proc.returncode not in ok:
            err = _text(proc.stderr).strip()
            verb = next((a for i, a in enumerate(args) if a != "-c" and (i == 0 or args[i - 1] != "-c")), "?")
            raise SnapshotError(
                "git %s failed (exit %d): %s" % (verb, proc.returncode, err or "no message"),
                cmd=args, returncode=proc.returncode, stderr=err)
        return proc


def _locate(path: "StrPath", timeout: float = 10.0) -> "tuple[str, str, None] | tuple[None, None, str]":
    """(toplevel, index path, None) for a work tree, else (None, None, reason)."""
    found = _locate_repo(path, timeout)
    if found[0] is None:
        return None, None, found[5]
    return found[0], found[1], None


def _locate_repo(path: "StrPath", timeout: float = 10.0, head: bool = False) -> "Located":
    """(toplevel, index path, common git dir, object id length, HEAD or None, None) for a work tree,
    else five Nones and the reason.  ``head``: resolve HEAD too (one git call for all of it)."""
    none: "tuple[None, None, None, None, None]" = (None, None, None, None, None)
    args = ["rev-parse", "--show-toplevel", "--git-path", "index", "--git-common-dir", "--show-object-format"]
    try:
        proc = _git(args + (["-q", "--verify", "HEAD^{commit}"] if head else []), os.fspath(path), timeout=timeout)
    except FileNotFoundError:
        return none + ("git not installed" if shutil.which("git") is None else "no git",)
    except (NotADirectoryError, PermissionError, subprocess.TimeoutExpired) as exc:
        return none + ("no git (%s)" % exc.__class__.__name__,)
    lines = proc.stdout.split(b"\n")
    if proc.returncode != 0 and not (head and proc.returncode == 1 and len(lines) >= 4 and lines[0]):
        err = _text(proc.stderr)
        if "not a git repository" in err or "must be run in a work tree" in err:
            return none + ("no git",)
        return none + ("git refused: %s" % _last_line(proc.stderr),)
    if len(lines) < 4 or not lines[0]:
        return none + ("no git",)
    top = os.fsdecode(lines[0])
    index = os.path.join(os.fspath(path), os.fsdecode(lines[1]))
    common = os.path.realpath(os.path.join(os.fspath(path), os.fsdecode(lines[2])))
    oid_len = 64 if lines[3].strip() == b"sha256" else 40
    parent = lines[4].strip().decode("ascii") or None if head and proc.returncode == 0 and len(lines) > 4 else None
    return top, index, common, oid_len, parent, None


# ----------------------------------------------------------------- ref names

_BAD_REF_CHARS = frozenset(" ~^:?*[\\\x7f") | frozenset(chr(c) for c in range(32))


def check_ref_component(part: object) -> None:
    """Raise ValueError unless ``part`` is a safe refname component.

    git check-ref-format's rules, applied to every component; a lone "@" and a
    trailing "." (which git only forbids at the very end of a ref) are refused too.
    """
    if not isinstance(part, str) or not part:
        raise ValueError("ref component must be a non-empty string")
    problems = []
    if "/" in part:
        problems.append("contains '/'")
    if part.startswith("."):
        problems.append("starts with '.'")
    if part.endswith(".") or part.endswith(".lock"):
        problems.append("ends with '.' or '.lock'")
    if ".." in part:
        problems.append("contains '..'")
    if "@{" in part or part == "@":
        problems.append("contains '@{' or is '@'")
    if any(ch in _BAD_REF_CHARS for ch in part):
        problems.append("contains a space, control character or one of ~^:?*[\\")
    if problems:
        raise ValueError("invalid ref component %r: %s" % (part, "; ".join(problems)))


def check_ref(ref: object) -> None:
    """Raise ValueError unless ``ref`` is a full refname under refs/."""
    if not isinstance(ref, str) or not ref.startswith("refs/"):
        raise ValueError("invalid ref %r: must start with 'refs/'" % (ref,))
    for part in ref.split("/"):
        check_ref_component(part)


def ref_name(namespace: str, number: int) -> str:
    """``refs/continuity/<namespace>/cp-<NNN>``; ValueError for a name git would reject.

    The namespace is the project *key* (slug plus a hash of the root), not the slug:
    two worktrees both called ``proj`` share one ref store.
    """
    check_ref_component(namespace)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError("checkpoint number must be a non-negative int, got %r" % (number,))
    return "%s%s/cp-%03d" % (REF_PREFIX, namespace, number)


# ----------------------------------------------------------------- snapshot


def _identity_env(runner: _Runner) -> dict[str, str]:
    """Fallback author/committer only where neither env nor git config names one."""
    proc = runner.run(["config", "--get-regexp", r"^(user|author|committer)\.(name|email)$"],
                      ok=(0, 1))
    keys = {line.split(b" ", 1)[0].decode("ascii", "replace").lower()
            for line in proc.stdout.splitlines() if line}
    extra: dict[str, str] = {}
    for role in ("author", "committer"):
        for field, fallback in (("name", _FALLBACK_NAME), ("email", _FALLBACK_EMAIL)):
            var = "GIT_%s_%s" % (role.upper(), field.upper())
            if os.environ.get(var) or {"user." + field, role + "." + field} & keys:
                continue
            extra[var] = fallback
    return extra


def _commit_message(message: str | None, files: int, size: int, skipped: "Big") -> bytes:
    body = (message or "").strip("\n") or "cc-continuity snapshot"
    trailers = "%s: %d\n%s: %d\n" % (_TRAILER_FILES, files, _TRAILER_BYTES, size)
    if skipped:
        trailers += "%s: %d\n" % (_TRAILER_SKIPPED, len(skipped))
    return (body + "\n\n" + trailers).encode("utf-8", "replace")


# -- the private index -------------------------------------------------------------
#
# The snapshot is built in an index of our own, never the user's.  With ``index=<path>``
# (cc-continuity keeps one per project in its state dir, ``projects/<key>/snapshot.index``)
# it persists between snapshots together with a small state file, so git's own stat cache
# (and the untracked cache / fsmonitor data, where the user has them on) survives: the next
# snapshot costs one `git status` walk of the work tree plus the files that changed.  Without
# ``index`` a temporary one is seeded for this snapshot only.
#
# What a snapshot records is defined by the from-scratch build: a byte copy of the user's
# index (its stat data, gitlinks, skip-worktree and intent-to-add entries), then ``git add -A``
# (``-u`` when untracked files are left out), files over the caps excluded before they are
# hashed.  The persistent index reaches the same tree incrementally:
#
# 1. the user's index changed since the last snapshot (its stat) and its tree changed too:
#    the paths whose entries differ between the two trees take the user's entries;
# 2. ``git status`` on the private index (allowed to write its refreshed stat data back)
#    names every path whose work-tree state differs, and every untracked file;
# 3. those paths are updated (``update-index``; ``add -A`` for nested repositories and
#    when update-index refuses), except files over a cap: a tracked one takes the user's
#    entry again, an untracked one is left out (and dropped if an earlier snapshot had it);
# 4. when the ignore rules may have changed (a ``.gitignore`` among the paths, or an exclude
#    or config file changed), entries only the private index has that are ignored now go;
# 5. ``write-tree``.
#
# Anything unexpected - no state, a state from another repository or other settings, a
# corrupt index, a missing object, a failing step - seeds a fresh private index from the
# user's and builds again.  Snapshots of one index are serialised by an flock of their own
# (``<index>.flock``); a snapshot that cannot get it in time uses a temporary index.

STATE_FORMAT = 1
_STATE_SUFFIX = ".state"
_FLOCK_SUFFIX = ".flock"
_FLOCK_WAIT_S = 10.0
# Private-index writes: no trailing checksum where git supports skipping it (2.40+).
_PRIVATE_CONFIG = ("-c", "index.skipHash=true")


class _Rebuild(Exception):
    """The private index cannot be updated incrementally: seed it afresh from the user's."""


def _stat_key(path: str) -> list[int] | None:
    """What identifies one version of a file without reading it (None when it is missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read_state(path: str) -> "State | None":
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == STATE_FORMAT else None


def _write_state(path: str, doc: "Mapping[str, Any]") -> None:
    tmp = "%s.tmp%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, json.dumps(doc, sort_keys=True).encode("ascii"))  # (lone surrogates escaped: undecodable names)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class _PrivateIndex:
    """The index a snapshot is built in: the persistent one (locked) or a temp one."""

    def __init__(self, path: str | None, runner: _Runner) -> None:
        self.runner = runner
        self.persistent = False
        self._lock: "Lock | None" = None
        self._tmpdir: str | None = None
        if path:
            d = os.path.dirname(os.path.abspath(path))
            os.makedirs(d, mode=0o700, exist_ok=True)
            from ..lock import Lock, LockTimeout

            wait = max(0.0, min(_FLOCK_WAIT_S, runner.deadline - time.monotonic() - 1.0))
            try:
                self._lock = Lock(path + _FLOCK_SUFFIX, timeout=wait).acquire()
                self.persistent = True
            except (LockTimeout, OSError):
                self._lock = None  # another snapshot holds it: build this one in a temp index
        if self.persistent and path:  # (persistent: a path was given)
            self.path = os.path.abspath(path)
            for stale in (self.path + ".lock", self.path + ".user", self.path + ".user.lock"):
                try:
                    os.unlink(stale)  # left by a killed git (we hold the flock: nobody else writes here)
                except FileNotFoundError:
                    pass
        else:
            self._tmpdir = tempfile.mkdtemp(prefix="cc-continuity-index-")
            self.path = os.path.join(self._tmpdir, "index")
        self.state_path = self.path + _STATE_SUFFIX

    def close(self) -> None:
        if self.persistent:
            for p in (self.path, self.state_path):
                try:
                    os.chmod(p, 0o600)  # git writes the index with the umask's mode (the dir is 0700)
                except OSError:
                    pass
            try:
                os.unlink(self.path + ".user")
            except OSError:
                pass
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        if self._lock is not None:
            self._lock.release()


def _z(out: bytes) -> list[bytes]:
    return [rec for rec in out.split(b"\0") if rec]


def _literal(paths: "Iterable[bytes]") -> bytes:
    return b"".join(b":(literal)" + p + b"\0" for p in paths)


def _worktree_changes(out: bytes) -> tuple[list[bytes], list[bytes]]:
    """(paths whose work-tree state differs from the index, untracked paths) from
    ``git status --porcelain=v2 -z --no-renames``."""
    changed: "list[bytes]"
    new: "list[bytes]"
    changed, new = [], []
    for rec in _z(out):
        kind = rec[:1]
        if kind == b"?":
            new.append(rec[2:])
        elif kind == b"1":
            parts = rec.split(b" ", 8)
            if len(parts) == 9 and parts[1][1:2] != b".":
                changed.append(parts[8])
        elif kind == b"u":
            parts = rec.split(b" ", 10)
            if len(parts) == 11:
                changed.append(parts[10])
        elif kind == b"2":  # (renames are off; kept for safety) "2 XY ... path\0origPath"
            parts = rec.split(b" ", 9)
            if len(parts) == 10 and parts[1][1:2] != b".":
                changed.append(parts[9])
    return changed, new


class _Build:
    """One snapshot's tree, built in a private index (see the comment above).

    Besides git's own data the state keeps two small path sets, so no step needs a
    whole-index comparison: ``ours``, entries only the private index has (untracked
    files it recorded: the ignore rules apply to them), and ``gone``, entries the user's
    index has that the private one dropped (tracked files deleted from the work tree:
    if one comes back it is tracked again, whatever the ignore rules say).  A build that
    died midway leaves ``clean`` false, and the next one recomputes both from the trees.
    """

    ours: "set[bytes]"
    gone: "set[bytes]"
    touched: "set[bytes]"

    def __init__(self, runner: _Runner, priv: _PrivateIndex, real_index: str, parent: str | None,
                 settings: "dict[str, Any]") -> None:
        self.runner, self.priv, self.real_index, self.parent = runner, priv, real_index, parent
        self.settings = settings
        self.cap, self.ucap, self.untracked = settings["cap"], settings["ucap"], settings["untracked"]
        self.top_b = os.fsencode(runner.top)
        self.null = b"0" * settings["oid_len"]
        self.ours, self.gone = set(), set()
        self.touched = set()  # paths whose private-index entry this build may have changed
        self.was_clean = False

    # -- git with GIT_INDEX_FILE set ------------------------------------------------
    def git(self, args: list[str], index: str | None = None, ok: tuple[int, ...] = (0,), input: bytes | None = None,
            optional_locks: bool = False) -> "Done":
        env = dict(self.runner.env, GIT_INDEX_FILE=index or self.priv.path)
        if optional_locks:
            env["GIT_OPTIONAL_LOCKS"] = "1"
        return self.runner.run([*_PRIVATE_CONFIG, *args], input=input, ok=ok, env=env)

    def _index_info(self, entries: "Mapping[bytes, Entry | None]") -> None:
        """Set private-index entries: {path: (mode, oid)}, or None to drop the path."""
        lines = [(entry[0] + b" " + entry[1] if entry else b"0 " + self.null) + b"\t" + path + b"\0"
                 for path, entry in entries.items()]
        if lines:
            self.git(["update-index", "-z", "--index-info"], input=b"".join(lines))

    # -- seeding --------------------------------------------------------------------
    def seed(self) -> "State":
        """A fresh private index: a byte copy of the user's, or HEAD's tree when there is none.

        The copy keeps the user index's mtime: git detects "racily clean" entries (a
        file changed in the same second the index was written) by comparing entry
        mtimes with it, and a fresh mtime would hide those changes.
        """
        index = self.priv.path
        for p in (index, self.priv.state_path, index + ".lock", index + ".user", index + ".user.lock"):
            try:
                os.unlink(p)  # (a lock file here is a crashed git's: we hold the flock)
            except FileNotFoundError:
                pass
        seen: "os.stat_result | None"
        u_key = _stat_key(self.real_index)  # before the copy: a later rewrite only adds racy checks
        try:
            seen = os.stat(self.real_index)
            shutil.copyfile(self.real_index, index)
            os.utime(index, ns=(seen.st_atime_ns, seen.st_mtime_ns))
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            raise SnapshotError("cannot copy the index %s: %s" % (self.real_index, exc)) from None
        if seen is None and self.parent:
            self.git(["read-tree", self.parent])
        # Version 4 (prefix-compressed paths): a quarter smaller, so every later read and write of
        # it is faster.  git's own write re-checks racily clean entries against the copied mtime.
        self.git(["update-index", "--index-version", "4"], ok=(0, 1, 128))
        proc = self.git(["write-tree"], ok=(0, 128))  # the user's tree, to follow its changes (none while unmerged)
        u_tree = proc.stdout.strip().decode("ascii") if proc.returncode == 0 else None
        state = dict(self.settings, format=STATE_FORMAT, u_key=u_key, u_tree=u_tree, tree=None,
                     files=None, bytes=None, ours=[], gone=[], clean=True)
        self.ours, self.gone = set(), set()
        self._excludes_file(state)
        # Seeded: it holds only what the user's index holds, and status filters what is added.
        state["ignore_key"] = self._ignore_key(state)
        return state

    def load(self, state: "State") -> None:
        """Take the path sets from the state; recompute them after a build that died midway."""
        self.was_clean = bool(state.get("clean"))
        if state.get("clean"):
            self.ours = {os.fsencode(p) for p in state.get("ours") or ()}
            self.gone = {os.fsencode(p) for p in state.get("gone") or ()}
            return
        if not state.get("u_tree"):
            raise _Rebuild("the last build died and there is no tree of the user's index to compare with")
        out = self.git(["diff-index", "--cached", "--no-renames", "--name-status", "-z", "--diff-filter=AD",
                        state["u_tree"], "--"]).stdout
        recs = out.split(b"\0")
        self.ours = {p for s, p in zip(recs[0::2], recs[1::2]) if s == b"A"}
        self.gone = {p for s, p in zip(recs[0::2], recs[1::2]) if s == b"D"}

    # -- step 1: follow the user's index ----------------------------------------------
    def sync_user_index(self, state: "State") -> list[bytes]:
        key = _stat_key(self.real_index)
        if key == state.get("u_key"):
            return []
        if key is None or not state.get("u_tree"):
            raise _Rebuild("the user's index appeared, vanished or was unmerged")
        if self.git(["config", "--type=bool", "--get", "core.sparseCheckout"], ok=(0, 1)).stdout.strip() == b"true":
            raise _Rebuild("sparse checkout: what it hides is marked only in the user's index")
        copy = self.priv.path + ".user"
        try:
            shutil.copyfile(self.real_index, copy)
        except OSError as exc:
            raise _Rebuild("cannot copy the user's index: %s" % exc) from None
        proc = self.git(["write-tree"], index=copy, ok=(0, 128))
        if proc.returncode != 0:
            raise _Rebuild("the user's index has no tree (unmerged entries)")
        u_tree = proc.stdout.strip().decode("ascii")
        changed: "dict[bytes, Entry | None]" = {}
        if u_tree != state["u_tree"]:
            out = self.git(["diff-tree", "-r", "-z", "--no-renames", state["u_tree"], u_tree]).stdout
            recs = out.split(b"\0")
            for meta, path in zip(recs[0::2], recs[1::2]):
                parts = meta.lstrip(b":").split(b" ")
                if len(parts) >= 5:
                    changed[path] = None if parts[4][:1] == b"D" else (parts[1], parts[3])
            self._index_info(changed)
            self.touched.update(changed)
            for path in changed:
                self.ours.discard(path)  # now the user's entry, or no entry at all
                self.gone.discard(path)
        state.update(u_key=key, u_tree=u_tree)
        return list(changed)

    # -- steps 2 and 3: the work tree ---------------------------------------------------
    def listing(self) -> tuple[list[bytes], list[bytes]]:
        """(paths whose work-tree state differs from the private index, untracked files)."""
        args = ["status", "--porcelain=v2", "-z", "--no-renames", "--ignore-submodules=dirty",
                "--untracked-files=all" if self.untracked else "--untracked-files=no"]
        out = self.git(args, optional_locks=True).stdout  # our own index: its refreshed stat data is kept
        changed, new = _worktree_changes(out)
        # The user's files deleted earlier and back now: tracked, even where an ignore rule matches them.
        seen = set(changed) | set(new)
        changed += sorted(p for p in self.gone if p not in seen and self._entry_there(p))
        return changed, new

    def _entry_there(self, rel: bytes) -> bool:
        """Is there a file (or a link) at ``rel``: what an index entry of that path can be?

        A directory where the user's file was is not it: the file stays gone (and tracked),
        so when a file comes back there, it is the user's again, whatever an ignore rule says.
        """
        p = os.path.join(self.top_b, rel)
        return os.path.islink(p) or (os.path.lexists(p) and not os.path.isdir(p))

    def _size(self, rel: bytes) -> int | None:
        try:
            st = os.lstat(os.path.join(self.top_b, rel))
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _user_entries(self, paths: list[bytes]) -> "dict[bytes, Entry]":
        """{path: (mode, oid)} of ``paths`` in the user's index (stage 0)."""
        if not paths or not os.path.exists(self.real_index):
            return {}
        out = b""
        for i in range(0, len(paths), 500):  # (ls-files takes no pathspec file)
            specs = [os.fsdecode(b":(literal)" + p) for p in paths[i:i + 500]]
            out += self.git(["ls-files", "-s", "-z", "--", *specs], index=self.real_index).stdout
        found: "dict[bytes, Entry]" = {}
        for rec in _z(out):
            meta, _, path = rec.partition(b"\t")
            mode, oid, stage = meta.split(b" ")
            if stage == b"0":
                found[path] = (mode, oid)
        return found

    def update(self, changed: list[bytes], new: list[bytes]) -> "tuple[Big, list[str]]":
        """Bring the listed paths into the private index; returns (files left out for their size, warnings).

        A tracked file (the user's) over ``cap`` keeps the user's entry; an untracked one over
        ``ucap`` is left out (and dropped if an earlier snapshot had it).
        """
        big: "Big"
        plain: "list[bytes]"
        dirs: "list[bytes]"
        reset: "list[bytes]"
        big, plain, dirs, reset = [], [], [], []
        in_index = set(changed)
        for rel in changed + new:
            tracked = rel in self.gone or (rel not in self.ours and rel in in_index)
            if rel.endswith(b"/"):
                dirs.append(rel)  # an untracked nested repository: add records its commit (a gitlink)
                continue
            size = self._size(rel)
            if size is not None and size > (self.cap if tracked else self.ucap):
                big.append((rel, size, tracked))
                if tracked or rel in self.ours:
                    reset.append(rel)
                continue
            plain.append(rel)
        warnings: "list[str]" = []
        if plain:
            proc = self.git(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"],
                            input=b"".join(p + b"\0" for p in plain), ok=(0, 1, 128))
            if proc.returncode != 0:
                dirs += plain  # e.g. an unreadable file: add -A --ignore-errors skips it with a warning
        if dirs:
            add = self.git(["add", "-A" if self.untracked else "-u", "--ignore-errors",
                            "--pathspec-from-file=-", "--pathspec-file-nul"],
                           input=_literal(p.rstrip(b"/") for p in dirs), ok=(0, 1, 128))
            warnings = [line for line in _text(add.stderr).splitlines()
                        if line.startswith("error:") or line.startswith("warning:")]
            if add.returncode and b"fatal:" in add.stderr:
                raise SnapshotError("git add failed: %s" % _text(add.stderr).strip(),
                                    cmd=["add"], returncode=add.returncode, stderr=_text(add.stderr))
        if reset:
            user = self._user_entries(sorted(r for r in reset if r not in self.ours))
            self._index_info({rel: user.get(rel) for rel in reset})
        # The path sets follow what the private index now holds.
        self.touched.update(plain, (d.rstrip(b"/") for d in dirs), reset)
        for rel in plain + [d.rstrip(b"/") for d in dirs] + reset:
            tracked = rel in self.gone or (rel not in self.ours and rel in in_index)
            present = self._entry_there(rel) and rel not in reset
            if tracked:
                self.ours.discard(rel)
                if present or rel in reset:
                    self.gone.discard(rel)
                else:
                    self.gone.add(rel)
            elif present:
                self.ours.add(rel)
            else:
                self.ours.discard(rel)
        return big, warnings

    # -- step 4: the ignore rules ----------------------------------------------------------
    def _ignore_key(self, state: "State") -> list[list[int] | None]:
        common = self.settings["common_dir"]
        home = os.path.expanduser("~")
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files = [os.path.join(common, "info", "exclude"), os.path.join(common, "config"),
                 os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
                 os.path.join(xdg, "git", "ignore")]
        if state.get("excludes_file"):
            files.append(state["excludes_file"])
        return [_stat_key(f) for f in files]

    def _excludes_file(self, state: "State") -> None:
        excludes = self.git(["config", "--path", "--get", "core.excludesFile"], ok=(0, 1)).stdout.strip()
        state["excludes_file"] = os.fsdecode(excludes) if excludes else None

    def forget_ignored(self, state: "State", touched: list[bytes]) -> None:
        """Drop entries only the private index has (untracked files) that the ignore rules now exclude."""
        key = self._ignore_key(state)
        gitignore = any(p == b".gitignore" or p.endswith(b"/.gitignore") for p in touched)
        if key == state.get("ignore_key") and not gitignore:
            return
        self._excludes_file(state)
        if self.ours:
            proc = self.git(["check-ignore", "--no-index", "-z", "--stdin"],
                            input=b"".join(p + b"\0" for p in sorted(self.ours)), ok=(0, 1))
            ignored = set(_z(proc.stdout))
            if ignored:
                self._index_info({p: None for p in ignored})
                self.ours -= ignored
                self.touched |= ignored
        state["ignore_key"] = self._ignore_key(state)

    # -- all of it ----------------------------------------------------------------------------
    def build(self, state: "State") -> "tuple[str, Big, list[str]]":
        self.load(state)
        if self.priv.persistent:
            _write_state(self.priv.state_path, dict(state, clean=False))  # until the sets match the index again
        touched = self.sync_user_index(state)
        changed, new = self.listing()
        big, warnings = self.update(changed, new)
        self.forget_ignored(state, touched + changed + new)
        proc = self.git(["write-tree"], ok=(0, 128))
        if proc.returncode != 0:
            raise _Rebuild("write-tree failed: %s" % _last_line(proc.stderr))
        state.update(ours=sorted(os.fsdecode(p) for p in self.ours),
                     gone=sorted(os.fsdecode(p) for p in self.gone), clean=True)
        return proc.stdout.strip().decode("ascii"), big, warnings


def _tree_stats(runner: _Runner, tree: str) -> tuple[int, int]:
    """(entries, total blob bytes) of a tree; gitlinks count as entries with no bytes."""
    out = runner.run(["ls-tree", "-r", "-l", "-z", tree]).stdout
    files = size = 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        files += 1
        meta = rec.split(b"\t", 1)[0].split()
        if len(meta) == 4 and meta[3].isdigit():
            size += int(meta[3])
    return files, size


def _tree_stats_since(runner: _Runner, old: str, old_files: int, old_bytes: int, tree: str) -> tuple[int, int]:
    """(entries, bytes) of ``tree`` from those of ``old`` plus the entries that differ (cheap: a tree diff)."""
    out = runner.run(["diff-tree", "-r", "-z", "--no-renames", old, tree]).stdout
    recs = out.split(b"\0")
    sizes: "dict[bytes, int | None]"
    delta: "list[tuple[bytes, int]]"
    files, sizes, delta = old_files, {}, []
    for meta, _ in zip(recs[0::2], recs[1::2]):
        parts = meta.lstrip(b":").split(b" ")
        if len(parts) < 5:
            continue
        old_mode, new_mode, old_oid, new_oid, status = parts[0], parts[1], parts[2], parts[3], parts[4][:1]
        if status == b"D":
            files -= 1
        elif status == b"A":
            files += 1
        for mode, oid, sign in ((old_mode, old_oid, -1), (new_mode, new_oid, 1)):
            if mode not in (b"000000", b"160000") and oid.strip(b"0"):
                sizes[oid] = None
                delta.append((oid, sign))
    if sizes:
        batch = runner.run(["cat-file", "--batch-check=%(objectname) %(objectsize)"],
                           input=b"".join(o + b"\n" for o in sizes)).stdout
        for line in batch.splitlines():
            oid, _, n = line.partition(b" ")
            if n.isdigit():
                sizes[oid] = int(n)
    size = old_bytes
    for oid, sign in delta:
        size += sign * (sizes.get(oid) or 0)
    return files, size


def _entries(runner: _Runner, tree: str, paths: "Iterable[bytes]") -> dict[bytes, int]:
    """{path: blob bytes (0 for a gitlink)} of the entries at or under ``paths`` in ``tree``."""
    env = dict(runner.env, GIT_LITERAL_PATHSPECS="1")
    out = runner.run(["ls-tree", "-r", "-l", "-z", tree, "--", *(os.fsdecode(p) for p in paths)], env=env).stdout
    found: dict[bytes, int] = {}
    for rec in _z(out):
        meta, _, path = rec.partition(b"\t")
        size = meta.split()[3] if len(meta.split()) == 4 else b"-"
        found[path] = int(size) if size.isdigit() else 0
    return found


def _tree_stats_touched(runner: _Runner, old: str, old_files: int, old_bytes: int, tree: str,
                        touched: list[bytes]) -> tuple[int, int]:
    """(entries, bytes) of ``tree`` from ``old``'s and the entries at the touched paths in each."""
    before, after = _entries(runner, old, touched), _entries(runner, tree, touched)
    return (old_files - len(before) + len(after),
            old_bytes - sum(before.values()) + sum(after.values()))


def _totals(runner: _Runner, state: "State", tree: str, build: "_Build | None" = None) -> tuple[int, int]:
    """(entries, bytes) of ``tree``: from the last tree's totals and the difference when known."""
    if state.get("tree") and isinstance(state.get("files"), int) and isinstance(state.get("bytes"), int):
        try:
            if state["tree"] == tree:
                return state["files"], state["bytes"]
            if build is not None and build.was_clean and 0 < len(build.touched) <= 500:
                # Every change to the private index since that tree went through these paths.
                return _tree_stats_touched(runner, state["tree"], state["files"], state["bytes"], tree,
                                           sorted(build.touched))
            return _tree_stats_since(runner, state["tree"], state["files"], state["bytes"], tree)
        except SnapshotError:
            pass  # the old tree is gone (pruned): count from scratch
    return _tree_stats(runner, tree)


def snapshot(root: "StrPath", ref: str, message: str | None, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
             timeout: float = 30, unique: bool = False, untracked: bool = True,
             max_untracked_bytes: int | None = None, index: str | None = None,
             move: bool = False) -> "dict[str, Any]":
    """Record the whole work tree as a commit under ``ref`` without touching user state.

    ``unique``: when ``ref`` is taken, publish under the next free ``<ref>-2``, ``-3`` …
    (the result's ``ref`` says which) instead of failing; an existing ref is never
    moved either way.  ``untracked=False`` records tracked files only (untracked,
    not-ignored files are left out of the snapshot).  Files over a cap are left out
    and listed in ``skipped_large``: a modified tracked file bigger than
    ``max_file_bytes`` keeps its version in the user's index, an untracked one bigger
    than ``max_untracked_bytes`` (default: the same cap; never above it) is not recorded.
    ``index``: the path of a persistent private index (with ``<index>.state`` and
    ``<index>.flock`` beside it) that makes the next snapshot incremental.
    ``move``: ``ref`` is a rolling one (a session's turn-end snapshot): it is set to the new
    commit whatever it held (checkpoint refs are never made this way).
    Returns {"git": False, "reason": ...} for a non-git directory. Raises ValueError
    for a bad ref, SnapshotError when a git command fails (message has git's stderr).
    """
    check_ref(ref)
    started = time.monotonic()
    found = _locate_repo(root, timeout=min(timeout, 10), head=True)
    if found[0] is None:
        return {"git": False, "reason": found[5]}
    top, real_index, common_dir, oid_len, parent, _ = found
    runner = _Runner(top, _env(), timeout)
    runner.env = _env(_identity_env(runner))
    ucap = max_file_bytes if max_untracked_bytes is None else min(max_file_bytes, max_untracked_bytes)
    gitdir = _stat_key(os.path.dirname(real_index))
    # A state written for another repository (or one re-created at this path), or with other caps, is not reused.
    settings = {"top": top, "user_index": os.path.realpath(real_index), "common_dir": common_dir,
                "git_dir": gitdir[:2] if gitdir else None, "oid_len": oid_len,
                "cap": max_file_bytes, "ucap": ucap, "untracked": bool(untracked)}
    priv = _PrivateIndex(index, runner)
    try:
        build = _Build(runner, priv, real_index, parent, settings)
        state = _read_state(priv.state_path) if priv.persistent else None
        mode = "incremental"
        if not state or not os.path.exists(priv.path) or any(state.get(k) != v for k, v in settings.items()):
            state, mode = build.seed(), "seeded"
        try:
            tree, big, warnings = build.build(state)
        except (_Rebuild, SnapshotError) as exc:
            if mode == "seeded" or getattr(exc, "timed_out", False):
                if isinstance(exc, _Rebuild):
                    raise SnapshotError("snapshot failed: %s" % exc) from None
                raise
            build = _Build(runner, priv, real_index, parent, settings)
            state, mode = build.seed(), "reseeded"
            try:
                tree, big, warnings = build.build(state)
            except _Rebuild as exc2:
                raise SnapshotError("snapshot failed: %s" % exc2) from None
        files, size = _totals(runner, state, tree, build)
        state.update(tree=tree, files=files, bytes=size)
        if priv.persistent:
            _write_state(priv.state_path, state)
    finally:
        priv.close()

    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
    msg = _commit_message(message, files, size, big)
    commit = runner.run(args, input=msg).stdout.strip().decode("ascii")
    if move:
        runner.run(["update-ref", "--no-deref", ref, commit])
    else:
        ref = _publish(runner, ref, commit, unique)
    return {
        "git": True, "root": top, "ref": ref, "commit": commit, "tree": tree,
        "parent": parent, "files": files, "bytes": size,
        "skipped_large": [{"path": _text(rel), "size": n, "tracked": t} for rel, n, t in big],
        "warnings": warnings, "index": mode if priv.persistent else "temporary",
        "elapsed_ms": int((time.monotonic() - started) * 1000),
    }


UNIQUE_TRIES = 50


def _publish(runner: _Runner, ref: str, commit: str, unique: bool = False) -> str:
    """Create ``ref`` atomically and return the name used; an existing ref is never moved.

    ``update-ref <ref> <new> ""`` only creates.  A taken name is accepted only if it
    already is this commit; with ``unique`` the next ``-N`` suffix is tried instead
    (also when another process holds the name's lock right now).
    """
    names = [ref] + (["%s-%d" % (ref, i) for i in range(2, UNIQUE_TRIES + 2)] if unique else [])
    err = ""
    for name in names:
        proc = runner.run(["update-ref", "--no-deref", name, commit, ""], ok=(0, 1, 128))
        if proc.returncode == 0:
            return name
        existing = runner.run(["rev-parse", "-q", "--verify", name + "^{commit}"], ok=(0, 1))
        current = existing.stdout.strip().decode("ascii")
        if current == commit:
            return name
        err = _text(proc.stderr).strip()
        if current:
            err = "%s already exists at %s (refusing to overwrite): %s" % (name, current, err)
        elif "cannot lock" not in err or "exists; cannot create" in err:
            break  # not a taken name (a ref in the way of the path, a full disk): another suffix will not help
        if not unique:
            break
    raise SnapshotError("git update-ref %s failed: %s" % (ref, err),
                        cmd=["update-ref", ref], returncode=proc.returncode, stderr=err)


# ----------------------------------------------------------------- listing


def _trailer(message: str, key: str) -> int | None:
    prefix = key + ":"
    for line in reversed(message.splitlines()):
        if line.startswith(prefix):
            value = line[len(prefix):].strip()
            return int(value) if value.isdigit() else None
    return None


def list_snapshots(root: "StrPath", prefix: str = REF_PREFIX) -> "list[dict[str, Any]]":
    """Snapshot refs under ``prefix``, newest first.

    ``size`` is read from the Continuity-Bytes trailer snapshot() writes into the
    commit message (one for-each-ref call for all refs); a ref without it (made by
    something else) is measured with ls-tree. [] for a non-git directory.
    """
    top, _, _ = _locate(root)
    if top is None:
        return []
    fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents)%00%00"
    proc = _git(["for-each-ref", "--sort=-refname", "--sort=-committerdate",
                 "--format=" + fmt, prefix], top)
    if proc.returncode != 0:
        return []
    rows: "list[dict[str, Any]]" = []
    for rec in proc.stdout.split(b"\0\0\n"):
        fields = rec.split(b"\0")
        if len(fields) < 4:
            continue
        ref, sha, created, contents = (_text(f) for f in fields[:4])
        size = _trailer(contents, _TRAILER_BYTES)
        if size is None:
            try:
                size = _tree_stats(_Runner(top, _env(), 30), sha + "^{tree}")[1]
            except SnapshotError:
                size = None
        lines = contents.splitlines()
        rows.append({
            "ref": ref, "commit": sha,
            "created": int(created) if created.isdigit() else None,
            "message": lines[0][:_SUBJECT_MAX] if lines else "",
            "files": _trailer(contents, _TRAILER_FILES),
            "size": size,
        })
    return rows


def list_refs(root: "StrPath", prefix: str) -> list[tuple[str, str, int]]:
    """[(ref, commit, committer time)] under ``prefix``, newest first (one for-each-ref call)."""
    top, _, _ = _locate(root)
    if top is None:
        return []
    proc = _git(["for-each-ref", "--sort=-committerdate", "--sort=-refname",
                 "--format=%(refname)%00%(objectname)%00%(committerdate:unix)", prefix], top)
    rows = []
    for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
        fields = line.split(b"\0")
        if len(fields) == 3:
            rows.append((_text(fields[0]), _text(fields[1]), int(fields[2]) if fields[2].isdigit() else 0))
    rows.sort(key=lambda r: (r[2], r[0]), reverse=True)
    return rows


def delete_refs(root: "StrPath", refs: "Sequence[tuple[str, str]]") -> list[str]:
    """Delete ``refs`` [(ref, commit)], each only if it still points at that commit; the names deleted.

    The one place a snapshot ref is ever deleted (the retention policy decides which).
    """
    top, _, _ = _locate(root)
    if top is None or not refs:
        return []
    for ref, _ in refs:
        check_ref(ref)
        if not ref.startswith(REF_PREFIX):
            raise ValueError("not a snapshot ref: %s" % ref)
    runner = _Runner(top, _env(), 60)
    batch = "".join("delete %s %s\n" % (ref, sha) for ref, sha in refs).encode()
    if runner.run(["update-ref", "--no-deref", "--stdin"], input=batch, ok=(0, 1, 128)).returncode == 0:
        return [ref for ref, _ in refs]
    done = []  # one moved or vanished meanwhile: the others one by one
    for ref, sha in refs:
        if runner.run(["update-ref", "--no-deref", "-d", ref, sha], ok=(0, 1, 128)).returncode == 0:
            done.append(ref)
    return done


# ----------------------------------------------------------------- facts


def _status_facts(out: bytes, facts: "dict[str, Any]", max_files: int) -> None:
    """Parse `git status --porcelain=v2 --branch -z` into branch + bounded dirty list."""
    dirty: "list[dict[str, str]]"
    dirty, count = [], 0
    records = iter(out.split(b"\0"))
    for rec in records:
        if not rec:
            continue
        if rec.startswith(b"# "):
            key, _, value = _text(rec[2:]).partition(" ")
            if key == "branch.oid":
                facts["head"] = None if value == "(initial)" else value
            elif key == "branch.head":
                facts["detached"] = value == "(detached)"
                facts["branch"] = None if facts["detached"] else value
            elif key == "branch.upstream":
                facts["upstream"] = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                facts["ahead"], facts["behind"] = int(ahead[1:] or 0), int(behind[1:] or 0)
            continue
        kind = rec[:1]
        entry = None
        if kind == b"?":
            entry = {"path": _text(rec[2:]), "status": "??"}
        elif kind in (b"1", b"u"):
            parts = rec.split(b" ", 8 if kind == b"1" else 10)
            entry = {"path": _text(parts[-1]), "status": _text(parts[1])}
        elif kind == b"2":
            parts = rec.split(b" ", 9)
            entry = {"path": _text(parts[-1]), "status": _text(parts[1]),
                     "from": _text(next(records, b""))}
        if entry is None:
            continue
        count += 1
        if len(dirty) < max_files:
            dirty.append(entry)
    facts["dirty"] = dirty
    facts["dirty_count"] = count
    facts["dirty_truncated"] = count > len(dirty)


def _diffstat(out: bytes, max_files: int) -> "dict[str, Any]":
    per_file: "list[dict[str, Any]]"
    per_file, added, deleted, files = [], 0, 0, 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        parts = rec.split(b"\t", 2)
        if len(parts) != 3:
            continue
        a = int(parts[0]) if parts[0].isdigit() else None
        d = int(parts[1]) if parts[1].isdigit() else None
        files += 1
        added += a or 0
        deleted += d or 0
        if len(per_file) < max_files:
            per_file.append({"path": _text(parts[2]), "added": a, "deleted": d})
    return {"files": files, "insertions": added, "deletions": deleted,
            "per_file": per_file, "truncated": files > len(per_file)}


def _commits(out: bytes) -> "list[dict[str, Any]]":
    commits: "list[dict[str, Any]]" = []
    for rec in out.split(b"\0"):
        fields = rec.strip(b"\n").split(b"\x1f")
        if len(fields) != 4:
            continue
        sha, when, author, subject = (_text(f) for f in fields)
        commits.append({"sha": sha, "time": int(when) if when.isdigit() else None,
                        "author": author[:_SUBJECT_MAX], "subject": subject[:_SUBJECT_MAX]})
    return commits


def _facts_index(path: str, real_index: str) -> "tuple[str, Lock] | tuple[None, None]":
    """A byte copy of the user's index that keeps git's refreshed stat data: (path, lock) or (None, None).

    ``git status`` must not write the user's index, so a stale stat cache there (every file
    touched by a checkout or a build, and the user not having run git since) makes every
    status read every file again - 20 s at 200 000 files.  The copy is refreshed once and
    reused while the user's index is unchanged (its stat); it is the same index, so the facts
    are the same.  Its own flock; without it, the user's index is read as before.
    """
    from ..lock import Lock, LockTimeout

    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        lock = Lock(path + _FLOCK_SUFFIX, timeout=2.0).acquire()
    except (LockTimeout, OSError):
        return None, None
    try:
        key = _stat_key(real_index)
        state = _read_state(path + _STATE_SUFFIX) or {}
        if key is None:
            raise OSError("no index")
        if state.get("u_key") != key or state.get("user_index") != real_index or not os.path.exists(path):
            for stale in (path + ".lock", path + _STATE_SUFFIX):
                if os.path.exists(stale):
                    os.unlink(stale)
            seen = os.stat(real_index)
            shutil.copyfile(real_index, path)
            os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # racily clean entries stay detectable
            _write_state(path + _STATE_SUFFIX, {"format": STATE_FORMAT, "u_key": key, "user_index": real_index})
            os.chmod(path, 0o600)
        return path, lock
    except OSError:
        lock.release()
        return None, None


def git_facts(root: "StrPath", max_commits: int = 10, max_files: int = 200, timeout: float = 10,
              index: str | None = None) -> "dict[str, Any]":
    """Branch, HEAD, dirty files, diff stat and recent commits as a JSON-able dict.

    Never raises: each failing step adds a line to ``errors`` and the rest is still
    returned. {"git": False} for a non-git directory. The user's index is never written;
    with ``index`` (a path in our state dir) a refreshed copy of it is kept there.
    """
    lock: "Lock | None" = None
    try:
        top, real_index, reason = _locate(root, timeout=timeout)
        if top is not None and real_index is not None and index:  # (the two are set together)
            index, lock = _facts_index(index, real_index)
        return _git_facts(top, reason, max_commits, max_files, timeout, index)
    except Exception as exc:  # noqa: BLE001 - facts must never break a hook
        return {"git": False, "reason": "%s: %s" % (exc.__class__.__name__, exc)}
    finally:
        if lock is not None:
            if index:
                try:
                    os.chmod(index, 0o600)
                except OSError:
                    pass
            lock.release()


def _git_facts(top: str | None, reason: str | None, max_commits: int, max_files: int, timeout: float,
               index: str | None) -> "dict[str, Any]":
    if top is None:
        return {"git": False, "reason": reason}
    facts: "dict[str, Any]" = {"git": True, "root": top, "branch": None, "detached": False, "head": None,
             "dirty": [], "dirty_count": 0, "dirty_truncated": False,
             "diffstat": None, "recent_commits": [], "errors": []}

    env = _env(dict(GIT_INDEX_FILE=index, GIT_OPTIONAL_LOCKS="1")) if index else None

    def step(name: str, args: list[str], ok: tuple[int, ...] = (0,)) -> bytes | None:
        try:
            proc = _git(args, top, timeout=timeout, env=env)
        except (OSError, subprocess.SubprocessError) as exc:
            facts["errors"].append("%s: %s" % (name, exc))
            return None
        if proc.returncode not in ok:
            facts["errors"].append("%s: %s" % (name, _last_line(proc.stderr) or
                                               "exit %d" % proc.returncode))
            return None
        return proc.stdout

    out = step("status", ["status", "--porcelain=v2", "--branch", "-z",
                          "--untracked-files=normal"])
    if out is not None:
        try:
            _status_facts(out, facts, max_files)
        except Exception as exc:  # noqa: BLE001
            facts["errors"].append("status: unparsable output (%s)" % exc)
    if out is None:  # e.g. a corrupt index: HEAD and branch are still readable
        head = _text(step("head", ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
                          ok=(0, 1)) or b"").strip()
        branch = _text(step("branch", ["symbolic-ref", "-q", "--short", "HEAD"],
                            ok=(0, 1)) or b"").strip()
        facts["head"], facts["branch"] = head or None, branch or None
        facts["detached"] = bool(head) and not branch

    base = facts["head"]
    if base is None and not facts["errors"]:
        empty = step("empty-tree", ["hash-object", "-t", "tree", "--stdin"])
        base = empty.strip().decode("ascii") if empty else None
    if base:
        # Plumbing on purpose: porcelain `git diff` refreshes the real index even
        # under GIT_OPTIONAL_LOCKS=0; diff-index never writes and drops stat-only changes.
        out = step("diffstat", ["diff-index", "--numstat", "-z", base, "--"])
        if out is not None:
            facts["diffstat"] = _diffstat(out, max_files)
    if facts["head"] and max_commits > 0:
        out = step("log", ["log", "-n", str(int(max_commits)), "--no-show-signature", "-z",
                           "--format=%H%x1f%at%x1f%an%x1f%s", facts["head"], "--"])
        if out is not None:
            facts["recent_commits"] = _commits(out)
    return facts


# ----------------------------------------------------------------- drift since a snapshot


def _blob_oid(data: bytes, oid_len: int) -> str:
    import hashlib

    h = hashlib.sha256() if oid_len == 64 else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def changed_since(root: "StrPath", commit: str, *, index: str | None = None, facts_index: str | None = None,
                  untracked: bool = True, skip: "Iterable[str]" = (), limit: int = 2000,
                  timeout: float = 10) -> "dict[str, Any]":
    """The files whose content now differs from snapshot ``commit``'s tree: {"changed": [(path, kind)], …}.

    ``kind`` is modified, added or deleted.  Never touches the user's index: the listing runs
    on an index of ours that has git's stat data, so only files that changed are read —
    the persistent snapshot index (``index``, when its flock is free and its last build
    completed), else the refreshed copy of the user's index (``facts_index``), else a
    temporary copy.  Candidates are that index against the snapshot's tree
    (``diff-index --cached``) plus the index against the work tree (``status``); each
    candidate is then checked exactly (blob ids), so an index that moved on since the
    snapshot, or a file changed and changed back, gives no false entry.  More than
    ``limit`` candidates: listed as they are, unchecked (``checked`` false).
    ``skip``: paths the snapshot left out on purpose (over its size caps).
    """
    from ..lock import Lock, LockTimeout

    started = time.monotonic()
    found = _locate_repo(root, timeout=min(timeout, 10), head=True)
    if found[0] is None:
        return {"git": False, "reason": found[5]}
    top, real_index, _common, oid_len, _head, _ = found
    runner = _Runner(top, _env(), timeout)
    proc = runner.run(["rev-parse", "-q", "--verify", "%s^{tree}" % commit], ok=(0, 1, 128))
    if proc.returncode != 0:
        return {"git": True, "error": "the snapshot commit %s is not in the repository (pruned?)" % commit[:12]}
    tree = proc.stdout.strip().decode("ascii")
    locks: "list[Lock]"
    used: str | None
    idx: str | None
    tmpdir: str | None
    lock: "Lock | None"
    locks, used, idx, tmpdir = [], None, None, None
    try:
        if index and os.path.exists(index):
            try:
                lock = Lock(index + _FLOCK_SUFFIX, timeout=0.5).acquire()
            except (LockTimeout, OSError):
                lock = None
            if lock is not None:
                state = _read_state(index + _STATE_SUFFIX) or {}
                if state.get("clean") and state.get("top") == top:
                    locks.append(lock)
                    idx, used = index, "snapshot index"
                else:
                    lock.release()
        if idx is None and facts_index:
            got = _facts_index(facts_index, real_index)
            if got[0]:
                locks.append(got[1])
                idx, used = got[0], "facts index"
        if idx is None:
            tmpdir = tempfile.mkdtemp(prefix="cc-continuity-drift-")
            idx, used = os.path.join(tmpdir, "index"), "temporary index"
            try:
                shutil.copyfile(real_index, idx)
            except OSError:
                runner.run(["read-tree", tree], env=dict(runner.env, GIT_INDEX_FILE=idx))
        env = dict(runner.env, GIT_INDEX_FILE=idx, GIT_OPTIONAL_LOCKS="1")  # our own index: its stat refresh is kept
        listed = set(_z(runner.run(["diff-index", "--cached", "--no-renames", "--name-only", "-z", tree, "--"],
                                   env=env).stdout))
        out = runner.run(["status", "--porcelain=v2", "-z", "--no-renames", "--ignore-submodules=dirty",
                          "--untracked-files=all" if untracked else "--untracked-files=no"], env=env).stdout
        dirty, new = _worktree_changes(out)
        listed.update(dirty, new)
        if idx == index:
            try:
                os.chmod(idx, 0o600)
            except OSError:
                pass
    finally:
        for lock in locks:
            lock.release()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    skip_b = {os.fsencode(p) for p in skip}
    cands = sorted(c for c in listed if c not in skip_b)
    result: "dict[str, Any]" = {"git": True, "tree": tree, "via": used, "checked": True, "candidates": len(cands)}
    if len(cands) > limit:
        result.update(changed=[(_text(c), "changed") for c in cands[:limit]], checked=False, truncated=True)
        result["elapsed_ms"] = int((time.monotonic() - started) * 1000)
        return result
    entries: "dict[bytes, tuple[bytes, str]]" = {}
    for i in range(0, len(cands), 500):
        out = runner.run(["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", tree, "--",
                          *(os.fsdecode(c) for c in cands[i:i + 500])]).stdout
        for rec in _z(out):
            meta, _, path = rec.partition(b"\t")
            mode, _kind, oid = meta.split(b" ")
            entries[path] = (mode, oid.decode("ascii"))
    top_b = os.fsencode(top)
    changed: "list[tuple[bytes, str]]"
    to_hash: "list[bytes]"
    changed, to_hash = [], []
    for c in cands:
        full = os.path.join(top_b, c)
        there = os.path.lexists(full)
        entry = entries.get(c)
        if entry is None:
            if there and not os.path.isdir(full):
                changed.append((c, "added"))
            elif there:
                changed.append((c, "added"))  # a nested repository (git lists it as a directory)
            continue
        if not there:
            changed.append((c, "deleted"))
            continue
        if entry[0] == b"160000":
            changed.append((c, "modified"))  # a submodule status listed: its commit moved
            continue
        if os.path.islink(full):
            if _blob_oid(os.readlink(full), oid_len) != entry[1]:
                changed.append((c, "modified"))
            continue
        to_hash.append(c)
    if to_hash:
        out = runner.run(["hash-object", "--stdin-paths"], input=b"".join(p + b"\n" for p in to_hash)).stdout
        oids = out.decode("ascii", "replace").split()
        for c, hashed in zip(to_hash, oids):
            if hashed != entries[c][1]:
                changed.append((c, "modified"))
    changed.sort()
    result["changed"] = [(_text(c), k) for c, k in changed]
    result["truncated"] = False
    result["elapsed_ms"] = int((time.monotonic() - started) * 1000)
    return result


def history_since(root: "StrPath", old: str | None, timeout: float = 10, limit: int = 10) -> "dict[str, Any]":
    """Branch and HEAD now, and the commits from ``old`` to HEAD: {"branch", "head", "ancestor", "count", "commits"}."""
    found = _locate_repo(root, timeout=timeout, head=True)
    if found[0] is None:
        return {"git": False, "reason": found[5]}
    top, _i, _c, _o, head, _ = found
    out: "dict[str, Any]" = {"git": True, "head": head, "branch": None, "ancestor": None, "count": 0, "commits": []}
    proc = _git(["symbolic-ref", "-q", "--short", "HEAD"], top, timeout=timeout)
    out["branch"] = _text(proc.stdout).strip() or None if proc.returncode == 0 else None
    if not old or not head or old == head:
        out["ancestor"] = bool(old) and old == head
        return out
    proc = _git(["merge-base", "--is-ancestor", old, head], top, timeout=timeout)
    out["ancestor"] = proc.returncode == 0
    if proc.returncode not in (0, 1):
        out["ancestor"] = None  # the old HEAD is gone from the repository
        return out
    if out["ancestor"]:
        proc = _git(["rev-list", "--count", "%s..%s" % (old, head)], top, timeout=timeout)
        out["count"] = int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0
        proc = _git(["log", "-n", str(limit), "--no-show-signature", "-z", "--format=%H%x1f%at%x1f%an%x1f%s",
                     "%s..%s" % (old, head), "--"], top, timeout=timeout)
        if proc.returncode == 0:
            out["commits"] = _commits(proc.stdout)
    return out
