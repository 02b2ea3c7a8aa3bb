"""Our private indexes on disk: the state file beside each, its flock, the one a snapshot builds in,
and the refreshed copy of the user's index that the facts and the drift read through.

The user's own index is never written: each of these is a file in our state dir (or a temp dir).
"""

import json
import os
import shutil
import tempfile
import time

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..lock import Lock
    from .gitrun import Runner

    State = dict[str, Any]  # a private index's state file (see build.Build)


STATE_FORMAT = 1
STATE_SUFFIX = ".state"
FLOCK_SUFFIX = ".flock"
_FLOCK_WAIT_S = 10.0


def stat_key(path: str) -> list[int] | None:
    """What identifies one version of a file without reading it (None when it is missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def read_json(path: str) -> "dict[str, Any] | None":
    """The JSON object in a file of ours; None when it is missing, unreadable, torn or not an object."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_state(path: str) -> "State | None":
    doc = read_json(path)
    return doc if doc is not None and doc.get("format") == STATE_FORMAT else None


def write_state(path: str, doc: "Mapping[str, Any]") -> None:
    tmp = "%s.tmp%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, json.dumps(doc, sort_keys=True).encode("ascii"))  # (lone surrogates escaped: undecodable names)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class PrivateIndex:
    """The index a snapshot is built in: the persistent one (locked) or a temp one."""

    def __init__(self, path: str | None, runner: "Runner") -> None:
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
                self._lock = Lock(path + FLOCK_SUFFIX, timeout=wait).acquire()
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
        self.state_path = self.path + STATE_SUFFIX

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



def user_index_copy(path: str, real_index: str) -> "tuple[str, Lock] | tuple[None, None]":
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
        lock = Lock(path + FLOCK_SUFFIX, timeout=2.0).acquire()
    except (LockTimeout, OSError):
        return None, None
    try:
        key = stat_key(real_index)
        state = read_state(path + STATE_SUFFIX) or {}
        if key is None:
            raise OSError("no index")
        if state.get("u_key") != key or state.get("user_index") != real_index or not os.path.exists(path):
            for stale in (path + ".lock", path + STATE_SUFFIX):
                if os.path.exists(stale):
                    os.unlink(stale)
            seen = os.stat(real_index)
            shutil.copyfile(real_index, path)
            os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # racily clean entries stay detectable
            write_state(path + STATE_SUFFIX, {"format": STATE_FORMAT, "u_key": key, "user_index": real_index})
            os.chmod(path, 0o600)
        return path, lock
    except OSError:
        lock.release()
        return None, None
