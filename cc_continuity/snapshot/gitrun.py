"""How a snapshot runs git: the one runner of snapshot/, and where the work tree is.

Every git call runs with ``cwd`` = the work tree, the repository-locating
environment (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) scrubbed so an outer git
process (e.g. a pre-commit hook running us) cannot redirect us,
``GIT_OPTIONAL_LOCKS=0`` so read-only commands never refresh the real index,
and a profile that runs no program the repository names: no hooks, no fsmonitor,
no credential helper, no filter or diff driver.  Standard library only.
"""

import os
import re
import shutil
import subprocess
import time

from .. import errors

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    StrPath = str | os.PathLike[str]
    Done = subprocess.CompletedProcess[bytes]  # a git call's result (bytes out and err)
    # locate_repo: (toplevel, index, common git dir, object id length, HEAD, None), or five Nones and why
    Located = tuple[str, str, str, int, str | None, None] | tuple[None, None, None, None, None, str]
    Found = tuple[str, str, str, int, str | None]  # open_repo: locate_repo's answer for a work tree

SUBJECT_MAX = 200  # a subject or a name in a report is cut to this


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


SnapshotError = errors.SnapshotError  # (defined with every error class, in errors.py)


# ----------------------------------------------------------------- plumbing


def git_env(extra: "Mapping[str, str] | None" = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_ENV}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    if extra:
        env.update(extra)
    return env


def git(args: "Sequence[str]", cwd: str, *, env: "Mapping[str, str] | None" = None, input: bytes | None = None,
         timeout: float = 30.0) -> "Done":
    """Run git; return CompletedProcess with bytes stdout/stderr (never raises on rc).

    With ``GIT_INDEX_FILE`` (only ever one of our private indexes: ``git_env`` drops the
    caller's) git runs under umask 077, so the index it writes is 0600 from its first
    byte: a snapshot killed before its chmod leaves no readable index behind.
    """
    env = env or git_env()
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
                                 cwd=cwd, env=git_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
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

