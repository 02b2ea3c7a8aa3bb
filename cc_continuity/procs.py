"""Facts about processes, without psutil (the hooks and the CLI use these)."""

import os


def pid_alive(pid):
    """True if a process with this pid exists (even one we may not signal)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True
