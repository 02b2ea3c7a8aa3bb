"""The wrapper in bash *login* shells (``exec $SHELL -l``, every macOS Terminal window).

A login bash reads the first of ~/.bash_profile, ~/.bash_login, ~/.profile and
not ~/.bashrc unless that file sources it.  Real ``bash -l`` (and ``sh`` for
~/.profile, which other shells read too) in a temp HOME, after a real install;
uninstall gives every file back byte for byte.
"""

import os
import shutil
import subprocess

import pytest

from cc_continuity.cli import main
from cc_continuity.install import wrapper

from test_cli import snapshot

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture(autouse=True)
def bash_env(monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")


def login_bash(home, script):
    env = {"HOME": home, "PATH": "/usr/bin:/bin", "TERM": "dumb", "SHELL": "/bin/bash"}
    return subprocess.run(["bash", "-l", "-c", script], env=env, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, cwd=home)


def install(capsys):
    rc = main(["install"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return out


def uninstall(capsys):
    assert main(["uninstall"]) == 0, capsys.readouterr()
    capsys.readouterr()


def claude_is_our_function(home):
    p = login_bash(home, "type claude; echo wrapper=${CC_CONTINUITY_WRAPPER:-unset}")
    return p.returncode == 0 and "claude is a function" in p.stdout and "wrapper=1" in p.stdout, p


@pytest.mark.parametrize("login_file", [None, ".bash_profile", ".profile"])
def test_login_shell_gets_the_wrapper_when_its_file_does_not_read_bashrc(capsys, login_file):
    home = os.environ["HOME"]
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("export EDITOR=vi\n")
    if login_file:
        with open(os.path.join(home, login_file), "w") as f:
            f.write('export PATH="$HOME/bin:$PATH"\nexport FROM_LOGIN=1\n')
    before = snapshot(home)
    ok, p = claude_is_our_function(home)
    assert not ok, "no wrapper before install"

    out = install(capsys)
    target = login_file or ".bash_profile"
    assert "%s: the wrapper for bash login shells" % target in out, out
    ok, p = claude_is_our_function(home)
    assert ok, (p.stdout, p.stderr)
    assert not p.stderr, p.stderr
    if login_file:
        assert login_bash(home, "echo $FROM_LOGIN").stdout.strip() == "1", "the user's own lines still run"
    # The interactive ~/.bashrc path is unchanged: the block is there as before.
    assert "cc-continuity wrapper" in open(os.path.join(home, ".bashrc")).read()
    # Re-install changes nothing.
    again = snapshot(home)
    install(capsys)
    assert {k: v for k, v in snapshot(home).items() if not k.startswith(".claude")} == \
        {k: v for k, v in again.items() if not k.startswith(".claude")}

    if login_file == ".profile":
        # sh reads ~/.profile too (dash, display managers): no syntax error, and no function for it.
        sh = shutil.which("dash") or "/bin/sh"
        q = subprocess.run([sh, "-c", '. "$HOME/.profile" && echo ok:$FROM_LOGIN'], capture_output=True,
                           text=True, env={"HOME": home, "PATH": "/usr/bin:/bin"}, timeout=30)
        assert q.returncode == 0 and q.stdout.strip() == "ok:1" and not q.stderr, (q.stdout, q.stderr)

    uninstall(capsys)
    after = snapshot(home)
    assert {k: v for k, v in after.items() if not k.startswith(".claude")} == \
        {k: v for k, v in before.items() if not k.startswith(".claude")}, "every rc file back byte for byte"
    assert not claude_is_our_function(home)[0]


def test_a_login_file_that_sources_bashrc_is_left_alone(capsys):
    home = os.environ["HOME"]
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("export EDITOR=vi\n")
    profile = '# ~/.bash_profile\nif [ -f "$HOME/.bashrc" ]; then\n    . "$HOME/.bashrc"\nfi\n'
    with open(os.path.join(home, ".bash_profile"), "w") as f:
        f.write(profile)
    # ~/.profile is shadowed by ~/.bash_profile: bash -l never reads it, so it is not touched either.
    with open(os.path.join(home, ".profile"), "w") as f:
        f.write("export X=1\n")
    install(capsys)
    assert open(os.path.join(home, ".bash_profile")).read() == profile
    assert open(os.path.join(home, ".profile")).read() == "export X=1\n"
    ok, p = claude_is_our_function(home)
    assert ok, (p.stdout, p.stderr)
    uninstall(capsys)


def test_bash_login_file_detection(tmp_path):
    home = str(tmp_path)
    assert wrapper.bash_login_file(home) == (os.path.join(home, ".bash_profile"), False)
    (tmp_path / ".profile").write_text("# . ~/.bashrc  (commented out)\necho ~/.bashrc\n")
    assert wrapper.bash_login_file(home) == (os.path.join(home, ".profile"), False)
    (tmp_path / ".bash_login").write_text("[[ -r ~/.bashrc ]] && source ~/.bashrc\n")
    assert wrapper.bash_login_file(home) == (os.path.join(home, ".bash_login"), True)
    (tmp_path / ".bash_profile").write_text("export A=1\n")
    assert wrapper.bash_login_file(home) == (os.path.join(home, ".bash_profile"), False)
