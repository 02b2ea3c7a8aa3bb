"""A checkpoint's work-tree snapshot, taken in a process of its own.

Why: on a large repository the first snapshot (or one after a big change) can take far
longer than the user should wait at a turn's end, and the Stop hook has a hard budget.
So the Stop hook starts ``python -m cc_continuity.snapshot.job '<plan as JSON>'`` in its
own session (it outlives the hook, whatever then drives the ``/clear``: the tmux rotator,
an in-process driver, or the user) and waits for it at most ``snapshot_hook_wait_s``.
What it has not seen finish by then, the job finishes alone.

The job's result file (:func:`session.snapshot_result_path`, the snapshot's result
or its error) is the marker.  Until it exists the checkpoint's git entry is *pending*:
the successor's claim says so in its bootstrap text, and PreToolUse holds back the tools
that can change files (``hooks/pre_tool_use.py``), so nothing changes the work tree before
the snapshot has read it.  A job that died leaves no result: its pid is gone, the wait
ends, and a claim after that says the snapshot job did not finish (:func:`unfinished`).

After its snapshot the job prunes the project's old snapshots (``retention``).
"""

import json
import os
import subprocess
import sys
import time

from .. import atomic, paths, procs, session
from . import worktree
from .gitrun import SnapshotError
from .indexes import read_json
from .refs import REF_PREFIX

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (the Stop hook runs this)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config

PLAN_KEYS = ("root", "ref", "message", "result", "index", "max_file_bytes", "max_untracked_bytes",
             "untracked", "timeout")


def index_path(root: str) -> str:
    """The project's persistent private index (``worktree.snapshot(index=…)``), in our state dir."""
    return paths.project_dir(paths.project_key(root)) + "/snapshot.index"


def result_path(sdir: str, job: str) -> str:
    return session.snapshot_result_path(sdir, job)


def plan(root: str, sdir: str, ref: str, message: str, cfg: "Config | Mapping[str, Any]",
         job: str | None = None) -> "dict[str, Any]":
    job = job or "%x-%s" % (int(time.time()), os.urandom(3).hex())
    return {"job": job, "root": root, "ref": ref, "message": message, "result": result_path(sdir, job),
            "index": index_path(root), "max_file_bytes": cfg["snapshot_max_file_bytes"],
            "max_untracked_bytes": cfg["snapshot_max_untracked_bytes"], "untracked": cfg["snapshot_untracked"],
            "timeout": cfg["snapshot_timeout_s"], "started_at": round(time.time(), 3)}


def take(p: "dict[str, Any]") -> "dict[str, Any]":
    """The snapshot of plan ``p`` in this process: the git entry for the manifest (never raises)."""
    try:
        move = bool(p.get("move"))
        git: "dict[str, Any]" = worktree.snapshot(p["root"], p["ref"], p["message"], max_file_bytes=p["max_file_bytes"],
                               max_untracked_bytes=p["max_untracked_bytes"], untracked=p["untracked"],
                               unique=not move, timeout=p["timeout"], index=p["index"], move=move)
    except (SnapshotError, ValueError, OSError) as e:
        git = {"git": None, "error": str(e)[:500]}
    git["job"] = p.get("job")
    return git


