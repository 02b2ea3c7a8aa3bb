"""The detached snapshot job (snapshot/job.py). Issue 13, P7: a snapshot that outlasts the Stop hook.

P7: the snapshot is made slow for real (a ``git`` wrapper first on PATH holds every
``git status`` while a file exists), the Stop hook leaves it to its detached job, and then:
the Stop hook returned within its wait, the successor's claim says the snapshot is not
there yet, the successor's first file-changing tool call waits and is denied while it is
not, reading goes ahead, and once the job is done the same call goes through and the ref
holds the work tree as it was at the handoff.  A job killed with SIGKILL no longer holds
anything back.  The session up to its handoff is the ladder's *requested* rung (in-process,
tests/helpers/ladder.py); the verifying Stop and the hooks after it run as the installed commands.

The retention policy the job applies after its snapshot: tests/snapshot/test_retention.py.
"""

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from cc_continuity import config, procs, session
from helpers.hookdriver import handoff_text, tokens_at, wait_for_snapshot_jobs
from helpers.ladder import S1, S2

FILES = {"README.md": "hello\n", "src/app.py": "print('v1')\n"}


def slow_git(tmp_path):
    """A ``git`` that holds ``git status`` while ``<dir>/HOLD`` exists; (bin dir, hold file)."""
    bindir = tmp_path / "slowbin"
    bindir.mkdir()
    hold = tmp_path / "HOLD"
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    script = bindir / "git"
    script.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = status ] && while [ -e '%s' ]; do sleep 0.05; done; "
                      "done\nexec '%s' \"$@\"\n" % (hold, real))
    script.chmod(0o755)
    return str(bindir), hold


def to_verified(lad):
    """Up to the verifying Stop: the ladder's *requested* rung (in-process), the handoff written.  (The
    slow git is not needed before it: nothing holds git until the test makes its HOLD file.)"""
    lad.work(sid=S1, prompts=("build the parser",))
    assert lad.request_handoff(S1).request["decision"] == "block"
    lad.write_handoff(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}), S1)


def pre_tool(drv, sid, env, tool, **tin):
    return drv.hook("PreToolUse", sid, env=env, tool_name=tool, tool_input=tin or {"command": "echo hi"})


