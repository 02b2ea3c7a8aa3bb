"""The checks of the system every agent host shares: Python, git, tmux, the config, the app copy the
hooks run, the watchdog's service, the state directory (permissions, leftovers), ntfy and mirror pushes.

A check never changes anything, except :func:`check_permissions` and :func:`check_leftovers` with
``ctx.fix``, and those only touch files of ours: atomic-write temp files, unused launch environment
files, lock files no live process holds, and the mode bits of our state directory.
"""

import fnmatch
import json
import os
import re
import shlex
import shutil
import sys
import time
import urllib.parse

from .. import __version__, atomic, lock, notify, paths
from ..install import app
from .base import MIN_PYTHON, MIN_TMUX, TEMP_MIN_AGE_S, Result, _dotted, _first_line, _run, _version_tuple

# -- tools ---------------------------------------------------------------------

def check_python(ctx):
    v = sys.version_info[:3]
    ok = v >= MIN_PYTHON
    return Result("python", ok, "%s (%s)" % (_dotted(v), sys.executable),
                  "install Python %s or newer and reinstall cc-continuity with it" % _dotted(MIN_PYTHON))


def check_git(ctx):
    git = shutil.which("git", path=ctx.env.get("PATH"))
    if not git:
        return Result("git", False, "git not found on PATH (checkpoints snapshot the work tree with git)",
                      "install git (apt install git / brew install git)")
    rc, out, err = _run([git, "--version"])
    return Result("git", rc == 0, _first_line(out) or _first_line(err), "reinstall git: `%s --version` fails" % git)


def check_tmux(ctx):
    tmux = shutil.which("tmux", path=ctx.env.get("PATH"))
    fix = "install tmux %s or newer (apt install tmux / brew install tmux)" % _dotted(MIN_TMUX)
    if not tmux:
        return Result("tmux", False, "tmux not found: rotation cannot type /clear, you would have to", fix)
    rc, out, err = _run([tmux, "-V"])
    v = _version_tuple(out)
    if rc != 0 or v is None:
        return Result("tmux", False, "`tmux -V` failed: %s" % (_first_line(err) or _first_line(out)), fix)
    return Result("tmux", v >= MIN_TMUX, "%s (%s)" % (out.strip(), tmux), fix)


# -- configuration -------------------------------------------------------------

def check_config(ctx):
    cfg, err = ctx.config()
    if err:
        return Result("config", False, err, "correct that value (or run `cc-continuity configure`)")
    detail = "valid (%s)" % ", ".join(
        "%s=%s" % (k, json.dumps(cfg[k])) for k in ("enabled", "warn", "rotate", "hard", "window"))
    if cfg.warnings:
        detail += "; " + "; ".join(cfg.warnings)
    return Result("config", True, detail)


# -- snapshots and mirror pushes -------------------------------------------------

_SNAPSHOT_SAMPLE = "refs/continuity/project-0000000000/cp-001"