def start(p: "dict[str, Any]", log_path: str | None = None) -> "subprocess.Popen[bytes]":
    """Start the job for plan ``p`` fully detached (own session, stdin from /dev/null); returns the Popen.

    The plan travels as the argument: nothing to write (or to leave behind) before the job runs.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (paths.package_parent(), env.get("PYTHONPATH", "")) if x)
    out = subprocess.DEVNULL
    if log_path:
        paths.ensure_dir(os.path.dirname(log_path))
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, paths.FILE_MODE)
    try:
        return subprocess.Popen([sys.executable, "-S", "-m", "cc_continuity.snapshot.job", json.dumps(p)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd="/", env=env,
                                start_new_session=True, close_fds=True)
    finally:
        if log_path:
            os.close(out)


def read_result(path: str) -> "dict[str, Any] | None":
    """The job's result (the manifest's git entry), or None while it has not finished."""
    return read_json(path)


def pending(p: "dict[str, Any]", pid: int) -> "dict[str, Any]":
    """The git entry of a checkpoint whose snapshot is still being taken by job ``pid``."""
    return {"git": None, "pending": True, "job": p["job"], "pid": pid, "result": p["result"], "ref": p["ref"],
            "started_at": p["started_at"], "until": round(p["started_at"] + p["timeout"] + 30, 3)}


def current(git: "dict[str, Any] | None") -> "dict[str, Any]":
    """A manifest's git entry as it is now: a pending one replaced by the job's result once there."""
    if isinstance(git, dict) and git.get("pending") and isinstance(git.get("result"), str):
        return read_result(git["result"]) or git
    return git or {}


def unfinished(git: "dict[str, Any] | None") -> bool:
    """Did the job of this pending entry stop without its result?  Its process is gone (a zombie counts as
    gone) or it ran past its deadline (``until``), and no result file is there: the snapshot will never be.

    The test PreToolUse's wait makes before it lets file changes through (``hooks/pre_tool_use._snapshot_gate``,
    which may not import this module); the bootstrap and the revalidation say so instead of "being taken".
    A pid we cannot tell about counts as running, as there.
    """
    if not isinstance(git, dict) or not git.get("pending") or not isinstance(git.get("result"), str):
        return False
    pid, until = git.get("pid"), git.get("until")
    gone = isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and not procs.pid_alive(pid)
    late = isinstance(until, (int, float)) and time.time() > until
    # the result is looked at after the pid: a job that has just finished wrote it before it exited
    return (gone or late) and not os.path.exists(git["result"])


def turn_ref(key: str, number: int) -> str:
    """A session's rolling turn-end snapshot ref (moved at every turn end; checkpoint refs never move)."""
    return "%s%s/turn-%03d" % (REF_PREFIX, key, number)


def turn_result_path(sdir: str) -> str:
    return session.turn_snapshot_path(sdir)


def start_turn(root: str, sdir: str, key: str, number: int, name: str | None,
               cfg: "Config | Mapping[str, Any]") -> "subprocess.Popen[bytes] | None":
    """Start the turn-end snapshot of session ``number`` in the background; the Popen, or None when skipped.

    Skipped while a snapshot holds the project's private index (the last turn's, or a
    checkpoint's): the next turn end takes it.  Never waited for.
    """
    from ..lock import Lock, LockTimeout

    d = root
    while not os.path.exists(os.path.join(d, ".git")):  # not a git work tree: nothing to start
        if os.path.dirname(d) == d:
            return None
        d = os.path.dirname(d)
    idx = index_path(root)
    try:
        Lock(idx + ".flock", timeout=0).acquire().release()
    except (LockTimeout, OSError):
        return None
    p = plan(root, sdir, turn_ref(key, number), "turn end of %s" % name, cfg)
    p.update(result=turn_result_path(sdir), move=True, prune=False, nice=10)  # behind the user's own work
    return start(p, paths.logs_dir() + "/snapshot.log")


def run_for_checkpoint(root: str, sdir: str, ref: str, message: str,
                       cfg: "Config | Mapping[str, Any]", wait_s: float | None = None) -> "dict[str, Any]":
    """Snapshot for a checkpoint: in the job, waited for at most ``wait_s`` (default ``snapshot_hook_wait_s``).

    Returns the git entry: the result when the job finished in time, else a pending entry.
    A job that cannot be started is replaced by the snapshot in this process.
    """
    p = plan(root, sdir, ref, message, cfg)
    try:
        proc = start(p, paths.logs_dir() + "/snapshot.log")
    except OSError:
        return take(p)
    try:
        proc.wait(timeout=cfg["snapshot_hook_wait_s"] if wait_s is None else wait_s)
    except subprocess.TimeoutExpired:
        pass
    got = read_result(p["result"])
    return got if got is not None else pending(p, proc.pid)


def main(argv: list[str]) -> int:
    try:
        p = json.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        p = None
    missing = [k for k in PLAN_KEYS if not isinstance(p, dict) or k not in p]
    if missing or not isinstance(p, dict):  # (a p that is no dict misses every key: the isinstance is for mypy)
        print("usage: python -m cc_continuity.snapshot.job '<plan JSON>' (missing: %s)" % ", ".join(missing),
              file=sys.stderr)
        return 2
    if isinstance(p.get("nice"), int) and p["nice"] > 0:
        procs.yield_cpu(p["nice"])
    git = take(p)
    git["finished_at"] = round(time.time(), 3)
    atomic.write_text(p["result"], json.dumps(git) + "\n", mode=paths.FILE_MODE, fsync=False)
    if p.get("prune", True):
        try:
            from . import retention
            from ..config import load
            from ..project import Project

            proj = Project(p["root"])
            retention.prune(proj, load(proj.root))
        except Exception as e:  # noqa: BLE001 - pruning is housekeeping; the snapshot is done
            print("snapshot job: prune failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
