"""The claude() shell wrapper, run for real in bash, zsh and fish, with ``cc-continuity launch``
behind it and a real private tmux server.

A stand-in ``claude`` on PATH records its argv, a few environment variables and the
tmux session it runs in.  The launcher is a shim like the installed one
(``exec python -m cc_continuity.cli "$@"``).  Interactive runs get a real pseudo-terminal
(tmux refuses to attach without one).
"""

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest

from cc_continuity.hosts.claude import launchenv
from cc_continuity.hosts.claude import executable
from cc_continuity.hosts.claude import launch
from cc_continuity.install import blocks, wrapper

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")

# Awkward arguments that must reach claude byte for byte.
ODD_ARGS = ["two words", 'say "hi"', "it's", "$HOME", "*", "", "--flag=a b", "ünïcødé", "-", "--"]
STANDIN_RC = 3


def _skip_unless(shell):
    if not shutil.which(shell):
        pytest.skip("%s is not installed (the CI script installs it)" % shell)


# -- fixtures ------------------------------------------------------------------

@pytest.fixture
def world(tmp_path, git_repo, server, isolated_home):
    """Stand-in claude, launcher shim, rc files and the environment to run a shell in."""
    return World(tmp_path, git_repo, server, isolated_home)


class World:
    def __init__(self, tmp_path, repo, server, home):
        self.tmp, self.repo, self.server, self.home = tmp_path, repo, server, home
        self.record = tmp_path / "record.json"
        bindir = tmp_path / "bin"
        bindir.mkdir()
        self.claude = bindir / "claude"
        self.claude.write_text(STANDIN % {"python": sys.executable, "record": str(self.record), "rc": STANDIN_RC})
        self.claude.chmod(0o755)
        # A launcher path with a space and a quote: the rendered block must quote it.
        ldir = tmp_path / "the launcher's dir"
        ldir.mkdir()
        self.launcher = ldir / "cc-continuity"
        self.launcher.write_text('#!/bin/sh\nexec %s -m cc_continuity.cli "$@"\n' % _sh(sys.executable))
        self.launcher.chmod(0o755)
        self.cwd = repo / "sub dir"
        self.cwd.mkdir()
        self.env = {
            "HOME": str(home),
            "CC_CONTINUITY_HOME": os.environ["CC_CONTINUITY_HOME"],
            "PATH": "%s:%s" % (bindir, os.environ["PATH"]),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            launch.ENV_TMUX_SOCKET: server.socket,
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        }

    def rc(self, shell):
        """The installer's marked block around our body, in a file of its own."""
        body = wrapper.render(shell, str(self.launcher))
        path = self.tmp / ("rc." + shell)
        path.write_text("# the user's own line\n" + blocks.render(wrapper.BLOCK_NAME, "0.1.0", body, wrapper.BLOCK_STYLE))
        return path

    def argv(self, shell, args):
        rc = str(self.rc(shell))
        if shell == "fish":
            return ["fish", "--no-config", "-c", "source %s; claude $argv" % _fish(rc), "--"] + list(args)
        flags = ["-f"] if shell == "zsh" else ["--norc", "--noprofile"]
        return [shell] + flags + ["-c", 'source "$0"; claude "$@"', rc] + list(args)

    def run_tty(self, shell, args, env=None, timeout=30, on_output=None):
        """Run the wrapper on a pseudo-terminal; (exit status, output)."""
        return run_in_pty(self.argv(shell, args), dict(self.env, **(env or {})), str(self.cwd), timeout, on_output)

    def run_piped(self, shell, args, env=None):
        r = subprocess.run(self.argv(shell, args), env=dict(self.env, **(env or {})), cwd=str(self.cwd),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")

    def recorded(self):
        with open(self.record, encoding="utf-8") as f:
            return json.load(f)

    def sessions(self):
        out = self.server.tmux("list-sessions", "-F", "#{session_name}", check=False)
        return sorted(out.split())

    def env_files(self):
        try:
            return os.listdir(launchenv.files_dir())
        except FileNotFoundError:
            return []


STANDIN = """#!%(python)s
import json, os, subprocess, sys
env = os.environ
rec = {"argv": sys.argv[1:], "cwd": os.getcwd(), "tty": os.isatty(0),
       "name": env.get("CC_CONTINUITY_NAME"), "unattended": env.get("CC_CONTINUITY_UNATTENDED"),
       "tmux": env.get("TMUX"), "probe": env.get("CC_TEST_PROBE"), "term": env.get("TERM"), "session": None}
if env.get("TMUX"):
    rec["session"] = subprocess.run(["tmux", "display-message", "-p", "-t", env["TMUX_PANE"], "#{session_name}"],
                                    capture_output=True, text=True).stdout.strip()
with open(%(record)r + ".tmp", "w") as f:
    json.dump(rec, f)
os.replace(%(record)r + ".tmp", %(record)r)
sys.exit(%(rc)d)
"""


def _sh(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _fish(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run_in_pty(argv, env, cwd, timeout, on_output=None):
    """Fork ``argv`` on a new 80x24 pseudo-terminal; return (exit status, everything it printed)."""
    import fcntl
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # child
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    out, status = b"", None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: every process on the terminal has gone
                    chunk = b""
                out += chunk
                if on_output:
                    on_output(out)
                if not chunk and status is not None:
                    break
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = os.waitstatus_to_exitcode(st)
            elif not ready:
                break
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("timed out; output so far: %r" % out.decode("utf-8", "replace"))
    finally:
        os.close(fd)
    return status, out.decode("utf-8", "replace")


# -- rendering -----------------------------------------------------------------

def test_detect_shell_and_rc_paths():
    assert wrapper.detect_shell({"SHELL": "/usr/bin/zsh"}) == "zsh"
    assert wrapper.detect_shell({"SHELL": "/opt/homebrew/bin/fish"}) == "fish"
    assert wrapper.detect_shell({"SHELL": "-bash"}) == "bash"
    assert wrapper.detect_shell({"SHELL": "/bin/tcsh"}) in ("bash", "zsh")  # the platform default
    assert wrapper.rc_path("bash", "/h") == "/h/.bashrc"
    assert wrapper.rc_path("zsh", "/h") == "/h/.zshrc"
    assert wrapper.rc_path("zsh", "/h", {"ZDOTDIR": "/z"}) == "/z/.zshrc"
    assert wrapper.rc_path("fish", "/h") == "/h/.config/fish/conf.d/cc-continuity.fish"
    assert wrapper.rc_path("fish", "/h", {"XDG_CONFIG_HOME": "/x"}) == "/x/fish/conf.d/cc-continuity.fish"
    with pytest.raises(ValueError):
        wrapper.rc_path("tcsh", "/h")


def test_render_refuses_relative_or_multiline_launcher_paths():
    with pytest.raises(ValueError):
        wrapper.render("bash", "bin/cc-continuity")
    with pytest.raises(ValueError):
        wrapper.render("zsh", "/a\nrm -rf ~/b")
    with pytest.raises(ValueError):
        wrapper.render("csh", "/a")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_rendered_block_is_valid_syntax_even_with_an_alias_named_claude(shell, tmp_path):
    _skip_unless(shell)
    body = wrapper.render(shell, "/opt/it's here/cc-continuity")
    rc = tmp_path / "rc"
    if shell == "fish":
        rc.write_text("alias claude 'echo aliased'\n" + body)
        r = subprocess.run(["fish", "--no-config", "-c", "source %s; and functions -q claude; and echo defined" % rc],
                           capture_output=True, text=True)
    else:
        rc.write_text("alias claude='echo aliased'\n" + body)
        r = subprocess.run([shell, "-c", 'source "$0" && typeset -f claude >/dev/null && echo defined', str(rc)],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "defined"


# -- outside tmux: a named session on the private server ----------------------

@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_outside_tmux_starts_named_session_with_args_verbatim(world, shell):
    _skip_unless(shell)
    status, out = world.run_tty(shell, ODD_ARGS)
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS, out
    assert rec["session"] == "repo-001"
    assert rec["name"] == "repo-001"
    assert rec["tmux"].split(",")[0] == world.server.socket  # the private server, not the user's
    assert rec["cwd"] == str(world.cwd)
    assert rec["tty"] is True
    assert rec["unattended"] is None and "--dangerously-skip-permissions" not in rec["argv"]
    assert world.env_files() == []  # the trampoline consumed its environment file, the launcher its exit file
    assert status == STANDIN_RC  # claude's own status, not the tmux client's 0
    assert world.sessions() == []


# A claude that fails at once, leaving more lines than are shown.
FAILING = """#!/bin/sh
i=1
while [ $i -le 30 ]; do echo "line $i of the failure"; [ $i = 5 ] && echo; i=$((i+1)); done
echo "fatal: cannot start" >&2
exit 3
"""


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_claude_failing_at_once_returns_its_status_with_its_last_lines_visible(world, shell):
    _skip_unless(shell)
    world.claude.write_text(FAILING)
    status, out = world.run_tty(shell, ["some prompt"])
    assert status == 3, out
    assert "[exited]" in out, out  # it did run inside tmux
    after = out.rsplit("[exited]", 1)[1]  # what the user sees once tmux has cleared its screen
    shown = [line.strip() for line in after.splitlines() if line.strip()]
    assert shown == ["line %d of the failure" % i for i in range(12, 31)] + ["fatal: cannot start"], out
    assert world.sessions() == [] and world.env_files() == []


REAL_CLAUDE = os.environ.get("CC_CONTINUITY_CLAUDE_BIN") or "/root/.cache/cc-continuity/claude-2.1.332/node_modules/.bin/claude"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_real_claude_with_a_bogus_flag_shows_its_error_and_returns_1(world, shell):
    _skip_unless(shell)
    if not os.access(REAL_CLAUDE, os.X_OK):
        pytest.skip("no real Claude Code binary at %s" % REAL_CLAUDE)
    status, out = world.run_tty(shell, ["--bogus-flag"], env={executable.ENV_CLAUDE: REAL_CLAUDE})
    assert status == 1, out
    assert "[exited]" in out, out
    assert "error: unknown option '--bogus-flag'" in out.rsplit("[exited]", 1)[1], out
    assert world.sessions() == []


def test_report_shows_lines_only_for_a_quick_exit_or_a_failure_the_user_did_not_ask_for(tmp_path):
    screen = ["", "ok", "   ", "last words", "Pane is dead (status 1, Tue Dec  1 21:40:03 2026)"]

    def rep(status, sig, elapsed, lines=screen, client=0):
        path = tmp_path / "exit.json"
        path.write_text(json.dumps({"status": status, "signal": sig, "lines": lines}))
        got = launch.report(str(path), client, elapsed)
        assert not path.exists()  # read once
        return got

    assert rep(0, None, 1.0) == (0, ["ok", "last words"])  # exited within 5 s: shown
    assert rep(0, None, 600.0) == (0, [])  # the user's /exit after an hour: nothing
    assert rep(3, None, 600.0) == (3, ["ok", "last words"])  # a failure: shown
    assert rep(None, 2, 600.0) == (130, [])  # ^C: the user's own doing
    assert rep(None, 1, 600.0) == (129, [])  # the terminal went away
    assert rep(None, 9, 600.0) == (137, ["ok", "last words"])  # killed
    assert rep(1, None, 600.0, ["x%d" % i for i in range(40)]) == (1, ["x%d" % i for i in range(20, 40)])
    # Nothing recorded (the user detached; the hook could not run): the tmux client's status.
    assert launch.report(str(tmp_path / "none.json"), 0, 1.0) == (0, [])
    (tmp_path / "bad.json").write_text("{not json")
    assert launch.report(str(tmp_path / "bad.json"), 4, 1.0) == (4, [])


def test_session_environment_comes_from_the_launching_shell_not_the_tmux_server(world):
    # A server that was started earlier, without the variable the user just exported.
    world.server.tmux("new-session", "-d", "-s", "older", "sleep 60")
    status, out = world.run_tty("bash", ["hello"], env={"CC_TEST_PROBE": "set in this shell"})
    rec = world.recorded()
    assert rec["probe"] == "set in this shell", out
    assert rec["session"] == "repo-001"
    assert rec["term"] != "xterm-256color"  # the pane's own TERM, not the outer terminal's
    assert world.sessions() == ["older"]


def test_unattended_flag_reaches_claude_as_skip_permissions(world):
    status, out = world.run_tty("bash", ["--unattended", "fix it", "--", "--unattended"])
    rec = world.recorded()
    # Ours is consumed; the one after claude's own "--" is the user's text.
    assert rec["argv"] == ["--dangerously-skip-permissions", "fix it", "--", "--unattended"], out
    assert rec["unattended"] == "1"
    assert rec["session"] == "repo-001"


def test_existing_session_is_attached_not_recreated(world):
    world.server.tmux("new-session", "-d", "-s", "repo-001", "-c", str(world.cwd), "-x", "80", "-y", "24", "sleep 60")
    detached = []

    def detach_once_attached(_out):
        if not detached and world.server.tmux("list-clients", "-t", "repo-001", check=False).strip():
            world.server.tmux("detach-client", "-s", "repo-001", check=False)
            detached.append(True)

    status, out = world.run_tty("bash", ["ignored"], on_output=detach_once_attached)
    assert detached, out
    assert not world.record.exists()  # attaching runs nothing new
    assert world.sessions() == ["repo-001"]
    assert world.env_files() == []


def test_a_same_named_session_of_another_project_is_never_attached(world, tmp_path):
    other = tmp_path / "elsewhere" / "repo"
    other.mkdir(parents=True)
    world.server.tmux("new-session", "-d", "-s", "repo-001", "-c", str(other), "-x", "80", "-y", "24", "sleep 60")
    status, out = world.run_tty("bash", ["hello"])
    rec = world.recorded()  # a new session ran claude: nothing was attached
    assert rec["argv"] == ["hello"], out
    assert rec["session"].startswith("repo-001-") and rec["session"] != "repo-001"
    assert "repo-001" in world.sessions()  # the other project's session is left alone


# -- inside tmux: claude runs in place ------------------------------------------

def _run_inside(world, shell, args, timeout=20):
    cmd = " ".join(_sh(a) for a in world.argv(shell, args))
    # Started with the test's environment (tmux gives a new pane its client's PATH).
    subprocess.run([world.server.tmux_bin, "-S", world.server.socket, "-f", "/dev/null", "new-session", "-d",
                    "-s", "outer", "-x", "80", "-y", "24", "-c", str(world.cwd), cmd + "; sleep 30"],
                   env=world.env, check=True, timeout=10)
    deadline = time.monotonic() + timeout
    while not world.record.exists():
        assert time.monotonic() < deadline, world.server.tmux("capture-pane", "-p", "-t", "outer")
        time.sleep(0.05)
    return world.recorded()


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_inside_tmux_runs_claude_directly(world, shell):
    _skip_unless(shell)
    rec = _run_inside(world, shell, ODD_ARGS)
    assert rec["argv"] == ODD_ARGS
    assert rec["session"] == "outer"  # no nested session
    assert rec["name"] == "repo-001"
    assert world.sessions() == ["outer"]


def test_project_setting_makes_the_chain_unattended(world):
    from cc_continuity import config

    config.update_project(str(world.repo), {"unattended": True})  # the user's own, not the repository's
    rec = _run_inside(world, "bash", ["go on"])
    assert rec["argv"] == ["--dangerously-skip-permissions", "go on"]
    assert rec["unattended"] == "1"


# -- falling through to the real claude -----------------------------------------

@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_cc_continuity_0_goes_straight_to_claude(world, shell):
    _skip_unless(shell)
    marker = world.tmp / "launcher-ran"
    world.launcher.write_text("#!/bin/sh\ntouch %s\nexit 199\n" % _sh(str(marker)))
    status, out = world.run_tty(shell, ODD_ARGS, env={"CC_CONTINUITY": "0"})
    assert not marker.exists()  # the off switch does not even start Python
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS
    assert rec["name"] is None and rec["tmux"] is None
    assert status == STANDIN_RC  # claude's own exit status
    assert world.sessions() == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_deleted_launcher_falls_through(world, shell):
    _skip_unless(shell)
    world.launcher.unlink()
    status, out = world.run_tty(shell, ODD_ARGS)
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS
    assert rec["name"] is None and rec["tmux"] is None
    assert status == STANDIN_RC
    assert world.sessions() == []


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_launcher_failing_before_exec_falls_through(world, shell):
    _skip_unless(shell)
    os.makedirs(os.environ["CC_CONTINUITY_HOME"], exist_ok=True)
    with open(os.path.join(os.environ["CC_CONTINUITY_HOME"], "config.json"), "w") as f:
        f.write("{not json")
    status, out = world.run_tty(shell, ODD_ARGS)
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS
    assert rec["name"] is None and rec["tmux"] is None
    assert "starting claude without it" in out and "config.json" in out
    assert status == STANDIN_RC
    assert world.sessions() == []


def test_launcher_whose_interpreter_is_gone_falls_through(world):
    world.launcher.write_text("#!/nonexistent/python3\n")
    status, out = world.run_tty("bash", ["x y"])
    assert world.recorded()["argv"] == ["x y"]
    assert status == STANDIN_RC


def test_claude_exit_status_passes_through_the_launcher(world):
    # Not a terminal: launch execs claude directly, and its status is the function's.
    status, out = world.run_piped("bash", ["-p", "hi"])
    assert status == STANDIN_RC, out
    rec = world.recorded()
    assert rec["argv"] == ["-p", "hi"]
    assert rec["tmux"] is None
    assert world.sessions() == []


def test_opted_out_project_runs_claude_as_is(world):
    (world.repo / ".claude").mkdir()
    (world.repo / ".claude" / "continuity.json").write_text('{"enabled": false}')
    status, out = world.run_tty("zsh" if shutil.which("zsh") else "bash", ODD_ARGS)
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS
    assert rec["name"] is None and rec["tmux"] is None
    assert world.sessions() == []


# -- launch decisions (no shell) -----------------------------------------------

def _plan(args, env, cwd, **kw):
    return launch.plan(args, env=env, cwd=str(cwd), **kw)


def test_plan_one_shot_uses_and_missing_tmux(world):
    env = dict(world.env)
    for args in (["-p", "x"], ["--version"], ["mcp", "list"], ["update"]):
        p = _plan(args, env, world.cwd)
        assert p.mode == "direct" and p.argv == [str(world.claude)] + args
    assert _plan(["x"], env, world.cwd, interactive=False).mode == "direct"
    # No tmux on PATH: direct, with one line telling the user why.
    bare = dict(env, PATH=str(world.claude.parent))
    p = _plan(["x"], bare, world.cwd)
    assert p.mode == "direct" and p.env["CC_CONTINUITY_NAME"] == "repo-001"
    assert len(p.notes) == 1 and "tmux" in p.notes[0]
    p = _plan(["x"], env, world.cwd)
    assert p.mode == "tmux" and p.argv[-2:] == [str(world.claude), "x"]
    assert p.argv[1:3] == ["-S", world.server.socket]


def test_find_real_claude_skips_our_own_shims(world, tmp_path):
    shim_dir = tmp_path / "shims"
    shim_dir.mkdir()
    shim = shim_dir / "claude"
    shim.write_text("#!/bin/sh\nexec cc-continuity launch -- \"$@\"\n")
    shim.chmod(0o755)
    env = dict(world.env, PATH="%s:%s" % (shim_dir, world.env["PATH"]))
    assert executable.find_real_claude(env) == str(world.claude)
    assert executable.find_real_claude(dict(env, PATH=str(shim_dir))) is None
    assert executable.find_real_claude(dict(env, CC_CONTINUITY_CLAUDE=str(world.claude))) == str(world.claude)
    with pytest.raises(RuntimeError):
        executable.find_real_claude(dict(env, CC_CONTINUITY_CLAUDE="claude"))


def test_a_claude_script_whose_interpreter_lives_under_a_cc_continuity_folder_is_claude(tmp_path):
    """A pipx or uv tool venv (…/venvs/cc-continuity/bin/python), or CI's own virtualenv under
    ~/.cache/cc-continuity: the shebang names the folder, the script is not ours (it failed 18 tests
    when CI moved its dependencies into its own virtualenv)."""
    d = tmp_path / "bin"
    d.mkdir()
    fake = d / "claude"
    fake.write_text("#!/home/u/.local/pipx/venvs/cc-continuity/bin/python\nprint('claude')\n")
    fake.chmod(0o755)
    assert executable.find_real_claude({"PATH": str(d)}) == str(fake)


def test_print_shows_the_plan_without_running_anything(world):
    r = subprocess.run([str(world.launcher), "launch", "--print", "--", "--unattended", "a b", ""],
                       env=world.env, cwd=str(world.cwd), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["argv"] == [str(world.claude), "--dangerously-skip-permissions", "a b", ""]
    assert plan["mode"] == "direct"  # stdin is not a terminal here
    assert not world.record.exists()


def test_stale_environment_files_are_swept(world):
    d = launchenv.files_dir()
    os.makedirs(d)
    old, fresh = os.path.join(d, "env-old.json"), os.path.join(d, "env-fresh.json")
    for p in (old, fresh):
        with open(p, "w") as f:
            f.write("{}")
    os.utime(old, (time.time() - 3600,) * 2)
    assert launchenv.stale() == [old]
    launchenv.sweep()
    assert sorted(os.listdir(d)) == ["env-fresh.json"]


def test_plan_opted_out_honours_only_an_explicit_unattended(world):
    from cc_continuity import config

    config.update_project(str(world.repo), {"enabled": False, "unattended": True})
    p = _plan(["x"], dict(world.env), world.cwd)
    assert (p.mode, p.argv, p.unattended) == ("disabled", [str(world.claude), "x"], False)
    assert "CC_CONTINUITY_UNATTENDED" not in p.env and "CC_CONTINUITY_NAME" not in p.env
    p = _plan(["--unattended", "x"], dict(world.env), world.cwd)
    assert p.argv == [str(world.claude), "--dangerously-skip-permissions", "x"]
    assert p.env["CC_CONTINUITY_UNATTENDED"] == "1"
    # Enabled: the setting applies to every launch, one-shot ones included.
    config.update_project(str(world.repo), {"enabled": None})
    p = _plan(["-p", "x"], dict(world.env), world.cwd)
    assert p.argv == [str(world.claude), "--dangerously-skip-permissions", "-p", "x"]
    p = _plan(["mcp", "list"], dict(world.env), world.cwd)
    assert p.argv == [str(world.claude), "mcp", "list"]  # subcommands take no such option


# -- a terminal closed on a running session --------------------------------------

# A stand-in that registers itself as Claude Code does (its SessionStart hook, with the
# pane's TMUX variables and its own pid) and then keeps running.
REGISTERING = """#!%(python)s
import json, os, subprocess, sys, uuid
payload = {"session_id": str(uuid.uuid4()), "hook_event_name": "SessionStart", "source": "startup",
           "cwd": os.getcwd(), "transcript_path": os.path.join(os.getcwd(), "t.jsonl")}
subprocess.run(json.loads(os.environ["CC_TEST_HOOKS"]), input=json.dumps(payload).encode(),
               env=dict(os.environ, CLAUDE_PID=str(os.getpid())), capture_output=True, timeout=30)
with open(%(record)r, "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "name": os.environ.get("CC_CONTINUITY_NAME")}) + "\\n")
import time
time.sleep(120)
"""


def _registering(world):
    from helpers.transcripts import hook_command

    # (the path goes in the environment: a stand-in naming our package would be taken for a shim of ours)
    world.claude.write_text(REGISTERING % {"python": sys.executable, "record": str(world.record)})
    world.env["CC_TEST_HOOKS"] = json.dumps(hook_command("SessionStart"))
    return lambda: [json.loads(line) for line in world.record.read_text().splitlines()] if world.record.exists() else []


def _close_terminal_once(world, session, ready):
    """on_output: once ``ready()`` and a client is on ``session``, detach it (the terminal went away)."""
    done = []

    def hook(_out):
        if not done and ready() and world.server.tmux("list-clients", "-t", "=" + session, check=False).strip():
            world.server.tmux("detach-client", "-s", "=" + session, check=False)
            done.append(True)
    return hook, done


def _registered(world, n):
    from cc_continuity import project

    proj = project.Project.discover(str(world.cwd))
    return len(proj.open_numbers()) >= n


def test_claude_after_the_terminal_was_closed_attaches_to_the_running_session(world):
    runs = _registering(world)
    hook, closed = _close_terminal_once(world, "repo-001", lambda: _registered(world, 1))
    world.run_tty("bash", [], on_output=hook)
    assert closed and world.sessions() == ["repo-001"] and len(runs()) == 1  # still running, detached

    hook, closed = _close_terminal_once(world, "repo-001", lambda: True)
    status, out = world.run_tty("bash", [], on_output=hook)
    assert closed, out
    assert "attaching to repo-001" in out and "CC_CONTINUITY_NEW=1" in out, out
    assert len(runs()) == 1 and world.sessions() == ["repo-001"]  # no second claude

    # With arguments (a prompt of their own), or asked for, a second starts, and the first is named.
    hook, closed = _close_terminal_once(world, "repo-002", lambda: _registered(world, 2))
    status, out = world.run_tty("bash", ["another task"], on_output=hook)
    assert closed, out
    assert "repo-001 is already running in this project (detached)" in out, out
    assert "attach -t =repo-001" in out, out
    assert [r["argv"] for r in runs()] == [[], ["another task"]]
    assert world.sessions() == ["repo-001", "repo-002"]


def test_a_session_whose_claude_died_is_not_attached(world):
    runs = _registering(world)
    hook, closed = _close_terminal_once(world, "repo-001", lambda: _registered(world, 1))
    world.run_tty("bash", [], on_output=hook)
    assert closed
    # claude is killed, but its pane stays (remain-on-exit, and no hook of ours closing it):
    # the record still says ACTIVE.
    world.server.tmux("set-hook", "-p", "-u", "-t", "=repo-001:", "pane-died")
    world.server.tmux("set-option", "-w", "-t", "=repo-001:", "remain-on-exit", "on")
    pid = int(world.server.tmux("display-message", "-p", "-t", "=repo-001:", "#{pane_pid}").strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while world.server.tmux("display-message", "-p", "-t", "=repo-001:", "#{pane_dead}").strip() != "1":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    hook, closed = _close_terminal_once(world, "repo-002", lambda: _registered(world, 2))
    status, out = world.run_tty("bash", [], on_output=hook)
    assert closed, out
    assert "attaching" not in out and "already running" not in out, out
    assert len(runs()) == 2


@pytest.mark.parametrize("damage", ["removed", "broken"])
def test_the_installed_launcher_with_its_app_copy_gone_falls_through(world, damage):
    from cc_continuity.install import app

    copy = world.tmp / "app"
    if damage == "broken":  # half an upgrade: the package is there, its CLI does not import
        (copy / "cc_continuity").mkdir(parents=True)
        (copy / "cc_continuity" / "__init__.py").write_text("")
        (copy / "cc_continuity" / "cli.py").write_text("def main(:\n")
    world.launcher.write_text(app.launcher_text(sys.executable, str(copy)))
    status, out = world.run_tty("bash", ODD_ARGS, env={"PYTHONPATH": ""})  # no other copy to find
    rec = world.recorded()
    assert rec["argv"] == ODD_ARGS and rec["tmux"] is None, out  # the real claude ran, untouched
    assert status == STANDIN_RC
    lines = [line for line in out.splitlines() if "cc-continuity" in line]
    assert len(lines) == 1 and "starting claude without it" in lines[0], out
    assert "Traceback" not in out, out


def test_a_pane_dead_before_its_client_attached_still_reports_its_last_lines(tmp_path):
    """A claude failing at once can die before the launcher's tmux client has attached (seen under a loaded
    suite: the pane-died hook got session_attached 0 and recorded nothing, so the user saw no line of the
    failure).  A report file set up moments ago means a launcher is on its way: the screen is recorded.  An old
    one (a session left detached long ago) records nothing: no launcher waits for it."""
    fake = tmp_path / "tmux"
    calls = tmp_path / "calls"
    fake.write_text("#!/bin/sh\necho \"$@\" >> %s\ncase \"$*\" in *capture-pane*) printf 'line 1\\nfatal: x\\n';; "
                    "esac\n" % calls)
    fake.chmod(0o755)
    exit_path = str(tmp_path / "exit.json")
    with open(exit_path, "w") as f:
        json.dump({"pid": 1, "socket": "/s"}, f)  # what _report_end wrote just before claude ran
    assert launch._pane_died([exit_path, str(fake), "/s", "%1", "3", "", "0"]) == 0
    with open(exit_path) as f:
        assert json.load(f) == {"status": 3, "signal": None, "lines": ["line 1", "fatal: x"]}
    assert "kill-pane" in calls.read_text()
    with open(exit_path, "w") as f:
        json.dump({"pid": 1, "socket": "/s"}, f)
    old = time.time() - launch.ATTACHING_S - 5
    os.utime(exit_path, (old, old))
    assert launch._pane_died([exit_path, str(fake), "/s", "%1", "3", "", "0"]) == 0
    with open(exit_path) as f:
        assert json.load(f) == {"pid": 1, "socket": "/s"}  # nothing recorded for nobody
    assert calls.read_text().count("kill-pane") == 2
