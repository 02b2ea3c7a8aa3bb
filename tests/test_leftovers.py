"""The suite's own teardown check (tests/conftest.py): a process this run started that is still
alive fails the run, named by pid and command line; a process of another run is left alone."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from helpers import leftovers

TESTS = os.path.dirname(os.path.abspath(__file__))

INNER = textwrap.dedent('''
    import os
    import subprocess


    def test_starts_a_detached_sleeper(tmp_path):
        # os.environ holds this test's HOME and CC_CONTINUITY_HOME (tests/conftest.py sets them)
        p = subprocess.Popen(["sleep", "%s"], start_new_session=True)
        open(os.path.join(os.environ["PID_DIR"], "pid-%%d" %% p.pid), "w").close()


    def test_waits_for_its_child(tmp_path):
        subprocess.run(["sleep", "0.1"], check=True)
''')


def inner_run(tmp_path, *extra, seconds="301"):
    d = tmp_path / "inner"
    d.mkdir()
    (d / "test_inner.py").write_text(INNER % seconds)
    env = dict(os.environ, CC_TEST_LEFTOVER_GRACE_S="1", PID_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                          "--rootdir", str(d), "--basetemp", str(tmp_path / "bt"), *extra, str(d)],
                         cwd=str(d), env=env, capture_output=True, text=True, timeout=120)
    return res, [int(p.name[4:]) for p in tmp_path.glob("pid-*")]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_leftover_process_fails_the_run_and_is_named(tmp_path, extra):
    # Another run's process: its path shares our basetemp's text as a prefix but is not under it.
    other = subprocess.Popen(["sleep", "302"], env=dict(os.environ, OTHER_RUN=str(tmp_path / "bt") + "2"),
                             start_new_session=True)
    try:
        res, pids = inner_run(tmp_path, *extra)
        assert res.returncode == 1, res.stdout + res.stderr
        assert "2 passed" in res.stdout, res.stdout
        assert len(pids) == 1, pids
        assert "1 process started by this run outlived it" in res.stdout, res.stdout
        assert "pid %d: sleep 301" % pids[0] in res.stdout, res.stdout
        assert not alive(pids[0])  # and it was killed
        assert "sleep 302" not in res.stdout and alive(other.pid)
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_process_that_ends_within_the_grace_fails_nothing(tmp_path):
    res, pids = inner_run(tmp_path, seconds="0.3")
    assert res.returncode == 0 and "outlived" not in res.stdout, res.stdout + res.stderr


def test_a_path_matches_only_at_a_separator(tmp_path):
    pat = leftovers._pattern(str(tmp_path / "pytest-12"))
    base = os.fsencode(str(tmp_path / "pytest-12"))
    for hit in (base, base + b"/x", b"HOME=" + base + b"/home\x00", base + b":/usr/bin", base + b" -x"):
        assert pat.search(hit), hit
    for miss in (base + b"3", base + b"3/home", base[:-1]):
        assert not pat.search(miss), miss
