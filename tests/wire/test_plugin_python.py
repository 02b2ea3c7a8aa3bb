"""plugin/hooks/python.sh: the plugin's SessionStart chooses the Python every other hook runs.

Run for real with sh, against real interpreters (pyenv's shims and versions where this
machine has them, the system's): what it links as ``$CLAUDE_PLUGIN_DATA/python``, when it
chooses again, what it refuses, and the one line it shows when nothing fits.
"""

import json
import os
import pwd
import subprocess
import sys

import pytest
from helpers import REPO

CHOOSER = os.path.join(REPO, "plugin", "hooks", "python.sh")
PYENV = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")  # the real one (tests get a temp HOME)
PROBE = ["-S", "-c", "import sys; print(sys.executable); print(sys.argv[1:])", "SessionStart"]


def real(version):
    exe = os.path.join(PYENV, "versions", version, "bin", "python%s" % version.rsplit(".", 1)[0])
    if not os.access(exe, os.X_OK):
        pytest.skip("pyenv has no Python %s here" % version)
    return exe


def choose(data, path, **env):
    full = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "CLAUDE_PLUGIN_DATA": str(data), **env}
    return subprocess.run(["/bin/sh", CHOOSER, *PROBE], env=full, capture_output=True, text=True, timeout=60)


TOOLS = {"id": "/usr/bin/id", "find": "/usr/bin/find", "dirname": "/usr/bin/dirname", "ln": "/bin/ln",
         "mv": "/bin/mv", "rm": "/bin/rm", "tr": "/usr/bin/tr", "uname": "/bin/uname", "readlink": "/bin/readlink"}


def bindir(tmp_path, name, **links):
    d = tmp_path / name
    d.mkdir()
    for link, target in links.items():
        (d / link).symlink_to(target)
    return str(d)


