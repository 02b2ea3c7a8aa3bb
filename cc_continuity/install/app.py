"""A stable copy of cc-continuity under ``$CC_CONTINUITY_HOME``, and the launcher.

Hooks must keep working when the virtualenv we were installed from moves or
is deleted, so install copies the package and its runtime dependencies into
``$CC_CONTINUITY_HOME/app.d/<version>-<stamp>/`` (package in ``cc_continuity/``,
dependencies in ``lib/``, byte-compiled), complete in a staging dir before it is
renamed into place, and points the symlink ``$CC_CONTINUITY_HOME/app`` at it.
Swapping a symlink with ``os.replace`` is atomic: a hook starting mid-upgrade
sees the old copy or the new one, never a missing or half-written file
(``python`` exits 2 for a missing script, and exit 2 *blocks* a tool call).
Installs run one at a time (the caller's install lock), and the copy that was
linked before stays until the next install.

Everything runs on the *base* interpreter (not a venv's), with ``-S`` so no
site-packages leak in.  ``$CC_CONTINUITY_HOME/bin/cc-continuity`` is a small
launcher script for that interpreter; ``~/.local/bin/cc-continuity`` links to it.
"""

import compileall
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import sys
import time

from .. import __version__, atomic, deps, errors, paths
from .wrapper import FALLTHROUGH_STATUS

# pyproject's dependencies (the optional packages, deps.PACKAGES); their own requirements are followed from metadata.
RUNTIME_DISTS = deps.PACKAGES
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


AppError = errors.AppError  # (defined with every error class, in errors.py)


