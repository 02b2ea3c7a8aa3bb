"""Side effects are never repeated, against the real Claude Code (issue 24).

1. The model POSTs to a counting HTTP server on 127.0.0.1, claude is killed (kill -9) right
   after; a fresh claude, told to continue, is scripted to post again: PreToolUse holds it
   (denied: the chain is unattended), the model is told when and in which session it
   happened, and the server counted one request.
2. A successor re-pushing a commit the remote already has: it runs, nothing is held.
3. A publish (a PUT to a slow registry stand-in) interrupted by kill -9: the next session's
   repeat is asked about (interactive), with our reason in Claude Code's dialog.
4. A POST, then a rotation (the tmux rotator): the successor's repeat is held.

(effects_local_exempt is switched off: 127.0.0.1 stands in for a remote API.)
Run with ``CC_E2E_REPEAT=10`` for pass counts.
"""

import json
import os
import signal
import sys

import pytest

from cc_continuity.rehearse import CONTINUATION, rotation_scenario, usage_at
from helpers import benchscript

from . import scenarios

from .common import Continuity, git, installed_sandbox, prompt, squash
from .harness import REPO_ROOT

continuity = benchscript.load("continuity")  # its counting server

pytestmark = pytest.mark.e2e

TASK_POST = "Post task: announce the release"
AGAIN = "Continue: do the whole plan again"
HELD = "already had its effect"


def configure(sb, **values):
    cfg = sb.run([sys.executable, "-c", "import json, sys; from cc_continuity import config; "
                  "config.update_global(json.loads(sys.argv[1]))", json.dumps(values)], env={"PYTHONPATH": REPO_ROOT})
    assert cfg.returncode == 0, cfg.stderr


def one_call_scenario(command, answer_to=(TASK_POST, AGAIN)):
    lo = usage_at(20)
    rules = []
    for i, task in enumerate(answer_to):
        rules.append({"name": "call-%d" % i, "when": {"last_user_contains": task},
                      "reply": [{"type": "text", "text": "Doing it."},
                                {"type": "tool_use", "name": "Bash", "input": {"command": command,
                                                                               "description": "the plan's step"}}],
                      "usage": lo, "then": [{"reply": "Step handled.", "usage": lo}]})
    return {"rules": rules, "default": {"reply": "Noted."},
            "usage_plan": {"per": "session", "cache_read_input_tokens": 20000}}


def effects_lines(cont):
    path = os.path.join(cont.project_dir(), "effects.jsonl")
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def test_a_post_before_a_kill_is_held_in_the_next_session_and_the_server_counts_one(sandbox_factory):
    server = continuity.Counter()
    try:
        cmd = "curl -s -X POST -d 'release v1 is out' %s/notify" % server.url
        sb = installed_sandbox(sandbox_factory, lambda p: one_call_scenario(cmd))
        configure(sb, effects_local_exempt=False, unattended=True, tmux=False)
        cont = Continuity(sb)
        sb.start_claude()
        first_pid = sb.claude_pid
        prompt(sb, TASK_POST)
        sb.wait_for(lambda: [r["ph"] for r in effects_lines(cont)] == ["intent", "done"], 30,
                    what="the POST's intent and outcome")
        os.kill(first_pid, signal.SIGKILL)  # right after the POST
        sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
        assert sum(server.counts.values()) == 1

        sb.start_claude()
        since = sb.model.mark()
        prompt(sb, AGAIN)
        req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and HELD in r.latest_text, timeout=60)
        assert "repeat %s" % effects_lines(cont)[0]["k"][:8] in req.latest_text
        assert cont.record(1)["name"] in req.latest_text
        sb.wait_idle()
        assert sum(server.counts.values()) == 1, server.counts
        held = [line for line in cont.hooks_log().splitlines() if " PreToolUse " in line and "held (done, denied)" in line]
        assert len(held) == 1, cont.hooks_log().splitlines()[-10:]
    finally:
        server.close()