def test_a_python_first_on_path_is_linked_and_run(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin"
    p = choose(data, path)
    assert p.returncode == 0, p.stderr
    exe, args = p.stdout.splitlines()
    assert args == "['SessionStart']"  # the hook's own arguments, passed on
    assert os.readlink(data / "python") == exe and os.path.samefile(exe, sys.executable)
    assert not (data / "off").exists()


def test_behind_pyenvs_shim_the_link_is_the_real_interpreter(tmp_path):
    shims = os.path.join(PYENV, "shims")
    if not os.access(os.path.join(shims, "python3"), os.X_OK):
        pytest.skip("no pyenv here")
    exe = real("3.12.1")
    data = tmp_path / "data"
    data.mkdir()
    p = choose(data, shims + ":/usr/bin:/bin", PYENV_ROOT=PYENV, PYENV_VERSION="3.12.1")
    assert p.returncode == 0, p.stderr
    target = os.readlink(data / "python")
    assert not target.startswith(shims) and os.path.realpath(target) == os.path.realpath(exe), target
    with open(os.path.realpath(target), "rb") as f:
        assert f.read(4) == b"\x7fELF"  # a binary: a tool call execs it with no shell in between


def test_an_old_python3_first_on_path_is_passed_over_for_a_python312(tmp_path):
    old, new = real("3.9.18"), real("3.12.1")
    data = tmp_path / "data"
    data.mkdir()
    path = bindir(tmp_path, "old", python3=old) + ":" + bindir(tmp_path, "new", **{"python3.12": new}) + ":/bin"
    p = choose(data, path)
    assert p.returncode == 0, p.stderr
    assert os.path.realpath(os.readlink(data / "python")) == os.path.realpath(new)


def test_with_no_python_311_it_says_so_once_and_every_hook_exits_0(tmp_path):
    old = real("3.9.18")
    data = tmp_path / "data"
    data.mkdir()
    path = bindir(tmp_path, "tools", **TOOLS) + ":" + bindir(tmp_path, "old", python3=old)  # no other Python
    p = choose(data, path)
    assert p.returncode == 0, p.stderr
    line = json.loads(p.stdout)["systemMessage"]
    assert "cc-continuity is off" in line and "Python 3.11 or newer" in line and "3.9.18" in line, line
    assert "Fix: sudo apt-get install python3.11" in line or "brew install" in line
    assert (data / "off").read_text().strip() == line  # doctor repeats these words
    assert (data / "off").stat().st_mode & 0o777 == 0o600
    link = str(data / "python")
    assert os.path.basename(os.path.realpath(link)) == "true"
    hook = subprocess.run([link, "-S", "-c", "raise SystemExit(3)", "PostToolUse"], capture_output=True, timeout=10)
    assert (hook.returncode, hook.stdout) == (0, b"")  # fail-open, at exec speed
    # A Python turning up later is chosen at the next session (the off state is not kept as a choice).
    p = choose(data, bindir(tmp_path, "fixed", python3=sys.executable) + ":" + path)
    assert p.returncode == 0 and p.stdout.splitlines()[0] == os.readlink(link) and not (data / "off").exists()


def test_a_kept_link_is_used_and_a_dangling_one_chosen_again(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "python").symlink_to(sys.executable)
    p = choose(data, bindir(tmp_path, "tools", **TOOLS))  # no Python on PATH: the kept link alone runs it
    assert p.returncode == 0 and os.path.samefile(p.stdout.splitlines()[0], sys.executable), p.stderr
    gone = tmp_path / "gone" / "python3.12"
    (data / "python").unlink()
    (data / "python").symlink_to(gone)  # that Python was uninstalled (or upgraded away)
    p = choose(data, bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin")
    assert p.returncode == 0, p.stderr
    assert os.path.samefile(os.readlink(data / "python"), sys.executable)


def test_a_python_others_can_write_is_refused(tmp_path):
    fake = tmp_path / "writable" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"$0\"\n")  # answers the probe as a Python would, with its own path
    fake.chmod(0o777)
    data = tmp_path / "data"
    data.mkdir()
    p = choose(data, str(fake.parent) + ":/usr/bin:/bin", CC_CONTINUITY_PYTHON=str(fake))
    assert p.returncode == 0, p.stderr
    assert os.readlink(data / "python") != str(fake)
    # ... and a kept link to such a Python is dropped for a new choice.
    os.unlink(data / "python")
    (data / "python").symlink_to(fake)
    p = choose(data, bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin")
    assert os.path.samefile(os.readlink(data / "python"), sys.executable), p.stdout


def _planted(tmp_path):
    """A `python3` (and a link named python3.12) in a world-writable folder: each writes a marker if ever run."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    marker = tmp_path / "planted-ran"
    for name in ("python3", "real-python3"):
        (shared / name).write_text("#!/bin/sh\necho ran >> %s\nexec %s \"$@\"\n" % (marker, sys.executable))
        (shared / name).chmod(0o755)  # the file itself is not writable by others: its folder is
    (shared / "python3.12").symlink_to(shared / "real-python3")
    return str(shared), marker


def test_a_python_in_a_folder_others_can_write_is_never_run_not_even_to_ask_its_version(tmp_path):
    """Issue 34: it was run (`python3 -S -c ...` for its version) before its owner and folder were checked."""
    shared, marker = _planted(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    p = choose(data, shared + ":" + bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin")
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), "a planted python3 ran"
    assert os.path.samefile(os.readlink(data / "python"), sys.executable)


def test_the_plugins_command_never_runs_a_python_others_can_write(tmp_path):
    shared, marker = _planted(tmp_path)
    p = subprocess.run([os.path.join(REPO, "bin", "cc-continuity"), "--version"], capture_output=True, text=True,
                       timeout=60, env={"PATH": shared + ":" + os.path.dirname(sys.executable) + ":/usr/bin:/bin",
                                        "HOME": os.environ["HOME"]})
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), "a planted python3 ran"


def test_a_data_folder_others_can_write_is_not_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    p = choose(data, bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin")
    assert (p.returncode, p.stdout) == (0, "") and not os.path.lexists(data / "python")


def test_outside_claude_code_it_does_nothing(tmp_path):
    p = subprocess.run(["/bin/sh", CHOOSER, *PROBE], env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                       text=True, timeout=30)
    assert (p.returncode, p.stdout) == (0, "")


# The hooks of a tool call run the link itself (no shell there, P1p); every other hook runs through
# the chooser, so that a plugin installed in a live session (no SessionStart) links it at its first prompt.
ON_THE_LINK = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"}


def test_hooks_json_runs_the_link_on_a_tool_call_and_the_chooser_elsewhere():
    with open(os.path.join(REPO, "plugin", "hooks", "hooks.json"), encoding="utf-8") as f:
        table = json.load(f)
    assert ON_THE_LINK < set(table["hooks"]) and "UserPromptSubmit" in table["hooks"]
    for event, groups in table["hooks"].items():
        for h in groups[0]["hooks"]:
            if event in ON_THE_LINK:
                assert h["command"] == "${CLAUDE_PLUGIN_DATA}/python", (event, h["command"])
            else:
                assert [h["command"], h["args"][0]] == ["/bin/sh", "${CLAUDE_PLUGIN_ROOT}/hooks/python.sh"], event
            assert h["args"][-1] in (event, "StopLate")


def run_as(event, data, path, **env):
    full = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "CLAUDE_PLUGIN_DATA": str(data), **env}
    return subprocess.run(["/bin/sh", CHOOSER, *PROBE[:-1], event], env=full, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("event", ["UserPromptSubmit", "ModHello", "SessionEnd"])
def test_before_any_session_start_the_first_hook_through_the_chooser_links_the_python(tmp_path, event):
    """A plugin installed in a live session: no SessionStart, no link yet."""
    data = tmp_path / "data"
    data.mkdir()
    p = run_as(event, data, bindir(tmp_path, "bin", python3=sys.executable) + ":/usr/bin:/bin")
    assert p.returncode == 0, p.stderr
    exe, args = p.stdout.splitlines()
    assert args == "[%r]" % event and os.readlink(data / "python") == exe
    assert os.path.samefile(exe, sys.executable)
    assert [n for n in os.listdir(data) if n != "python"] == []  # no temporary link left behind


def test_a_link_in_place_is_run_at_once_by_a_prompt_with_no_tool_at_all(tmp_path):
    """Once a prompt, the chooser with a link in place is one sh and an exec: no id, find or readlink
    (PATH holds none of them), no check but the one every tool call makes (it can be exec'd)."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "python").symlink_to(sys.executable)
    p = run_as("UserPromptSubmit", data, str(tmp_path / "empty"))
    assert p.returncode == 0 and os.path.samefile(p.stdout.splitlines()[0], sys.executable), p.stderr
    assert p.stderr == ""
    # SessionStart, on the same PATH, is the one that checks: without its tools it cannot, and runs nothing.
    p = run_as("SessionStart", data, str(tmp_path / "empty"))
    assert p.stdout == ""


def test_with_no_python_311_a_prompt_before_any_session_start_says_so_once(tmp_path):
    old = real("3.9.18")
    data = tmp_path / "data"
    data.mkdir()
    path = bindir(tmp_path, "tools", **TOOLS) + ":" + bindir(tmp_path, "old", python3=old)
    p = run_as("UserPromptSubmit", data, path)
    assert "cc-continuity is off" in json.loads(p.stdout)["systemMessage"]  # shown to the user
    p = run_as("UserPromptSubmit", data, path)  # the next prompt runs the link to `true`: silent
    assert (p.returncode, p.stdout) == (0, "")


@pytest.mark.parametrize("shape", ["asdf", "mise"])
def test_behind_stand_in_shims_of_asdf_and_mise_the_link_is_the_real_interpreter(tmp_path, shape):
    """asdf's shim is a bash script that execs the tool; mise's is a link to one dispatcher binary
    that picks the tool by the name it was called as.  Stand-ins of both shapes, over this Python."""
    shims = tmp_path / "shims"
    shims.mkdir()
    if shape == "asdf":
        shim = shims / "python3"
        shim.write_text("#!/usr/bin/env bash\n# asdf-plugin: python 3.11\nexec %s \"$@\"\n" % sys.executable)
        shim.chmod(0o755)
    else:
        dispatcher = tmp_path / "mise"
        dispatcher.write_text("#!/bin/sh\ncase ${0##*/} in python3) exec %s \"$@\" ;; esac\nexit 127\n"
                              % sys.executable)
        dispatcher.chmod(0o755)
        (shims / "python3").symlink_to(dispatcher)
    data = tmp_path / "data"
    data.mkdir()
    p = choose(data, str(shims) + ":/usr/bin:/bin")
    assert p.returncode == 0, p.stderr
    target = os.readlink(data / "python")
    assert not target.startswith(str(tmp_path)) and os.path.samefile(target, sys.executable), target


# -- Pythons a version manager installed, and the fix it names ----------------------------------------

def test_a_python_pyenv_installed_but_not_on_path_is_found_where_pyenv_keeps_it(tmp_path):
    """pyenv's python3 is this folder's 3.9 and no 3.11+ is on PATH, but pyenv has a 3.12 installed: the
    chooser takes it from $PYENV_ROOT/versions (a real interpreter, by its path) rather than going off."""
    old, new = real("3.9.18"), real("3.12.1")
    root = tmp_path / "pyenv"
    (root / "versions" / "3.12.1" / "bin").mkdir(parents=True)
    (root / "versions" / "3.12.1" / "bin" / "python3.12").symlink_to(new)
    data = tmp_path / "data"
    data.mkdir()
    path = bindir(tmp_path, "tools", **TOOLS) + ":" + bindir(tmp_path, "old", python3=old)
    p = choose(data, path, HOME=str(tmp_path / "user-home"), PYENV_ROOT=str(root))
    assert p.returncode == 0 and "systemMessage" not in p.stdout, p.stdout
    assert os.path.realpath(os.readlink(data / "python")) == os.path.realpath(new)


@pytest.mark.parametrize("manager,fix", [("pyenv", "pyenv install 3.12"), ("uv", "uv python install 3.12"),
                                         ("asdf", "asdf install python latest:3.12"),
                                         ("mise", "mise install python@3.12")])
def test_the_off_line_names_the_version_managers_own_command(tmp_path, manager, fix):
    old = real("3.9.18")
    home = tmp_path / "user-home"
    home.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    if manager == "pyenv":  # python3 is one of its shims (here a link in a folder shaped like one)
        shims = home / ".pyenv" / "shims"
        shims.mkdir(parents=True)
        (shims / "python3").symlink_to(old)
        path = bindir(tmp_path, "tools", **TOOLS) + ":" + str(shims)
    else:  # the manager's command is on PATH, python3 is the system's old one
        tool = tmp_path / "mgr" / manager
        tool.parent.mkdir()
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
        path = bindir(tmp_path, "tools", **TOOLS) + ":" + str(tool.parent) + ":" + bindir(tmp_path, "old", python3=old)
    p = choose(data, path, HOME=str(home))
    line = json.loads(p.stdout)["systemMessage"]
    assert "cc-continuity is off" in line and "Fix: %s, then start a new session." % fix in line, line
