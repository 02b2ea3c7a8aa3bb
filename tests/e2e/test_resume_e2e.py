"""A resume you can trust, against the real Claude Code (issue 14).

1. A checkpoint waits (no tmux: AWAITING_MANUAL_CLEAR), claude is killed, the user commits
   by hand; a fresh claude + ``continue``: the bootstrap says ``drifted`` and names the
   commit and the file.
2. After the checkpoint the session works on (a burst of tool calls: a push, a curl with a
   token, a Write, a package install, an export of a token), then ``kill -9``; a fresh
   claude + ``continue``: the bootstrap lists exactly those calls, the ones reaching
   outside the work tree marked, no secret in the request.
3. A session dies mid-tool before any checkpoint: the next claude's first request
   carries a machine handoff (its prompt, todo, last reply, actions, how to resume it),
   exactly once — a third session gets nothing.

Run with ``CC_E2E_REPEAT=10`` for pass counts.
"""

import os
import signal
import sys
import time

import pytest

from cc_continuity.rehearse import ROTATE_AT, rotation_scenario, usage_at

from . import scenarios
from .harness import REPO_ROOT
from .common import Continuity, bootstrap_of, first_request, git, installed_sandbox, prompt, text_blocks

pytestmark = pytest.mark.e2e

SECRET_BEARER = "sk-live-9fQ2xLm4Zt8Rk1Vb7Nc3Hd5J"
SECRET_NPM = "npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34"


def no_tmux(sb):
    cfg = sb.run([sys.executable, "-c", "from cc_continuity import config; config.update_global({'tmux': False})"],
                 env={"PYTHONPATH": REPO_ROOT})
    assert cfg.returncode == 0, cfg.stderr


def checkpoint_then_kill(sb, cont, task, after=None):
    """Start claude, run ``task`` to a verified checkpoint (left waiting for /clear), optionally
    ``after()`` (more work in the same session), then SIGKILL claude."""
    sb.start_claude()
    first_pid = sb.claude_pid
    prompt(sb, task)
    cont.wait_event(1, "transition", to="AWAITING_MANUAL_CLEAR", timeout=60)
    sb.wait_idle()
    if after:
        after()
    os.kill(first_pid, signal.SIGKILL)
    sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
    return first_pid


def resume_request(sb, cont, n=2):
    sb.start_claude()
    cont.wait_event(n, "claim", timeout=30)
    since = sb.model.mark()
    prompt(sb, "continue")
    return sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "continue" in r.latest_text
                             and r.session_id == cont.record(n)["session_id"], timeout=30)


# -- 1. revalidation: a hand commit after the checkpoint ------------------------------------------

TASK_DRIFT = "Drift task: keep a work log"


def test_a_hand_commit_after_the_checkpoint_is_reported_drifted(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.with_default(rotation_scenario(p, task=TASK_DRIFT)))
    no_tmux(sb)
    cont = Continuity(sb)
    checkpoint_then_kill(sb, cont, TASK_DRIFT)
    with open(os.path.join(sb.project, "README.md"), "a") as f:
        f.write("edited by hand after the checkpoint\n")
    git(sb, "commit", "-qam", "docs: a hand commit after the checkpoint")

    req = resume_request(sb, cont)
    boot = bootstrap_of(req)
    assert boot is not None and boot.startswith("Continuing from cp-001"), (boot or "")[:300]
    assert "## Since the checkpoint: drifted — 1 commit since; 1 file differ" in boot, boot[:1500]
    assert "docs: a hand commit after the checkpoint" in boot
    assert "  - README.md (modified)" in boot
    assert "the predecessor's agent process: gone" in boot
    rv = cont.events(2, "revalidation")
    assert [r["verdict"] for r in rv] == ["drifted"] and rv[0]["changed"] == ["README.md"]
    assert cont.record(2)["revalidation"]["verdict"] == "drifted"


# -- 2. the actions after the checkpoint --------------------------------------------------------

TASK_ACT = "Action task: keep a work log"
BURST = "Burst task: ship the work log"


