"""The launchd agent and the systemd user unit: rendered from the templates, checked by the real tools
where they exist (plistlib, systemd-analyze), and the service-manager commands checked as data."""

import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import types

import pytest

from cc_continuity import cli, paths
from cc_continuity.watch import service

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


class Runner:
    """Records service-manager commands (launchctl cannot run here); answers per command prefix."""

    def __init__(self, manager=True, fail=()):
        self.calls = []
        self.manager = manager
        self.fail = fail

    def __call__(self, argv):
        if argv == ["systemctl", "--user", "show-environment"]:
            return types.SimpleNamespace(returncode=0 if self.manager else 1, stdout="", stderr="")
        self.calls.append(argv)
        bad = any(argv[:len(f)] == list(f) for f in self.fail)
        return types.SimpleNamespace(returncode=1 if bad else 0, stdout="", stderr="boom" if bad else "")


def verify_unit(path, tmp_path):
    """``systemd-analyze verify --user`` without a running user manager: it needs only a runtime dir.

    A short one under /tmp, as tmux's sockets: the user units it loads name sockets in it, and a
    socket path is at most ~108 bytes (a deep pytest tmp_path, as under pytest-xdist, is too long).
    """
    rt = tempfile.mkdtemp(prefix="xdg-", dir="/tmp")
    try:
        env = dict(os.environ, XDG_RUNTIME_DIR=rt, SYSTEMD_LOG_LEVEL="notice")
        return subprocess.run([SYSTEMD_ANALYZE, "verify", "--user", "--man=no", str(path)], capture_output=True,
                              text=True, env=env, timeout=60)
    finally:
        shutil.rmtree(rt, ignore_errors=True)


# -- the templates ------------------------------------------------------------------


def test_repo_top_level_dirs_point_at_the_packaged_templates():
    for kind, name in (("launchd", service.PLIST_NAME), ("systemd", service.UNIT)):
        top = os.path.join(REPO, kind)
        assert os.path.islink(top) and os.readlink(top) == "cc_continuity/data/" + kind
        assert os.path.isfile(os.path.join(top, name))
        with open(os.path.join(top, name)) as f:
            assert service.MARK in f.read()


def test_plist_is_valid_and_runs_the_watchdog(isolated_home):
    vals = dict(service.values(), PYTHON="/opt/py & co/bin/python3", CC_HOME="/Users/me/<state>")
    doc = plistlib.loads(service.render_plist(vals).encode())
    assert doc["Label"] == "com.cc-continuity.watchdog"
    assert doc["ProgramArguments"] == ["/opt/py & co/bin/python3", "-m", "cc_continuity", "watchdog", "run"]
    env = doc["EnvironmentVariables"]
    assert env["CC_CONTINUITY_HOME"] == "/Users/me/<state>"
    assert env["PYTHONPATH"] == vals["PYTHONPATH"] and env["PATH"] == vals["PATH"]
    assert doc["RunAtLoad"] is True and doc["KeepAlive"] == {"SuccessfulExit": False}
    assert doc["Umask"] == 0o077 and doc["ThrottleInterval"] >= 10
    assert doc["StandardErrorPath"] == os.path.join(paths.logs_dir(), "watchdog.err")
    assert not re.search(r"@[A-Z_]+@", service.render_plist(service.values()))      # every placeholder filled
    assert not re.search(r"@[A-Z_]+@", service.render_unit(service.values()))


