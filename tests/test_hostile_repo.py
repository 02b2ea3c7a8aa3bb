"""Issue 22: a repository carrying every trick of the second adversarial round.

A clone whose ``.claude/continuity.json`` is a link to ``/dev/zero``, whose
``.claude/settings.json`` is a link to ``/dev/stdin`` and ``settings.local.json`` a link
to a FIFO in the tree; a clean filter, an fsmonitor and hooks in its git config that
write a marker; a tracked change and a 4 GB (sparse) untracked file.  The ``claude``
wrapper (``cc-continuity launch``, its stdin a terminal-like pipe nobody closes), every
hook, the status line and doctor run in it: each is done in < 2 s (of CPU; and blocks nowhere), stays under 100 MB
RSS (its whole process tree, measured by a parent that waits for it), and no marker is
written.  An audit hook on ``open`` proves that every read of the repository's
``.claude`` files goes through the bounded read (``O_NOFOLLOW | O_NONBLOCK``, after the
checks), in the wrapper's, a hook's and doctor's config reads.
"""

import json
import os
import resource
import signal
import subprocess
import sys
import time
import uuid

import pytest

from cc_continuity import config, safefile
from cc_continuity.hosts.claude import hooks
from cc_continuity.install import wrapper
from helpers.transcripts import STATUSMAIN, hook_command, hook_payload

# Runs argv (stdin inherited), then prints its own children's peak RSS (KiB) and the wall time.
MEASURE = r"""
import resource, subprocess, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a regression fails here, not in the OOM killer
t0 = time.monotonic()
rc = subprocess.call(sys.argv[1:])
took = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("\nMEASURE %d %.3f %d %.3f\n" % (ru.ru_maxrss, took, rc, ru.ru_utime + ru.ru_stime))
"""


def _hung(signum, frame):
    raise AssertionError("config.load blocked")


def _vm_size():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def hostile(tmp_path):
    src = tmp_path / "src"
    (src / ".claude").mkdir(parents=True)
    os.symlink("/dev/zero", src / ".claude" / "continuity.json")
    os.symlink("/dev/stdin", src / ".claude" / "settings.json")
    os.symlink("../pipe", src / ".claude" / "settings.local.json")
    (src / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (src / "main.py").write_text("print('hello')\n")
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "a repository with tricks")
    repo = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(src), str(repo))
    assert os.readlink(repo / ".claude" / "continuity.json") == "/dev/zero"  # git carried the links
    os.mkfifo(repo / "pipe")
    marker = tmp_path / "MARKER"
    prog = tmp_path / "evil"
    prog.write_text("#!/bin/sh\necho \"$0 $*\" >> %s\ncat\n" % marker)
    prog.chmod(0o755)
    hooks_dir = tmp_path / "hooks"
    hooks_dir.mkdir()
    for name in ("reference-transaction", "post-index-change", "post-checkout", "pre-commit"):
        (hooks_dir / name).write_text("#!/bin/sh\necho hook >> %s\n" % marker)
        (hooks_dir / name).chmod(0o755)
    for key, value in (("filter.evil.clean", prog), ("filter.evil.smudge", prog), ("filter.evil.required", "true"),
                       ("diff.evil.textconv", prog), ("core.fsmonitor", prog), ("core.hooksPath", hooks_dir),
                       ("diff.external", prog), ("core.pager", prog), ("core.editor", prog)):
        git(repo, "config", key, str(value))
    (repo / "main.py").write_text("print('changed')\n")
    with open(repo / "huge.log", "wb") as f:
        f.truncate(4 << 30)  # sparse: 4 GB to whoever reads it
    return os.path.realpath(repo), marker


