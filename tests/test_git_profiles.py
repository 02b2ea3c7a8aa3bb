"""The package's one git runner and its two profiles (cc_continuity/gitrun.py), on real repositories.

Issue 35: the snapshot's profile runs no program the repository names, and sharing's uses the
user's credentials and helpers but never asks anyone and never hangs.  Each trap is a program
that writes a marker when run, and each is first shown to fire with git as the user runs it
(the control), so a quiet marker means the profile stopped it, not that the trap was dead:

- a repository whose ``.git/config`` names a hook directory, an fsmonitor program, a credential
  helper, a filter driver, a textconv driver and a pager: the snapshot profile runs none of them
  (``run``, and ``read``: the hold's work-tree state on a tool call's path);
- the user's global config names a credential helper: sharing's calls use it; its askpass
  program is never run and nothing waits for an answer (no terminal, stdin /dev/null);
- a remote that accepts the connection and never answers: the call is killed at its timeout,
  with its process group (git's remote helper too).
"""

import http.server
import os
import pty
import socket
import subprocess
import sys
import threading
import time

import pytest

from cc_continuity import gitrun
from cc_continuity.holds import effects
from cc_continuity.share import transport
from cc_continuity.errors import ShareError
from helpers import leftovers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plain_git(repo, *args, env=None, input=None, check=True, timeout=60):
    """git as the user runs it (the control): the repository's config applies."""
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=env, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)
    if check:
        assert proc.returncode == 0, (args, proc.stderr)
    return proc


def program(bindir, name, marker, tail):
    """An executable ``bindir/name`` that appends ``name`` to ``marker``, then runs ``tail`` (shell)."""
    path = os.path.join(bindir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho %s >> '%s'\n%s\n" % (name, marker, tail))
    os.chmod(path, 0o755)
    return path


def fired(marker):
    try:
        with open(marker) as f:
            return set(f.read().split())
    except FileNotFoundError:
        return set()


@pytest.fixture
def hostile(tmp_path):
    """(repo, marker): a repository with one commit whose config names a program for every trap."""
    repo, bindir, hooks = tmp_path / "repo", tmp_path / "bin", tmp_path / "hooks"
    for d in (repo, bindir, hooks):
        d.mkdir()
    marker = str(tmp_path / "ran")
    plain_git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    plain_git(repo, "add", ".")
    plain_git(repo, "commit", "-q", "-m", "init")
    (repo / ".git" / "info" / "attributes").write_text("*.txt filter=evil diff=evil\n")
    for name in ("pre-commit", "post-commit", "reference-transaction", "post-index-change"):
        program(hooks, name, marker, "exit 0")
    traps = {
        "core.hooksPath": str(hooks),
        "core.fsmonitor": program(bindir, "fsmonitor", marker, "exit 1"),
        "credential.helper": program(bindir, "credential", marker, "cat >/dev/null"),
        "filter.evil.clean": program(bindir, "clean", marker, "exec cat"),
        "filter.evil.smudge": program(bindir, "smudge", marker, "exec cat"),
        "diff.evil.textconv": program(bindir, "textconv", marker, 'exec cat "$1"'),
        "core.pager": program(bindir, "pager", marker, "exec cat"),
    }
    for key, value in traps.items():
        plain_git(repo, "config", key, value)
    return str(repo), marker


def touch_later(path):
    """A new mtime, the same bytes: git must read the file again (through its filter) to compare it."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def on_a_tty(cmd, repo, env):
    """Run ``cmd`` with its stdout on a pseudo-terminal (git starts its pager only there)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=subprocess.DEVNULL)
        os.close(slave)
        while True:
            try:
                if not os.read(master, 1 << 16):
                    break
            except OSError:  # (EIO: every writer of the terminal is gone)
                break
        assert proc.wait(timeout=30) == 0
    finally:
        os.close(master)


# -- the profiles as data -------------------------------------------------------------------------------------

