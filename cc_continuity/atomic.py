"""Crash-safe file replacement.

Readers either see the old bytes or the new bytes, never a torn file: write a
unique temp file beside the target, fsync it, ``os.replace`` it over the
target, fsync the directory.  A symlinked target (dotfile setups) is written
through to the file it points at, so the link survives — unless
``follow=False``, which replaces the directory entry itself (a link there is
replaced, its target never touched: for files whose path others may tamper with).
"""

import os
import time

TMP_MARK = ".cc-continuity-tmp-"


def resolve_target(path: str) -> str:
    """The real file behind ``path`` (following symlinks, even dangling ones)."""
    return os.path.realpath(path)


def write_bytes(path: str, data: bytes, mode: int | None = None, fsync: bool = True, follow: bool = True) -> str:
    """Atomically replace ``path`` with ``data``.

    ``mode``: the new file's permission bits; by default an existing file
    keeps its mode and a new one gets 0600 (always 0600 with ``follow=False``).
    """
    target = resolve_target(path) if follow else path
    d = os.path.dirname(target) or "."
    if not follow and mode is None:
        mode = 0o600
    if mode is None:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o600
    tmp = os.path.join(d, "%s%s.%d.%s" % (TMP_MARK, os.path.basename(target), os.getpid(), os.urandom(4).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            os.fchmod(fd, mode)  # umask may have masked bits away
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if fsync:
        _fsync_dir(d)
    return target


def write_text(path: str, text: str, mode: int | None = None, fsync: bool = True, follow: bool = True) -> str:
    return write_bytes(path, text.encode("utf-8"), mode=mode, fsync=fsync, follow=follow)


def _fsync_dir(d: str) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def aside_name(d: str, stem: str, suffix: str = "") -> str:
    """A new path in ``d`` for a copy put aside now: ``<stem><UTC stamp><suffix>``, or with ``-2``, ``-3`` ...
    before the suffix when that is taken (an existing file is never the answer)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path, n = os.path.join(d, "%s%s%s" % (stem, stamp, suffix)), 1
    while os.path.lexists(path):
        n += 1
        path = os.path.join(d, "%s%s-%d%s" % (stem, stamp, n, suffix))
    return path


def keep_newest(d: str, names: "list[str]", keep: int, extras: "tuple[str, ...]" = ()) -> None:
    """Delete all but the last ``keep`` of ``names`` (oldest first) from ``d``, each with its ``name + extra``
    companions; a file already gone is fine."""
    for name in names[:-keep] if keep else names:
        for victim in (name,) + tuple(name + e for e in extras):
            try:
                os.unlink(os.path.join(d, victim))
            except FileNotFoundError:
                pass
