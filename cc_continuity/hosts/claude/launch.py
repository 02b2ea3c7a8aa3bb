"""How ``claude`` runs for rotation: inside a tmux session of its own when it can.

``cc-continuity launch`` (what the shell's ``claude()`` wrapper calls) asks
:func:`plan` how to exec the real ``claude``:

* disabled (project ``enabled: false``) or a one-shot use (``-p``, ``--version``,
  ``claude mcp …``, stdin/stdout not a terminal) → the real claude, directly;
* already inside tmux → the real claude, directly, with ``CC_CONTINUITY_NAME``;
* no tmux binary, or config ``tmux: false`` → directly (rotation will then ask
  the user to type ``/clear``);
* a plain ``claude`` (no arguments) while a session of this project still runs in a
  detached tmux session (the terminal was closed) → ``tmux attach-session`` to it, with one
  line saying so (``CC_CONTINUITY_NEW=1`` starts another instead); one that is attached
  elsewhere, or a ``claude`` with arguments, starts a new session and names the running one
  and how to reach it;
* otherwise → ``tmux new-session -A -s <slug>-<NNN> -c <cwd> -- …`` running claude, or
  ``tmux attach-session`` when that session already exists.

``--unattended`` (given to ``launch`` or among the claude arguments) or the
``unattended`` setting adds ``--dangerously-skip-permissions`` and sets
``CC_CONTINUITY_UNATTENDED=1``; ``/clear`` keeps the process, so it holds for the
whole rotation chain.

A tmux server that is already running would give the new session *its* old
environment, not the shell's (a freshly exported ``ANTHROPIC_BASE_URL`` would be
lost).  So the shell's environment is written to a 0600 file under
``runtime/launch/`` and the pane runs this very file as a tiny stdlib-only
trampoline (``python -I launch.py --exec-env FILE -- claude …``) that loads it,
deletes it and execs claude.  Secrets never appear in an argv.

Environment knobs: ``CC_CONTINUITY_TMUX_SOCKET`` (tmux ``-S`` socket path, used
by the tests to stay off the user's tmux server) and ``CC_CONTINUITY_CLAUDE``
(absolute path of the real claude, when it is not on PATH).

This module's top level imports only the standard library: it is also run as a
plain script (the trampoline) with ``python -I``.
"""

import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time

ENV_TMUX_SOCKET = "CC_CONTINUITY_TMUX_SOCKET"
ENV_CLAUDE = "CC_CONTINUITY_CLAUDE"  # realclaude.ENV_CLAUDE (this file's top level is stdlib only)
ENV_NEW = "CC_CONTINUITY_NEW"  # =1: start another session even when one of this project is detached
UNATTENDED = "--unattended"
SKIP_PERMISSIONS = "--dangerously-skip-permissions"

# Invocations that print something and exit: inside a tmux session that closes
# when they finish, their output would vanish.
_ONE_SHOT_FLAGS = frozenset(("-p", "--print", "-v", "--version", "-h", "--help"))
_ONE_SHOT_COMMANDS = frozenset((
    "mcp", "plugin", "plugins", "config", "doctor", "update", "upgrade", "install",
    "migrate-installer", "setup-token", "auth", "gateway",
))
# Variables that describe the terminal the pane runs in: the pane's own values win
# over the ones saved from the launching shell.
_PANE_VARS = ("TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION")
_NOT_SAVED = frozenset(_PANE_VARS + ("COLUMNS", "LINES", "SHLVL", "_", "OLDPWD"))


class Plan:
    """What to exec: ``argv`` with environment ``env``; ``env_file`` is written first."""

    def __init__(self, mode, argv, env, name=None, unattended=False, notes=(), env_file=None, exit_file=None):
        self.mode = mode
        self.argv = argv
        self.env = env
        self.name = name
        self.unattended = unattended
        self.notes = list(notes)
        self.env_file = env_file  # (path, saved environment) or None
        self.exit_file = exit_file  # where the pane's end is reported (see report()), or None: exec argv

    def describe(self):
        return {
            "mode": self.mode,
            "argv": self.argv,
            "name": self.name,
            "unattended": self.unattended,
            "env": {k: self.env[k] for k in ("CC_CONTINUITY_NAME", "CC_CONTINUITY_UNATTENDED") if k in self.env},
            "notes": self.notes,
        }