def test_a_slow_snapshot_leaves_the_hook_and_holds_back_file_changes_until_it_is_there(make_project, tmp_path):
    lad = make_project(files=FILES)
    drv = lad.drv
    drv.config(snapshot_hook_wait_s=1)
    bindir, hold = slow_git(tmp_path)
    env1 = drv.env(S1, PATH=bindir + os.pathsep + os.environ["PATH"])
    to_verified(lad)
    with open(os.path.join(drv.root, "src", "app.py"), "w") as f:
        f.write("print('v2: at the handoff')\n")
    hold.write_text("")
    t0 = time.monotonic()
    drv.hook("Stop", S1, env=env1, stop_hook_active=True)
    stop_s = time.monotonic() - t0
    assert stop_s < 8, stop_s  # 1 s of waiting, not the snapshot
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    git = drv.checkpoint_file("manifest.json", S1)["git"]
    assert git["pending"] is True and git["git"] is None and not os.path.exists(git["result"]), git
    assert drv.state(S1)["checkpoint"]["snapshot_wait"]["result"] == git["result"]
    assert drv.ledger(S1, ev="checkpoint")[-1]["snapshot_pending"] is True

    drv.hook("SessionEnd", S1, reason="clear")
    env2 = drv.env(S2)
    drv.transcript(S2).assistant(tokens_at(5))
    text = drv.hook("SessionStart", S2, env=env2, source="clear")["hookSpecificOutput"]["additionalContext"]
    assert "work-tree snapshot: not there yet" in text, text
    assert drv.state(S2)["snapshot_wait"]["result"] == git["result"]

    t0 = time.monotonic()
    out = pre_tool(drv, S2, env2, "Bash", command="rm -rf src")
    waited = time.monotonic() - t0
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
    assert "still being taken" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert waited >= 2.5, waited  # it waited before saying no
    assert pre_tool(drv, S2, env2, "Edit", file_path=os.path.join(drv.root, "src", "app.py"),
                    old_string="v2", new_string="v3")["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert pre_tool(drv, S2, env2, "Read", file_path=os.path.join(drv.root, "src", "app.py")) is None

    hold.unlink()  # the job's git status goes on
    deadline = time.monotonic() + 60
    while not os.path.exists(git["result"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pre_tool(drv, S2, env2, "Bash", command="rm -rf src") is None
    assert "snapshot_wait" not in drv.state(S2)
    assert drv.ledger(S2, ev="snapshot_ready")
    done = json.loads(open(git["result"]).read())
    assert done["git"] is True and done["ref"].startswith(git["ref"])
    assert stat.S_IMODE(os.stat(git["result"]).st_mode) == 0o600
    shown = drv.git("show", done["ref"] + ":src/app.py").decode()
    assert shown == "print('v2: at the handoff')\n"
    # Later claims and readers see the finished snapshot.
    from cc_continuity.rotation import checkpoint

    assert checkpoint.git_entry(drv.sdir(S1))["ref"] == done["ref"]
    wait_for_snapshot_jobs(drv.cc_home)


def test_a_killed_snapshot_job_holds_nothing_back(make_project, tmp_path):
    lad = make_project(files=FILES)
    drv = lad.drv
    drv.config(snapshot_hook_wait_s=0)
    bindir, hold = slow_git(tmp_path)
    env1 = drv.env(S1, PATH=bindir + os.pathsep + os.environ["PATH"])
    to_verified(lad)
    hold.write_text("")
    drv.hook("Stop", S1, env=env1, stop_hook_active=True)
    git = drv.checkpoint_file("manifest.json", S1)["git"]
    assert git["pending"]
    # The predecessor itself (a user prompt before the /clear) is held back too.
    out = pre_tool(drv, S1, env1, "Write", file_path=os.path.join(drv.root, "x.txt"), content="x")
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    os.kill(git["pid"], signal.SIGKILL)
    time.sleep(0.3)
    assert pre_tool(drv, S1, env1, "Bash", command="touch x") is None
    assert drv.ledger(S1, ev="snapshot_missing")
    assert "snapshot_wait" not in (drv.state(S1).get("checkpoint") or {})
    hold.unlink()


def test_after_a_killed_snapshot_job_the_successor_is_told_it_did_not_finish(make_project, tmp_path):
    """The job dies after the Stop left the snapshot to it (the bootstrap was prepared then, saying "not there
    yet"): the successor's bootstrap says the job stopped and what to do, not that edits wait for it."""
    lad = make_project(files=FILES)
    drv = lad.drv
    drv.config(snapshot_hook_wait_s=0)
    bindir, hold = slow_git(tmp_path)
    env1 = drv.env(S1, PATH=bindir + os.pathsep + os.environ["PATH"])
    to_verified(lad)
    hold.write_text("")
    try:
        drv.hook("Stop", S1, env=env1, stop_hook_active=True)
        git = drv.checkpoint_file("manifest.json", S1)["git"]
        assert git["pending"] and "not there yet" in open(session.bootstrap_path(drv.sdir(S1))).read()
        os.kill(git["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while procs.pid_alive(git["pid"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        drv.hook("SessionEnd", S1, reason="clear")
        env2 = drv.env(S2)
        drv.transcript(S2).assistant(tokens_at(5))
        text = drv.hook("SessionStart", S2, env=env2, source="clear")["hookSpecificOutput"]["additionalContext"]
        assert text.startswith("Continuing from cp-001"), text
        assert "not there yet" not in text and "wait for it;" not in text and "still being taken" not in text, text
        line = next(x for x in text.splitlines() if x.startswith("- work-tree snapshot:"))
        assert line.startswith("- work-tree snapshot: none; the background job that was taking it (pid %d, "
                               % git["pid"]) and "stopped before it finished" in line, line
        assert "`cc-continuity checkpoint`" in line and "do not wait for it" in line, line
        assert "- work tree: not compared (no snapshot: its job stopped before it finished)" in text, text
        assert drv.state(S2)["revalidation"]["snapshot"] == "unfinished"
        t0 = time.monotonic()
        assert pre_tool(drv, S2, env2, "Bash", command="rm -rf src") is None  # and, rightly, edits do not wait
        assert time.monotonic() - t0 < 2.5
    finally:
        hold.unlink()
    wait_for_snapshot_jobs(drv.cc_home)


def test_a_pending_entry_is_unfinished_only_once_its_job_is_gone_without_a_result(tmp_path):
    from cc_continuity.snapshot import job

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    result = str(tmp_path / "snapshot-x.json")
    entry = {"git": None, "pending": True, "pid": os.getpid(), "result": result, "until": time.time() + 60}
    assert not job.unfinished(entry)  # its job runs
    assert job.unfinished(dict(entry, pid=dead.pid))  # gone, no result
    assert job.unfinished(dict(entry, until=time.time() - 1))  # past its deadline
    assert not job.unfinished(dict(entry, pid=None))  # a pid we cannot tell about: running, as PreToolUse says
    with open(result, "w") as f:
        f.write("{}")
    assert not job.unfinished(dict(entry, pid=dead.pid))  # it finished, then exited
    assert not job.unfinished({"git": True, "ref": "refs/continuity/k/cp-001"}) and not job.unfinished(None)


def test_a_quick_snapshot_is_finished_inside_the_hook(make_project):
    lad = make_project(files=FILES)
    drv = lad.drv
    to_verified(lad)
    drv.hook("Stop", S1, stop_hook_active=True)
    git = drv.checkpoint_file("manifest.json", S1)["git"]
    assert git["git"] is True and not git.get("pending"), git
    assert drv.state(S1)["checkpoint"]["ref"] == git["ref"]
    assert "snapshot_wait" not in drv.state(S1)["checkpoint"]
    assert drv.git("rev-parse", "--verify", git["ref"]).decode().strip() == git["commit"]
    # The persistent private index lives in our state dir, 0600 in a 0700 dir.
    index = os.path.join(drv.project.dir, "snapshot.index")
    assert stat.S_IMODE(os.stat(index).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(drv.project.dir).st_mode) == 0o700
    wait_for_snapshot_jobs(drv.cc_home)


@pytest.mark.parametrize("start", ["snapshot", "share"])
def test_a_detached_job_finds_the_package_with_no_pythonpath_of_ours(tmp_path, monkeypatch, start):
    """The jobs run as ``python -S -m <module>`` (no site, no editable install): the PYTHONPATH their start
    gives them must name the folder holding the package, wherever the module sits in it (a job moved into
    a sub-folder once pointed at the package itself: every e2e checkpoint then lacked its snapshot)."""
    import subprocess as sp

    from cc_continuity import paths
    from cc_continuity.share import job as share_job
    from cc_continuity.snapshot import job

    monkeypatch.delenv("PYTHONPATH", raising=False)
    seen = {}

    class Spy:
        def __init__(self, argv, **kw):
            seen.update(argv=argv, env=kw["env"])
            self.pid = 0

    real = sp.Popen
    monkeypatch.setattr(sp, "Popen", Spy)
    if start == "snapshot":
        job.start({"plan": "x"})
    else:
        share_job.start_job("cc_continuity.share.publish", "{}")
    monkeypatch.setattr(sp, "Popen", real)
    module = seen["argv"][seen["argv"].index("-m") + 1]
    assert seen["env"]["PYTHONPATH"].split(os.pathsep)[0] == paths.package_parent()
    res = subprocess.run([sys.executable, "-S", "-c", "import %s" % module], cwd="/", capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"], "PYTHONPATH": seen["env"]["PYTHONPATH"]})
    assert res.returncode == 0, res.stderr
