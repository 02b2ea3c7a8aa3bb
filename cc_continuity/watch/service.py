"""Install the watchdog as a launchd agent (macOS) or a systemd user service (Linux).

The unit and the plist are rendered from the templates shipped in
``cc_continuity/data/{launchd,systemd}`` (the repo's top-level ``launchd/`` and
``systemd/`` point there), with every value escaped for its format.  The
service runs ``python -m cc_continuity watchdog run`` from the stable app copy
under ``$CC_CONTINUITY_HOME/app`` when ``cc-continuity install`` made one,
else from the package this command runs from.

The service-manager commands are built as argv lists first (tests check them
as data) and only then run: ``launchctl`` only on macOS, ``systemctl --user``
only when a user manager answers -- otherwise the exact commands are printed.
"""

import json
import os
import plistlib
import pwd
import shlex
import shutil
import subprocess
import sys

from .. import atomic, errors, paths
from ..install import app as appmod

LABEL = "com.cc-continuity.watchdog"
UNIT = "cc-continuity-watchdog.service"
PLIST_NAME = LABEL + ".plist"
MARK = "cc-continuity watchdog"       # present in both templates: proves a file is ours
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


ServiceError = errors.ServiceError  # (defined with every error class, in errors.py)


def template(kind):
    name = {"launchd": PLIST_NAME, "systemd": UNIT}[kind]
    with open(os.path.join(_DATA, kind, name), encoding="utf-8") as f:
        return f.read()


# -- what goes into the files --------------------------------------------------

def runtime():
    """``(python, pythonpath)`` the service should run with: the stable app copy, else the package this
    command runs from, but never a plugin's copy (Claude Code replaces and sweeps its versioned cache, and
    deletes its data folder at the last uninstall: a unit naming either stops working by itself)."""
    app = appmod.app_link(paths.home())
    if os.path.isdir(os.path.join(app, "cc_continuity")):
        try:
            return appmod.base_interpreter(), os.pathsep.join([app, os.path.join(app, "lib")])
        except appmod.AppError:
            pass
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if _transient(package_parent) or _transient(sys.executable):
        raise ServiceError("the watchdog runs from a copy that stays where it is, and this cc-continuity is the "
                           "plugin's copy (%s), which Claude Code replaces at its updates: run `cc-continuity "
                           "install` once (it makes the stable copy under %s; with the plugin enabled it writes "
                           "no hooks), then `cc-continuity watchdog install`" % (package_parent, paths.home()))
    return sys.executable, package_parent


def _transient(path):
    """Is ``path`` inside Claude Code's plugin folders (a versioned cache copy, a plugin's data folder)?"""
    real = os.path.realpath(path)
    roots = [os.path.join(paths.claude_config_dir(), "plugins")]
    roots += [v for v in (os.environ.get("CLAUDE_PLUGIN_ROOT"), os.environ.get("CLAUDE_PLUGIN_DATA")) if v]
    return any(real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + os.sep) for r in roots)


def unit_paths():
    """``(python, [PYTHONPATH entries])`` the installed service file runs, or None when none is installed."""
    service = installed_service()
    if service is None:
        return None
    with open(service["path"], "rb") as f:
        data = f.read(1 << 16)
    if service["kind"] == "launchd":
        try:
            doc = plistlib.loads(data)
        except (plistlib.InvalidFileException, ValueError):
            return None
        python = (doc.get("ProgramArguments") or [None])[0]
        pythonpath = (doc.get("EnvironmentVariables") or {}).get("PYTHONPATH") or ""
    else:
        python, pythonpath = None, ""
        for line in data.decode("utf-8", "replace").splitlines():
            if line.startswith("ExecStart="):
                python = (shlex.split(line[len("ExecStart="):]) or [None])[0]
            elif line.startswith("Environment="):
                word = (shlex.split(line[len("Environment="):]) or [""])[0]
                if word.startswith("PYTHONPATH="):
                    pythonpath = word[len("PYTHONPATH="):]
        python = python.replace("%%", "%") if python else python
        pythonpath = pythonpath.replace("%%", "%")
    return python, [p for p in pythonpath.split(os.pathsep) if p]


def unit_problem():
    """Why the installed service cannot start any more (a path it names is gone), or None."""
    found = unit_paths()
    if found is None:
        return None
    python, pythonpath = found
    gone = [p for p in [python] + pythonpath if not p or not os.path.exists(p)]
    if gone:
        return "the watchdog's service file names %s, which %s gone" % (
            ", ".join(str(g) for g in gone), "is" if len(gone) == 1 else "are")
    return None


def service_path(python):
    """PATH for the service: where tmux and Python live, then the system directories."""
    dirs = []
    tmux = shutil.which("tmux")
    for d in ([os.path.dirname(tmux)] if tmux else []) + [os.path.dirname(python)]:
        dirs.append(d)
    if sys.platform == "darwin":
        dirs += ["/opt/homebrew/bin", "/usr/local/bin"]
    dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
    out = []
    for d in dirs:
        if d and d not in out:
            out.append(d)
    return os.pathsep.join(out)


