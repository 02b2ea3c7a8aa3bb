"""Which project a session belongs to, and its session counter.

The root is the git top level (found by walking up for ``.git``, no
subprocess), else the launch directory.  Hooks must locate it from
``CLAUDE_PROJECT_DIR``: the payload's ``cwd`` follows ``cd``.
Standard library only (hook fast path).
"""

import os
import shutil

from . import atomic, fastjson, paths, safefile, session
from .card import valid_session_id
from .lock import Lock
from .paths import project_key, slugify  # noqa: F401 (their home is paths: config needs the key too)

LEASES = "leases.json"  # in the project dir: the remote leases held for its work (share.py, lease.py)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (hooks import this)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .session import Record


class RecordEdit:
    """The one way to change a session's record: take the project's lock, load the record fresh, and save it
    when the block ends cleanly having changed it (a ``session.transition`` inside saves by itself; an
    exception saves nothing).  The lock path is the project's (a detached process has it from its plan)."""

    def __init__(self, sdir: str, lock_path: str, timeout: float = 10.0) -> None:
        self.sdir = sdir
        self.lock = Lock(lock_path, timeout=timeout)
        self.rec: "Record | None" = None

    def __enter__(self) -> "Record":
        self.lock.acquire()
        try:
            self.rec = session.load(self.sdir)
        except BaseException:
            self.lock.release()
            raise
        return self.rec

    def __exit__(self, exc_type: "object", exc: "object", tb: "object") -> None:
        try:
            if exc_type is None and self.rec is not None:
                try:
                    changed = fastjson.dumps(self.rec) != fastjson.dumps(session.load(self.sdir))
                except (OSError, ValueError):
                    changed = True
                if changed:
                    session.save(self.sdir, self.rec)
        finally:
            self.lock.release()


def find_root(start: str) -> str:
    """The git top level containing ``start`` (resolved), else ``start`` itself."""
    start = os.path.realpath(start)
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent


def launch_dir(payload: "dict[str, Any] | None" = None, env: "Mapping[str, str] | None" = None) -> str:
    """Where Claude Code was started: CLAUDE_PROJECT_DIR wins over the hook's cwd."""
    env = os.environ if env is None else env
    d = env.get("CLAUDE_PROJECT_DIR")
    if d:
        return d
    if payload:
        ws = payload.get("workspace")  # status line payloads: the launch dir, unaffected by cd
        project_dir = ws.get("project_dir") if isinstance(ws, dict) else None
        if isinstance(project_dir, str) and project_dir:
            return project_dir
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
    return os.getcwd()