def test_a_successor_re_pushing_a_pushed_commit_runs_without_a_word(sandbox_factory):
    cmd = "git push -q origin main && echo pushed-ok"
    sb = installed_sandbox(sandbox_factory, lambda p: one_call_scenario(cmd))
    configure(sb, effects_local_exempt=False, unattended=True, tmux=False)
    remote = os.path.join(os.path.dirname(sb.project), "origin.git")
    assert sb.run(["git", "init", "-q", "--bare", remote]).returncode == 0
    git(sb, "remote", "add", "origin", remote)
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_POST)
    sb.model.wait_for(lambda r: r.kind == "main" and "pushed-ok" in r.latest_text, timeout=60)
    sb.wait_idle()
    sb.exit_claude()
    sb.start_claude()
    since = sb.model.mark()
    prompt(sb, AGAIN)
    req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "pushed-ok" in r.latest_text,
                            timeout=60)
    assert HELD not in req.latest_text
    assert effects_lines(cont) == []  # a push is harmless to repeat: nothing recorded, nothing held
    assert not [line for line in cont.hooks_log().splitlines() if " PreToolUse " in line and "held" in line]


def test_a_publish_interrupted_by_a_kill_is_asked_about_in_the_next_session(sandbox_factory):
    server = continuity.Counter(delay_s=30)  # the registry stand-in takes the upload, then is slow to answer
    try:
        cmd = "curl -s -m 60 -X PUT --data-binary @pkg-1.0.0.tgz %s/registry/pkg/1.0.0" % server.url
        sb = installed_sandbox(sandbox_factory, lambda p: one_call_scenario(cmd))
        with open(os.path.join(sb.project, "pkg-1.0.0.tgz"), "w") as f:
            f.write("package 1.0.0\n")
        configure(sb, effects_local_exempt=False, tmux=False)  # interactive: someone can answer
        cont = Continuity(sb)
        sb.start_claude()
        first_pid = sb.claude_pid
        prompt(sb, TASK_POST)
        sb.wait_for(lambda: sum(server.counts.values()) == 1, 30, what="the upload to reach the registry")
        os.kill(first_pid, signal.SIGKILL)  # mid-call: no PostToolUse, the outcome is unknown
        sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
        assert [r["ph"] for r in effects_lines(cont)] == ["intent"]

        sb.start_claude()
        prompt(sb, AGAIN)
        sb.wait_for(lambda: "held (uncertain, asked)" in cont.hooks_log(), 60, what="the repeat to be asked about")
        sb.wait_for(lambda: squash("may already have had its effect") in squash(sb.screen())
                    and "Do you want to proceed?" in sb.screen(), 15, what="Claude Code's question with our reason")
        assert sum(server.counts.values()) == 1, server.counts  # nothing uploaded again while it asks
        asked = [r for r in effects_lines(cont) if r["ph"] == "intent" and r.get("asked")]
        assert len(asked) == 1
    finally:
        server.close()


TASK_ROT = "Rotation task: keep a work log"


def test_a_post_before_a_rotation_is_held_in_the_successor(sandbox_factory):
    server = continuity.Counter()
    try:
        cmd = "curl -s -X POST -d 'release v1 is out' %s/notify" % server.url

        def scenario(project):
            calls = one_call_scenario(cmd)
            again = dict(calls["rules"][1], times=1)
            post = dict(calls["rules"][0], times=1)
            rot = rotation_scenario(project, task=TASK_ROT)
            rot["rules"] = [again, post] + rot["rules"]
            return scenarios.with_default(rot)

        sb = installed_sandbox(sandbox_factory, scenario)
        configure(sb, effects_local_exempt=False, unattended=True)
        cont = Continuity(sb)
        sb.start_claude()
        prompt(sb, TASK_POST)
        sb.wait_for(lambda: [r["ph"] for r in effects_lines(cont)] == ["intent", "done"], 30, what="the POST")
        sb.wait_idle()
        rotating = sb.model.mark()
        prompt(sb, TASK_ROT)
        cont.wait_event(1, "transition", to="ROTATED", timeout=90)
        sb.wait_for(lambda: cont.state(2) == "ACTIVE", 60, what="the successor's session")
        # The rotator types the continuation after the successor's SessionStart: typing ours before it
        # has reached the model would race it (send-keys is no attached client: no activity stamp).
        sb.model.wait_for(lambda r: r.seq >= rotating and r.kind == "main" and CONTINUATION in r.latest_text,
                          timeout=60)
        sb.wait_idle()
        since = sb.model.mark()
        prompt(sb, AGAIN)
        req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and HELD in r.latest_text, timeout=60)
        assert cont.record(1)["name"] in req.latest_text
        assert req.session_id == cont.record(2)["session_id"]
        sb.wait_idle()
        assert sum(server.counts.values()) == 1, server.counts
    finally:
        server.close()