def measured(argv, cwd, env, stdin):
    """(peak RSS in MB, seconds, exit status, stdout, stderr) of ``argv`` and its children."""
    proc = subprocess.Popen([sys.executable, "-c", MEASURE, *argv], cwd=cwd, env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("%s still running after 30 s: %s" % (argv[-1], err.decode()[-2000:]))
    text = err.decode("utf-8", "replace")
    head, _, tail = text.rpartition("\nMEASURE ")
    kib, took, rc, cpu = tail.split()
    return int(kib) / 1024.0, (float(took), float(cpu)), int(rc), out.decode("utf-8", "replace"), head


def env_for(repo, **extra):
    env = dict(os.environ, CLAUDE_PROJECT_DIR=repo, CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli")
    env.update(extra)
    return env


def check(name, rss, took, marker):
    """< 2 s of work (CPU, the whole process tree) and no blocking (wall clock; a read of /dev/stdin or a
    FIFO never ends); on an idle machine the wall time is under 2 s too (the note has the figures)."""
    wall, cpu = took
    print("hostile repository: %-20s %.2f s wall  %.2f s CPU  %.0f MB RSS" % (name, wall, cpu, rss))
    assert cpu < 2.0, "%s worked %.2f s" % (name, cpu)
    assert wall < 6.0, "%s took %.2f s" % (name, wall)
    assert rss < 100, "%s peaked at %.0f MB RSS" % (name, rss)
    assert not marker.exists(), "%s ran a repository program: %s" % (name, marker.read_text())


def test_wrapper_every_hook_statusline_and_doctor_stay_bounded(hostile, tmp_path):
    repo, marker = hostile
    stub = tmp_path / "claude"
    stub.write_text("#!/bin/sh\necho stub-claude-ran\n")
    stub.chmod(0o755)
    r, w = os.pipe()  # the terminal: never closed, never written (a read of /dev/stdin would hang here)
    try:
        rss, took, rc, out, err = measured([sys.executable, "-m", "cc_continuity", "launch", "--", "--version"],
                                           repo, env_for(repo, CC_CONTINUITY_CLAUDE=str(stub)), r)
    finally:
        os.close(w)
        os.close(r)
    check("the wrapper", rss, took, marker)
    # The shell function then starts claude as is (the fall-through status), told why.
    assert rc == wrapper.FALLTHROUGH_STATUS, (rc, out, err)
    assert "continuity.json" in err and "outside" in err, err  # and the user is told why the file was not read
    assert "\0" not in err

    sid = str(uuid.uuid4())
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    for event in list(hooks.HANDLERS):
        payload = hook_payload(event, sid, str(transcript), repo)
        payload["hook_event_name"] = hooks.EVENT_OF.get(event, event)
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            payload.update(tool_name="Bash", tool_input={"command": "cat .claude/continuity.json"},
                           tool_use_id="toolu_" + uuid.uuid4().hex[:12])
        feed = tmp_path / ("in-" + event)
        feed.write_text(json.dumps(payload))
        with open(feed, "rb") as stdin:
            rss, took, rc, out, err = measured(hook_command(event), repo, env_for(repo, CLAUDE_CODE_SESSION_ID=sid),
                                               stdin)
        assert rc in (0, 2), (event, rc, err)
        check(event, rss, took, marker)

    feed = tmp_path / "in-status"
    feed.write_text(json.dumps({"session_id": sid, "transcript_path": str(transcript), "cwd": repo,
                                "workspace": {"current_dir": repo, "project_dir": repo}}))
    with open(feed, "rb") as stdin:
        rss, took, rc, out, err = measured([sys.executable, "-S", STATUSMAIN], repo, env_for(repo), stdin)
    assert rc == 0, err
    check("the status line", rss, took, marker)

    rss, took, rc, out, err = measured([sys.executable, "-m", "cc_continuity", "doctor"], repo,
                                       env_for(repo), subprocess.DEVNULL)
    assert "Traceback" not in out + err, out + err
    check("doctor", rss, took, marker)


def test_every_read_of_the_repositorys_claude_files_is_bounded(hostile, tmp_path):
    """Fails on any other open of those paths: an audit hook sees every open's flags."""
    repo, _ = hostile
    # A plain, valid file too: the bounded read must also be the one that reads a good file.
    good = tmp_path / "good"
    good.mkdir()
    (good / ".git").mkdir()
    (good / ".claude").mkdir()
    (good / ".claude" / "continuity.json").write_text('{"enabled": true}')
    (good / ".claude" / "settings.json").write_text("{}")
    code = r"""
import json, os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
root = sys.argv[1]
claude = os.path.join(root, ".claude")
opens = []
def audit(event, args):
    if event == "open" and isinstance(args[0], str) and (args[0].startswith(claude) or "/dev/" in args[0]):
        opens.append([args[0], args[2]])
sys.addaudithook(audit)
from cc_continuity import config
from cc_continuity.hosts import checkup
from cc_continuity.hosts.claude import doctor_plugin as claude_plugin
from cc_continuity.hosts.claude import launch
for step in (lambda: config.load(root), lambda: launch.plan(["--version"], env=dict(os.environ), cwd=root),
             lambda: claude_plugin.check_skill_shell(checkup.Context(cwd=root, env=dict(os.environ)))):
    try:
        step()
    except Exception as e:
        pass
print(json.dumps(opens))
"""
    stub = tmp_path / "claude"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    need = os.O_NOFOLLOW | os.O_NONBLOCK
    for root in (repo, str(good)):
        res = subprocess.run([sys.executable, "-c", code, root], env=dict(os.environ, CC_CONTINUITY_CLAUDE=str(stub)),
                             capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr
        opens = json.loads(res.stdout)
        for path, flags in opens:
            assert flags & need == need, "%s opened without the bounded read (flags %o)" % (path, flags)
            assert not path.startswith("/dev/"), path
        if root == str(good):
            assert {p for p, _ in opens} >= {os.path.join(root, ".claude", "continuity.json"),
                                             os.path.join(root, ".claude", "settings.json")}, opens
        else:
            assert opens == [], opens  # a link out of the repository, a FIFO: refused before any open


@pytest.mark.parametrize("make", ["zero-link", "fifo", "directory", "too-big", "dir-link-out"])
def test_config_refuses_what_is_not_a_small_regular_file(tmp_path, make):
    root = tmp_path / "r"
    (root / ".claude").mkdir(parents=True)
    path = root / ".claude" / "continuity.json"
    if make == "zero-link":
        os.symlink("/dev/zero", path)
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "directory":
        path.mkdir()
    elif make == "too-big":
        path.write_text('{"enabled": true, "pad": "%s"}' % ("x" * config.MAX_FILE_BYTES))
    else:
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (outside / "continuity.json").write_text('{"enabled": false}')
        os.rmdir(root / ".claude")
        os.symlink(outside, root / ".claude")
    t0 = time.monotonic()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + (1 << 30), hard))  # a regression: MemoryError, not OOM
    signal.signal(signal.SIGALRM, _hung)
    signal.alarm(5)  # and a blocked open an error, not a hang
    try:
        with pytest.raises(config.ConfigError) as e:
            config.load(str(root))
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert time.monotonic() - t0 < 1.0
    assert str(path) in str(e.value)
    assert "xxxx" not in str(e.value)  # sizes, never content


def test_a_link_that_stays_inside_the_repository_is_followed(tmp_path):
    root = tmp_path / "r"
    (root / ".claude").mkdir(parents=True)
    (root / "shared.json").write_text('{"enabled": false}')
    os.symlink("../shared.json", root / ".claude" / "continuity.json")
    assert config.load(str(root))["enabled"] is False
    assert safefile.read_bounded(str(root / ".claude" / "continuity.json"), 100, inside=str(root)) == b'{"enabled": false}'
