"""``python3 install.py``: install from a checkout on a stock Python, no pip of the user's needed.

A distribution's Python (Debian 12, Ubuntu 24.04, Homebrew) refuses
``pip install`` outside a virtualenv (PEP 668), and Debian's may lack pip
and ``ensurepip`` altogether.  So the runtime dependencies go into a private
virtualenv under the state dir (``$CC_CONTINUITY_HOME/venv``, kept so a
re-run is quick and works offline), and from there ``cc-continuity install``
does what it always does: copy this checkout's package and those
dependencies into the app copy, write the launcher for the *base*
interpreter (app.py), merge settings, rc block and skills.  Nothing is built
and nothing of ours comes from an index.

Where that venv gets pip: ``ensurepip`` when the interpreter has it; else
the system's ``python3 -m pip --python VENV``; else pip's own zipapp from
bootstrap.pypa.io (the dependencies come from the network anyway).

Runs on the standard library only: the dependencies are what it installs.
"""

import importlib.util
import os
import shutil
import subprocess
import sys

from .. import paths
from . import app

PIP_ZIPAPP_URL = "https://bootstrap.pypa.io/pip/pip.pyz"
# Claude Code versions older than this lack hook fields the rotation relies on.
MIN_CLAUDE = (2, 1, 209)

_HINTS = {
    "git": ("sudo apt-get install git", "xcode-select --install   (or: brew install git)"),
    "tmux": ("sudo apt-get install tmux", "brew install tmux"),
}


class BootstrapError(RuntimeError):
    pass


def venv_dir(home=None):
    return os.path.join(home or paths.home(), "venv")


def say(msg):
    sys.stderr.write("install.py: %s\n" % msg)
    sys.stderr.flush()


def requirements(source_root):
    """The runtime requirements, as pyproject.toml spells them (one place for them)."""
    import tomllib  # lazy: only install.py needs it; +~5 ms to launch and every verb (they load install/)

    with open(os.path.join(source_root, "pyproject.toml"), "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def missing_tools(env=None):
    env = os.environ if env is None else env
    return [t for t in ("git", "tmux") if shutil.which(t, path=env.get("PATH")) is None]


def claude_version_note(env=None):
    """A warning about Claude Code (absent or too old), or None."""
    env = os.environ if env is None else env
    claude = env.get("CC_CONTINUITY_CLAUDE") or shutil.which("claude", path=env.get("PATH"))  # (the wrapper is a function)
    if claude is None:
        return "Claude Code (`claude`) is not on PATH; install it (>= %s) before running `claude`" % _v(MIN_CLAUDE)
    try:
        out = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout.split()
        got = tuple(int(x) for x in out[0].split("."))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None  # doctor says more
    if got < MIN_CLAUDE:
        return "Claude Code %s is older than %s: update it (`claude update`)" % (_v(got), _v(MIN_CLAUDE))
    return None


def _v(t):
    return ".".join(map(str, t))


def have_dependencies():
    """Does this interpreter already have every runtime dependency (so no venv is needed)?"""
    try:
        app.dependency_dists()
    except app.AppError:
        return False
    return True


def _run(cmd, what):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise BootstrapError("%s failed (exit %d): %s" % (what, p.returncode, " ".join(cmd)))


def _venv_python(venv):
    return os.path.join(venv, "bin", "python")


def _has_pip(python):
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True,
                          stdin=subprocess.DEVNULL).returncode == 0