def burst_scenario(project):
    sc = rotation_scenario(project, task=TASK_ACT)
    hi = usage_at(ROTATE_AT)
    steps = [
        {"type": "tool_use", "name": "Bash", "input": {"command": "git push origin main", "description": "push"}},
        {"type": "tool_use", "name": "Bash",
         "input": {"command": "curl -s -m 2 -X POST -H 'Authorization: Bearer %s' http://127.0.0.1:9/deploy; true"
                            % SECRET_BEARER,
                   "description": "deploy"}},
        {"type": "tool_use", "name": "Write", "input": {"file_path": "%s/burst.txt" % project, "content": "burst\n"}},
        {"type": "tool_use", "name": "Bash",
         "input": {"command": "pip install --no-index --find-links /nonexistent cc-e2e-nothing-here",
                   "description": "install"}},
        {"type": "tool_use", "name": "Bash",
         "input": {"command": "export NPM_TOKEN=%s && echo configured" % SECRET_NPM, "description": "token"}},
    ]
    rule = {"name": "burst", "times": 1, "when": {"last_user_contains": BURST},
            "reply": [{"type": "text", "text": "Shipping."}, steps[0]], "usage": hi,
            "then": [{"reply": [s], "usage": hi} for s in steps[1:]] + [{"reply": "Burst done.", "usage": hi}]}
    sc["rules"].insert(0, rule)
    return scenarios.with_default(sc)


def test_actions_after_the_checkpoint_reach_the_successor_marked_and_redacted(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, burst_scenario)
    no_tmux(sb)
    cont = Continuity(sb)

    def burst():
        since = sb.model.mark()
        stops = len(cont.events(1, "stop"))
        prompt(sb, BURST)
        sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and r.rule == "then"
                          and "configured" in r.latest_text, timeout=60)
        sb.wait_for(lambda: len(cont.events(1, "stop")) > stops, 20, what="the burst turn's Stop")
        sb.wait_idle()

    checkpoint_then_kill(sb, cont, TASK_ACT, after=burst)
    req = resume_request(sb, cont)
    boot = bootstrap_of(req)
    assert boot is not None, "no bootstrap"
    assert "## Actions after the checkpoint" in boot, boot[:1500]
    at = boot.index("## Actions after the checkpoint")
    section = boot[at:].split("\n\n", 1)[0]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert section.startswith("## Actions after the checkpoint (5 tool calls; 3 reached outside the work tree"), section
    assert len(items) == 5, section
    assert items[0].startswith("- Bash `git push origin main` — failed, exit ") \
        and items[0].endswith("; OUTSIDE the work tree: git push"), items[0]
    assert items[1].startswith("- Bash `curl -s -m 2 -X POST -H") and items[1].endswith("OUTSIDE the work tree: network: "
                                                                                       "POST (curl)"), items[1]
    assert items[2] == "- Write `%s/burst.txt`" % sb.project, items[2]
    assert "— failed, exit " in items[3] and items[3].endswith("; OUTSIDE the work tree: pip install"), items[3]
    assert items[4] == "- Bash `export NPM_TOKEN=[REDACTED] && echo configured`", items[4]
    for r in sb.model.main_requests(cont.record(2)["session_id"]):
        assert not r.contains(SECRET_BEARER) and not r.contains(SECRET_NPM)
    for rec in cont.events(1, "tool"):
        assert SECRET_BEARER not in str(rec) and SECRET_NPM not in str(rec)


# -- 3. a crash before any checkpoint -----------------------------------------------------------

TASK_CRASH = "Crash-early task: add a verbose flag"
TODO = "print the verbose details"
LAST_REPLY = "Halfway: crash-1 written; crash-2 next."


def crash_scenario(project):
    lo = usage_at(20)
    rule = {"name": "crash", "times": 1, "when": {"last_user_contains": TASK_CRASH},
            "reply": [{"type": "text", "text": "Planning."},
                      {"type": "tool_use", "name": "TodoWrite", "input": {"todos": [
                          {"content": "parse the verbose flag", "status": "completed", "activeForm": "Parsing"},
                          {"content": TODO, "status": "in_progress", "activeForm": "Printing"}]}}],
            "usage": lo,
            "then": [{"reply": [{"type": "tool_use", "name": "Bash", "input": {
                         "command": "echo crash-one-done > crash-1.txt && echo crash-one-done",
                         "description": "step one"}}], "usage": lo},
                     {"reply": [{"type": "text", "text": LAST_REPLY},
                                {"type": "tool_use", "name": "Bash",
                                 "input": {"command": "echo crash-two-started && sleep 120 && echo done > crash-2.txt",
                                           "description": "a long step"}}], "usage": lo}]}
    return {"rules": [rule], "default": {"reply": "Noted; I will take that into account."},
            "usage_plan": {"per": "session", "cache_read_input_tokens": 20000}}


