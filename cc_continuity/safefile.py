"""Files and directories we must not trust blindly: regular files only, bounded reads, private dirs.

What a repository, the user's tree or another process could have put at a path we read or
write: a link, a FIFO, a device, a directory, a huge file, a directory open to others. Kept
out of ``paths`` (the per-tool-call path loads that module on every call, and none of this
runs there). Standard library only, ``posix`` rather than ``os``, like ``paths``.  The agent's
transcript, which every tool call reads, has its own opener with the same rule in the kernel
(``meter.open_transcript``: regular files only, a FIFO refused before it can block).
"""

import posix

from . import paths
from .errors import StateDirError

_S_IFMT, _S_IFDIR, _S_IFREG, _S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000


def private_dir(path: "str") -> "str":
    """``path`` created if missing, and checked now, at this use: a real directory of ours, made 0700 if it
    was open to others.  Raises :class:`errors.StateDirError` for a link, another user's directory or
    something that is not a directory (nothing is written there then)."""
    paths.ensure_dir(path)
    try:
        st = posix.lstat(path)
    except OSError as e:
        raise StateDirError("%s cannot be examined (%s)" % (path, e.strerror)) from None
    if st.st_mode & _S_IFMT != _S_IFDIR or st.st_uid != posix.geteuid():
        raise StateDirError("the state directory %s is not ours (%s); cc-continuity writes nothing there "
                            "and rotates no session until it is removed" % (
                                path, "a symlink or not a directory" if st.st_mode & _S_IFMT != _S_IFDIR
                                else "owned by uid %d" % st.st_uid))
    if st.st_mode & 0o077:
        posix.chmod(path, paths.DIR_MODE)
    return path


def private_dir_problem(path: "str") -> "str | None":
    """Why ``path`` is not a real directory of ours that only we can enter; None when it is.

    ``lstat``: a symlink to a directory is *not* one (it could point anywhere).
    """
    try:
        st = posix.lstat(path)
    except OSError as e:
        return "%s cannot be examined (%s)" % (path, e.strerror)
    if st.st_mode & _S_IFMT != _S_IFDIR:
        return "%s is not a directory (a symlink or another kind of file)" % path
    if st.st_uid != posix.geteuid():
        return "%s belongs to another user" % path
    if st.st_mode & 0o077:
        return "%s is open to other users (mode %o, expected 700)" % (path, st.st_mode & 0o777)
    return None


def _regular_problem(path: "str", st: "posix.stat_result") -> "str | None":
    if st.st_mode & _S_IFMT != _S_IFREG:
        return "%s is not a regular file (a symlink, directory, FIFO or device)" % path
    if st.st_uid != posix.geteuid():
        return "%s belongs to another user" % path
    if st.st_nlink != 1:
        return "%s has other hard links" % path
    return None


def regular_file_problem(path: "str", missing_ok: "bool" = False) -> "str | None":
    """Why ``path`` is not a plain file of ours (no link of either kind); None when it is (or is absent)."""
    try:
        st = posix.lstat(path)
    except FileNotFoundError:
        return None if missing_ok else "%s does not exist" % path
    except OSError as e:
        return "%s cannot be examined (%s)" % (path, e.strerror)
    return _regular_problem(path, st)


class NotRegular(OSError):
    """The path is a symlink, FIFO, device, directory, hard-linked or not ours: not read, not written."""


def read_regular(path: "str", limit: "int" = 1 << 22, chmod: "int | None" = None) -> "bytes":
    """The bytes of the plain file ``path`` (at most ``limit``), never through a link or from a FIFO.

    ``O_NOFOLLOW | O_NONBLOCK`` then ``fstat`` on the open file, so what is checked is what is read;
    ``chmod``: also set these permission bits on it (through the same descriptor).
    Raises FileNotFoundError, or :class:`NotRegular` saying why.
    """
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise NotRegular("%s is a symlink or cannot be opened (%s)" % (path, e.strerror)) from None
    try:
        problem = _regular_problem(path, posix.fstat(fd))
        if problem:
            raise NotRegular(problem)
        if chmod is not None:
            posix.fchmod(fd, chmod)
        return _read_upto(fd, limit)
    finally:
        posix.close(fd)