def make_venv(venv, python=sys.executable):
    """A virtualenv at ``venv`` and the pip command that installs into it."""
    vpy = _venv_python(venv)
    if os.path.isfile(vpy) and _has_pip(vpy):
        return [vpy, "-m", "pip"]
    paths.ensure_dir(os.path.dirname(venv))
    with_pip = importlib.util.find_spec("ensurepip") is not None
    say("creating %s%s" % (venv, "" if with_pip else " (this Python has no ensurepip)"))
    _run([python, "-m", "venv", "--clear"] + ([] if with_pip else ["--without-pip"]) + [venv], "python -m venv")
    os.chmod(venv, paths.DIR_MODE)
    if _has_pip(vpy):
        return [vpy, "-m", "pip"]
    if _has_pip(python):  # Debian's python3-pip can install into another environment
        return [python, "-m", "pip", "--python", vpy]
    pyz = os.path.join(venv, "pip.pyz")
    say("fetching pip from %s" % PIP_ZIPAPP_URL)
    try:
        import urllib.request  # lazy: only without pip; +~20 ms to launch and every verb (they load install/)

        with urllib.request.urlopen(PIP_ZIPAPP_URL, timeout=60) as r, open(pyz, "wb") as f:
            shutil.copyfileobj(r, f)
    except OSError as e:
        raise BootstrapError("no pip for %s and cannot fetch one (%s); install python3-venv "
                             "(sudo apt-get install python3-venv) or use pipx/uv (see README)" % (venv, e)) from None
    return [vpy, pyz]


def main(argv, source_root, cli):
    """Install from ``source_root`` (a checkout); ``argv`` goes to ``cc-continuity install``.

    ``cli`` is :mod:`cc_continuity.cli` (the entry point, handed in by install.py): the
    options and every file install would change are checked on this interpreter before
    anything is created, and ``--dry-run`` runs here too, creating nothing.
    """
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write("usage: python3 install.py [cc-continuity install options]\n"
                         "       python3 install.py --uninstall [--purge]\n\n"
                         "Installs cc-continuity from this checkout (its dependencies into %s),\n"
                         "then runs `cc-continuity install` with the options given; see\n"
                         "`cc-continuity install --help` once installed.  --uninstall is\n"
                         "`cc-continuity uninstall`, for when the launcher is gone.\n" % venv_dir())
        return 0
    if argv[:1] == ["--uninstall"]:  # needs no dependency, so it runs on this interpreter
        return cli.main(["uninstall"] + list(argv[1:]))
    missing = missing_tools()
    if missing:
        say("missing %s; install first:" % " and ".join(missing))
        say("    %s      (Debian/Ubuntu)" % " && ".join(_HINTS[t][0] for t in missing))
        say("    %s      (macOS)" % " && ".join(_HINTS[t][1] for t in missing))
        return 1
    try:
        args = cli.build_parser().parse_args(["install"] + list(argv))
    except SystemExit as e:  # argparse said what is wrong
        say("nothing was created")
        return e.code if isinstance(e.code, int) else 2
    code = cli.main(["install", "--check"] + list(argv))
    if code:
        return code
    note = claude_version_note() if args.agent == "claude" else None  # (Codex CLI's install needs no claude)
    if note:
        say("warning: " + note)
    deps = have_dependencies()
    if args.dry_run:
        if not deps:
            say("dry run: would create the virtualenv %s and install %s into it"
                % (venv_dir(), ", ".join(requirements(source_root))))
        return cli.main(["install"] + list(argv))
    if deps:
        python, pip = sys.executable, None
    else:
        venv = venv_dir()
        try:
            pip = make_venv(venv)
            say("installing %s into %s" % (", ".join(requirements(source_root)), venv))
            _run(pip + ["install", "-q", "--disable-pip-version-check"] + requirements(source_root),
                 "pip install")
        except BootstrapError as e:
            say("error: %s" % e)
            say("nothing of your Claude Code setup was changed")
            return 1
        python = _venv_python(venv)
    code = ("import sys; sys.path.insert(0, %r); from cc_continuity.cli import main; "
            "sys.exit(main(['install'] + sys.argv[1:]))" % source_root)
    # -B: this process imports the checkout's package, and no bytecode of it may land there
    # (a plugin copy of the checkout would carry it); the app copy is compiled explicitly.
    return subprocess.run([python, "-B", "-c", code] + list(argv)).returncode
