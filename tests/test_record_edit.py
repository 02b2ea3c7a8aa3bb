"""The one way to change a session's record (project.RecordEdit), under concurrent writers."""

import multiprocessing
import os

import pytest

from cc_continuity import session
from cc_continuity.project import Project, RecordEdit


def _setup(tmp_path):
    proj = Project(str(tmp_path / "repo"))
    proj.ensure()
    sdir = proj.session_dir(1)
    os.makedirs(sdir)
    session.save(sdir, session.new_record(1, proj.session_name(1), "s-1"))
    return proj, sdir


def _bump(lock_path, sdir, key, times, start):
    start.wait()
    for _ in range(times):
        with RecordEdit(sdir, lock_path) as rec:
            got = rec.get("flags") or {}
            got[key] = got.get(key, 0) + 1
            got["total"] = got.get("total", 0) + 1
            rec["flags"] = got


def test_concurrent_writers_lose_no_edit(tmp_path):
    proj, sdir = _setup(tmp_path)
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_bump, args=(proj.lock_path, sdir, "w%d" % i, 25, start)) for i in range(8)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    flags = session.load(sdir)["flags"]
    assert flags["total"] == 200 and all(flags["w%d" % i] == 25 for i in range(8)), flags


def test_an_edit_that_changes_nothing_writes_nothing(tmp_path):
    proj, sdir = _setup(tmp_path)
    before = os.stat(session.state_path(sdir))
    with proj.edit(sdir) as rec:
        assert rec["state"] == session.ACTIVE
    after = os.stat(session.state_path(sdir))
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_transition_inside_is_saved_once_and_later_changes_are_saved_too(tmp_path):
    proj, sdir = _setup(tmp_path)
    with proj.edit(sdir) as rec:
        session.transition(sdir, rec, session.WARNED, "test")
        saved = os.stat(session.state_path(sdir)).st_ino
    assert os.stat(session.state_path(sdir)).st_ino == saved  # nothing changed after it: not written again
    with proj.edit(sdir) as rec:
        session.transition(sdir, rec, session.ROTATION_PENDING, "test")
        rec["pending_note"] = "after the transition"
    got = session.load(sdir)
    assert got["state"] == session.ROTATION_PENDING and got["pending_note"] == "after the transition"


def test_an_exception_saves_nothing_and_frees_the_lock(tmp_path):
    proj, sdir = _setup(tmp_path)
    with pytest.raises(RuntimeError):
        with proj.edit(sdir) as rec:
            rec["pending_note"] = "half done"
            raise RuntimeError("boom")
    assert "pending_note" not in session.load(sdir)
    with proj.edit(sdir, timeout=0.5) as rec:  # the lock was released
        rec["pending_note"] = "next"
    assert session.load(sdir)["pending_note"] == "next"


def test_a_missing_record_raises_and_frees_the_lock(tmp_path):
    proj, sdir = _setup(tmp_path)
    with pytest.raises(OSError):
        with proj.edit(proj.session_dir(7)):
            pass
    with proj.edit(sdir, timeout=0.5):
        pass
