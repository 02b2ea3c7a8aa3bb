"""Per-project advisory lock (``flock``) with a timeout.

``flock`` locks die with their process, so a holder that was SIGKILLed never
blocks anyone.  The holder's pid is written into the file only to help
``doctor`` explain who holds it, and cleared on release (so a file naming a dead
pid is one whose holder died holding it).
"""

import fcntl
import os
import time

from .procs import pid_alive

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (hooks import this)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, Self


class LockTimeout(TimeoutError):
    """The lock stayed held by another live process for the whole timeout."""


class Lock:
    def __init__(self, path: str, timeout: float = 10.0, poll: float = 0.005) -> None:
        self.path = path
        self.timeout = timeout
        self.poll = poll
        self._fd: int | None = None

    def acquire(self) -> "Self":
        deadline = time.monotonic() + self.timeout
        delay = self.poll
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if self._still_linked(fd):
                    break
                # The file was removed (doctor --fix) while we waited: lock the new one.
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                continue
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout("lock %s still held after %.1fs" % (self.path, self.timeout)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"%d\n" % os.getpid(), 0)
        except OSError:
            pass
        self._fd = fd
        return self

    def _still_linked(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                try:  # a released lock names no holder: only one that died holding it is stale
                    os.ftruncate(fd, 0)
                except OSError:
                    pass
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    __enter__ = acquire

    def __exit__(self, *exc: object) -> "Literal[False]":
        self.release()
        return False


def holder_pid(path: str) -> int | None:
    """The pid recorded by the last holder, or None (diagnostics only)."""
    try:
        with open(path, "rb") as f:
            return int(f.read(32).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _while_free(path: str, then: "Callable[[], bool]") -> "bool | None":
    """Take the lock at ``path`` without waiting and return ``then()`` run while holding it; None when a
    live process holds it; False when the file cannot be opened (or ``then`` fails)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return then()
    except BlockingIOError:
        return None
    except OSError:
        return False
    finally:
        os.close(fd)


def is_held(path: str) -> bool:
    """True when some live process holds the lock right now."""
    return _while_free(path, lambda: False) is None


def is_stale(path: str) -> bool:
    """A lock file whose recorded holder is dead and that nobody holds now (doctor's leftovers)."""
    pid = holder_pid(path)
    return pid is not None and not pid_alive(pid) and not is_held(path)


def remove_if_stale(path: str) -> bool:
    """Delete a stale lock file while holding it ourselves, and only if its holder is still dead.

    (Acquirers re-check the inode after locking, so one waiting on the removed file
    moves to a new one.)
    """
    def remove() -> bool:
        pid = holder_pid(path)
        if pid is None or pid_alive(pid):
            return False
        os.unlink(path)
        return True

    return bool(_while_free(path, remove))
