"""Continue on another machine through the repository's git remote, against the real Claude Code (issue 26).

Machine A (its own HOME and state dir, a tmux-free install) works to a verified checkpoint
and dies; its publish job pushes it to a bare repository served by ``git daemon`` on
127.0.0.1.  Machine B (another sandbox: its own HOME, state dir and install) clones the
remote and runs ``cc-continuity claim --from origin <key>/cp-001 -- -p continue``: its first
model request carries A's handoff, said to come from another machine.

Run with ``CC_E2E_REPEAT=N`` for pass counts.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cc_continuity import paths
from cc_continuity.rehearse import rotation_scenario

from . import scenarios
from .common import Continuity, bootstrap_of, installed_sandbox, prompt, report_metrics, text_blocks
from .harness import REPO_ROOT
from helpers.share import free_port, git_daemon

pytestmark = pytest.mark.e2e

TASK = "Share task: keep a work log"


@pytest.fixture
def daemon(tmp_path):
    base = tmp_path / "served"
    base.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(base / "remote.git")], check=True)
    with git_daemon(base) as url:
        yield url + "/remote.git", str(base / "remote.git")


def set_config(sb, **values):
    code = "from cc_continuity import config; config.update_global(%r)" % values
    res = sb.run([sys.executable, "-c", code], env={"PYTHONPATH": REPO_ROOT})
    assert res.returncode == 0, res.stderr


def test_machine_b_claims_a_checkpoint_machine_a_published_and_its_first_request_carries_the_handoff(
        sandbox_factory, daemon):
    url, bare = daemon
    a = installed_sandbox(sandbox_factory, lambda p: scenarios.with_default(rotation_scenario(p, task=TASK)))
    set_config(a, tmux=False, share_remote="origin")
    for cmd in (["remote", "add", "origin", url], ["push", "-q", "origin", "main"]):
        assert a.run(["git", *cmd]).returncode == 0
    before = subprocess.run(["git", "for-each-ref", "refs/heads", "refs/tags"], cwd=bare, capture_output=True,
                            text=True).stdout
    cont = Continuity(a)
    a.start_claude()
    prompt(a, TASK)
    cont.wait_event(1, "transition", to="AWAITING_MANUAL_CLEAR", timeout=60)
    a.wait_idle()
    os.kill(a.claude_pid, signal.SIGKILL)
    status = os.path.join(cont.sdir(1), "checkpoint", "share.json")
    verified = cont.events(1, "transition", to="CHECKPOINT_VERIFIED")[0]["ts"]

    def published():
        try:
            with open(status) as f:
                st = json.load(f)
        except (OSError, ValueError):
            return None
        return st if st.get("state") in ("published", "failed") else None

    st = a.wait_for(published, 60, what="the publish job")
    assert st["state"] == "published", st
    key = paths.project_key(os.path.realpath(a.project))

    b = installed_sandbox(sandbox_factory, lambda p: scenarios.with_default(rotation_scenario(p, task=TASK),
                                                                           reply="Continuing the work log."))
    clone = os.path.join(b.root, "clone")
    assert b.run(["git", "clone", "-q", url, clone]).returncode == 0
    wt = clone + "-cp-001"
    b.trust(wt)
    t0 = time.time()
    res = b.run([sys.executable, "-m", "cc_continuity", "claim", "--from", "origin", key + "/cp-001", "--",
                 "-p", "continue"], cwd=clone, env={"PYTHONPATH": REPO_ROOT}, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "published by machine" in res.stderr
    reqs = [r for r in b.model.main_requests() if "continue" in r.latest_text]
    assert reqs, "no model request from machine B"
    req = reqs[0]
    boot = bootstrap_of(req)
    assert boot is not None, [t[:200] for _, t in text_blocks(req)]
    assert "## Handoff (cp-001)" in boot and "written on another machine" in boot
    handoff = open(os.path.join(cont.sdir(1), "checkpoint", "handoff.md")).read()
    assert handoff.strip().splitlines()[0] in boot
    after = subprocess.run(["git", "for-each-ref", "refs/heads", "refs/tags"], cwd=bare, capture_output=True,
                           text=True).stdout
    assert after == before
    report_metrics("share", {"publish_after_verify_s": round(st["published_at"] - verified, 2),
                             "push_ms": st.get("push_ms"), "claim_to_first_request_s": round(req.time - t0, 2),
                             "version": a.version})


TASK_P4 = "Shared rotation task: keep a work log"


@pytest.mark.parametrize("remote", ["off", "rejecting", "down"])
def test_a_rejecting_or_down_remote_never_delays_or_breaks_the_tmux_rotation(sandbox_factory, tmp_path, remote):
    """P4 (checkpoint verified -> the successor's first request) with share_remote pointing at a remote
    whose pre-receive hook refuses, or at a port nobody listens on: the rotation is the same one."""
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, task=TASK_P4))
    if remote != "off":
        url = "git://127.0.0.1:%d/remote.git" % free_port()
        if remote == "rejecting":
            bare = str(tmp_path / "reject.git")
            subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
            hook = os.path.join(bare, "hooks", "pre-receive")
            with open(hook, "w") as f:
                f.write("#!/bin/sh\necho 'no refs/continuity here' >&2\nexit 1\n")
            os.chmod(hook, 0o755)
            url = "file://" + bare
        assert sb.run(["git", "remote", "add", "origin", url]).returncode == 0
        set_config(sb, share_remote="origin")
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_P4)
    sb.model.wait_for(lambda r: r.rule == "finish", timeout=120)
    cont.wait_event(1, "rotator", step="renamed")
    recs = {n: cont.record(n) for n in (1, 2)}
    assert recs[1]["state"] == "ROTATED" and recs[1]["successor"] == 2
    req = sb.model.main_requests(recs[2]["session_id"])[0]
    assert bootstrap_of(req) is not None
    p4 = round((req.time - cont.events(1, "checkpoint")[0]["ts"]) * 1000)
    status = os.path.join(cont.sdir(1), "checkpoint", "share.json")
    if remote == "off":
        assert not os.path.exists(status)
    else:
        def tried():
            try:
                with open(status) as f:
                    st = json.load(f)
            except (OSError, ValueError):
                return None
            return st if st.get("tries") and not st.get("in_flight") else None  # a try done, not one under way
        st = sb.wait_for(tried, 30, what="the publish job's first try")
        assert st["state"] in ("retrying", "failed") and st["error"], st
        # the successor claimed before the job's first try: its lease rode with it, the claim never asked the remote
        assert st["local_claim"] is True and st["may_be_there"] is False, st
        assert not cont.events(2, "claim_unconfirmed")
    report_metrics("P4-share", {"remote": remote, "p4_ms": p4, "version": sb.version})  # pairs: the note
