"""Facts about processes, without psutil (the hooks, the CLI and the rotator use these).

Standard library only, so a rotation works on an interpreter with no third-party
packages (a plugin install, a stock distribution Python).
"""

import os
import time


def pid_alive(pid: object) -> bool:
    """True if a process with this pid exists and is not a zombie (even one we may not signal)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OverflowError:
        return False
    try:  # Linux: a zombie has exited; only its parent has not reaped it yet
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def start_ticks(pid: int) -> int | None:
    """Process ``pid``'s start in clock ticks since boot (/proc/<pid>/stat field 22), None where unknown.

    The mod reads the same field from /proc to tell its own process from a later one with the same pid."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch, to a clock tick), or None if it is gone.

    Tells a process from a later one that got the same pid.  Linux: /proc; else ``ps``.
    """
    if not pid_alive(pid):
        return None
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        return round(boot + ticks / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    import subprocess

    try:  # macOS and other BSDs
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True,
                             timeout=5, env={"LC_ALL": "C", "PATH": "/bin:/usr/bin"}).stdout.strip()
        return time.mktime(time.strptime(out, "%a %b %d %H:%M:%S %Y")) if out else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def parent(pid: int) -> int | None:
    """The parent pid of ``pid``, or None.  Linux: /proc; else ``ps``."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import subprocess

    try:
        out = subprocess.run(["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True, timeout=5,
                             env={"LC_ALL": "C", "PATH": "/bin:/usr/bin"}).stdout.strip()
        return int(out) if out.isdigit() else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def ancestors(pid: int, limit: int = 64) -> list[int]:
    """``pid``'s parent, grandparent, ... up to init (bounded)."""
    out: list[int] = []
    p = parent(pid)
    while p and p > 1 and p not in out and len(out) < limit:
        out.append(p)
        p = parent(p)
    return out


def reap(pids: list[int] | tuple[int, ...] | set[int], grace: float = 5.0) -> None:
    """Give ``pids`` up to ``grace`` seconds (in all) to exit, then SIGKILL whatever is left."""
    deadline = time.monotonic() + grace
    for pid in list(pids):
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if pid_alive(pid):
            try:
                os.kill(pid, 9)  # SIGKILL (the signal module pulls in enum: 12 ms)
            except ProcessLookupError:
                pass


def yield_cpu(increment: int) -> None:
    """Lower this process's priority by ``increment`` (a background job's first act); a refusal keeps it."""
    try:
        os.nice(increment)
    except OSError:
        pass