def test_values_point_at_an_importable_package(isolated_home):
    vals = service.values()
    res = subprocess.run([vals["PYTHON"], "-c", "import cc_continuity.watch.daemon, sys; print(sys.argv)"],
                         env={"PYTHONPATH": vals["PYTHONPATH"], "PATH": vals["PATH"], "HOME": os.environ["HOME"]},
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert shutil.which("tmux", path=vals["PATH"]) or not shutil.which("tmux")
    assert vals["CC_HOME"] == paths.home()


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="needs systemd-analyze")
def test_unit_passes_systemd_analyze_verify(isolated_home, tmp_path):
    unit = tmp_path / service.UNIT
    unit.write_text(service.render_unit(service.values()))
    res = verify_unit(unit, tmp_path)
    assert res.returncode == 0 and res.stderr.strip() == "", res.stderr
    # The check is real: a broken unit is refused.
    unit.write_text(service.render_unit(dict(service.values(), PYTHON="/nonexistent/python")))
    bad = verify_unit(unit, tmp_path)
    assert bad.returncode != 0 and "/nonexistent/python" in bad.stderr


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="needs systemd-analyze")
def test_unit_quotes_awkward_paths(isolated_home, tmp_path):
    odd = tmp_path / "my tools 100%" / "bin"
    odd.mkdir(parents=True)
    os.symlink(sys.executable, odd / "py$thon")
    vals = dict(service.values(), PYTHON=str(odd / "py$thon"), CC_HOME="/home/me/state dir/50%",
                PYTHONPATH="/a b/c")
    text = service.render_unit(vals)
    assert 'ExecStart="%s" -m cc_continuity watchdog run' % str(odd / "py$thon").replace("%", "%%") in text
    assert 'Environment="CC_CONTINUITY_HOME=/home/me/state dir/50%%"' in text
    unit = tmp_path / service.UNIT
    unit.write_text(text)
    res = verify_unit(unit, tmp_path)
    assert res.returncode == 0 and res.stderr.strip() == "", res.stderr


def test_systemd_quote():
    q = service.systemd_quote
    assert q("/usr/bin/python3") == "/usr/bin/python3"
    assert q("a b") == '"a b"'
    assert q('say "hi"\\') == '"say \\"hi\\"\\\\"'
    assert q("50%") == "50%%"
    assert q("$HOME") == "$HOME"


# -- install / uninstall on Linux ---------------------------------------------------------


def unit_file(isolated_home):
    return os.path.join(str(isolated_home), ".config", "systemd", "user", service.UNIT)


def test_install_without_a_user_manager_writes_the_unit_and_prints_what_to_run(isolated_home, capsys):
    path = service.install(platform="linux", runner=Runner(manager=False))
    assert path == unit_file(isolated_home)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    with open(path) as f:
        assert f.read() == service.render_unit(service.values())
    out = capsys.readouterr().out
    assert "No systemd user manager is running" in out
    assert "  systemctl --user daemon-reload\n  systemctl --user enable --now cc-continuity-watchdog.service\n" in out
    assert "loginctl enable-linger" in out


