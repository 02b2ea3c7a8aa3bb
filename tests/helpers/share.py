"""What the share tests have in common (tests/share/, tests/watch/test_unclaimed.py): remotes on this
machine, machine A's in-process rotation through the hook contexts, another machine's clone and claim."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

from cc_continuity import config, paths
from cc_continuity.hosts.claude.host import CLAUDE
from cc_continuity.hosts.ports import HookPorts
from cc_continuity.rotation import start, turn
from cc_continuity.share import transport
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000b2"
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py` (modified)"})


def git(cwd, *args, check=True):
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True).stdout


def bare(tmp_path, name="remote.git", reject=False):
    path = str(tmp_path / name)
    git(str(tmp_path), "init", "-q", "--bare", path)
    if reject:
        hook = os.path.join(path, "hooks", "pre-receive")
        with open(hook, "w") as f:
            f.write("#!/bin/sh\necho 'refs/continuity/* is protected here' >&2\nexit 1\n")
        os.chmod(hook, 0o755)
    return path


def user_refs(remote):
    """Every ref outside refs/continuity/ with its object, and the bytes of each ref file and packed-refs."""
    out = git(remote, "for-each-ref", "--format=%(refname) %(objectname)")
    return sorted(line for line in out.splitlines() if not line.startswith("refs/continuity/"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def git_daemon(base):
    """``git daemon`` on 127.0.0.1 serving the folder ``base`` (receive-pack on), until the block ends;
    yields its base URL (``git://127.0.0.1:<port>``)."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr",
                             "--listen=127.0.0.1", "--port=%d" % port, "--base-path=%s" % base, str(base)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # git runs git-daemon as its child: killed as a group
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield "git://127.0.0.1:%d" % port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def machine_a(tmp_path, url, **cfg):
    """Machine A's project: a clone-like repo whose `origin` is ``url``, with the user's branch and a tag there."""
    drv = HookDriver(tmp_path / "a", files={"README.md": "hello\n", "src/app.py": "print(1)\n"})
    drv.git("remote", "add", "origin", url)
    drv.git("tag", "v1")
    drv.git("push", "-q", "origin", "main", "v1")
    drv.config(share_remote="origin", **cfg)
    return drv


def step(drv, fn, event, sid, **fields):
    """One protocol step in-process, in the hook calls' own context (HookPorts: its share ports are filled)."""
    ctx = HookPorts(event, drv.payload(event, sid, **fields), drv.env(sid), host=CLAUDE)
    return fn(ctx), ctx


def rotate(drv, claim_locally=True, delete=None, work=None):
    """One in-process rotation of S1 to a verified checkpoint (and S2 claiming it); the Stop's seconds.

    ``work(drv)``: what S1 does (through its real hooks) after its first prompt."""
    drv.transcript(S1).assistant(tokens_at(10))
    step(drv, start.session_started, "SessionStart", S1, source="startup")
    step(drv, start.prompt_submitted, "UserPromptSubmit", S1, prompt="build the parser")
    if work:
        work(drv)
    with open(os.path.join(drv.root, "src/app.py"), "w") as f:
        f.write("print(2)\n")
    with open(os.path.join(drv.root, "notes.txt"), "w") as f:
        f.write("untracked scratch\n")
    if delete:
        os.unlink(os.path.join(drv.root, delete))
    drv.transcript(S1).assistant(tokens_at(65), "Step finished.")
    step(drv, turn.turn_ended, "Stop", S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(GOOD)
    t0 = time.monotonic()
    out, ctx = step(drv, turn.turn_ended, "Stop", S1)
    took = time.monotonic() - t0
    assert ctx.outcome.startswith("checkpoint cp-001 verified"), ctx.outcome
    if claim_locally:
        step(drv, start.session_ended, "SessionEnd", S1, reason="clear")
        drv.transcript(S2)
        out, _ = step(drv, start.session_started, "SessionStart", S2, source="clear")
        assert out["hookSpecificOutput"]["additionalContext"].startswith("Continuing from cp-001")
    return took


def niceness(pid):
    """A process's nice value, from /proc (field 19 of its stat line)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def wait_status(drv, want, timeout=30):
    deadline = time.time() + timeout
    st = {}
    while time.time() < deadline:
        st = transport.read_status(drv.sdir(S1))
        if st.get("state") in want:
            return st
        time.sleep(0.1)
    raise AssertionError("share status stayed %r" % st)


def machine(tmp_path, name, remote):
    """Another machine: its own HOME and state dir, a clone of the remote; (env, clone path)."""
    home, state, clone = tmp_path / (name + "-home"), tmp_path / (name + "-state"), str(tmp_path / name)
    home.mkdir()
    env = dict(os.environ, HOME=str(home), CC_CONTINUITY_HOME=str(state))
    subprocess.run(["git", "clone", "-q", remote, clone], check=True, env=env, capture_output=True)
    return env, clone


def claim_cli(env, clone, *args):
    return subprocess.run([sys.executable, "-m", "cc_continuity", "claim", *args], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120)


def mid_of(env):
    with open(os.path.join(env["CC_CONTINUITY_HOME"], transport.MACHINE_ID)) as f:
        return f.read().strip()


def published(tmp_path, claim_locally=False):
    remote = bare(tmp_path)
    drv = machine_a(tmp_path, "file://" + remote)
    rotate(drv, claim_locally=claim_locally)
    assert wait_status(drv, ("published", "failed"))["state"] == "published"
    return remote, drv, "%s/cp-001" % paths.project_key(drv.root)
