"""The optional packages: where they come from for the Python the hooks run, and the build of their own
environment where the host gives us a folder for one.

Nothing the rotation needs is optional: every hook, the tmux driver and pushes (``urllib``) run on the
standard library.  The packages in ``requirements.lock`` serve the rest: tree-sitter's shell parser
(side-effect holds and the handoff's claims read shell with it; without it, with the simpler reader),
psutil and watchdog (the watchdog daemon), requests (pushes with certifi's certificates).  They come from:

* the app copy's ``lib/`` (``python3 install.py`` and ``cc-continuity install`` put them there), or
* a Claude Code plugin installed from a marketplace, which carries none: its first SessionStart (or
  prompt) starts :mod:`.build`, detached and never awaited, which makes a virtualenv of its own under
  ``${CLAUDE_PLUGIN_DATA}`` (Claude Code's folder for exactly this: it survives updates and goes with the
  plugin's last uninstall)::

      ${CLAUDE_PLUGIN_DATA}/envs/<name>/          one per interpreter (realpath, major.minor) and lock
      ${CLAUDE_PLUGIN_DATA}/envs/<name>/.complete  written last, with what was built (JSON)
      ${CLAUDE_PLUGIN_DATA}/envs/<name>.failed     why the last try failed (JSON) and whether it was shown
      ${CLAUDE_PLUGIN_DATA}/envs/.lock             one builder at a time

An environment is complete before it is renamed into place and never changed after; a new lock or a new
interpreter gets a new name, so two plugin versions or two sessions never rebuild one in use.

This module runs in the prompt's and the session's hooks (``python -S``): the standard library only, a
few stats and one small read per call.
"""

import fcntl
import json
import os
import sys
import time

from .. import atomic, paths, procs
from ..digest import sha256  # (not hashlib: its OpenSSL binding costs a plugin's every prompt ~3 ms)

LOCK_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements.lock")
# The MCP server's SDK (~30 packages, ~45 MB): a second environment, built only once the user turns the server
# on (config ``mcp_server``); its own lock, so its own name, and never on a hook's path.
MCP_LOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements-mcp.lock")
MCP_IMPORTS = ("mcp", "mcp.server.mcpserver")
# The packages asked for (the lock pins them and what they need); what a built environment must import.
PACKAGES = ("psutil", "watchdog", "requests", "tree-sitter", "tree-sitter-bash")
IMPORTS = ("psutil", "watchdog", "requests", "tree_sitter", "tree_sitter_bash")
RETRY_S = 6 * 3600  # a failed build is tried again at a session or prompt this long after it failed
BUILD_MODULE = "cc_continuity.deps.build"
COMPLETE = ".complete"
_digests = {}


def lock_digest(lock=None):
    """The lock's sha256 (hex, first 16; default: :data:`LOCK_FILE`): part of every environment's name."""
    lock = lock or LOCK_FILE
    if lock not in _digests:
        with open(lock, "rb") as f:
            _digests[lock] = sha256(f.read()).hexdigest()[:16]
    return _digests[lock]


def env_name(python, version, lock=None):
    """The folder name for ``python`` (its realpath) at ``version`` ("3.11") and ``lock``."""
    key = "%s\0%s\0%s" % (os.path.realpath(python), version, lock_digest(lock))
    return "py%s-%s" % (version, sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12])


def plugin_data(env=None):
    """``${CLAUDE_PLUGIN_DATA}`` when a plugin's hook (or the mod) runs us, else None."""
    d = (os.environ if env is None else env).get("CLAUDE_PLUGIN_DATA") or ""
    return d if os.path.isabs(d) else None


def envs_dir(data):
    return os.path.join(data, "envs")


def running_version():
    return "%d.%d" % sys.version_info[:2]


def env_dir(data, python=None, version=None, lock=None):
    """Where the environment of ``lock`` for ``python`` (default: this interpreter) lives under ``data``."""
    return os.path.join(envs_dir(data), env_name(python or sys.executable, version or running_version(), lock))


def site_dir(env, version=None):
    return os.path.join(env, "lib", "python%s" % (version or running_version()), "site-packages")