def crash_texts(req):
    return [t for _, t in text_blocks(req) if "died mid-work" in t]


def test_a_crash_before_any_checkpoint_hands_over_a_machine_handoff_once(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, crash_scenario)
    cont = Continuity(sb)
    sb.start_claude()
    first_pid = sb.claude_pid
    prompt(sb, TASK_CRASH)
    sb.model.wait_for(lambda r: r.kind == "main" and "crash-one-done" in r.latest_text, timeout=60)
    sb.model.wait_for(lambda r: r.kind == "main" and r.session_id == cont.record(1)["session_id"]
                      and r.rule == "then" and LAST_REPLY in str(r.reply), timeout=30)
    time.sleep(1.5)  # the long step is running: the session dies mid-tool
    os.kill(first_pid, signal.SIGKILL)
    sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
    sid1 = cont.record(1)["session_id"]
    assert not cont.events(1, "checkpoint")

    sb.start_claude()
    since = sb.model.mark()
    prompt(sb, "continue")
    req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "continue" in r.latest_text
                            and r.session_id != sid1, timeout=30)
    sid2 = req.session_id
    assert sid2 != sid1
    first = first_request(sb, sid2)
    got = crash_texts(first)
    assert len(got) == 1, [t[:200] for _, t in text_blocks(first)]
    text = got[0]
    assert "degraded" in text and "claude --resume %s" % sid1 in text
    assert TASK_CRASH in text
    assert "[in_progress] %s" % TODO in text and "parse the verbose flag" not in text
    assert LAST_REPLY in text
    assert "Bash `echo crash-one-done > crash-1.txt && echo crash-one-done`" in text
    assert "crash-1.txt" in text  # git state now: the untracked file it wrote
    assert cont.record(1)["state"] == "ENDED" and cont.record(1)["recovered_by"] == 2
    status = sb.cli("status")
    assert "claude --resume %s" % sid1 in status.stdout, status.stdout

    sb.exit_claude()
    sb.start_claude()
    since = sb.model.mark()
    prompt(sb, "hello again")
    req3 = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "hello again" in r.latest_text,
                             timeout=30)
    assert req3.session_id not in (sid1, sid2)
    assert not crash_texts(first_request(sb, req3.session_id))
    assert len(cont.events(2, "crash_recovery")) == 1


# -- 4. `claude --resume` of a conversation rotated away from (issue 21) ----------------------------

TASK_ROTATED = "Rotated resume task: keep a work log"


def test_resume_of_a_rotated_conversation_is_its_own_session_and_takes_nothing(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.with_default(rotation_scenario(p, task=TASK_ROTATED)))
    no_tmux(sb)
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_ROTATED)
    cont.wait_event(1, "transition", to="AWAITING_MANUAL_CLEAR", timeout=60)
    sb.wait_idle()
    sid1 = cont.record(1)["session_id"]
    prompt(sb, "/clear")
    cont.wait_event(2, "claim", timeout=30)
    sb.wait_idle()
    prompt(sb, "continue")
    sb.model.wait_for(lambda r: r.kind == "main" and "continue" in r.latest_text, timeout=30)
    sb.wait_idle()
    sb.exit_claude()
    # the user reopens the first conversation
    sb.start_claude(args=["--resume", sid1])
    sb.wait_for(lambda: len(cont.numbers()) == 3, 30, what="the resumed conversation's own record")
    since = sb.model.mark()
    prompt(sb, "hello again")
    req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "hello again" in r.latest_text,
                            timeout=30)
    assert req.session_id == sid1
    joined = " ".join(t for _, t in text_blocks(req))
    assert "was rotated away from" in joined and "cp-001" in joined, joined[-2000:]
    rec3 = cont.record(3)
    assert rec3["resumed_from"] == 1 and rec3["session_id"] == sid1
    assert cont.record(1)["state"] == "ROTATED" and cont.record(1)["successor"] == 2
    assert cont.record(2)["predecessor"] == 1 and cont.record(2).get("successor") is None
    sb.wait_idle()
    sb.exit_claude()
    # --continue opens the newest conversation: its own record again, nothing claimed, nothing re-sent
    sb.start_claude(args=["--continue"])
    since = sb.model.mark()
    prompt(sb, "and now?")
    req = sb.model.wait_for(lambda r: r.seq >= since and r.kind == "main" and "and now?" in r.latest_text,
                            timeout=30)
    assert len(cont.numbers()) == 3 and req.session_id == cont.record(3)["session_id"]
