"""``.ci/run`` works as root (CI here) and as a normal user: checked with ``bash -n`` and its
``--dry-run``, which checks tools and Python and says what it would install and run.

The normal user is real (``setpriv`` to nobody, when available); the PEP 668
interpreter is this machine's /usr/bin/python3.
"""

import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(REPO, ".ci", "run")
TOOLS = ("tmux", "zsh", "fish", "git", "npm")


def bin_dir(tmp_path, python, tools=TOOLS):
    """A PATH dir holding just ``python3`` (-> ``python``) and ``tools`` (links to the real ones)."""
    d = tmp_path / "bin"
    d.mkdir()
    os.symlink(python, d / "python3")
    for t in tools + ("id", "dirname", "env", "tail", "cat", "mkdir"):
        os.symlink(shutil.which(t), d / t)
    return str(d)


def dry(path, home, as_nobody=False, run=RUN):
    env = {"PATH": path, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "LANG": "C.UTF-8"}
    pre = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"] if as_nobody else []
    return subprocess.run(pre + ["/bin/bash", run, "--dry-run"], env=env, capture_output=True, text=True,
                          timeout=60, cwd="/")


def test_scripts_parse():
    for script in (RUN, os.path.join(REPO, ".ci", "install-claude.sh"), os.path.join(REPO, ".ci", "install-codex.sh"),
                   os.path.join(REPO, ".ci", "install-gemini.sh")):
        p = subprocess.run(["bash", "-n", script], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr


@pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS), reason="needs the CI tools")
def test_dry_run_with_everything_there_plans_the_readme_commands(tmp_path):
    import sys

    p = dry(bin_dir(tmp_path, sys.executable), tmp_path)
    assert p.returncode == 0, p.stderr
    venv = "%s/cache/cc-continuity/ci-venv" % tmp_path
    # Never into a base interpreter (issue 32): CI's own virtualenv, whatever python3 is.
    assert "test dependencies into the virtualenv %s (never into a base interpreter)" % venv in p.stdout
    assert "would run: python3 -m venv %s" % venv in p.stdout
    assert "would run: python3 -m pip install -q --disable-pip-version-check -e .[dev]" in p.stdout
    assert ("would run: ruff, mypy, python3 -m pytest -n auto, then python3 -m pytest -m "
            "'e2e and not codex and not gemini' once per version") in p.stdout
    assert "into %s/cache/cc-continuity" % tmp_path in p.stdout, "Claude Code cached under the user's cache dir"
    assert "would install Codex CLI 0.171.0 into %s/cache/cc-continuity/codex-0.171.0" % tmp_path in p.stdout
    assert "would run: python3 -m pytest -m 'e2e and codex' once against Codex CLI 0.171.0" in p.stdout
    assert "would install Gemini CLI 0.61.0 into %s/cache/cc-continuity/gemini-0.61.0" % tmp_path in p.stdout
    assert "would run: python3 -m pytest -m 'e2e and gemini' once against Gemini CLI 0.61.0" in p.stdout
    assert "/opt" not in p.stdout + p.stderr


@pytest.mark.skipif(not (os.path.exists("/usr/bin/python3") and all(shutil.which(t) for t in TOOLS)),
                    reason="needs /usr/bin/python3 and the CI tools")
def test_an_externally_managed_python_gets_a_venv_in_the_cache_dir(tmp_path):
    import sysconfig  # noqa: F401  (the check itself runs in the script)

    managed = subprocess.run(["/usr/bin/python3", "-c", "import os, sysconfig; print(os.path.exists(os.path.join("
                              "sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    if managed != "True":
        pytest.skip("/usr/bin/python3 is not externally managed here")
    p = dry(bin_dir(tmp_path, "/usr/bin/python3"), tmp_path)
    assert p.returncode == 0, p.stderr
    venv = "%s/cache/cc-continuity/ci-venv" % tmp_path
    assert "is externally managed (PEP 668): the virtualenv %s is CI's own anyway" % venv in p.stdout
    assert "would run: python3 -m venv %s" % venv in p.stdout


@pytest.mark.skipif(shutil.which("setpriv") is None or os.getuid() != 0, reason="needs root and setpriv")
def test_a_normal_user_missing_tools_is_told_what_to_install():
    import pathlib
    import sys
    import tempfile

    base = pathlib.Path(tempfile.mkdtemp(prefix="cc-ci-"))  # /tmp/pytest-of-root is closed to nobody
    try:
        base.chmod(0o755)
        home = base / "nobody"
        home.mkdir()
        os.chown(home, 65534, 65534)
        path = bin_dir(base, sys.executable, tools=("git",))
        # A copy nobody can read: the checkout may sit under a directory closed to others
        # (a fresh clone in a 0700 HOME or pytest's temp dir, as README line 2's test has it).
        shutil.copytree(os.path.join(REPO, ".ci"), base / "repo" / ".ci")
        p = dry(path, home, as_nobody=True, run=str(base / "repo" / ".ci" / "run"))
    finally:
        shutil.rmtree(base)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "ci: missing tmux zsh fish npm; install them first" in p.stderr, p.stderr
    assert "sudo apt-get install tmux zsh fish npm" in p.stderr and "brew install tmux zsh fish npm" in p.stderr
    assert "would run: apt-get" not in p.stdout
    assert "command not found" not in p.stderr


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("apt-get") is None, reason="root with apt-get only")
def test_root_missing_tools_installs_them(tmp_path):
    import sys

    path = bin_dir(tmp_path, sys.executable, tools=("git", "apt-get"))
    p = dry(path, tmp_path)
    assert "ci: installing tmux zsh fish npm" in p.stdout
    assert "would run: apt-get update -qq" in p.stdout


INSTALL_CODEX = os.path.join(REPO, ".ci", "install-codex.sh")
CODEX_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "cc-continuity", "codex-0.171.0")  # at import: the real HOME


