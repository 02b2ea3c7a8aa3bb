"""Build the optional packages' environment: ``python -m cc_continuity.deps.build --data <folder>``.

Started detached by a plugin session's first SessionStart or prompt (:func:`cc_continuity.deps.at_session`),
in the foreground by ``cc-continuity doctor --fix``, and by ``python3 install.py`` for its private venv
(:func:`make`).  What it does, in order:

1. one builder at a time (``envs/.lock``); an environment already complete is left as it is;
2. a virtualenv in a temporary folder beside the final one, for the interpreter the hooks run:
   with ``uv`` when one on PATH passes the owner/mode check (``UV_PYTHON_DOWNLOADS=never``: it never
   fetches a Python), else ``python -m venv`` with pip from ``ensurepip``, else ``--without-pip`` and
   pip's own wheel from the package index (its sha256 pinned here);
3. ``requirements.lock`` installed with ``--require-hashes --only-binary :all: --no-deps``: every file
   is checked against the lock's hashes and no source distribution's code ever runs;
4. every package imported by the new interpreter, ``.complete`` written, the folder renamed into place.

No cache of pip's or uv's is written (``--no-cache-dir``, ``--no-cache``): an uninstall leaves the user's
HOME as it was, and a build happens once per interpreter and lock.

The index is the user's own configuration (pip.conf, uv.toml); the ``PIP_*``/``UV_*`` variables of the
environment are dropped, since a repository's ``.claude/settings.json`` ``env`` can set them for the
hooks it starts.  A failure leaves ``<name>.failed`` (why, and the command that finishes it) and no
half-made environment.
"""

import argparse
import base64
import configparser
import fcntl
import hashlib
import html.parser
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from .. import atomic, paths, procs, redact, safefile
from . import COMPLETE, IMPORTS, LOCK_FILE, MCP_IMPORTS, MCP_LOCK, complete, env_dir, envs_dir, failure, site_dir

# pip's own wheel, for an interpreter without ensurepip (Debian without python3-venv): from the index.
PIP_WHEEL = "pip-26.3-py3-none-any.whl"
PIP_SHA256 = "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"
PIP_MAX_BYTES = 16 << 20
DEFAULT_INDEX = "https://pypi.org/simple"
STEP_TIMEOUT_S = 600
FETCH_TIMEOUT_S = 60
DROPPED = ("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX", "__PYVENV_LAUNCHER__")
FIX = "cc-continuity doctor --fix"


class BuildError(RuntimeError):
    """A step of the build failed; the message is what the user is told (no secrets: redacted)."""


def clean_env(base=None):
    """The environment the installers run in: the caller's, without what a repository could have set for
    them (PIP_*, UV_*, PYTHON*, an active virtualenv)."""
    base = os.environ if base is None else base
    return {k: v for k, v in base.items() if not k.startswith(DROPPED)}


def _run(argv, what, env, cwd):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                           env=env, cwd=cwd, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BuildError("%s took longer than %d s" % (what, STEP_TIMEOUT_S)) from None
    except OSError as e:
        raise BuildError("%s could not start: %s" % (what, e.strerror or e)) from None
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if p.returncode != 0:
        lines = [ln.strip() for ln in (p.stderr + "\n" + p.stdout).splitlines() if ln.strip()]
        why = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else "")
        raise BuildError("%s failed (exit %d): %s" % (what, p.returncode, redact.redact(why)[:300]))
    return p


# -- the user's index, for pip's own wheel -------------------------------------------------------