def _read_upto(fd: "int", limit: "int") -> "bytes":
    """At most ``limit`` bytes from ``fd``, in 64 KiB reads."""
    chunks = []
    while limit > 0:
        b = posix.read(fd, min(limit, 1 << 16))
        if not b:
            break
        chunks.append(b)
        limit -= len(b)
    return b"".join(chunks)


class TooLarge(NotRegular):
    """The file is over the size cap: not read (the message gives sizes, never content)."""


def read_bounded(path: "str", limit: "int" = 1 << 20, inside: "str | None" = None) -> "bytes":
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes; for files we do not write.

    A repository's files (``inside``: its root) and the user's own: a link is
    followed only when its target stays inside ``inside`` (anywhere when None),
    and the target is then checked like the path itself.  FIFOs, devices and
    directories are refused before they are opened (nothing can block or stream
    without end), and the open file is checked again (``O_NOFOLLOW | O_NONBLOCK``,
    then ``fstat`` on the descriptor: what is checked is what is read).
    Raises FileNotFoundError, :class:`NotRegular` or :class:`TooLarge`; the
    messages name the path and why, never the content.
    """
    target = path
    st = posix.lstat(path)  # FileNotFoundError as is
    if st.st_mode & _S_IFMT == _S_IFLNK or inside is not None:
        import os.path  # a link, or a repository's file (whose folders may be links): off the hot path

        target = os.path.realpath(path)
        if inside is not None and not target.startswith(os.path.realpath(inside).rstrip("/") + "/"):
            raise NotRegular("%s is a symlink that leads outside %s: not read" % (path, inside))
        try:
            st = posix.stat(target)
        except OSError as e:
            raise NotRegular("%s is a symlink to what cannot be examined (%s): not read" % (path, e.strerror)) from None
    if st.st_mode & _S_IFMT != _S_IFREG:
        raise NotRegular("%s is not a regular file (a FIFO, device, directory or broken link): not read" % path)
    if st.st_size > limit:
        raise TooLarge("%s is %d bytes, over the %d-byte limit: not read" % (path, st.st_size, limit))
    try:
        fd = posix.open(target, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise NotRegular("%s cannot be opened (%s)" % (path, e.strerror)) from None
    try:
        now = posix.fstat(fd)
        if now.st_mode & _S_IFMT != _S_IFREG or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise NotRegular("%s changed while it was opened: not read" % path)
        data = _read_upto(fd, limit + 1)
        if len(data) > limit:
            raise TooLarge("%s grew over the %d-byte limit while it was read: not read" % (path, limit))
        return data
    finally:
        posix.close(fd)


def untrusted_program(path: "str") -> "str | None":
    """Why the program at ``path`` may not be run by us; None when it may.

    A program found on PATH (a Python, ``uv``, ``pip``) is run only when the folder it was found in,
    the file it resolves to and that file's folder are owned by this user or root and writable by no
    one else: a ``python3`` (or a link named so) dropped into a world-writable folder early on PATH is
    never executed, not even to ask its version.  The rule of the plugin's interpreter chooser
    (plugin/hooks/python.sh).
    """
    import os.path  # (a program's check only, never on a tool call)

    given = paths.normalize(path)
    real = os.path.realpath(given)
    for what in dict.fromkeys((os.path.dirname(given), real, os.path.dirname(real))):
        try:
            st = posix.stat(what)
        except OSError as e:
            return "%s cannot be examined (%s)" % (what, e.strerror)
        if st.st_uid not in (posix.geteuid(), 0):
            return "%s belongs to uid %d" % (what, st.st_uid)
        if st.st_mode & 0o022:
            return "%s is writable by others (mode %o)" % (what, st.st_mode & 0o777)
    return None