def mirror_remotes(root, env=None):
    """Remotes of the repository at ``root`` whose push carries refs/continuity/* (snapshots).

    ``remote.<name>.mirror = true`` (``git clone --mirror``, ``git remote add --mirror=push``)
    pushes every ref; so does a push refspec whose source side covers refs/continuity/
    (``+refs/*:refs/*``, ``refs/continuity/*:...``) unless a negative one (``^refs/continuity/*``)
    takes them out again.  [(name, why)] in config order.
    """
    rc, out, _ = _run(["git", "-C", root, "config", "--get-regexp", r"^remote\..*\.(mirror|push)$"], env=env)
    if rc not in (0,):
        return []
    mirror, pushes = {}, {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key[len("remote."):].rpartition(".")
        if field == "mirror":
            mirror[name] = value.strip().lower() in ("true", "yes", "on", "1")
        else:
            pushes.setdefault(name, []).append(value.strip())
    found = []
    for name in list(dict.fromkeys(list(mirror) + list(pushes))):
        specs = pushes.get(name, [])
        excluded = any(sp.startswith("^") and fnmatch.fnmatchcase(_SNAPSHOT_SAMPLE, sp[1:]) for sp in specs)
        covering = [sp for sp in specs if not sp.startswith("^")
                    and fnmatch.fnmatchcase(_SNAPSHOT_SAMPLE, sp.lstrip("+").split(":", 1)[0])]
        if mirror.get(name):
            found.append((name, "remote.%s.mirror is true" % name))
        elif covering and not excluded:
            found.append((name, "remote.%s.push %s covers refs/continuity/*" % (name, covering[0])))
    return found


def check_mirror(ctx):
    """Snapshots (untracked files included) leave with a mirror push: say so before it happens."""
    root = ctx.root
    if not os.path.isdir(os.path.join(root, ".git")) and not os.path.isfile(os.path.join(root, ".git")):
        return Result("mirror", True, "not a git repository")
    found = mirror_remotes(root, ctx.env)
    if not found:
        return Result("mirror", True, "no remote pushes refs/continuity/* (snapshots stay local)")
    cfg, _ = ctx.config()
    what = "; ".join(why for _, why in found)
    if cfg is not None and cfg["snapshot_untracked"] is False:
        return Result("mirror", True, "%s: snapshots are pushed there, tracked files only "
                                      "(snapshot_untracked is false)" % what)
    names = ", ".join(name for name, _ in found)
    return Result("mirror", False,
                  "%s: every push sends the work-tree snapshots under refs/continuity/, untracked files "
                  "included (local notes, .env files that are not ignored)" % what,
                  "push branches and tags explicitly instead (git config --unset remote.<name>.mirror, or add "
                  "the push refspec ^refs/continuity/*), or keep untracked files out of snapshots with "
                  "\"snapshot_untracked\": false in %s (remotes: %s)" % (paths.config_file(), names))


def _declared_version(init_path):
    with open(init_path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"""^__version__\s*=\s*["']([^"']+)["']""", line)
            if m:
                return m.group(1)
    return None


def package_version():
    """The version pip installed (falls back to the running code's)."""
    # lazy: every verb's start imports this module (cli.build_parser loads all verbs), metadata costs ~15 ms
    from importlib import metadata

    try:
        return metadata.version("cc-continuity")
    except metadata.PackageNotFoundError:
        return __version__


def check_app_copy(ctx):
    """The hooks run the copy under ``$CC_CONTINUITY_HOME/app``; it must be the version pip installed."""
    root = ctx.own_copy()
    if root:
        return Result("app-copy", True, "not used: the plugin's hooks run its own copy (%s)" % root)
    init = os.path.join(app.app_link(paths.home()), "cc_continuity", "__init__.py")
    want = package_version()
    try:
        have = _declared_version(init)
    except OSError:
        return Result("app-copy", False, "%s is missing (hooks run from this copy)" % os.path.dirname(init),
                      "cc-continuity install")
    if have != want:
        return Result("app-copy", False, "the hooks run version %s but cc-continuity %s is installed" % (have, want),
                      "cc-continuity install (refreshes the copy)")
    return Result("app-copy", True, "version %s" % have)



def check_watchdog_unit(ctx):
    """An installed watchdog service runs from paths that are still there."""
    from ..watch import service  # (this check's only: watch/ is not loaded by the other checks)

    try:
        problem = service.unit_problem()
    except OSError as e:
        return Result("watchdog-unit", False, "cannot read the watchdog's service file: %s" % e.strerror,
                      "cc-continuity watchdog install")
    if problem:
        return Result("watchdog-unit", False, problem + ": it cannot start",
                      "cc-continuity watchdog install (it writes the service again for the copy you have)")
    return Result("watchdog-unit", True, "a watchdog service is installed and its paths are there"
                  if service.installed_service() else "no watchdog service installed")


# -- state directory -----------------------------------------------------------

def _walk(top, limit=50000):
    """(path, lstat) for ``top`` and everything under it (no symlink following), at most ``limit``."""
    stack, n = [top], 0
    while stack and n < limit:
        p = stack.pop()
        try:
            st = os.lstat(p)
        except OSError:
            continue
        n += 1
        yield p, st
        if os.path.isdir(p) and not os.path.islink(p):
            try:
                stack.extend(os.path.join(p, c) for c in os.listdir(p))
            except OSError:
                continue


# code, not data: may be readable, never writable by others (venv: install.py's private
# virtualenv of public packages, made under the user's umask)
CODE_DIRS = ("app", "app.d", "bin", "venv")


def check_permissions(ctx):
    """State is private (handoffs quote prompts); code the hooks run is not writable by others."""
    home = paths.home()
    if not os.path.isdir(home):
        return Result("permissions", True, "%s not created yet" % home)
    bad, fixed, failed = [], 0, []
    for p, st in _walk(home):
        if os.path.islink(p):
            continue
        rel = os.path.relpath(p, home)
        code = rel.split(os.sep)[0] in CODE_DIRS
        extra = st.st_mode & (0o022 if code else 0o077)
        if not extra:
            continue
        if ctx.fix:  # only the bits named: others lose write on code, everything on state
            try:
                os.chmod(p, st.st_mode & 0o7777 & ~extra)
                fixed += 1
                continue
            except OSError as e:
                failed.append("%s (%s)" % (rel, e.strerror))
        bad.append("%s (%o)" % (home if p == home else rel, st.st_mode & 0o777))
    fix = "cc-continuity doctor --fix (or: chmod -R go-rwx %s)" % shlex.quote(home)
    if bad:
        more = " and %d more" % (len(bad) - 5) if len(bad) > 5 else ""
        detail = ("open to other users (state must be 0700/0600, code not writable by others): %s%s"
                  % (", ".join(bad[:5]), more))
        if failed:
            return Result("permissions", False, detail + "; could not change: " + ", ".join(failed[:5]),
                          "chmod -R go-rwx %s" % shlex.quote(home))
        return Result("permissions", False, detail, fix)
    if fixed:
        return Result("permissions", True, "%s is private (fixed %d path(s))" % (home, fixed))
    return Result("permissions", True, "%s is private" % home)


def find_leftovers(ctx, now=None):
    """(temp files, the hosts' stale files such as launch env files, stale locks) that are ours and safe to
    remove."""
    now = time.time() if now is None else now
    temps, locks = [], []
    home = paths.home()
    places = list(_walk(home)) if os.path.isdir(home) else []
    cdir = paths.claude_config_dir()
    try:
        places += [(os.path.join(cdir, n), os.lstat(os.path.join(cdir, n))) for n in os.listdir(cdir)]
    except OSError:
        pass
    for p, st in places:
        name = os.path.basename(p)
        if name.startswith(atomic.TMP_MARK) and now - st.st_mtime > TEMP_MIN_AGE_S and not os.path.isdir(p):
            temps.append(p)
        elif (name == "lock" or name.endswith(".lock")) and p.startswith(home + os.sep) and os.path.isfile(p):
            if lock.is_stale(p):
                locks.append(p)
    return sorted(temps), sorted(ctx.stale_files(now)), sorted(locks)


def check_leftovers(ctx):
    temps, envs, locks = find_leftovers(ctx)
    if not (temps or envs or locks):
        return Result("leftovers", True, "no leftover temp files or stale locks")
    if ctx.fix:
        removed, failed = [], []
        for p in temps + envs:
            try:
                os.unlink(p)
                removed.append(p)
            except FileNotFoundError:
                pass
            except OSError as e:
                failed.append("%s (%s)" % (p, e.strerror))
        for p in locks:
            (removed if lock.remove_if_stale(p) else failed).append(p)
        detail = "removed %d: %s" % (len(removed), ", ".join(removed)) if removed else "nothing removed"
        if failed:
            return Result("leftovers", False, detail + "; could not remove: " + ", ".join(failed),
                          "remove those files by hand")
        return Result("leftovers", True, detail)
    parts = []
    if temps:
        parts.append("%d interrupted-write temp file(s): %s" % (len(temps), ", ".join(temps[:3])))
    if envs:
        parts.append("%d unused launch environment file(s) (may hold secrets)" % len(envs))
    if locks:
        parts.append("%d lock file(s) whose holder is gone (harmless)" % len(locks))
    if not (temps or envs):
        return Result("leftovers", True, "; ".join(parts) + "; `cc-continuity doctor --fix` tidies them")
    return Result("leftovers", False, "; ".join(parts), "cc-continuity doctor --fix")


def check_ntfy(ctx):
    cfg, err = ctx.config()
    url = cfg["ntfy_url"] if cfg is not None else None
    if not url:
        if ctx.notify_test:  # asked to send one: nothing was sent, and that is not "ok"
            return Result("ntfy", False, "--notify-test: no ntfy URL is configured, so no test message was sent",
                          "`cc-continuity configure --ntfy https://ntfy.sh/<topic>`, then run this again")
        return Result("ntfy", True, "push notifications not configured (optional)")
    shown = _redact_url(url)
    fix = "check the URL (`cc-continuity configure --ntfy URL`) and that the server is reachable"
    if ctx.notify_test:
        try:
            ok, detail = notify.send_test(url, token=cfg["ntfy_token"])
        except Exception as e:
            return Result("ntfy", False, "test message to %s failed: %s: %s" % (shown, type(e).__name__, e), fix)
        if not ok:
            return Result("ntfy", False, "test message not delivered: %s" % detail, fix)
        return Result("ntfy", True, "test message %s: check your phone" % detail)
    import socket  # lazy: every verb's start imports this module (cli.build_parser loads all verbs): ~5 ms

    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=3):
            pass
    except (OSError, ValueError) as e:
        return Result("ntfy", False, "cannot connect to %s: %s" % (shown, e), fix)
    return Result("ntfy", True, "%s reachable (`cc-continuity doctor --notify-test` sends a message)" % shown)


def _redact_url(url):
    """The URL without credentials or query (a topic URL may embed a token)."""
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host += ":%d" % p.port
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


CHECKS = [check_python, check_git, check_tmux, check_config, check_app_copy, check_watchdog_unit, check_permissions,
          check_leftovers, check_ntfy, check_mirror]  # the system's (hosts/checkup.ORDER places each row)