def values(python=None, pythonpath=None):
    py, pp = runtime()
    python = python or py
    return {"PYTHON": python, "PYTHONPATH": pythonpath or pp, "CC_HOME": paths.home(),
            "PATH": service_path(python), "LOGS": paths.logs_dir()}


def _xml(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_plist(vals):
    out = template("launchd")
    for key, value in vals.items():
        out = out.replace("@%s@" % key, _xml(value))
    return out


def systemd_quote(word):
    """One word for a unit file: ``%`` doubled (specifiers), quoted when it has spaces or quotes.

    Only ExecStart's executable path and Environment= assignments go through
    here, and systemd expands ``$`` in neither, so a ``$`` stays as it is.
    """
    word = word.replace("%", "%%")
    if word and not any(c in word for c in " \t\"'\\;"):
        return word
    return '"%s"' % word.replace("\\", "\\\\").replace('"', '\\"')


def render_unit(vals):
    out = template("systemd")
    out = out.replace("@PYTHON@", systemd_quote(vals["PYTHON"]))
    for env, key in (("CC_CONTINUITY_HOME", "CC_HOME"), ("PATH", "PATH"), ("PYTHONPATH", "PYTHONPATH")):
        name = "ENV_HOME" if key == "CC_HOME" else "ENV_" + key
        out = out.replace("@%s@" % name, systemd_quote("%s=%s" % (env, vals[key])))
    return out


# -- where the files go, and the commands ------------------------------------------

def plist_path():
    return os.path.join(paths.normalize("~"), "Library", "LaunchAgents", PLIST_NAME)


def unit_path():
    base = paths.getenv("XDG_CONFIG_HOME") or os.path.join(paths.normalize("~"), ".config")
    return os.path.join(base, "systemd", "user", UNIT)


def launchctl_install(plist, uid):
    """``[(argv, must_succeed)]``: reload cleanly, enable, bootstrap, restart now."""
    target = "gui/%d/%s" % (uid, LABEL)
    return [(["launchctl", "bootout", target], False),
            (["launchctl", "enable", target], True),
            (["launchctl", "bootstrap", "gui/%d" % uid, plist], True),
            (["launchctl", "kickstart", "-k", target], True)]


def launchctl_uninstall(plist, uid):
    return [(["launchctl", "bootout", "gui/%d/%s" % (uid, LABEL)], False)]


def systemctl_install():
    return [(["systemctl", "--user", "daemon-reload"], True),
            (["systemctl", "--user", "enable", UNIT], True),
            (["systemctl", "--user", "restart", UNIT], True)]


def systemctl_uninstall():
    return [(["systemctl", "--user", "disable", "--now", UNIT], False),
            (["systemctl", "--user", "daemon-reload"], True)]


def default_runner(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def user_manager_running(runner=default_runner):
    """Does a systemd user manager answer for this login?"""
    if shutil.which("systemctl") is None and runner is default_runner:
        return False
    try:
        return runner(["systemctl", "--user", "show-environment"]).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def platform_kind(platform=None):
    platform = platform or sys.platform
    if platform == "darwin":
        return "launchd"
    if platform.startswith("linux"):
        return "systemd"
    raise ServiceError("no service manager support for %s (launchd on macOS, systemd on Linux)" % platform)


def _is_ours(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 16)
    except FileNotFoundError:
        return None
    return MARK in text


def installed_service(platform=None, runner=None):
    """``{"path", "kind", "installed_at", "start", "manager"}`` for our service file, or None when none is installed.

    ``start``: the commands that start it by hand (what ``status`` tells a user
    whose service was written but is not running); ``manager``: whether a service
    manager runs here that can have started it (no systemd user manager: nothing did).
    """
    try:
        kind = platform_kind(platform)
    except ServiceError:
        return None
    path = plist_path() if kind == "launchd" else unit_path()
    if not _is_ours(path):
        return None
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    start = ([_show(a) for a, _ in launchctl_install(path, os.getuid())] if kind == "launchd"
             else [_show(["systemctl", "--user", "daemon-reload"]), _show(["systemctl", "--user", "enable", "--now", UNIT])])
    manager = (sys.platform == "darwin") if kind == "launchd" else user_manager_running(runner or default_runner)
    return {"path": path, "kind": kind, "installed_at": mtime, "start": start, "manager": manager}


def _dirs_record():
    """Where install notes the directories it created for the service file (uninstall removes them, if empty)."""
    return os.path.join(paths.home(), "watchdog-service-dirs.json")


def _missing_dirs(directory):
    out = []
    while directory and not os.path.isdir(directory):
        out.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return out


def _note_created(dirs):
    if not dirs:
        return
    known = _created()
    paths.ensure_dir(paths.home())
    atomic.write_text(_dirs_record(), json.dumps(sorted(set(known + dirs))), mode=0o600)


def _created():
    try:
        with open(_dirs_record(), encoding="utf-8") as f:
            value = json.loads(f.read(1 << 16))
        return [d for d in value if isinstance(d, str)] if isinstance(value, list) else []
    except (OSError, ValueError):
        return []


def _remove_created(out):
    """The directories install created for the service file, deepest first, where now empty."""
    for d in sorted(_created(), key=len, reverse=True):
        try:
            os.rmdir(d)
            out.write("removed %s (empty, made by install)\n" % d)
        except OSError:
            pass  # not empty (someone else's file is there) or already gone
    try:
        os.unlink(_dirs_record())
    except OSError:
        pass


def _show(argv):
    return " ".join(shlex.quote(a) for a in argv)


def _run_all(commands, runner, out):
    for argv, must in commands:
        out.write("  $ %s\n" % _show(argv))
        try:
            res = runner(argv)
        except (OSError, subprocess.SubprocessError) as e:
            if must:
                raise ServiceError("%s: %s" % (_show(argv), e)) from None
            continue
        if res.returncode != 0 and must:
            why = (getattr(res, "stderr", "") or getattr(res, "stdout", "") or "").strip()
            raise ServiceError("%s failed (exit %d): %s" % (_show(argv), res.returncode, why[:400]))


def install(platform=None, dry_run=False, runner=None, out=None, uid=None):
    """Write the service file and start it; returns the path written."""
    out = out or sys.stdout
    kind = platform_kind(platform)
    vals = values()
    uid = os.getuid() if uid is None else uid
    if kind == "launchd":
        path, text = plist_path(), render_plist(vals)
        commands = launchctl_install(path, uid)
        can_run = runner is not None or sys.platform == "darwin"
    else:
        path, text = unit_path(), render_unit(vals)
        commands = systemctl_install()
        can_run = user_manager_running(runner or default_runner)
    if _is_ours(path) is False:
        raise ServiceError("%s exists and was not written by cc-continuity; not overwriting it" % path)
    if dry_run:
        out.write("would write %s:\n%s\nthen run:\n" % (path, text))
        for argv, _ in commands:
            out.write("  $ %s\n" % _show(argv))
        return path
    created = _missing_dirs(os.path.dirname(path))
    paths.ensure_dir(os.path.dirname(path))
    _note_created(created)
    atomic.write_text(path, text, mode=0o644)
    out.write("wrote %s\n" % path)
    if can_run:
        _run_all(commands, runner or default_runner, out)
        out.write("the watchdog service is installed and running (check: cc-continuity watchdog status)\n")
    elif kind == "systemd":
        out.write("No systemd user manager is running for this login, so nothing was started.\n"
                  "Run these once one is (e.g. after logging in):\n")
        for argv in (["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT]):
            out.write("  %s\n" % _show(argv))
        out.write("To keep it running while you are logged out:\n  %s\n"
                  % _show(["loginctl", "enable-linger", _user()]))
    else:
        out.write("launchctl exists only on macOS; there, run:\n")
        for argv, _ in commands:
            out.write("  %s\n" % _show(argv))
    return path


def uninstall(platform=None, dry_run=False, runner=None, out=None, uid=None):
    """Stop and remove the service; returns the path removed, or None when none was installed."""
    out = out or sys.stdout
    kind = platform_kind(platform)
    uid = os.getuid() if uid is None else uid
    if kind == "launchd":
        path = plist_path()
        commands = launchctl_uninstall(path, uid)
        can_run = runner is not None or sys.platform == "darwin"
    else:
        path = unit_path()
        commands = systemctl_uninstall()
        can_run = user_manager_running(runner or default_runner)
    ours = _is_ours(path)
    if ours is None:
        out.write("no watchdog service installed (%s does not exist)\n" % path)
        return None
    if ours is False:
        raise ServiceError("%s was not written by cc-continuity; not removing it" % path)
    if dry_run:
        out.write("would run:\n")
        for argv, _ in commands:
            out.write("  $ %s\n" % _show(argv))
        out.write("and remove %s\n" % path)
        return path
    stop, after = (commands[:1], commands[1:]) if kind == "systemd" else (commands, [])
    if can_run:
        _run_all(stop, runner or default_runner, out)
    os.unlink(path)
    out.write("removed %s\n" % path)
    _remove_created(out)
    if can_run:
        _run_all(after, runner or default_runner, out)
    elif kind == "systemd":
        out.write("No systemd user manager is running; if the service is still loaded somewhere, run:\n  %s\n"
                  % _show(["systemctl", "--user", "disable", "--now", UNIT]))
    else:
        out.write("on macOS, unload it with:\n  %s\n" % _show(commands[0][0]))
    return path


def _user():
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
