"""The README's first line, exactly as written, on this machine's distribution Python.

``/usr/bin/python3`` here is Debian 12's 3.11 (PEP 668: ``pip install`` says
``externally-managed-environment``), the interpreter a new user has.  The
line runs in a fresh HOME with no CC_CONTINUITY_HOME (the default state dir),
from this checkout; the runtime dependencies come from pip's configured
index or wheelhouse, as in tests/install/test_wheel.py (~20 s).  Then the installed
launcher, a hook and the status line work on that interpreter with nothing
on PATH but the system's, and ``uninstall --purge`` gives HOME back.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM_PYTHON = "/usr/bin/python3"


def readme_first_line():
    with open(os.path.join(REPO, "README.md")) as f:
        block = f.read().split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()][0]


def system_python_ok():
    try:
        out = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return False
    return out.strip() == "True"


def tree(root, skip=(".cache",)):
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.path.relpath(os.path.join(dirpath, d), root) not in skip]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            found[os.path.relpath(p, root)] = None if os.path.isdir(p) else open(p, "rb").read()
    return found


@pytest.mark.skipif(not system_python_ok(), reason="needs a system /usr/bin/python3 >= 3.11")
def test_readme_first_line_on_the_system_python_in_a_fresh_home(tmp_path, git_repo):
    home = tmp_path / "fresh"
    home.mkdir()
    (home / ".bashrc").write_text("export EDITOR=vi\n")
    bindir = tmp_path / "sysbin"
    bindir.mkdir()
    os.symlink(SYSTEM_PYTHON, bindir / "python3")  # `python3` is the distribution's, whatever pyenv says
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "LC_ALL", "TERM")}
    env = dict(keep, HOME=str(home), SHELL="/bin/bash", PATH="%s:/usr/local/bin:/usr/bin:/bin" % bindir)

    # The premise: this interpreter refuses a plain pip install.
    pep668 = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "--dry-run", "psutil"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert pep668.returncode != 0 and "externally-managed-environment" in pep668.stderr + pep668.stdout

    before = tree(str(home))
    line = readme_first_line()
    p = subprocess.run(["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=400,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, "%r failed:\n%s\n%s" % (line, p.stdout[-3000:], p.stderr[-3000:])
    assert "settings:" in p.stdout and "skills:" in p.stdout, p.stdout

    state = home / ".claude-continuity"
    assert (state / "venv").is_dir() and oct(os.stat(state).st_mode & 0o777) == "0o700"
    launcher = state / "bin" / "cc-continuity"
    shebang = launcher.read_text().splitlines()[0]
    real = os.path.realpath(SYSTEM_PYTHON)
    assert shebang == "#!%s -S" % real, "the launcher runs the system interpreter, not the venv"

    plain = {"HOME": str(home), "PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(git_repo)}
    link = home / ".local" / "bin" / "cc-continuity"
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    stop = doc["hooks"]["Stop"][0]["hooks"][0]
    assert stop["command"] == real
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {"hook_event_name": "SessionStart", "session_id": "readme-1", "transcript_path": str(transcript),
               "cwd": str(git_repo), "source": "startup"}
    start = doc["hooks"]["SessionStart"][0]["hooks"][0]
    h = subprocess.run([start["command"]] + start["args"], input=json.dumps(payload), text=True, env=plain,
                       capture_output=True, timeout=60)
    assert h.returncode == 0 and not h.stderr, h.stderr
    status = subprocess.run([str(link), "status", "--json"], env=plain, cwd=str(git_repo), capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert [s["session_id"] for s in json.loads(status.stdout)["sessions"]] == ["readme-1"]
    line_out = subprocess.run(["/bin/sh", "-c", doc["statusLine"]["command"]], env=plain, capture_output=True,
                              text=True, timeout=30, input=json.dumps({"session_id": "readme-1", "cwd": str(git_repo)}))
    assert line_out.returncode == 0 and line_out.stdout.strip(), line_out

    # A fresh install passes its own doctor, but for the user's own setup: no claude on this
    # PATH, and Claude Code never run here (no trust given).
    doctor = subprocess.run([str(link), "doctor", "--json"], env=plain, cwd=str(git_repo), capture_output=True,
                            text=True, timeout=120)
    failed = {r["name"]: r["detail"] for r in json.loads(doctor.stdout) if not r["ok"]}
    assert set(failed) <= {"claude", "trust"}, failed
    leftovers = [r for r in json.loads(doctor.stdout) if r["name"] == "leftovers"][0]
    assert leftovers["detail"] == "no leftover temp files or stale locks", leftovers

    # Run again: quick (the venv is reused) and changes nothing of the user's.
    again = subprocess.run(["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=400,
                           stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and "settings.json unchanged" in again.stdout, again.stdout + again.stderr

    # A plain uninstall says what it kept and the one command that deletes it, which needs no launcher.
    out = subprocess.run([str(link), "uninstall"], env=plain, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not link.exists() and not launcher.exists()
    kept = [line for line in out.stdout.splitlines() if line.startswith("kept: ")]
    command = "python3 %s --uninstall --purge" % os.path.join(REPO, "install.py")
    assert len(kept) == 1 and "~/.claude-continuity (" in kept[0] and kept[0].endswith(command), out.stdout
    out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "purge: ~/.claude-continuity deleted" in out.stdout, out.stdout + out.stderr
    assert tree(str(home)) == before, "uninstall --purge gives HOME back (pip's cache aside)"


def checkout_copy(dest):
    """This checkout's tracked files as they are in the work tree (symlinks kept): a fresh clone's
    content, uncommitted changes included, and no __pycache__ of the suite's own runs."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        src = os.path.join(REPO, rel)
        if not rel or not os.path.lexists(src):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target)
    return dest


def bytecode_in(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, dirs, files in os.walk(root)
                  for n in dirs + files if n == "__pycache__" or n.endswith(".pyc"))


@pytest.mark.parametrize("python", ["dev", "system"])
def test_readme_first_line_writes_no_bytecode_into_the_checkout(tmp_path, python):
    """A plugin made from the checkout (a directory marketplace follows plugin/cc_continuity's link)
    carried the __pycache__ install.py left: 96 .pyc files in 14 folders before.  The app copy under
    the state dir is byte-compiled on purpose."""
    if python == "system" and not system_python_ok():
        pytest.skip("needs a system /usr/bin/python3 >= 3.11")
    clone = checkout_copy(str(tmp_path / "clone"))
    assert bytecode_in(clone) == []
    home = tmp_path / "fresh"
    home.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # "dev": an interpreter that has the dependencies (install runs on it); "system": the
    # distribution's, which gets a private venv first.  Either way the checkout's package is imported.
    os.symlink(sys.executable if python == "dev" else SYSTEM_PYTHON, bindir / "python3")
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "LC_ALL", "TERM")}
    env = dict(keep, HOME=str(home), SHELL="/bin/bash", PATH="%s:/usr/bin:/bin" % bindir,
               CC_CONTINUITY_HOME=str(tmp_path / "state"))
    p = subprocess.run(["bash", "-c", readme_first_line()], cwd=clone, env=env, capture_output=True, text=True,
                       timeout=400, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert bytecode_in(clone) == []
    assert any(n.endswith(".pyc") for n in bytecode_in(str(tmp_path / "state" / "app.d")))
