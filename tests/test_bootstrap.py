"""install.py's helpers without the network: where the private venv gets its pip, and the
refusals that come before anything is changed (tests/test_readme_install.py runs the whole line)."""

import importlib.util
import os
import subprocess
import sys

import pytest

from cc_continuity import cli
from cc_continuity.install import bootstrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_requirements_are_pyprojects():
    assert bootstrap.requirements(REPO) == ["psutil>=5.9", "libtmux>=0.37", "watchdog>=4.0", "requests>=2.31"]


def test_no_ensurepip_uses_the_system_pip_to_fill_the_venv(tmp_path, monkeypatch):
    """Debian's python3 without python3-venv: a pip-less venv, filled by `python3 -m pip --python`."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ensurepip" else real(name, *a))
    venv = str(tmp_path / "state" / "venv")
    pip = bootstrap.make_venv(venv, python=sys.executable)
    assert pip == [sys.executable, "-m", "pip", "--python", os.path.join(venv, "bin", "python")]
    assert not os.path.exists(os.path.join(venv, "bin", "pip")), "made --without-pip"
    assert oct(os.stat(venv).st_mode & 0o777) == "0o700"
    listed = subprocess.run(pip + ["list", "--format=freeze"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "psutil" not in listed.stdout, "it lists the venv's packages, not this interpreter's"


def test_missing_git_or_tmux_is_named_and_nothing_is_done(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    assert bootstrap.main([], REPO, cli) == 1
    err = capsys.readouterr().err
    assert "missing git and tmux" in err and "sudo apt-get install git && sudo apt-get install tmux" in err
    assert "brew install tmux" in err
    assert not os.path.exists(bootstrap.venv_dir())


def test_help_runs_nothing(capsys):
    assert bootstrap.main(["--help"], REPO, cli) == 0
    assert "usage: python3 install.py" in capsys.readouterr().out
    assert not os.path.exists(bootstrap.venv_dir())


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs /usr/bin/python3")
def test_install_py_refuses_an_old_python_with_what_to_install(tmp_path):
    """Run on a Python < 3.11 (simulated: the check reads sys.version_info), it names the fix."""
    code = ("import sys; sys.version_info = (3, 9, 6); sys.argv = ['install.py']; "
            "p = %r; exec(compile(open(p).read(), p, 'exec'), {'__file__': p, '__name__': '__main__'})"
            % os.path.join(REPO, "install.py"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert p.returncode == 1
    assert "needs Python >= 3.11 (this is 3.9)" in p.stderr and "brew install python@3.12" in p.stderr


def _listing(root):
    return sorted((os.path.relpath(os.path.join(d, n), root), os.lstat(os.path.join(d, n)).st_mtime_ns)
                  for d, dirs, files in os.walk(root) for n in dirs + files)


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs /usr/bin/python3")
@pytest.mark.parametrize("args, rc, said", [
    (["--dry-run"], 0, "dry run: would create the virtualenv %(home)s/.claude-continuity/venv"),
    (["--window", "abc"], 2, "argument --window: expected a token count"),
    (["--dry-run", "--thresholds", "90,80,70"], 2, "need warn <= rotate <= hard"),
    ([], 1, "settings.json"),  # a settings.json it cannot parse: refused before the venv is made
])
def test_install_py_writes_nothing_when_dry_or_refusing(tmp_path, args, rc, said):
    home = tmp_path / "fresh"
    home.mkdir()
    (home / ".bashrc").write_text("export EDITOR=vi\n")
    if not args:
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").write_text('{"model": "opus",\n')
    before = _listing(str(home))
    p = subprocess.run(["/usr/bin/python3", os.path.join(REPO, "install.py")] + args, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env={"HOME": str(home), "PATH": "/usr/bin:/bin", "SHELL": "/bin/bash"})
    assert p.returncode == rc, p.stdout + p.stderr
    assert said % {"home": home} in p.stdout + p.stderr, p.stdout + p.stderr
    assert _listing(str(home)) == before, "install.py wrote into HOME"
    if args == ["--dry-run"]:
        assert "dry run: nothing is written" in p.stdout and "would write" in p.stdout, p.stdout
