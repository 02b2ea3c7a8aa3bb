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


def package_parent() -> "str":
    """The folder holding the ``cc_continuity`` package (a detached ``python -S -m`` job gets it as PYTHONPATH)."""
    here = __file__ if __file__.startswith("/") else posix.getcwd() + "/" + __file__
    return here.rpartition("/")[0].rpartition("/")[0] or "/"


def handover_dir() -> "str":
    """Where a verified checkpoint's hand-over is offered to the mod (rotation/handover.py)."""
    return home() + "/runtime/handover"


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


def spool_dir() -> "str":
    """Notifications waiting for delivery."""
    return home() + "/spool"


def claude_config_dir() -> "str":
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` (where settings.json lives)."""
    d = getenv("CLAUDE_CONFIG_DIR")
    return normalize(d) if d else normalize("~/.claude")
