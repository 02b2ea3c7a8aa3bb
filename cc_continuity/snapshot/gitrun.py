"""How a snapshot runs git: the one runner of snapshot/, and where the work tree is.

Every git call runs with ``cwd`` = the work tree, on the package's snapshot profile
(:data:`cc_continuity.gitrun.SNAPSHOT`): the repository-locating environment
(``GIT_DIR``, ``GIT_INDEX_FILE``, ...) scrubbed so an outer git process (e.g. a
pre-commit hook running us) cannot redirect us, ``GIT_OPTIONAL_LOCKS=0`` so read-only
commands never refresh the real index, and no program the repository names: no hooks,
no fsmonitor, no credential helper, no filter or diff driver.  This module adds what a
snapshot needs on top: a private index written under umask 077, one deadline for a
snapshot's calls, failures as ``SnapshotError``, and where the work tree is.
Standard library only.
"""

import os
import shutil
import subprocess
import time

from .. import errors, gitrun

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    StrPath = str | os.PathLike[str]
    Done = subprocess.CompletedProcess[bytes]  # a git call's result (bytes out and err)
    # locate_repo: (toplevel, index, common git dir, object id length, HEAD, None), or five Nones and why
    Located = tuple[str, str, str, int, str | None, None] | tuple[None, None, None, None, None, str]
    Found = tuple[str, str, str, int, str | None]  # open_repo: locate_repo's answer for a work tree

SUBJECT_MAX = 200  # a subject or a name in a report is cut to this


SnapshotError = errors.SnapshotError  # (defined with every error class, in errors.py)


# ----------------------------------------------------------------- plumbing


def git_env(extra: "Mapping[str, str] | None" = None) -> dict[str, str]:
    """This process's environment on the snapshot profile, then ``extra``."""
    return gitrun.environ(gitrun.SNAPSHOT, extra=extra)


def git(args: "Sequence[str]", cwd: str, *, env: "Mapping[str, str] | None" = None, input: bytes | None = None,
        timeout: float = gitrun.SNAPSHOT.timeout) -> "Done":
    """Run git; return CompletedProcess with bytes stdout/stderr (never raises on rc).

    With ``GIT_INDEX_FILE`` (only ever one of our private indexes: ``git_env`` drops the
    caller's) git runs under umask 077, so the index it writes is 0600 from its first
    byte: a snapshot killed before its chmod leaves no readable index behind.
    """
    env = env or git_env()
    return gitrun.run(args, cwd, gitrun.SNAPSHOT, env=env, input=input, timeout=timeout,
                      umask=0o077 if "GIT_INDEX_FILE" in env else -1)


def text(data: bytes) -> str:
    """Bytes from git -> str for reports; undecodable bytes stay visible as escapes."""
    return data.decode("utf-8", "backslashreplace")


def last_line(data: bytes) -> str:
    """git's stderr ends with its one-line verdict (``fatal: ...``)."""
    lines = text(data).strip().splitlines()
    return lines[-1] if lines else ""


class Runner:
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
            proc = git(args, self.top, env=env or self.env, input=input, timeout=remaining)
        except subprocess.TimeoutExpired:
            raise SnapshotError("git %s timed out" % args[0], cmd=args, timed_out=True) from None
        if proc.returncode not in ok:
            err = text(proc.stderr).strip()
            verb = next((a for i, a in enumerate(args) if a != "-c" and (i == 0 or args[i - 1] != "-c")), "?")
            raise SnapshotError(
                "git %s failed (exit %d): %s" % (verb, proc.returncode, err or "no message"),
                cmd=args, returncode=proc.returncode, stderr=err)
        return proc


def locate(path: "StrPath", timeout: float = 10.0) -> "tuple[str, str, None] | tuple[None, None, str]":
    """(toplevel, index path, None) for a work tree, else (None, None, reason)."""
    found = locate_repo(path, timeout)
    if found[0] is None:
        return None, None, found[5]
    return found[0], found[1], None


def locate_repo(path: "StrPath", timeout: float = 10.0, head: bool = False) -> "Located":
    """(toplevel, index path, common git dir, object id length, HEAD or None, None) for a work tree,
    else five Nones and the reason.  ``head``: resolve HEAD too (one git call for all of it)."""
    none: "tuple[None, None, None, None, None]" = (None, None, None, None, None)
    args = ["rev-parse", "--show-toplevel", "--git-path", "index", "--git-common-dir", "--show-object-format"]
    try:
        proc = git(args + (["-q", "--verify", "HEAD^{commit}"] if head else []), os.fspath(path), timeout=timeout)
    except FileNotFoundError:
        return none + ("git not installed" if shutil.which("git") is None else "no git",)
    except (NotADirectoryError, PermissionError, subprocess.TimeoutExpired) as exc:
        return none + ("no git (%s)" % exc.__class__.__name__,)
    lines = proc.stdout.split(b"\n")
    if proc.returncode != 0 and not (head and proc.returncode == 1 and len(lines) >= 4 and lines[0]):
        err = text(proc.stderr)
        if "not a git repository" in err or "must be run in a work tree" in err:
            return none + ("no git",)
        return none + ("git refused: %s" % last_line(proc.stderr),)
    if len(lines) < 4 or not lines[0]:
        return none + ("no git",)
    top = os.fsdecode(lines[0])
    index = os.path.join(os.fspath(path), os.fsdecode(lines[1]))
    common = os.path.realpath(os.path.join(os.fspath(path), os.fsdecode(lines[2])))
    oid_len = 64 if lines[3].strip() == b"sha256" else 40
    parent = lines[4].strip().decode("ascii") or None if head and proc.returncode == 0 and len(lines) > 4 else None
    return top, index, common, oid_len, parent, None


def open_repo(root: "StrPath", timeout: float) -> "tuple[Runner, Found] | str":
    """A runner for the work tree at ``root`` (its deadline ``timeout`` from now) and what
    :func:`locate_repo` found there, HEAD included; the reason when there is none."""
    found = locate_repo(root, timeout=min(timeout, 10), head=True)
    if found[0] is None:
        return found[5]
    top, index, common, oid_len, head, _ = found
    return Runner(top, git_env(), timeout), (top, index, common, oid_len, head)



def split_z(out: bytes) -> list[bytes]:
    return [rec for rec in out.split(b"\0") if rec]


def literal(paths: "Iterable[bytes]") -> bytes:
    return b"".join(b":(literal)" + p + b"\0" for p in paths)