def plan(claude_args, *, unattended=False, env, cwd, interactive=True):
    """Decide how to run claude; pure apart from reading config and asking tmux about a session."""
    # lazy: this file is also the trampoline (python -I, no package): its top level is stdlib only
    from ... import config, project
    from .executable import find_real_claude

    args, asked = _strip_unattended(claude_args)
    explicit = unattended or asked
    real = find_real_claude(env)
    if real is None:
        raise RuntimeError("no claude executable found on PATH (set %s to its path)" % ENV_CLAUDE)
    proj = project.Project.discover(cwd)
    cfg = config.load(proj.root, env)
    p = _plan(args, explicit, real, proj, cfg, env, cwd, interactive)
    # A repository that tried to set a user-only key (unattended, ntfy, ...) is named right here.
    p.notes[:0] = ["warning: %s" % message for _path, _key, message in cfg.ignored]
    return p


def _plan(args, explicit, real, proj, cfg, env, cwd, interactive):
    env = dict(env)
    # Opted out: claude as is, and only an explicit --unattended is still honoured
    # (claude itself would reject the unknown option).
    unattended = explicit or (cfg["enabled"] and bool(cfg["unattended"]))
    if unattended:
        env["CC_CONTINUITY_UNATTENDED"] = "1"
    argv = [real] + _with_skip(args, unattended)
    if not cfg["enabled"]:
        return Plan("disabled", argv, env, unattended=unattended)
    if _one_shot(args) or not interactive:
        return Plan("direct", argv, env, unattended=unattended)

    name = proj.session_name(proj.peek_next_number())
    env["CC_CONTINUITY_NAME"] = name
    tmux = shutil.which("tmux", path=env.get("PATH"))
    try:
        running = running_sessions(proj, tmux, env) if tmux else []
    except Exception:  # a damaged record must not keep claude from starting
        running = []
    if env.get("TMUX"):
        return Plan("inside-tmux", argv, env, name, unattended, notes=_running_notes(running, name))
    if not cfg["tmux"]:
        return Plan("direct", argv, env, name, unattended)
    if tmux is None:
        note = "tmux is not installed, so rotation cannot type /clear for you: you will be asked to type it"
        return Plan("direct", argv, env, name, unattended, notes=[note])
    detached = [r for r in running if not r.attached]
    if detached and not args and env.get(ENV_NEW) != "1":
        # A terminal closed on a running session: take it back, do not start a second beside it.
        r = detached[-1]
        note = ("attaching to %s, still running in this project (detached); "
                "%s=1 claude starts another beside it" % (r.name, ENV_NEW))
        return Plan("attach", [tmux, "-S", r.socket, "attach-session", "-t", "=" + r.tmux_session],
                    env, r.name, unattended, notes=[note])

    # lazy: this file is also the trampoline (python -I, no package): its top level is stdlib only
    from ...tmux.pane import tmux_name

    base = [tmux] + (["-S", env[ENV_TMUX_SOCKET]] if env.get(ENV_TMUX_SOCKET) else [])
    target = tmux_name(name)
    where = _session_path(base, target, env)
    if where is not None and os.path.realpath(where) == os.path.realpath(cwd):
        return Plan("attach", base + ["attach-session", "-t", "=" + target], env, name, unattended)
    if where is not None:
        # Another project with the same slug owns that name: never attach to it.
        name = "%s-%s" % (name, proj.key.rsplit("-", 1)[-1][:4])
        env["CC_CONTINUITY_NAME"] = name
        target = tmux_name(name)
    # lazy: this file is also the trampoline (python -I, no package): its top level is stdlib only
    from . import launchenv

    env_path = launchenv.new_path(name)
    exit_path = launchenv.new_path(name, launchenv.EXIT_PREFIX)
    saved = {k: v for k, v in env.items() if k not in _NOT_SAVED}
    # CC_CONTINUITY_NAME/_UNATTENDED travel in the saved environment, not as
    # tmux -e options (tmux < 3.0 would reject those and claude would not start).
    cmd = base + ["new-session", "-A", "-s", target, "-c", cwd,
                  "--", _python(), "-I", os.path.abspath(__file__), "--exec-env", env_path,
                  "--report", exit_path, tmux, "--"] + argv
    return Plan("tmux", cmd, env, name, unattended, env_file=(env_path, saved),
                notes=_running_notes(running, name), exit_file=exit_path)


