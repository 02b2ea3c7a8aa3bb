"""The system's rows (doctor/system.py): the app copy, permissions, leftovers, the config, ntfy."""

import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from cc_continuity import __version__, atomic, lock, paths
from cc_continuity.hosts.claude import launchenv

from helpers.doctor import red


def test_app_copy_must_match_the_installed_version(inst):
    init = os.path.join(inst.app, "cc_continuity", "__init__.py")
    with open(init) as f:
        text = f.read()
    with open(init, "w") as f:
        f.write(text.replace('__version__ = "%s"' % __version__, '__version__ = "0.0.1"'))
    red(inst.check("app-copy")["app-copy"], "0.0.1", __version__)
    shutil.rmtree(inst.app)
    red(inst.check("app-copy")["app-copy"], "missing")


# -- state directory ---------------------------------------------------------------

def _project_dir(key):
    paths.ensure_dir(paths.projects_dir())
    return paths.ensure_dir(paths.project_dir(key))


def test_open_permissions_are_red_and_fix_takes_exactly_those_bits_away(inst):
    proj = _project_dir("repo-abc")
    state = os.path.join(proj, "project.json")
    with open(state, "w") as f:
        f.write("{}")
    os.chmod(state, 0o644)
    os.chmod(proj, 0o755)
    r = inst.check("permissions")["permissions"]
    red(r, "project.json (644)", "cc-continuity doctor --fix")
    # Code may be world-readable but never group/world-writable: install.py's venv is code,
    # made under the user's umask (755 dirs, 644 files).
    venv = os.path.join(inst.cchome, "venv", "lib")
    os.makedirs(venv)
    os.chmod(venv, 0o755)
    os.chmod(os.path.join(inst.app, "cc_continuity"), 0o777)
    red(inst.check("permissions")["permissions"], "cc_continuity (777)")
    r = inst.check("permissions", fix=True)["permissions"]
    assert r.ok and "fixed 3 path(s)" in r.detail, r
    assert os.stat(state).st_mode & 0o777 == 0o600 and os.stat(proj).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(inst.app, "cc_continuity")).st_mode & 0o777 == 0o755  # readable stays readable
    assert os.stat(venv).st_mode & 0o777 == 0o755  # was never wrong
    assert inst.check("permissions")["permissions"].ok


def test_a_lock_released_by_its_holder_is_no_leftover(inst):
    path = os.path.join(inst.cchome, "install.lock")
    with lock.Lock(path):
        pass
    assert os.path.exists(path)
    r = inst.check("leftovers")["leftovers"]
    assert r.ok and r.detail == "no leftover temp files or stale locks", r


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_leftovers_are_listed_and_fix_removes_only_ours(inst):
    old = time.time() - 3600
    proj = _project_dir("repo-abc")

    def touch(path, content="x", mtime=None):
        with open(path, "w") as f:
            f.write(content)
        if mtime:
            os.utime(path, (mtime, mtime))
        return path

    old_tmp = touch(os.path.join(proj, atomic.TMP_MARK + "state.json.123.abcd"), mtime=old)
    old_tmp_settings = touch(os.path.join(paths.claude_config_dir(), atomic.TMP_MARK + "settings.json.9.ff"),
                             mtime=old)
    young_tmp = touch(os.path.join(proj, atomic.TMP_MARK + "ledger.jsonl.5.beef"))
    env_dir = paths.ensure_dir(launchenv.files_dir())
    old_env = touch(os.path.join(env_dir, "env-repo-001-1-aa.json"), '{"env": {}}', mtime=old)
    stale_lock = touch(os.path.join(proj, "lock"), "%d\n" % _dead_pid())
    other = _project_dir("other-def")
    live_lock = os.path.join(other, "lock")
    unheld_live_pid = touch(os.path.join(_project_dir("third"), "lock"), "%d\n" % os.getpid())
    user_file = touch(os.path.join(proj, "notes.txt"), mtime=old)

    with lock.Lock(live_lock):
        r = inst.check("leftovers")["leftovers"]
        red(r, "temp file", "launch environment", "lock file", "cc-continuity doctor --fix")
        r = inst.check("leftovers", fix=True)["leftovers"]
        assert r.ok, r
        for gone in (old_tmp, old_tmp_settings, old_env, stale_lock):
            assert not os.path.exists(gone) and gone in r.detail
        for kept in (young_tmp, live_lock, unheld_live_pid, user_file):
            assert os.path.exists(kept)
    assert inst.check("leftovers")["leftovers"].ok


def test_stale_locks_alone_are_not_an_error(inst):
    proj = _project_dir("repo-abc")
    with open(os.path.join(proj, "lock"), "w") as f:
        f.write("%d\n" % _dead_pid())
    r = inst.check("leftovers")["leftovers"]
    assert r.ok and "1 lock file" in r.detail


def test_invalid_config_is_red_with_the_file_and_key(inst):
    with open(paths.config_file(), "w") as f:
        f.write('{"rotate": "soon"}')
    red(inst.check("config")["config"], "config.json", "rotate")


# -- notifications ---------------------------------------------------------------------

class _Ntfy(http.server.BaseHTTPRequestHandler):
    status = 200
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append((self.path, dict(self.headers), body))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def ntfy():
    handler = type("H", (_Ntfy,), {"received": [], "status": 200})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv, handler
    finally:
        srv.shutdown()
        srv.server_close()


def _configure(inst, *args):
    subprocess.run([sys.executable, "-m", "cc_continuity.cli", "configure", *args], env=inst.env,
                   cwd=str(inst.repo), check=True, capture_output=True)


def test_ntfy_unconfigured_reachable_unreachable(inst, ntfy):
    assert "not configured" in inst.check("ntfy")["ntfy"].detail
    srv, handler = ntfy
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/topic" % srv.server_address[1])
    r = inst.check("ntfy")["ntfy"]
    assert r.ok and "reachable" in r.detail
    assert handler.received == []  # a plain doctor run sends nothing
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/topic" % closed)
    red(inst.check("ntfy")["ntfy"], "cannot connect")


def test_notify_test_without_ntfy_says_nothing_was_sent(inst, ntfy):
    srv, handler = ntfy
    r = inst.check("ntfy", notify_test=True)["ntfy"]
    red(r, "no ntfy URL is configured", "no test message was sent", "configure --ntfy")
    assert handler.received == []


def test_notify_test_sends_one_real_message(inst, ntfy):
    srv, handler = ntfy
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/my-topic" % srv.server_address[1])
    r = inst.check("ntfy", notify_test=True)["ntfy"]
    assert r.ok, r
    assert len(handler.received) == 1 and handler.received[0][0] == "/my-topic"
    handler.status = 403
    red(inst.check("ntfy", notify_test=True)["ntfy"], "not delivered", "403")
