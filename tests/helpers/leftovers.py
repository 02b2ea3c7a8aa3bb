"""Processes a test run left behind, found by a path of that run (never by a process name).

A process is ours when a path of this run (its basetemp root, or a test's CC_CONTINUITY_HOME
under it) appears in its environment (``/proc/<pid>/environ``, as it was at its exec) or its
command line.  Another pytest run on the same machine has another basetemp, so its processes
never match; the path must end at a separator (``/tmp/pytest-of-u/pytest-12`` is not
``.../pytest-123``).  Linux only (``/proc``); elsewhere nothing is found.
"""

import os
import re
import signal
import time


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # gone meanwhile, or not ours to read
        return b""


def _ancestors():
    """This process and every parent up to init: they hold the run's paths legitimately."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        stat = _read("/proc/%d/stat" % pid).decode("utf-8", "replace")
        try:
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            break
    return pids


def _pattern(marker):
    # The path, then a separator: '/' (under it), NUL (end of a variable or an argument),
    # ':' (a PATH-like list), whitespace or the end.
    return re.compile(re.escape(os.fsencode(os.path.abspath(marker))) + rb"(?:[/\x00:\s]|$)")


def find(marker):
    """``[(pid, cmdline)]`` of live processes holding ``marker`` in their environment or command line."""
    if not os.path.isdir("/proc"):
        return []
    pat, skip, found = _pattern(marker), _ancestors(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        pid = int(name)
        cmdline = _read("/proc/%d/cmdline" % pid)
        if not cmdline:  # a zombie or a kernel thread: nothing runs there
            continue
        if pat.search(cmdline) or pat.search(_read("/proc/%d/environ" % pid)):
            found.append((pid, cmdline.rstrip(b"\x00").replace(b"\x00", b" ").decode("utf-8", "replace")))
    return found


def wait_gone(marker, timeout):
    """Wait up to ``timeout`` s for every process holding ``marker`` to end; the ones still alive."""
    deadline = time.monotonic() + timeout
    while True:
        left = find(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def kill(procs):
    for pid, _cmdline in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