class Running:
    """A session of this project whose claude still runs in a tmux pane."""

    def __init__(self, name, socket, pane, tmux_session, attached):
        self.name, self.socket, self.pane = name, socket, pane
        self.tmux_session, self.attached = tmux_session, attached

    def reach(self):
        return "tmux -S %s attach -t %s" % (shlex.quote(self.socket), shlex.quote("=" + self.tmux_session))


def running_sessions(proj, tmux, env):
    """This project's open sessions whose recorded claude is still the process of their pane.

    A record alone is not enough: a crashed claude leaves its record ACTIVE, and a pane
    id is reused by a new server.  So the pane must exist and its process must be the
    recorded pid.  Bounded: only the open-session index is read, one tmux call each.
    """
    # lazy: this file is also the trampoline (python -I, no package): its top level is stdlib only
    from ... import session
    from ...procs import pid_alive

    out = []
    for n in proj.open_numbers()[-8:]:
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        sock, pane, pid = rec.get("tmux_socket"), rec.get("tmux_pane"), rec.get("pid")
        if rec.get("state") in session.TERMINAL or not (isinstance(sock, str) and isinstance(pane, str)
                                                          and pid_alive(pid)):
            continue
        fields = _tmux_query([tmux, "-S", sock], pane, "#{pane_pid}\t#{session_name}\t#{session_attached}", env)
        if fields is None or len(fields) != 3 or fields[0] != str(pid):
            continue
        out.append(Running(rec.get("name") or "?", sock, pane, fields[1], fields[2] not in ("", "0")))
    return out


def _running_notes(running, name):
    if not running:
        return []
    return ["%s is already running in this project (%s): %s to reach it; starting %s beside it"
            % (r.name, "attached in another terminal" if r.attached else "detached", r.reach(), name)
            for r in running]


