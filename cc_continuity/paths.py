"""Where cc-continuity keeps its state (``$CC_CONTINUITY_HOME``) and how it is made.

Dirs are 0700 and files 0600: handoffs and ledgers quote the user's prompts.

This module is on the per-tool-call path, so it uses the ``posix`` builtin
rather than ``os`` (importing ``os`` alone costs ~15% of the interpreter's
start-up).  Paths are plain strings joined with "/": POSIX only.
"""

import posix
import time

DIR_MODE = 0o700
FILE_MODE = 0o600


def getenv(name: "str", default: "str | None" = None) -> "str | None":
    """An environment variable as str (``posix.environ`` is bytes-keyed)."""
    v = posix.environ.get(name.encode())
    return default if v is None else v.decode("utf-8", "surrogateescape")


def normalize(path: "str") -> "str":
    """An absolute, normalised version of ``path`` (``~`` expanded, no symlink resolution)."""
    if path == "~" or path.startswith("~/"):
        path = (getenv("HOME") or "/") + path[1:]
    if not path.startswith("/"):
        path = posix.getcwd() + "/" + path
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return "/" + "/".join(out)


def join(*parts: "str") -> "str":
    return "/".join(p.rstrip("/") if i < len(parts) - 1 else p for i, p in enumerate(parts))


def home() -> "str":
    """The state root: ``$CC_CONTINUITY_HOME`` or ``~/.claude-continuity``."""
    h = getenv("CC_CONTINUITY_HOME")
    return normalize(h) if h else normalize("~/.claude-continuity")


def ensure_dir(path: "str") -> "str":
    """Create ``path`` with mode 0700; return it.

    Inside ``$CC_CONTINUITY_HOME`` every directory we create is 0700, the
    intermediate ones too (``os.makedirs`` would leave those at 0755).
    Directories that already exist keep their mode.
    """
    import os  # only on slow paths

    if posix.access(path, posix.F_OK):
        return path
    root = home()
    path = normalize(path)
    if path == root or path.startswith(root + "/"):
        parts = [root] + path[len(root) + 1:].split("/") if path != root else [root]
        current = ""
        for i, part in enumerate(parts):
            current = part if i == 0 else current + "/" + part
            if i == 0 and not posix.access(current, posix.F_OK):
                os.makedirs(os.path.dirname(current), exist_ok=True)
            try:
                posix.mkdir(current, DIR_MODE)
            except FileExistsError:
                continue
            posix.chmod(current, DIR_MODE)  # umask may have masked bits
        return path
    os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    return path


_S_IFMT, _S_IFDIR, _S_IFREG, _S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000


def private_dir(path: "str") -> "str":
    """``path`` created if missing, and checked now, at this use: a real directory of ours, made 0700 if it
    was open to others.  Raises :class:`errors.StateDirError` for a link, another user's directory or
    something that is not a directory (nothing is written there then)."""
    ensure_dir(path)
    try:
        st = posix.lstat(path)
    except OSError as e:
        from .errors import StateDirError

        raise StateDirError("%s cannot be examined (%s)" % (path, e.strerror)) from None
    if st.st_mode & _S_IFMT != _S_IFDIR or st.st_uid != posix.geteuid():
        from .errors import StateDirError

        raise StateDirError("the state directory %s is not ours (%s); cc-continuity writes nothing there "
                            "and rotates no session until it is removed" % (
                                path, "a symlink or not a directory" if st.st_mode & _S_IFMT != _S_IFDIR
                                else "owned by uid %d" % st.st_uid))
    if st.st_mode & 0o077:
        posix.chmod(path, DIR_MODE)
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
        chunks = []
        while limit > 0:
            b = posix.read(fd, min(limit, 1 << 16))
            if not b:
                break
            chunks.append(b)
            limit -= len(b)
        return b"".join(chunks)
    finally:
        posix.close(fd)


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
        chunks, left = [], limit + 1
        while left > 0:
            b = posix.read(fd, min(left, 1 << 16))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        if left <= 0:
            raise TooLarge("%s grew over the %d-byte limit while it was read: not read" % (path, limit))
        return b"".join(chunks)
    finally:
        posix.close(fd)


def older_than(directory: "str", age_s: "float", now: "float | None" = None, prefix: "str" = "") -> "list[str]":
    """Paths of the entries of ``directory`` (named ``prefix…``) last changed more than ``age_s`` ago."""
    now = time.time() if now is None else now
    try:
        names = posix.listdir(directory)
    except OSError:
        return []
    out = []
    for name in names:
        path = directory + "/" + name
        try:
            if name.startswith(prefix) and now - posix.lstat(path).st_mtime > age_s:
                out.append(path)
        except OSError:
            continue
    return out


def remove_older(directory: "str", age_s: "float", now: "float | None" = None, prefix: "str" = "") -> "int":
    """Remove what :func:`older_than` finds; how many went."""
    removed = 0
    for path in older_than(directory, age_s, now, prefix):
        try:
            posix.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def config_file() -> "str":
    return home() + "/config.json"


def logs_dir() -> "str":
    return home() + "/logs"


def runtime_dir() -> "str":
    return home() + "/runtime"


def cards_dir() -> "str":
    return home() + "/runtime/cards"


def projects_dir() -> "str":
    return home() + "/projects"


def project_dir(key: "str") -> "str":
    return home() + "/projects/" + key


_SLUG_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def slugify(root: "str") -> "str":
    """A readable, ref-safe name for the project: lower-case [a-z0-9_-], ≤ 40 chars."""
    name = root.rstrip("/").rpartition("/")[2].lower()
    out = []
    for ch in name:
        out.append(ch if ch in _SLUG_OK else "-")
    slug = "".join(out)
    while "--" in slug:
        slug = slug.replace("--", "-")
    slug = slug.strip("-_")[:40].rstrip("-_")
    return slug or "project"


def project_key(root: "str") -> "str":
    """Stable per-root key: slug plus a hash of the resolved path."""
    from .digest import sha256  # here, not at the top: the per-tool-call path never needs it (a shared object on some builds)

    return "%s-%s" % (slugify(root), sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:10])


def project_config_file(root: "str") -> "str":
    """The user's own settings for one project (``configure --project``), kept here, never in the repo."""
    return project_dir(project_key(root)) + "/config.json"


def session_dir(key: "str", number: "int") -> "str":
    return "%s/projects/%s/sessions/%03d" % (home(), key, number)


def spool_dir() -> "str":
    """Notifications waiting for delivery."""
    return home() + "/spool"


def claude_config_dir() -> "str":
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` (where settings.json lives)."""
    d = getenv("CLAUDE_CONFIG_DIR")
    return normalize(d) if d else normalize("~/.claude")