def pip_config_files(env=None):
    """pip's configuration files, lowest precedence first (global, then the user's)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    xdg_dirs = (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    xdg_home = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(d, "pip", "pip.conf") for d in xdg_dirs if d] + ["/etc/pip.conf"]
    files += [os.path.join(home, ".pip", "pip.conf"), os.path.join(xdg_home, "pip", "pip.conf")]
    if sys.platform == "darwin":
        files.append(os.path.join(home, "Library", "Application Support", "pip", "pip.conf"))
    return files


def index_url(env=None):
    """The index pip would use: ``index-url`` of the user's pip configuration, else PyPI's."""
    found = DEFAULT_INDEX
    for path in pip_config_files(env):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url").strip() or found
    return found


def _open(url, accept=None, timeout=FETCH_TIMEOUT_S):
    """``urlopen`` of an index URL, credentials in it (``https://user:token@host/...``) sent as basic auth,
    as pip sends them."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Accept": accept} if accept else {}
    if parts.username is not None:
        pair = "%s:%s" % (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        host = parts.hostname + (":%d" % parts.port if parts.port else "")
        url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def index_answer(index, names, env=None):
    """What the index says when asked for the first package (pip does not say why it found nothing):
    "; the index <url> answered HTTP 403", "; cannot reach the index <url>: ...", or "" when it answers."""
    if not names:
        return ""
    page = urllib.parse.urljoin(index.rstrip("/") + "/", names[0] + "/")
    shown = redact.redact(index)
    if urllib.parse.urlsplit(page).scheme not in ("https", "http"):
        return ""
    try:
        with _open(page, "text/html", timeout=15) as r:
            r.read(1)
    except urllib.error.HTTPError as e:
        return "; the package index %s answered HTTP %d" % (shown, e.code)
    except OSError as e:
        return "; cannot reach the package index %s: %s" % (shown, getattr(e, "reason", None) or e)
    return ""


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.links.append(href)


def fetch_pip(dest_dir, env=None):
    """pip's wheel from the index (the simple API's page for pip), checked against its pinned sha256."""
    index = index_url(env)
    page = urllib.parse.urljoin(index.rstrip("/") + "/", "pip/")
    if urllib.parse.urlsplit(page).scheme not in ("https", "http"):
        raise BuildError("the package index %s is not an http(s) URL" % redact.redact(index))
    try:
        with _open(page, "text/html") as r:
            parser = _Links()
            parser.feed(r.read(4 << 20).decode("utf-8", "replace"))
            base = page  # (with its credentials: the files are on the same index, as pip takes them)
        href = next((h for h in parser.links if urllib.parse.urlsplit(h).path.rsplit("/", 1)[-1] == PIP_WHEEL), None)
        if href is None:
            raise BuildError("the package index %s has no %s" % (redact.redact(index), PIP_WHEEL))
        url = urllib.parse.urljoin(base, href)
        dest = os.path.join(dest_dir, PIP_WHEEL)
        digest = hashlib.sha256()
        with _open(url) as r, open(dest, "wb") as f:
            while True:
                chunk = r.read(1 << 16)
                if not chunk:
                    break
                digest.update(chunk)
                f.write(chunk)
                if f.tell() > PIP_MAX_BYTES:
                    raise BuildError("%s from %s is larger than %d bytes" % (PIP_WHEEL, redact.redact(index),
                                                                             PIP_MAX_BYTES))
    except urllib.error.HTTPError as e:
        raise BuildError("cannot fetch pip from %s: it answered HTTP %d (%s)" % (redact.redact(index), e.code,
                                                                                  e.reason)) from None
    except OSError as e:
        raise BuildError("cannot fetch pip from %s: %s" % (redact.redact(index), getattr(e, "reason", None) or e)) from None
    if digest.hexdigest() != PIP_SHA256:
        raise BuildError("%s from %s does not match its pinned sha256" % (PIP_WHEEL, redact.redact(index)))
    return dest


# -- the environment ---------------------------------------------------------------------------

def trusted_uv(env):
    uv = shutil.which("uv", path=env.get("PATH"))
    return uv if uv and safefile.untrusted_program(uv) is None else None


def make(dest, python, lock=LOCK_FILE, env=None, say=print):
    """``lock`` installed into the virtualenv at ``dest`` for ``python`` (made first when it is not there);
    the installer used: "uv", "pip" or "pip from the index"."""
    env = clean_env(env)
    cwd = os.path.dirname(dest)
    vpy = os.path.join(dest, "bin", "python")
    have = os.path.isfile(vpy)
    uv = trusted_uv(env)
    if uv:
        uv_env = dict(env, UV_PYTHON_DOWNLOADS="never")
        say("installing with %s" % uv)
        try:
            if not have:
                _run([uv, "venv", "--quiet", "--no-cache", "--python", python, dest], "uv venv", uv_env, cwd)
            _still_a_venv(dest)
            _run([uv, "pip", "install", "--quiet", "--no-cache", "--python", vpy, "--require-hashes", "--only-binary",
                  ":all:", "--no-deps", "-r", lock], "uv pip install", uv_env, cwd)
            return "uv"
        except BuildError as e:  # uv and pip may reach the index differently (uv.toml, pip.conf, certificates)
            say("%s; trying pip" % e)
            if not have:  # what uv made has no pip: `python -m venv` makes one with its own (ensurepip, offline)
                shutil.rmtree(dest, ignore_errors=True)
    how = "pip"
    if not have:
        try:
            _run([python, "-m", "venv", dest], "python -m venv", env, cwd)
        except BuildError:
            shutil.rmtree(dest, ignore_errors=True)
            _run([python, "-m", "venv", "--without-pip", dest], "python -m venv --without-pip", env, cwd)
    pip = [vpy, "-m", "pip"]
    wheel = None
    if subprocess.run(pip + ["--version"], capture_output=True, stdin=subprocess.DEVNULL, env=env).returncode != 0:
        say("no pip in %s (its Python has no ensurepip): fetching %s from %s" % (dest, PIP_WHEEL,
                                                                                 redact.redact(index_url(env))))
        wheel = fetch_pip(dest, env)
        pip, how = [vpy, os.path.join(wheel, "pip")], "pip from the index"
    try:
        _still_a_venv(dest)
        # --require-virtualenv: should the folder still go under it (a plugin uninstalled mid-build, a runner's
        # clean-up), its python runs as the base interpreter, and pip refuses instead of installing there
        _run(pip + ["install", "--require-virtualenv", "--quiet", "--no-input", "--no-cache-dir",
                    "--disable-pip-version-check", "--require-hashes", "--only-binary", ":all:", "--no-deps", "-r",
                    lock], "pip install", env, cwd)
    except BuildError as e:
        raise BuildError("%s%s" % (e, index_answer(index_url(env), pinned(lock)[:1], env))) from None
    finally:
        if wheel:
            os.unlink(wheel)
    return how


def _still_a_venv(dest):
    """A virtualenv whose ``pyvenv.cfg`` went (a plugin uninstalled mid-build, a runner cleaning its folder) runs
    its python as the base interpreter: an install through it would land in the user's own Python."""
    if not os.path.isfile(os.path.join(dest, "pyvenv.cfg")):
        raise BuildError("%s is no longer a virtualenv (its pyvenv.cfg is gone): nothing installed" % dest)


def _size(path):
    total = 0
    for d, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(d, name)).st_size
            except OSError:
                pass
    return total


