"""Issue 22, small ones: no traceback from a deleted directory or an absurd number, ``meter`` on a
FIFO answers at once, a failed hook names its session in hooks.log."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from cc_continuity import cli

PY = os.path.realpath(sys.executable)


def verbs():
    parser = cli.build_parser()
    return [c for a in parser._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices]


def run_in_deleted_dir(args):
    d = tempfile.mkdtemp()
    return subprocess.run(["/bin/sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"', d, PY, "-m", "cc_continuity", *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("verb", verbs())
def test_no_verb_gives_a_traceback_from_a_deleted_directory(verb):
    extra = {"meter": ["t.jsonl"], "signal": ["done"], "configure": ["--window", "1000"],
             "hook": ["Stop"], "install": ["--help"]}
    r = run_in_deleted_dir([verb] + extra.get(verb, []))
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    if r.returncode not in (0, 2) and verb not in ("launch", "rehearse"):
        assert "current directory no longer exists" in r.stderr, r.stderr


@pytest.mark.parametrize("args", [
    ["configure", "--window", "1e999"], ["configure", "--window", "-1e999"], ["configure", "--window", "nan"],
    ["configure", "--rotate-tokens", "1e999"], ["configure", "--thresholds", "1e999,1e999,1e999"],
    ["install", "--window", "1e999"], ["meter", "--window", "1e999", "x.jsonl"], ["rehearse", "--timeout", "1e999"],
])
def test_absurd_numbers_get_a_message(args, tmp_path):
    r = subprocess.run([PY, "-m", "cc_continuity", *args], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "error: argument" in r.stderr, r.stderr


def test_meter_on_a_fifo_says_so_at_once(tmp_path):
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    r = subprocess.run([PY, "-m", "cc_continuity", "meter", str(fifo)], capture_output=True, text=True, timeout=20,
                       cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert time.monotonic() - t0 < 10
    assert r.returncode != 0 and "not a regular file" in r.stderr, r.stderr


def test_a_failed_hook_names_its_session(tmp_path):
    code = ("import sys; sys.argv = ['x']; from cc_continuity.hosts.claude.hooks import stop; "
            "stop.handle = lambda call: 1 / 0; from cc_continuity.hosts.claude import hooks; hooks.main(['Stop'])")
    sid = "abcdef12-3456-7890-abcd-ef1234567890"
    payload = {"session_id": sid, "hook_event_name": "Stop", "cwd": str(tmp_path), "transcript_path": "/nonexistent"}
    r = subprocess.run([PY, "-c", code], input=json.dumps(payload).encode(), capture_output=True, timeout=30,
                       cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == b""
    with open(os.path.join(os.environ["CC_CONTINUITY_HOME"], "logs", "hooks.log")) as f:
        lines = [line for line in f if " Stop " in " %s " % line or line.startswith("Stop ")]
    assert lines and "sid=abcdef12" in lines[-1] and "ZeroDivisionError" in lines[-1], lines