def _tmux_query(base, target, fmt, env):
    """``display-message -p`` for ``target``: the tab-separated fields, or None."""
    try:
        r = subprocess.run(base + ["display-message", "-p", "-t", target, fmt], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = r.stdout.decode("utf-8", "replace").rstrip("\n")
    return text.split("\t") if r.returncode == 0 and text else None


# -- claude's end, reported through the launcher -------------------------------

# The launcher prints the pane's last lines when claude exited this soon after the
# start (it could not start: a bad option, no network), or with a failure status that
# is not the user's own ^C / closed terminal.
QUICK_EXIT_S = 5.0
# A pane dead this soon after its report file was set up (_report_end, just before claude ran) has its launcher
# still on the way: its tmux client may not be attached yet (a claude failing at once, on a loaded machine).
ATTACHING_S = 30.0
LAST_LINES = 20
_USER_SIGNALS = (2, 1)  # SIGINT, SIGHUP
_DEAD_NOTICE = "Pane is dead"  # tmux's own line at the bottom of a remain-on-exit pane


def _died_hook(tmux, exit_path):
    """The tmux command the pane-died hook runs: this file's ``--pane-died`` with the pane's facts."""
    fixed = [_python(), "-I", os.path.abspath(__file__), "--pane-died", exit_path, tmux]
    # shell-quoted, then '#' doubled (formats are expanded when the hook runs), then
    # escaped for tmux's double quotes (where \, " and $ are special)
    words = [shlex.quote(w).replace("#", "##") for w in fixed]
    words += ["'#{socket_path}'", "'#{pane_id}'", "'#{pane_dead_status}'", "'#{pane_dead_signal}'",
              "'#{session_attached}'"]
    line = " ".join(words)
    return 'run-shell "%s"' % line.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def _report_end(tmux, socket, pane, exit_path):
    """Before claude starts in ``pane``: keep the pane when it exits, and have the hook report it.

    Set here, in the pane, so that it holds before claude runs at all (a claude that fails in
    a millisecond still finds it).  On failure claude runs all the same, unreported.
    """
    try:
        r = subprocess.run([tmux, "-S", socket, "set-option", "-p", "-t", pane, "remain-on-exit", "on", ";",
                            "set-hook", "-p", "-t", pane, "pane-died", _died_hook(tmux, exit_path)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        if r.returncode == 0:  # the pid (soon claude's) for the launcher to watch (see wait_attached)
            _write_private(exit_path, {"pid": os.getpid(), "socket": socket})
    except (OSError, subprocess.SubprocessError):
        pass


def _write_private(path, obj):
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def _pane_died(argv):
    """In the hook: record the dead pane's status and screen for a launcher waiting on it, close the pane."""
    exit_path, tmux, socket, pane, status, sig, attached = argv
    base = [tmux, "-S", socket]
    try:
        fresh = time.time() - os.stat(exit_path).st_mtime < ATTACHING_S
    except OSError:
        fresh = False
    try:
        # A detached session has no launcher waiting for it, unless its launcher's client is still attaching.
        if attached not in ("", "0") or fresh:
            shot = subprocess.run(base + ["capture-pane", "-p", "-J", "-S", "-", "-t", pane],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  timeout=10)
            lines = shot.stdout.decode("utf-8", "replace").splitlines()
            _write_private(exit_path, {"status": _int(status), "signal": _int(sig), "lines": lines})
    finally:
        subprocess.run(base + ["kill-pane", "-t", pane], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    return 0


def _int(s):
    try:
        return int(s)
    except ValueError:
        return None


def wait_attached(argv, env, exit_path):
    """Run the tmux client ``argv`` until it exits; its exit status.

    tmux 3.3 was seen (1 run in 5 here) to miss the SIGCHLD of a pane's process: the
    pane then shows ``[dead]`` with no status, the pane-died hook never runs and the
    client waits forever.  So where the platform can watch another process's end
    (Linux's pidfd), the launcher watches claude's pid (written by the trampoline), and
    once claude has gone while the client stays, it sends the tmux server the SIGCHLD it
    missed, which makes it reap the pane and run the hook.
    """
    client = subprocess.Popen(argv, env=env)
    try:
        _watch(client, argv[0], exit_path)
    finally:
        status = client.wait()
    return status


def _watch(client, tmux, exit_path):
    if not hasattr(os, "pidfd_open"):
        return
    known, deadline = None, time.monotonic() + 30  # the trampoline writes it before claude starts
    while known is None:
        try:
            with open(exit_path, encoding="utf-8") as f:
                known = json.loads(f.read(1 << 16))
            pid, socket = int(known["pid"]), str(known["socket"])
        except (OSError, ValueError, KeyError, TypeError):
            known = None
            if time.monotonic() > deadline:
                return  # an existing session was attached: no trampoline of ours runs
            try:
                client.wait(timeout=0.05)
                return
            except subprocess.TimeoutExpired:
                continue
    try:
        claude, mine = os.pidfd_open(pid), os.pidfd_open(client.pid)
    except OSError:
        return
    try:
        if mine in select.select([claude, mine], [], [])[0]:
            return
        for _try in range(5):
            if select.select([mine], [], [], 1.0)[0]:  # the hook ends the client at once, normally
                return
            server = _tmux_query([tmux, "-S", socket], socket, "#{pid}", None)
            if server and server[0].isdigit():
                os.kill(int(server[0]), signal.SIGCHLD)
    finally:
        os.close(claude)
        os.close(mine)


def report(exit_path, client_status, elapsed):
    """After the tmux client went: ``(status, lines to show)`` for claude's end.

    ``status`` is claude's own (128 + N for a signal) when the pane recorded it, else the
    tmux client's (the user detached, or the hook could not run).  ``lines`` are the pane's
    last :data:`LAST_LINES` non-empty lines when claude exited within :data:`QUICK_EXIT_S`
    or failed other than by SIGINT/SIGHUP, else none.
    """
    try:
        with open(exit_path, encoding="utf-8", errors="replace") as f:
            result = json.loads(f.read(1 << 20))
        os.unlink(exit_path)
        code, sig, lines = result["status"], result["signal"], [str(x) for x in result["lines"]]
    except (OSError, ValueError, KeyError, TypeError):
        return client_status, []
    if isinstance(sig, int) and sig > 0:
        status = 128 + sig
    elif isinstance(code, int):
        status = code
    else:
        return client_status, []
    shown = [x.rstrip() for x in lines if x.strip()]
    if shown and shown[-1].startswith(_DEAD_NOTICE):
        shown.pop()
    if elapsed < QUICK_EXIT_S or (status != 0 and sig not in _USER_SIGNALS):
        return status, shown[-LAST_LINES:]
    return status, []


def _strip_unattended(args):
    """Remove our ``--unattended`` from claude's options (not after a ``--``)."""
    out, asked = [], False
    for i, a in enumerate(args):
        if a == "--":
            return out + args[i:], asked
        if a == UNATTENDED:
            asked = True
        else:
            out.append(a)
    return out, asked


def _with_skip(args, unattended):
    if not unattended or SKIP_PERMISSIONS in _options(args) or (args and args[0] in _ONE_SHOT_COMMANDS):
        return list(args)
    return [SKIP_PERMISSIONS] + list(args)


def _options(args):
    return args[: args.index("--")] if "--" in args else args


def _one_shot(args):
    return bool(args) and (args[0] in _ONE_SHOT_COMMANDS or any(a in _ONE_SHOT_FLAGS for a in _options(args)))


def _session_path(base, target, env):
    """The start directory of tmux session ``target``, or None when there is no such session."""
    fields = _tmux_query(base, "=" + target + ":", "#{session_path}", env)
    return fields[0] if fields and fields[0] else None  # tmux prints nothing for a missing session


def _python():
    """An interpreter for the trampoline (stdlib only, so the base one does)."""
    return os.path.realpath(sys.executable) if sys.executable else getattr(sys, "_base_executable", "python3")


def discard(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def one_line(e):
    return (str(e) or type(e).__name__).splitlines()[0]


# -- trampoline: runs inside the new tmux pane --------------------------------

def _trampoline(argv):
    """``--exec-env FILE [--report EXIT TMUX] -- claude args…``: restore the launching shell's environment,
    have the pane report claude's end to EXIT, exec claude."""
    report_to = None
    if len(argv) >= 7 and argv[2] == "--report":
        report_to, argv = (argv[3], argv[4]), argv[:2] + argv[5:]
    if len(argv) < 4 or argv[0] != "--exec-env" or argv[2] != "--":
        sys.stderr.write("cc-continuity launch trampoline: bad arguments\n")
        return 2
    env_path, cmd = argv[1], argv[3:]
    env = dict(os.environ)
    if report_to and env.get("TMUX_PANE") and env.get("TMUX"):
        _report_end(report_to[1], env["TMUX"].split(",")[0], env["TMUX_PANE"], report_to[0])
    try:
        with open(env_path, "rb") as f:
            saved = json.loads(f.read())["env"]
        os.unlink(env_path)
        pane = {k: env[k] for k in _PANE_VARS if k in env}
        env = dict(saved)
        env.update(pane)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("cc-continuity: could not restore the shell environment (%s); using tmux's\n" % e)
    try:
        os.execve(cmd[0], cmd, env)
    except OSError as e:
        sys.stderr.write("cc-continuity: cannot run %s: %s\n" % (cmd[0], e))
        return 127  # the launcher shows this line once tmux has gone


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pane-died"] and len(sys.argv) == 9:
        sys.exit(_pane_died(sys.argv[2:]))
    sys.exit(_trampoline(sys.argv[1:]))
