"""Facts about processes, without psutil (the hooks and the CLI use these)."""

import os
import signal
import time


def pid_alive(pid):
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


def reap(pids, grace=5.0):
    """Give ``pids`` up to ``grace`` seconds (in all) to exit, then SIGKILL whatever is left."""
    deadline = time.monotonic() + grace
    for pid in list(pids):
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
