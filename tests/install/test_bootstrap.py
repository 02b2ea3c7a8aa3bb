"""install.py's helpers without the network: where the private venv gets its pip, and the
refusals that come before anything is changed (tests/test_readme_install.py runs the whole line)."""

import os
import subprocess
import sys

import pytest

from cc_continuity import cli
from cc_continuity.install import bootstrap
from tests.helpers.pkgindex import PackageIndex, use_index
from helpers import REPO


def test_a_refusing_index_is_named_with_its_credentials_masked(tmp_path, isolated_home, monkeypatch):
    """install.py fills its venv the way a plugin builds its packages (deps.build.make: the user's own index,
    every file's hash); an index that refuses is named in the error, its credentials masked."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no uv: pip from ensurepip
    with PackageIndex(tmp_path, status=403) as index:
        use_index(isolated_home, index.url.replace("//", "//ci:tok3n-value-of-the-index@"))
        venv = os.path.join(bootstrap.venv_dir())
        with pytest.raises(bootstrap.BootstrapError) as e:
            bootstrap.fill_venv(venv, python=sys.executable)
    assert "answered HTTP 403" in str(e.value) and "tok3n-value" not in str(e.value), e.value
    assert "pipx/uv" in str(e.value)
    assert index.requests and all(path.startswith("/simple/") for _, path in index.requests)


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