def package_dir():
    """The ``cc_continuity`` package we are running from."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def base_interpreter():
    """The interpreter outside any virtualenv (CONTRACTS: realpath, else ``sys._base_executable``)."""
    exe = os.path.realpath(sys.executable)
    in_venv = sys.prefix != sys.base_prefix
    if in_venv and exe.startswith(os.path.realpath(sys.prefix) + os.sep):
        exe = os.path.realpath(getattr(sys, "_base_executable", "") or exe)
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise AppError("cannot find an executable base Python interpreter (got %r)" % exe)
    return exe


def app_link(home):
    return os.path.join(home, "app")


def versions_dir(home):
    return os.path.join(home, "app.d")


def launcher_path(home):
    return os.path.join(home, "bin", "cc-continuity")


def path_link(user_home):
    return os.path.join(user_home, ".local", "bin", "cc-continuity")


# -- dependencies --------------------------------------------------------------

_REQ_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_REQ_EXTRAS = re.compile(r"\s*\[([^\]]*)\]")  # pyjwt[crypto]
_REQ_EXTRA = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")  # a requirement only an extra brings


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_dists(roots=RUNTIME_DISTS):
    """The installed distributions ``roots`` need, following requirements, and an extra's where one asks for it
    (``pyjwt[crypto]`` brings cryptography; extras nobody asks for are skipped).

    A requirement that is not installed is skipped: it is one whose marker did
    not apply here (our direct dependencies are checked to be present).
    """
    from importlib import metadata  # lazy: +~15 ms to launch and every verb (they load install/)

    found, queue, wanted = {}, [(name, ()) for name in roots], {}
    while queue:
        name, extras = queue.pop(0)
        key = _norm(name)
        new_extras = set(extras) - wanted.get(key, set())
        if key in found and not new_extras:
            continue
        wanted.setdefault(key, set()).update(extras)
        try:
            dist = found.get(key) or metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name in roots:
                raise AppError("runtime dependency %s is not installed" % name) from None
            continue
        first = key not in found
        found[key] = dist
        for req in dist.requires or ():
            marker = req.partition(";")[2]
            extra = _REQ_EXTRA.search(marker)
            if extra is None and "extra" in marker:
                continue
            if extra is not None and extra.group(1) not in (wanted[key] if first else new_extras):
                continue
            if extra is None and not first:
                continue
            m = _REQ_NAME.match(req)
            if m:
                asked = _REQ_EXTRAS.match(req[m.end():])
                queue.append((m.group(1), tuple(x.strip() for x in asked.group(1).split(",")) if asked else ()))
    return [found[k] for k in sorted(found)]


def _dist_files(dist):
    """(source path, relative destination) for every file of ``dist`` inside site-packages."""
    files = dist.files
    if files is None:
        raise AppError("cannot list the files of %s (no RECORD)" % dist.metadata["Name"])
    for f in files:
        parts = f.parts
        if not parts or parts[0] == ".." or os.path.isabs(str(f)):
            continue
        if _SKIP_DIRS.intersection(parts) or str(f).endswith(_SKIP_SUFFIXES):
            continue
        src = str(dist.locate_file(f))
        if os.path.isfile(src):
            yield src, os.path.join(*parts)


def _package_files(src):
    # followlinks: in a source checkout data/hooks and data/skills link to the plugin's
    # top-level hooks/ and skills/ (a plugin's component dirs must be real directories).
    for dirpath, dirnames, filenames in os.walk(src, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for fn in sorted(filenames):
            if fn.endswith(_SKIP_SUFFIXES) or fn.startswith(atomic.TMP_MARK):
                continue
            full = os.path.join(dirpath, fn)
            yield full, os.path.relpath(full, src)


def fingerprint(source=None, dists=None):
    """A hash of what a copy would contain, so an unchanged re-install skips the copy."""
    source = source or package_dir()
    dists = dependency_dists() if dists is None else dists
    h = hashlib.sha256(__version__.encode())
    for full, rel in _package_files(source):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        with open(full, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    for d in dists:
        h.update(("%s==%s\0" % (d.metadata["Name"], d.version)).encode())
    h.update(sys.version.encode())
    return h.hexdigest()


def installed_fingerprint(home):
    try:
        with open(os.path.join(app_link(home), "FINGERPRINT"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def installed_version(home):
    try:
        with open(os.path.join(app_link(home), "VERSION"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


# -- install / remove ----------------------------------------------------------

def install(home, source=None):
    """Copy the package and its dependencies into a new version dir and switch ``app`` to it.

    Returns ``(changed, dists)``: False when an identical copy is already in place.
    """
    source = source or package_dir()
    dists = dependency_dists()
    fp = fingerprint(source, dists)
    if installed_fingerprint(home) == fp and os.path.isfile(os.path.join(app_link(home), "cc_continuity", "hooks", "__init__.py")):
        return False, dists
    paths.ensure_dir(home)
    vdir = paths.ensure_dir(versions_dir(home))
    name = "%s-%s-%s" % (__version__, time.strftime("%Y%m%dT%H%M%S"), os.urandom(3).hex())
    staging = os.path.join(vdir, ".staging-" + name)
    try:
        os.mkdir(staging, paths.DIR_MODE)
        for full, rel in _package_files(source):
            _copy(full, os.path.join(staging, "cc_continuity", rel))
        copy_dists(dists, os.path.join(staging, "lib"))
        with open(os.path.join(staging, "VERSION"), "w", encoding="utf-8") as f:
            f.write(__version__ + "\n")
        with open(os.path.join(staging, "FINGERPRINT"), "w", encoding="utf-8") as f:
            f.write(fp + "\n")
        # Hooks run on every tool call: they must not pay for compiling.
        if not compileall.compile_dir(staging, quiet=2):
            raise AppError("byte-compiling the app copy failed")
        final = os.path.join(vdir, name)
        os.rename(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous = _current_version(home)
    _switch(home, os.path.join("app.d", name))
    # (The caller holds the install lock, so no other install is filling or linking one of these.)
    # The copy linked until a moment ago stays until the next install: a hook that started
    # from it may still be importing.
    for old in os.listdir(vdir):
        if old not in (name, previous):
            shutil.rmtree(os.path.join(vdir, old), ignore_errors=True)
    return True, dists


def copy_dists(dists, lib):
    """Every file of ``dists`` into ``lib`` (hard links where the filesystem allows)."""
    for dist in dists:
        for full, rel in _dist_files(dist):
            _copy(full, os.path.join(lib, rel), link=True)


def _current_version(home):
    """The app.d entry ``app`` points at now, or None."""
    try:
        target = os.readlink(app_link(home))
    except OSError:
        return None
    return os.path.basename(target.rstrip("/"))


def _copy(src, dst, link=False):
    """Copy ``src`` (with its up-to-date .pyc, if any) to ``dst``.

    ``link``: hard-link when possible.  Used for installed dependencies only:
    pip replaces files rather than editing them, so a link is as stable as a
    copy (it outlives the venv) and 7x faster; our own package may be a
    checkout someone edits in place, so it is always copied.
    """
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        if not link:
            raise OSError
        os.link(src, dst)
    except OSError:  # other filesystem, or not allowed (fs.protected_hardlinks)
        shutil.copy2(src, dst)
    if src.endswith(".py"):
        # The mtime is kept, so a valid .pyc stays valid and compileall skips it.
        pyc = importlib.util.cache_from_source(src)
        if os.path.isfile(pyc):
            _copy(pyc, importlib.util.cache_from_source(dst), link)


def _switch(home, rel_target):
    """Point ``home/app`` at ``rel_target`` atomically (an old real directory is moved aside first)."""
    link = app_link(home)
    if os.path.isdir(link) and not os.path.islink(link):
        os.rename(link, os.path.join(versions_dir(home), "legacy-%s" % os.urandom(3).hex()))
    tmp = os.path.join(home, ".app-link-%s" % os.urandom(4).hex())
    os.symlink(rel_target, tmp)
    os.replace(tmp, link)


def remove(home):
    """Remove the app copy (link and versions).  True if anything was there."""
    link = app_link(home)
    found = False
    if os.path.islink(link):
        os.unlink(link)
        found = True
    elif os.path.isdir(link):
        shutil.rmtree(link)
        found = True
    vdir = versions_dir(home)
    if os.path.isdir(vdir):
        shutil.rmtree(vdir)
        found = True
    return found


# -- launcher ------------------------------------------------------------------

def launcher_text(python, app):
    """The launcher script: run the app copy with ``python -S``, whatever venv is active."""
    head = "#!%s -S\n" % python
    if len(head) > 127 or any(c.isspace() for c in python):
        # Shebang lines cannot quote; let sh find the interpreter (the line is a no-op in Python).
        head = "#!/bin/sh\n'''exec' %s -S \"$0\" \"$@\"\n' '''\n" % shlex.quote(python)
    return (
        head
        + "# cc-continuity launcher, written by `cc-continuity install` and removed by\n"
        + "# `cc-continuity uninstall`.  Runs the app copy below, independent of any virtualenv.\n"
        + "import sys\n"
        + "sys.path[0:0] = [%r, %r]\n" % (app, os.path.join(app, "lib"))
        + "try:\n"
        + "    from cc_continuity.cli import main\n"
        + "except Exception as e:  # the app copy is missing or broken\n"
        + "    launch = sys.argv[1:2] == ['launch']\n"
        + "    sys.stderr.write('cc-continuity: cannot load %%s (%%s: %%s); %%s\\n' %% (%r, type(e).__name__, e,\n" % app
        + "                     'starting claude without it' if launch else 'install it again, as the README says'))\n"
        + "    sys.exit(%d if launch else 1)  # the claude() wrapper then runs the real claude\n" % FALLTHROUGH_STATUS
        + "sys.exit(main())\n"
    )


def is_our_link(link, launcher):
    """Is ``link`` a symlink to our launcher?"""
    if not os.path.islink(link):
        return False
    target = os.readlink(link)
    if not os.path.isabs(target):
        target = os.path.join(os.path.dirname(link), target)
    return os.path.normpath(target) == os.path.normpath(launcher)


def on_path(directory, env=None):
    env = os.environ if env is None else env
    want = os.path.normpath(directory)
    return any(os.path.normpath(os.path.expanduser(p)) == want for p in env.get("PATH", "").split(os.pathsep) if p)