def pinned(lock):
    """The names a lock pins (``name==version`` lines)."""
    with open(lock, encoding="utf-8") as f:
        return [line.split("==", 1)[0].strip() for line in f if "==" in line and not line.lstrip().startswith("#")]


def build(data, python=None, say=print, env=None, lock=LOCK_FILE, after=None):
    """Build the environment for ``python`` (default: this one) under ``data``; its path.  Raises
    BuildError (recorded in ``<name>.failed``) when it cannot.  ``lock``: another lock (a developer's;
    its every pinned name must import as itself, ``-`` read as ``_``).  ``after``: when this build was
    asked for (the detached job's start); a build that failed after that, while this one waited for
    the lock, is not tried again now (two prompts in quick succession can each start one): its
    record, and whether the user was shown it, stay as they are."""
    imports = {LOCK_FILE: IMPORTS, MCP_LOCK: MCP_IMPORTS}.get(lock) or [n.replace("-", "_") for n in pinned(lock)]
    python = os.path.realpath(python or sys.executable)
    version = _version(python)
    final = env_dir(data, python, version, lock)
    root = paths.ensure_dir(envs_dir(data)) if data.startswith(paths.home()) else _private(envs_dir(data))
    with open(os.path.join(root, ".lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if complete(final) is not None:
            return final
        failed = failure(final)
        if after is not None and failed is not None and isinstance(failed.get("at"), (int, float)) \
                and failed["at"] >= after:
            raise BuildError("a build started beside this one failed while it waited: %s" % failed.get("why"))
        _sweep(root)
        tmp = os.path.join(root, ".build-%d" % os.getpid())
        t0 = time.monotonic()
        try:
            how = make(tmp, python, lock, env=env, say=say)
            _run([os.path.join(tmp, "bin", "python"), "-c", "import " + ", ".join(imports)], "importing the packages",
                 clean_env(env), root)
            info = {"python": python, "version": version, "installer": how, "seconds": round(time.monotonic() - t0, 1),
                    "bytes": _size(tmp), "site": site_dir(final, version), "at": time.time()}
            atomic.write_text(os.path.join(tmp, COMPLETE), json.dumps(info) + "\n", mode=paths.FILE_MODE)
            os.rename(tmp, final)
        except BaseException as e:
            shutil.rmtree(tmp, ignore_errors=True)
            why = str(e) if isinstance(e, BuildError) else "%s: %s" % (type(e).__name__, e)
            if not os.path.isdir(root):  # the plugin was uninstalled under the build: leave nothing behind
                raise BuildError("%s is gone (the plugin was uninstalled?): nothing built" % data) from e
            atomic.write_text(final + ".failed", json.dumps({"at": time.time(), "why": why, "fix": FIX,
                                                             "python": python, "shown": False}) + "\n",
                              mode=paths.FILE_MODE)
            if isinstance(e, BuildError):
                raise
            raise BuildError(why) from e
        try:
            os.unlink(final + ".failed")
        except FileNotFoundError:
            pass
        say("built %s in %.1f s (%s, %.1f MB)" % (final, info["seconds"], how, info["bytes"] / 1e6))
        return final


def _version(python):
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return "%d.%d" % sys.version_info[:2]
    p = subprocess.run([python, "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    if p.returncode != 0 or not p.stdout.strip():
        raise BuildError("%s does not run" % python)
    return p.stdout.strip()


def _private(path):
    """``path`` (a plugin's ``envs/``), made 0700 inside the plugin's data folder, which Claude Code makes and
    ``claude plugin uninstall`` deletes: never made here.  A build that starts (or goes on) after an uninstall
    took the folder must not bring it back, so its parent missing is a BuildError, and nothing is written."""
    try:
        os.mkdir(path, paths.DIR_MODE)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise BuildError("%s is gone (the plugin was uninstalled?): nothing built" % os.path.dirname(path)) from None
    os.chmod(path, paths.DIR_MODE)
    return path


def _sweep(root):
    """Temporary folders of builders that died (no process by that pid) are removed."""
    for name in os.listdir(root):
        if name.startswith(".build-"):
            pid = name[len(".build-"):]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m " + __name__)
    ap.add_argument("--data", required=True, help="the folder to build in (a plugin's ${CLAUDE_PLUGIN_DATA})")
    ap.add_argument("--python", help="the interpreter to build for (default: this one)")
    ap.add_argument("--lock", default=LOCK_FILE, help="the lock to install (default: the one shipped)")
    args = ap.parse_args(argv)
    asked = time.time()
    try:
        procs.yield_cpu(10)  # it runs while the user works
        build(args.data, args.python, lock=args.lock, after=asked)
    except BuildError as e:
        print("deps: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