def test_install_with_a_user_manager_runs_systemctl(isolated_home, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    r = Runner()
    path = service.install(platform="linux", runner=r)
    assert path == str(tmp_path / "xdg" / "systemd" / "user" / service.UNIT)
    assert r.calls == [["systemctl", "--user", "daemon-reload"],
                       ["systemctl", "--user", "enable", "cc-continuity-watchdog.service"],
                       ["systemctl", "--user", "restart", "cc-continuity-watchdog.service"]]
    assert "installed and running" in capsys.readouterr().out
    service.install(platform="linux", runner=r)                      # again: same file, restarted
    assert len(r.calls) == 6
    r2 = Runner()
    assert service.uninstall(platform="linux", runner=r2) == path
    assert r2.calls == [["systemctl", "--user", "disable", "--now", "cc-continuity-watchdog.service"],
                        ["systemctl", "--user", "daemon-reload"]]
    assert not os.path.exists(path)
    assert service.uninstall(platform="linux", runner=Runner()) is None


def test_uninstall_removes_the_directories_install_made_and_no_other(isolated_home, capsys):
    before = sorted(os.listdir(str(isolated_home)))
    path = service.install(platform="linux", runner=Runner(manager=False))
    assert os.path.isdir(os.path.join(str(isolated_home), ".config", "systemd", "user"))
    assert service.uninstall(platform="linux", runner=Runner(manager=False)) == path
    assert sorted(n for n in os.listdir(str(isolated_home)) if n != os.path.basename(paths.home())) == before
    # A ~/.config that was there before (with the user's files) stays, and so does a file of theirs
    # put beside ours meanwhile.
    os.makedirs(os.path.join(str(isolated_home), ".config", "git"))
    path = service.install(platform="linux", runner=Runner(manager=False))
    theirs = os.path.join(os.path.dirname(path), "theirs.service")
    open(theirs, "w").close()
    service.uninstall(platform="linux", runner=Runner(manager=False))
    assert os.path.exists(theirs) and os.path.isdir(os.path.join(str(isolated_home), ".config", "git"))


def test_a_failing_systemctl_is_an_error(isolated_home):
    with pytest.raises(service.ServiceError, match="restart .* failed \\(exit 1\\): boom"):
        service.install(platform="linux", runner=Runner(fail=[("systemctl", "--user", "restart")]))


def test_foreign_files_are_neither_overwritten_nor_removed(isolated_home):
    path = unit_file(isolated_home)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("[Service]\nExecStart=/usr/bin/something-else\n")
    with pytest.raises(service.ServiceError, match="not written by cc-continuity"):
        service.install(platform="linux", runner=Runner())
    with pytest.raises(service.ServiceError, match="not written by cc-continuity"):
        service.uninstall(platform="linux", runner=Runner())
    with open(path) as f:
        assert "something-else" in f.read()


def test_dry_run_writes_nothing(isolated_home, capsys):
    service.install(platform="linux", dry_run=True, runner=Runner())
    out = capsys.readouterr().out
    assert "would write %s" % unit_file(isolated_home) in out and "ExecStart=" in out
    assert "$ systemctl --user enable cc-continuity-watchdog.service" in out
    assert not os.path.exists(unit_file(isolated_home))


# -- launchd (commands as data; launchctl runs only on macOS) ---------------------------------------


def test_launchd_install_and_uninstall_commands(isolated_home, capsys):
    r = Runner()
    path = service.install(platform="darwin", runner=r, uid=501)
    assert path == os.path.join(str(isolated_home), "Library", "LaunchAgents", "com.cc-continuity.watchdog.plist")
    with open(path, "rb") as f:
        assert plistlib.load(f)["Label"] == service.LABEL
    assert r.calls == [["launchctl", "bootout", "gui/501/com.cc-continuity.watchdog"],
                       ["launchctl", "enable", "gui/501/com.cc-continuity.watchdog"],
                       ["launchctl", "bootstrap", "gui/501", path],
                       ["launchctl", "kickstart", "-k", "gui/501/com.cc-continuity.watchdog"]]
    # Not loaded yet: the first bootout may fail, nothing else may.
    service.install(platform="darwin", runner=Runner(fail=[("launchctl", "bootout")]), uid=501)
    with pytest.raises(service.ServiceError, match="bootstrap"):
        service.install(platform="darwin", runner=Runner(fail=[("launchctl", "bootstrap")]), uid=501)
    r = Runner()
    assert service.uninstall(platform="darwin", runner=r, uid=501) == path
    assert r.calls == [["launchctl", "bootout", "gui/501/com.cc-continuity.watchdog"]]
    assert not os.path.exists(path)


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the non-macOS path")
def test_launchd_elsewhere_only_prints_the_commands(isolated_home, capsys):
    path = service.install(platform="darwin", uid=501)                # no runner: must not run launchctl
    out = capsys.readouterr().out
    assert "launchctl exists only on macOS" in out
    assert "launchctl bootstrap gui/501 %s" % path in out
    assert os.path.exists(path)


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_install_dry_run_and_unsupported_platform(isolated_home, capsys):
    assert cli.main(["watchdog", "install", "--dry-run", "--platform", "linux"]) == 0
    assert "would write" in capsys.readouterr().out
    assert not os.path.exists(unit_file(isolated_home))
    with pytest.raises(service.ServiceError, match="no service manager support for sunos5"):
        service.install(platform="sunos5")


def test_cli_uninstall_refuses_foreign_unit(isolated_home, capsys):
    path = unit_file(isolated_home)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("[Unit]\n")
    with pytest.raises(SystemExit) as e:
        cli.main(["watchdog", "uninstall", "--platform", "linux"])
    assert e.value.code == 1
    assert "not written by cc-continuity" in capsys.readouterr().err


def test_status_right_after_install_knows_the_service_is_there(isolated_home, capsys, monkeypatch):
    """`watchdog status` after `watchdog install` must not tell the user to run `watchdog install`."""
    monkeypatch.setattr(sys, "platform", "linux")
    assert cli.main(["watchdog", "status"]) == 0
    assert "watchdog install" in capsys.readouterr().out  # nothing installed yet: the hint is right
    service.install(platform="linux", runner=Runner(manager=False))
    capsys.readouterr()
    # No user manager (a container, an ssh login without one): nothing started it, and status says so.
    monkeypatch.setattr(service, "user_manager_running", lambda runner=None: False)
    assert cli.main(["watchdog", "status"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("watchdog: NOT running: its service is installed (%s) but no systemd user "
                                   "manager runs here, so nothing has started it; run `cc-continuity watchdog "
                                   "run` in a terminal that stays open, or, once one runs:" % service.unit_path()), out
    assert "systemctl --user enable --now cc-continuity-watchdog.service" in out
    # With one, the service is starting for its first seconds.
    monkeypatch.setattr(service, "user_manager_running", lambda runner=None: True)
    assert cli.main(["watchdog", "status"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("watchdog: starting (service %s installed" % service.unit_path()), out
    assert "watchdog install" not in out
    # Later, still no daemon: say that it is installed but not running, and how to start it.
    old = os.stat(service.unit_path()).st_mtime - 120
    os.utime(service.unit_path(), (old, old))
    assert cli.main(["watchdog", "status"]) == 0
    out = capsys.readouterr().out
    assert "NOT running, although the service is installed (%s" % service.unit_path() in out, out
    assert "systemctl --user enable --now cc-continuity-watchdog.service" in out
    assert "watchdog install" not in out
    assert cli.main(["watchdog", "status", "--json"]) == 0
    import json
    svc = json.loads(capsys.readouterr().out)["daemon"]["service"]
    assert svc["path"] == service.unit_path() and svc["kind"] == "systemd"


# -- never from a plugin's copy; a unit whose paths are gone is red (issue 32) -------------------------

def test_a_plugins_copy_is_never_what_the_service_runs(isolated_home, monkeypatch, tmp_path):
    """Claude Code replaces a plugin's versioned cache copy at each update (the old one is swept later)
    and deletes its data folder at the last uninstall: the service would stop working by itself."""
    cache = os.path.join(str(isolated_home), ".claude", "plugins", "cache", "cc-continuity", "cc-continuity", "0.1.0")
    os.makedirs(cache)
    os.symlink(os.path.join(REPO, "cc_continuity"), os.path.join(cache, "cc_continuity"))
    code = "import sys; from cc_continuity.watch import service; service.install(platform='linux')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=cache), cwd=str(tmp_path))
    assert p.returncode != 0 and "the watchdog runs from a copy that stays where it is" in p.stderr, p.stderr
    assert "cc-continuity install" in p.stderr and not os.path.exists(unit_file(isolated_home))
    data = os.path.join(str(isolated_home), ".claude", "plugins", "data", "cc-continuity-cc-continuity")
    monkeypatch.setattr(sys, "executable", os.path.join(data, "envs", "py3.11-x", "bin", "python"))
    with pytest.raises(service.ServiceError, match="plugin's copy"):
        service.runtime()


@pytest.mark.parametrize("kind", ["linux", "darwin"])
def test_a_service_whose_python_or_package_is_gone_is_named(isolated_home, tmp_path, kind):
    python = tmp_path / "py" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), python)
    app = tmp_path / "app 100%"  # quoting and %-doubling of the unit read back
    app.mkdir()
    vals = dict(service.values(), PYTHON=str(python), PYTHONPATH="%s:%s/lib" % (app, app))
    path = service.plist_path() if kind == "darwin" else unit_file(isolated_home)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(service.render_plist(vals) if kind == "darwin" else service.render_unit(vals))
    platform = "darwin" if kind == "darwin" else "linux"
    orig = service.installed_service
    service.installed_service = lambda platform_=None, runner=None: orig(platform, Runner())
    try:
        assert service.unit_paths() == (str(python), [str(app), "%s/lib" % app])
        assert service.unit_problem() == "the watchdog's service file names %s/lib, which is gone" % app
        (app / "lib").mkdir()
        assert service.unit_problem() is None
        os.unlink(python)
        assert service.unit_problem() == "the watchdog's service file names %s, which is gone" % python
    finally:
        service.installed_service = orig