def test_both_profiles_drop_every_locating_and_askpass_variable_and_never_prompt():
    base = {k: "/elsewhere" for k in gitrun.LOCAL_ENV + gitrun.ASKPASS_ENV}
    base.update(HOME="/h", SSH_AUTH_SOCK="/s", GIT_SSH_COMMAND="ssh -i key", GIT_CONFIG_COUNT="0")
    for profile in (gitrun.SNAPSHOT, gitrun.SHARING):
        env = gitrun.environ(profile, base)
        assert not set(env) & set(gitrun.LOCAL_ENV + gitrun.ASKPASS_ENV), profile
        assert env["GIT_TERMINAL_PROMPT"] == "0" and env["HOME"] == "/h" and env["SSH_AUTH_SOCK"] == "/s"
    snap, share = gitrun.environ(gitrun.SNAPSHOT, base), gitrun.environ(gitrun.SHARING, base)
    assert snap["GIT_OPTIONAL_LOCKS"] == "0" and snap["LC_ALL"] == "C"
    assert share["GIT_SSH_COMMAND"] == "ssh -i key -o BatchMode=yes -o ConnectTimeout=30"
    assert share["GCM_INTERACTIVE"] == "never" and share["SSH_ASKPASS_REQUIRE"] == "never"
    assert gitrun.environ(gitrun.SHARING, {"LC_ALL": "de_DE.UTF-8"})["LC_ALL"] == "de_DE.UTF-8"  # the user's own
    assert gitrun.SHARING.group and not gitrun.SNAPSHOT.group and gitrun.SHARING.timeout == transport.TRY_TIMEOUT_S
    # the profiles stay apart: the snapshot empties the helper list, sharing keeps the user's
    assert "credential.helper=" in gitrun.SNAPSHOT.config and not any(
        c.startswith("credential.") for c in gitrun.SHARING.config)


# -- the snapshot profile --------------------------------------------------------------------------------------

def test_the_snapshot_profile_runs_no_program_the_repository_names(hostile, monkeypatch):
    repo, marker = hostile
    monkeypatch.delenv("GIT_PAGER", raising=False)  # (the user's own pager would win over core.pager)
    fill = b"protocol=https\nhost=example.com\n\n"

    def trip(runner):
        """Every trap's trigger: a hook, fsmonitor, a filter, textconv, a credential helper."""
        touch_later(os.path.join(repo, "a.txt"))
        runner(["status", "--porcelain"])
        runner(["hash-object", "a.txt"])
        runner(["cat-file", "--textconv", "HEAD:a.txt"])
        runner(["credential", "fill"], fill)
        runner(["update-ref", "refs/continuity/t/1", "HEAD"])
        runner(["commit", "-q", "--allow-empty", "-m", "x"])

    trip(lambda args, input=None: gitrun.run(args, repo, gitrun.SNAPSHOT, input=input, timeout=30))
    on_a_tty(["git", *gitrun.SNAPSHOT.config, "-p", "log", "-1"], repo, gitrun.environ(gitrun.SNAPSHOT))
    assert fired(marker) == set()
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    trip(lambda args, input=None: plain_git(repo, *args, input=input, env=env, check=False))
    on_a_tty(["git", "-p", "log", "-1"], repo, env)
    assert fired(marker) >= {"fsmonitor", "clean", "textconv", "credential", "reference-transaction",
                             "pre-commit", "post-commit", "pager"}, "a trap did not fire for the control"


def test_the_holds_work_tree_state_runs_no_program_and_writes_nothing(hostile, monkeypatch):
    repo, marker = hostile
    touch_later(os.path.join(repo, "a.txt"))
    index = os.path.join(repo, ".git", "index")
    before = os.stat(index).st_mtime_ns, open(index, "rb").read()
    first = effects.git_state(repo)
    monkeypatch.setenv("GIT_DIR", os.path.join(repo, "nowhere"))  # an outer git's variables do not redirect it
    monkeypatch.setenv("GIT_INDEX_FILE", os.path.join(repo, "nowhere.index"))
    assert effects.git_state(repo) == first and first is not None
    assert fired(marker) == set()
    assert (os.stat(index).st_mtime_ns, open(index, "rb").read()) == before
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    plain_git(repo, "status", "--porcelain")
    assert {"fsmonitor", "clean"} <= fired(marker), "a trap did not fire for the control"


