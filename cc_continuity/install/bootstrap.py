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

The venv is made and filled the way a marketplace plugin's environment is
(:func:`cc_continuity.deps.build.make`): ``requirements.lock`` with every
file's hash, binary wheels only; with a trusted ``uv``, else pip from
``ensurepip``, else pip's own wheel from your package index (hash pinned).

Runs on the standard library only: the dependencies are what it installs.
"""

import os
import shutil
import subprocess
import sys

from .. import deps, paths
from . import app

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


def _venv_python(venv):
    return os.path.join(venv, "bin", "python")


def fill_venv(venv, python=sys.executable):
    """The private venv at ``venv`` with the locked packages in it (made when missing); its python."""
    from ..deps import build  # (install.py's only: the installers and the index; +~25 ms to every verb else)

    paths.ensure_dir(os.path.dirname(venv))
    say("installing %s into %s" % (", ".join(deps.PACKAGES), venv))
    try:
        build.make(venv, python, say=say)
    except build.BuildError as e:
        raise BootstrapError("%s; the dependencies come from your package index (pip.conf / uv.toml), or use "
                             "pipx/uv (see README)" % e) from None
    os.chmod(venv, paths.DIR_MODE)
    return _venv_python(venv)


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
        args = cli.build_parser(["install"]).parse_args(["install"] + list(argv))
    except SystemExit as e:  # argparse said what is wrong
        say("nothing was created")
        return e.code if isinstance(e.code, int) else 2
    code = cli.main(["install", "--check"] + list(argv))
    if code:
        return code
    note = claude_version_note() if args.agent == "claude" else None  # (Codex CLI's install needs no claude)
    if note:
        say("warning: " + note)
    have = have_dependencies()
    if args.dry_run:
        if not have:
            say("dry run: would create the virtualenv %s and install %s into it"
                % (venv_dir(), ", ".join(deps.PACKAGES)))
        return cli.main(["install"] + list(argv))
    if have:
        python = sys.executable
    else:
        try:
            python = fill_venv(venv_dir())
        except BootstrapError as e:
            say("error: %s" % e)
            say("nothing of your %s setup was changed" % {"claude": "Claude Code", "codex": "Codex CLI",
                                                            "gemini": "Gemini CLI"}.get(args.agent, args.agent))
            return 1
    code = ("import sys; sys.path.insert(0, %r); from cc_continuity.cli import main; "
            "sys.exit(main(['install'] + sys.argv[1:]))" % source_root)
    # -B: this process imports the checkout's package, and no bytecode of it may land there
    # (a plugin copy of the checkout would carry it); the app copy is compiled explicitly.
    return subprocess.run([python, "-B", "-c", code] + list(argv)).returncode
