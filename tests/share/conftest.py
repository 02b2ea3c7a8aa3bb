"""The share tests' fixtures: ``git daemon`` on 127.0.0.1, and short publish timings for every test here."""

import os
import signal
import socket
import subprocess
import time

import pytest

from cc_continuity.rotation import turn
from cc_continuity.share import publish
from helpers.share import free_port


@pytest.fixture
def daemon(tmp_path):
    """``git daemon`` on 127.0.0.1 serving tmp_path (receive-pack on); yields its base URL."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr",
                             "--listen=127.0.0.1", "--port=%d" % port, "--base-path=%s" % tmp_path, str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # git runs git-daemon as its child: killed as a group
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield "git://127.0.0.1:%d" % port
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.3)
    monkeypatch.setattr(publish, "LOCAL_CLAIM_WAIT_S", 3)
    monkeypatch.setattr(publish, "RETRY_DELAYS_S", (1, 1))
