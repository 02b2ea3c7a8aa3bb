"""lock.Lock: an flock with a timeout that a dead holder can never keep."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cc_continuity.lock import Lock, LockTimeout, holder_pid, is_held

HOLDER = textwrap.dedent("""
    import sys, time
    from cc_continuity.lock import Lock
    lk = Lock(sys.argv[1]).acquire()
    sys.stdout.write("held\\n"); sys.stdout.flush()
    time.sleep(60)
""")


@pytest.fixture
def holder(tmp_path):
    """A real child process holding the lock; killed at teardown."""
    path = str(tmp_path / "lock")
    procs = []

    def start():
        p = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdout=subprocess.PIPE)
        procs.append(p)
        assert p.stdout.readline() == b"held\n"
        return p

    yield path, start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_acquire_release_and_context_manager(tmp_path):
    path = str(tmp_path / "lock")
    with Lock(path) as lk:
        assert is_held(path)
        assert holder_pid(path) == os.getpid()
        assert lk._fd is not None
    assert not is_held(path)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)


def test_second_acquirer_times_out_while_live_holder(holder):
    path, start = holder
    p = start()
    assert is_held(path)
    assert holder_pid(path) == p.pid
    t0 = time.monotonic()
    with pytest.raises(LockTimeout) as exc:
        Lock(path, timeout=0.3).acquire()
    waited = time.monotonic() - t0
    assert waited >= 0.3
    assert path in str(exc.value)
    assert isinstance(exc.value, TimeoutError)


def test_two_locks_in_one_process_exclude_each_other(tmp_path):
    path = str(tmp_path / "lock")
    first = Lock(path).acquire()
    try:
        with pytest.raises(LockTimeout):
            Lock(path, timeout=0.1).acquire()
    finally:
        first.release()
    Lock(path, timeout=0.1).acquire().release()


def test_sigkilled_holder_never_blocks(holder):
    path, start = holder
    p = start()
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    t0 = time.monotonic()
    lk = Lock(path, timeout=5).acquire()
    took = time.monotonic() - t0
    try:
        assert took < 0.5, "a dead holder delayed the next acquirer by %.2fs" % took
        assert holder_pid(path) == os.getpid()
    finally:
        lk.release()
    assert not is_held(path)


def test_waiter_gets_lock_soon_after_release(holder):
    path, start = holder
    p = start()
    killer = subprocess.Popen([sys.executable, "-c", "import os,sys,time,signal; time.sleep(0.3); "
                               "os.kill(int(sys.argv[1]), signal.SIGTERM)", str(p.pid)])
    try:
        t0 = time.monotonic()
        with Lock(path, timeout=10):
            took = time.monotonic() - t0
        assert 0.2 <= took < 30
    finally:
        killer.wait()


def test_is_held_and_holder_pid_on_missing_or_garbage(tmp_path):
    path = str(tmp_path / "lock")
    assert not is_held(path)
    assert holder_pid(path) is None
    with open(path, "wb") as f:
        f.write(b"not a pid\n")
    assert holder_pid(path) is None
    assert not is_held(path)


def test_waiter_never_ends_up_on_a_removed_lock_file(holder):
    """doctor --fix may delete a stuck lock file; a waiter must then lock the file now at that path,
    or two processes would each hold "the" lock."""
    import threading

    path, start = holder
    p = start()
    got = {}

    def wait():
        got["lock"] = Lock(path, timeout=20).acquire()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)  # the waiter has opened the old file and is polling it
    os.unlink(path)
    p.kill()
    p.wait()
    t.join(30)
    lk = got["lock"]
    try:
        assert os.fstat(lk._fd).st_ino == os.stat(path).st_ino
        with pytest.raises(LockTimeout):
            Lock(path, timeout=0.1).acquire()  # a newcomer sees it held
    finally:
        lk.release()