def _install_codex(tmp_path, cache, tools=("bash", "awk", "mktemp", "rm", "mkdir", "uname", "flock")):
    d = tmp_path / "codex-bin"
    d.mkdir(exist_ok=True)
    for t in tools:
        if shutil.which(t):
            os.symlink(shutil.which(t), d / t)
    env = {"PATH": str(d), "HOME": str(tmp_path), "CC_CODEX_CACHE": str(cache), "LANG": "C.UTF-8"}
    return subprocess.run(["/bin/bash", INSTALL_CODEX], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not os.path.isdir(os.path.join(CODEX_CACHE, "node_modules")),
                    reason="needs the Codex cache .ci/install-codex.sh fills")
def test_install_codex_is_offline_once_cached(tmp_path):
    """With the pinned Codex in the cache it answers its path without npm (PATH has none), every time."""
    p = _install_codex(tmp_path, CODEX_CACHE)
    assert p.returncode == 0, p.stderr
    path = p.stdout.strip().splitlines()[-1]
    assert path.startswith(os.path.realpath(CODEX_CACHE) + "/node_modules/@openai/codex-") and os.access(path, os.X_OK)
    assert "codex 0.171.0 already in" in p.stderr
    out = subprocess.run([path, "--version"], env={"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path)},
                         capture_output=True, text=True, timeout=30).stdout
    assert out.split() == ["codex-cli", "0.171.0"]


def test_install_codex_with_an_empty_cache_and_no_npm_says_so(tmp_path):
    p = _install_codex(tmp_path, tmp_path / "empty-cache")
    assert p.returncode == 1
    assert "npm is required to install @openai/codex@0.171.0" in p.stderr
    assert p.stdout == ""


INSTALL_GEMINI = os.path.join(REPO, ".ci", "install-gemini.sh")
GEMINI_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "cc-continuity", "gemini-0.61.0")  # the real HOME


def _install_gemini(tmp_path, cache, node=None, tools=("bash", "awk", "mktemp", "rm", "mkdir", "flock")):
    """install-gemini.sh with PATH holding ``tools`` and, as ``node``, the executable ``node`` (none: no node)."""
    d = tmp_path / "gemini-bin"
    d.mkdir(exist_ok=True)
    for t in tools:
        if shutil.which(t):
            os.symlink(shutil.which(t), d / t)
    if node:
        os.symlink(node, d / "node")
    env = {"PATH": str(d), "HOME": str(tmp_path / "gemini-home"), "CC_GEMINI_CACHE": str(cache), "LANG": "C.UTF-8"}
    return subprocess.run(["/bin/bash", INSTALL_GEMINI], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not (os.path.exists(os.path.join(GEMINI_CACHE, "node_modules", ".bin", "gemini"))
                         and shutil.which("node")), reason="needs node and the cache .ci/install-gemini.sh fills")
def test_install_gemini_is_offline_once_cached(tmp_path):
    """With the pinned Gemini CLI in the cache it answers its path without npm (PATH has none), and its
    version probe writes nothing into HOME."""
    (tmp_path / "gemini-home").mkdir()
    p = _install_gemini(tmp_path, GEMINI_CACHE, node=shutil.which("node"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == os.path.join(os.path.realpath(GEMINI_CACHE), "node_modules", ".bin", "gemini")
    assert "gemini 0.61.0 already in" in p.stderr
    assert os.listdir(tmp_path / "gemini-home") == []


def _fake_node(tmp_path, version):
    fake = tmp_path / "fake-node"
    fake.write_text("#!/bin/sh\necho %s\n" % version)
    fake.chmod(0o755)
    return str(fake)


def test_install_gemini_on_an_old_node_names_the_fix(tmp_path):
    p = _install_gemini(tmp_path, tmp_path / "empty-cache", node=_fake_node(tmp_path, "v18.19.1"))
    assert p.returncode == 1 and p.stdout == ""
    assert "Gemini CLI needs Node.js >= 20" in p.stderr and "is v18.19.1" in p.stderr, p.stderr
    assert "nvm install 20" in p.stderr and "nodejs.org" in p.stderr


def test_install_gemini_without_node_names_the_fix(tmp_path):
    p = _install_gemini(tmp_path, tmp_path / "empty-cache")
    assert p.returncode == 1 and p.stdout == ""
    assert "Node.js is required to run Gemini CLI" in p.stderr and "nvm install 20" in p.stderr, p.stderr


def test_install_gemini_with_an_empty_cache_and_no_npm_says_so(tmp_path):
    p = _install_gemini(tmp_path, tmp_path / "empty-cache", node=_fake_node(tmp_path, "v20.20.2"))
    assert p.returncode == 1 and p.stdout == ""
    assert "npm is required to install @google/gemini-cli@0.61.0" in p.stderr, p.stderr