class Project:
    def __init__(self, root: str) -> None:
        self.root = root
        self.slug = slugify(root)
        self.key = project_key(root)
        self.dir = paths.project_dir(self.key)

    @classmethod
    def discover(cls, start: str) -> "Project":
        return cls(find_root(start))

    # -- files ---------------------------------------------------------------
    @property
    def meta_path(self) -> str:
        return os.path.join(self.dir, "project.json")

    @property
    def leases_path(self) -> str:
        """The remote leases this machine holds for the project's work (share.remember; lease.py renews them)."""
        return os.path.join(self.dir, LEASES)

    @property
    def lock_path(self) -> str:
        return os.path.join(self.dir, "lock")

    def ids_path(self, session_id: str) -> str:
        return os.path.join(self.dir, "ids", session_id)

    def session_dir(self, number: int) -> str:
        return os.path.join(self.dir, "sessions", "%03d" % number)

    def session_name(self, number: int) -> str:
        return "%s-%03d" % (self.slug, number)

    def remember_pid(self, pid: int | None, number: int, cleared: float | None) -> None:
        """Which session an agent process runs now, and when it cleared it (``pids/<pid>``): the successor
        a ``/clear`` starts in that process is paired by it (:meth:`cleared_by`)."""
        if not pid:
            return
        paths.ensure_dir(os.path.join(self.dir, "pids"))
        atomic.write_text(os.path.join(self.dir, "pids", str(pid)),
                          fastjson.dumps({"number": number, "cleared": cleared}), fsync=False)

    def cleared_by(self, pid: int | None) -> int | None:
        """The session this agent process just cleared, if its end by ``/clear`` was seen."""
        if not pid:
            return None
        try:
            with open(os.path.join(self.dir, "pids", str(pid)), "rb") as f:
                info = fastjson.loads(f.read())
        except (OSError, ValueError):
            return None
        if isinstance(info, dict) and info.get("cleared"):
            number = info.get("number")
            return number if isinstance(number, int) else None
        return None

    def lock(self, timeout: float = 10.0) -> Lock:
        paths.ensure_dir(self.dir)
        return Lock(self.lock_path, timeout=timeout)

    def edit(self, sdir: str, timeout: float = 10.0) -> "RecordEdit":
        """``with proj.edit(sdir) as rec:`` - change a session's record (see :class:`RecordEdit`)."""
        paths.ensure_dir(self.dir)
        return RecordEdit(sdir, self.lock_path, timeout)

    def ensure(self) -> None:
        """Create the project's directories (0700), or check those there: ours and private (made 0700 again
        when open to others; :class:`errors.StateDirError` for a link or another user's); idempotent."""
        for d in (paths.home(), paths.projects_dir(), self.dir):
            safefile.private_dir(d)
        for sub in ("sessions", "ids", "pids"):
            safefile.private_dir(os.path.join(self.dir, sub))

    def load_meta(self) -> "dict[str, Any]":
        try:
            with open(self.meta_path, "rb") as f:
                meta = fastjson.loads(f.read())
            if isinstance(meta, dict):
                return meta
        except (OSError, ValueError):
            pass
        return {"root": self.root, "slug": self.slug, "key": self.key, "counter": self._counter_from_dirs()}

    def save_meta(self, meta: "dict[str, Any]") -> None:
        atomic.write_text(self.meta_path, fastjson.dumps(meta))

    def _counter_from_dirs(self) -> int:
        """Recover the counter from the session dirs when project.json is lost."""
        try:
            names = os.listdir(os.path.join(self.dir, "sessions"))
        except OSError:
            return 0
        nums = [int(n) for n in names if n.isdigit()]
        return max(nums) if nums else 0

    def _counter(self, meta: "dict[str, Any]") -> int:
        """The highest session number: the counter, moved past any session dir above it.

        Probing upwards costs one stat (a listing would grow with the history); a lost
        project.json recovers from the dirs (``load_meta``).
        """
        n = int(meta.get("counter", 0))
        while os.path.isdir(self.session_dir(n + 1)):
            n += 1
        return n

    def peek_next_number(self) -> int:
        return self._counter(self.load_meta()) + 1

    def newest_number(self) -> int:
        """The highest session number in use (0 for none)."""
        return self._counter(self.load_meta())

    def allocate_number(self) -> int:
        """Reserve the next session number.  Call with the project lock held."""
        self.ensure()
        meta = self.load_meta()
        n = self._counter(meta) + 1
        meta.update({"root": self.root, "slug": self.slug, "key": self.key, "counter": n})
        self.save_meta(meta)
        paths.ensure_dir(self.session_dir(n))
        return n

    # -- session id -> number ------------------------------------------------
    def lookup(self, session_id: object) -> int | None:
        """The session number registered for ``session_id``, or None."""
        if not valid_session_id(session_id):
            return None
        try:
            target = os.readlink(self.ids_path(session_id))
        except OSError:
            return None
        tail = target.rstrip("/").rsplit("/", 1)[-1]
        return int(tail) if tail.isdigit() else None

    def link(self, session_id: str, number: int) -> None:
        """Map ``session_id`` to session ``number`` (replacing any old mapping)."""
        link = self.ids_path(session_id)
        tmp = link + ".tmp%d" % os.getpid()
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink("../sessions/%03d" % number, tmp)
        os.replace(tmp, link)

    def numbers(self) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(os.path.join(self.dir, "sessions")) if n.isdigit())
        except OSError:
            return []

    # -- the open-session index (session.open_marker) -------------------------
    @property
    def open_dir(self) -> str:
        return os.path.join(self.dir, "open")

    def open_numbers(self) -> list[int]:
        """Numbers of the sessions that may be open (not ROTATED/ENDED), ascending.

        From the index when it exists; before the first registration built it (a project
        from an older version), from a scan of every record.
        """
        try:
            return sorted(int(n) for n in os.listdir(self.open_dir) if n.isdigit())
        except FileNotFoundError:
            return [n for n, _ in self._scan_open()]
        except OSError:
            return []

    def _scan_open(self) -> "list[tuple[int, Record]]":
        from . import session

        found: "list[tuple[int, Record]]" = []
        for n in self.numbers():
            try:
                rec = session.load(self.session_dir(n))
            except (OSError, ValueError):
                continue
            if rec["state"] not in session.TERMINAL:
                found.append((n, rec))
        return found

    def ensure_open_index(self) -> None:
        """Build the index once (a project from before it existed).  Call with the project lock held:
        every move of a record into an open state (a new session, a resume) happens under it."""
        if os.path.isdir(self.open_dir):
            return
        tmp = "%s.tmp%d" % (self.open_dir, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        paths.ensure_dir(tmp)
        for n, _ in self._scan_open():
            with open(os.path.join(tmp, "%03d" % n), "w"):
                pass
        os.rename(tmp, self.open_dir)


def all_projects() -> list[Project]:
    """Every project we have state for (for status/verify/watchdog)."""
    out: list[Project] = []
    try:
        keys = sorted(os.listdir(paths.projects_dir()))
    except OSError:
        return out
    for key in keys:
        meta_path = os.path.join(paths.project_dir(key), "project.json")
        try:
            with open(meta_path, "rb") as f:
                meta = fastjson.loads(f.read())
            p = Project(meta["root"])
            if p.key == key:
                out.append(p)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out