def complete(env):
    """What the builder wrote when ``env`` was finished (a dict), or None while it is not."""
    try:
        with open(os.path.join(env, COMPLETE), encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def failure(env):
    """The last failed try for ``env`` (a dict: at, why, fix, shown), or None."""
    try:
        with open(env + ".failed", encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def app_lib():
    """``<app>/lib`` beside the package we run from, when there is one (the app copy's packages)."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib")
    return lib if os.path.isdir(lib) else None


def extra_paths(env=None):
    """The folders that hold the optional packages for this interpreter: the app copy's lib/, then the
    plugin's built environment (when complete).  What a child process of ours gets on PYTHONPATH."""
    out = []
    lib = app_lib()
    if lib:
        out.append(lib)
    data = plugin_data(env)
    if data:
        built = env_dir(data)
        if complete(built) is not None:
            out.append(site_dir(built))
    return out


def child_env(base=None):
    """The environment for a detached child of ours run as ``python -m cc_continuity...``: this package
    first on PYTHONPATH, then the folders with the optional packages (:func:`extra_paths`)."""
    env = dict(os.environ if base is None else base)
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parts = [package_parent] + extra_paths(env) + [env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def activate():
    """Make the optional packages importable in this process (appended to ``sys.path``); the folders added."""
    added = [p for p in extra_paths() if p not in sys.path]
    sys.path.extend(added)
    return added


def state(data, python, version, lock=None):
    """``(status, info)`` of the environment of ``lock`` for ``python`` at ``version`` under ``data``: "built"
    (info: what .complete says), "building", "failed" (info: the failure record) or "absent"."""
    env = env_dir(data, python, version, lock)
    info = complete(env)
    if info is not None:
        return "built", dict(info, path=env)
    if building(data):
        return "building", {"path": env}
    failed = failure(env)
    if failed is not None:
        return "failed", dict(failed, path=env)
    return "absent", {"path": env}


def building(data):
    """Is a builder at work on ``data`` now (it holds the lock)?"""
    try:
        fd = os.open(os.path.join(envs_dir(data), ".lock"), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def stop_builds(data, grace=5.0):
    """End the builds at work on ``data`` (before ``claude plugin uninstall`` deletes the folder: a build that
    ran on would make its venv's folders again).  A builder names its temporary folder ``.build-<pid>`` and
    runs in a session of its own (:func:`spawn`), so its process group goes; only while the lock is held,
    and (where ``/proc`` tells) only a process running this module.  How many were ended."""
    import signal  # uninstall's only

    root = envs_dir(data)
    if not building(data):
        return 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    pids = [int(n[len(".build-"):]) for n in names if n.startswith(".build-") and n[len(".build-"):].isdigit()]
    ended = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if BUILD_MODULE.encode() not in f.read():
                    continue  # a pid used again by another program
        except FileNotFoundError:
            if os.path.isdir("/proc/self"):
                continue  # gone already
        except OSError:
            pass
        try:
            os.killpg(pid, signal.SIGTERM)
            ended.append(pid)
        except OSError:
            pass
    procs.reap(ended, grace)
    for pid in ended:  # what the builder started (pip, uv) goes with it
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    return len(ended)


def needed(cfg, env=None):
    """The plugin data folder to build in, when this session needs the environment and may fetch it."""
    data = plugin_data(env)
    if data is None or app_lib() is not None or not cfg["fetch_packages"]:
        return None
    return data


def at_session(cfg, env=None, now=None):
    """At a SessionStart or a prompt of a plugin session: start the builds that are due (detached, never
    awaited: the optional packages', then the MCP server's SDK once the user turned the server on) and return
    the one line the user is to see about them, once per failure (else None)."""
    data = needed(cfg, env)
    if data is None:
        return None
    locks = [LOCK_FILE] + ([MCP_LOCK] if cfg["mcp_server"] else [])
    lines = [line for line in (_due(data, lock, now) for lock in locks) if line]
    return " ".join(lines) or None


def _due(data, lock, now):
    built = env_dir(data, lock=lock)
    if complete(built) is not None:
        return None
    failed = failure(built)
    now = time.time() if now is None else now
    due = failed is None or not isinstance(failed.get("at"), (int, float)) or now - failed["at"] >= RETRY_S
    if due and not building(data):
        spawn(data, lock=lock)
    if failed is not None and not failed.get("shown"):
        mark_shown(built, failed)
        return failed_line(failed, lock)
    return None


def failed_line(failed, lock=None):
    if lock == MCP_LOCK:
        return ("cc-continuity could not build its MCP server's SDK: %s. Its server stays off until it is built; "
                "finish it with: %s" % (failed.get("why") or "unknown", failed.get("fix") or "cc-continuity doctor --fix"))
    return ("cc-continuity could not build its optional packages (%s): %s. Rotation works without them; "
            "side-effect holds read shell commands with the simpler reader meanwhile. Finish it with: %s"
            % (", ".join(PACKAGES), failed.get("why") or "unknown", failed.get("fix") or "cc-continuity doctor --fix"))


def mcp_site(env=None):
    """The MCP SDK's folder for this interpreter in a plugin (its environment, when built), or None."""
    data = plugin_data(env)
    if data is None:
        return None
    built = env_dir(data, lock=MCP_LOCK)
    return site_dir(built) if complete(built) is not None else None


def mark_shown(env, failed):
    try:
        atomic.write_text(env + ".failed", json.dumps(dict(failed, shown=True)) + "\n", mode=paths.FILE_MODE)
    except OSError:
        pass


def spawn(data, python=None, lock=None):
    """Start :mod:`.build` of ``lock`` for ``data`` detached (its own session, no terminal, output to its log);
    its pid."""
    import subprocess  # a build's start only (once per plugin and interpreter): +~4 ms on every prompt else

    python = python or sys.executable
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = package_parent
    logs = paths.ensure_dir(paths.logs_dir())
    out = os.open(os.path.join(logs, "deps.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                  paths.FILE_MODE)
    try:
        proc = subprocess.Popen([python, "-S", "-m", BUILD_MODULE, "--data", data, "--lock", lock or LOCK_FILE],
                                stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, cwd="/", env=env, start_new_session=True, close_fds=True)
    finally:
        os.close(out)
    return proc.pid
