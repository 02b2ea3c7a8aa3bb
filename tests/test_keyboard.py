"""The tests' keyboard (helpers.Keyboard: an attached tmux client typing like a person) itself."""

import select
import threading
import time

import pytest

pytestmark = pytest.mark.skipif(not __import__("shutil").which("tmux"), reason="needs tmux")


def test_a_closed_keyboard_reads_no_file_opened_after_it(server, tmp_path, monkeypatch):
    """close() frees the client's pty fd; the next file the test opens gets its number (in CI: the
    fake prompt's event log, read right after ``kb.close()``).  A reader thread still running then
    read that file instead of the pty, and the test found the log empty or holding only its last
    line.  Here the reader is held back between its select and its read, as on a loaded machine."""
    server.start_fake(str(tmp_path / "fake"))
    log = tmp_path / "events.jsonl"
    log.write_text("".join('{"ev": "submit", "line": "%d"}\n' % n for n in range(3)))
    kb = server.keyboard()
    deadline = time.monotonic() + 10
    while not server.tmux("list-clients", "-t", "work").strip() and time.monotonic() < deadline:
        time.sleep(0.05)  # attached: its reader is in its select on the client's pty
    real, late = select.select, threading.Event()

    def held_back(*args):
        ready = real(*args)
        if late.is_set() and ready[0] and threading.current_thread() is not threading.main_thread():
            time.sleep(0.5)  # woken (the client killed: the pty hangs up), not yet reading
        return ready

    monkeypatch.setattr(select, "select", held_back)
    late.set()
    kb.close()
    reading = kb._reader.is_alive()
    with open(log, encoding="utf-8") as f:
        time.sleep(1.0)  # what a late reader would do with this fd number, it has done by now
        assert f.read() == log.read_text()
    assert not reading  # (it returned before its reader was done)