def test_the_holds_work_tree_state_loads_no_subprocess(hostile):
    """As a tool call's hook runs it (``python -S``): posix_spawnp, neither ``subprocess`` nor ``os`` loaded."""
    repo, marker = hostile
    code = ("import sys\nsys.path.insert(0, %r)\nfrom cc_continuity.holds import effects\n"
            "state = effects.git_state(%r)\n"
            "print(state is not None, 'subprocess' in sys.modules, 'os' in sys.modules)\n" % (REPO, repo))
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, timeout=60)
    assert out.stdout.split() == [b"True", b"False", b"False"], out
    assert fired(marker) == set()


# -- the sharing profile ----------------------------------------------------------------------------------------

class _AuthServer(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        auth = self.headers.get("Authorization")
        self.seen.append(auth)
        if not auth:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="x"')
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def auth_server():
    """An HTTP server that asks for credentials: ``(url, the Authorization headers it saw)``."""
    seen = []
    handler = type("Handler", (_AuthServer,), {"seen": seen})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/x.git" % srv.server_address[1], seen
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def test_sharing_uses_the_users_credential_helper(tmp_path, isolated_home, auth_server):
    url, seen = auth_server
    marker = str(tmp_path / "ran")
    helper = program(tmp_path, "helper", marker, "cat >/dev/null; echo username=u; echo password=p")
    with open(isolated_home / ".gitconfig", "w") as f:
        f.write("[credential]\n\thelper = %s\n" % helper)
    proc = gitrun.run(["ls-remote", url], str(tmp_path), gitrun.SHARING, timeout=30)
    assert proc.returncode != 0  # (the server has no such repository)
    assert "helper" in fired(marker)
    assert "Basic dTpw" in seen  # u:p, from the user's helper


def test_sharing_never_prompts_and_runs_no_askpass(tmp_path, isolated_home, auth_server):
    url, seen = auth_server
    marker = str(tmp_path / "ran")
    askpass = program(tmp_path, "askpass", marker, "echo secret")
    with open(isolated_home / ".gitconfig", "w") as f:
        f.write("[core]\n\taskPass = %s\n" % askpass)
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    plain_git(str(tmp_path), "ls-remote", url, env=env, check=False, timeout=30)
    assert "askpass" in fired(marker), "the control did not run the askpass program"
    os.unlink(marker)
    seen.clear()
    started = time.monotonic()
    proc = gitrun.run(["ls-remote", url], str(tmp_path), gitrun.SHARING, timeout=30)
    assert proc.returncode != 0 and time.monotonic() - started < 20
    assert b"terminal prompts disabled" in proc.stderr, proc.stderr
    assert fired(marker) == set() and not any(seen)  # no askpass, no credentials sent


def test_sharing_runs_no_hook_of_the_repository(hostile):
    repo, marker = hostile
    gitrun.run(["update-ref", "refs/continuity/t/2", "HEAD"], repo, gitrun.SHARING, timeout=30)
    assert fired(marker) == set()


@pytest.fixture
def mute_server():
    """A TCP server on 127.0.0.1 that accepts every connection and never answers: ``(port, accepted)``."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    accepted = []
    stop = threading.Event()

    def serve():
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(timeout=10)
        for conn in accepted:
            conn.close()
        srv.close()


def _ours_gone(tmp_path, within=5.0):
    deadline = time.monotonic() + within
    while (left := leftovers.find(str(tmp_path))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_a_hung_remote_is_killed_at_the_timeout_with_its_process_group(tmp_path, mute_server):
    port, accepted = mute_server
    url = "http://127.0.0.1:%d/x.git" % port
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        gitrun.run(["ls-remote", url], str(tmp_path), gitrun.SHARING, timeout=2)
    took = time.monotonic() - started
    assert 2 <= took < 10, took
    assert accepted  # git's remote helper (its child) had connected: there was a group to kill
    assert not _ours_gone(tmp_path), "a process of the call outlived its timeout"
    started = time.monotonic()
    with pytest.raises(ShareError, match="no answer within 1 s"):
        transport.git(["ls-remote", url], str(tmp_path), timeout=1)
    assert time.monotonic() - started < 9
    assert not _ours_gone(tmp_path)
