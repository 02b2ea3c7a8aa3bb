"""Rotation against the real Claude Code's timing: the shapes our first suite did not reach.

Seen on this machine with 2.1.328 and 2.1.332 before these fixes:
1. a crossing on the turn's *last* (text-only) reply was missed: the Stop hook
   read the transcript before that row was written;
2. text the user typed during the rotation was lost or mixed into ours;
3. the first tool of a response crossing the hard ceiling ran;
4. after ``kill -9`` of claude, the old rotator typed into the restarted one.

Each test drives one of those shapes against the real binary; run them with
``CC_E2E_REPEAT=10`` for the pass counts (timing bugs hide in single runs).
The user here is a real terminal attached to the tmux session
(``ClaudeSandbox.keyboard``): their keys reach Claude Code through tmux like a
person's, at a person's speed.
"""

import os
import signal
import sys
import time

import pytest

from cc_continuity.rotation import texts
from cc_continuity.rehearse import rotation_scenario
from cc_continuity.tmux import Pane

from . import scenarios
from .common import (SLUG, Continuity, assert_clean_successor, bootstrap_of, first_request, installed_sandbox,
                     prompt, report_metrics)
from .harness import REPO_ROOT

pytestmark = pytest.mark.e2e

USER_TEXT = "also add a changelog entry for the exporter"
CONT = texts.continuation_prompt("cp-001", "%s-002" % SLUG)


def overhead_ms(sb, cont, succ_sid):
    """P4: checkpoint verified (ledger) -> the successor's first model request."""
    return round((first_request(sb, succ_sid).time - cont.events(1, "checkpoint")[0]["ts"]) * 1000)


def typed_blocks(req):
    """The text blocks of the request's last user message that a person (or the rotator) typed:
    not Claude Code's system reminders, nor the /clear command echo."""
    msgs = [m for m in req.messages if m.get("role") == "user"]
    content = msgs[-1].get("content") if msgs else None
    blocks = [content] if isinstance(content, str) else [
        b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"]
    return [b.strip() for b in blocks
            if b.strip() and not b.lstrip().startswith((
                "<system-reminder>", "<local-command", "<command-", "Stop hook feedback"))]


def rotator_done(cont):
    steps = [r["step"] for r in cont.events(1, "rotator")]
    return steps if steps and steps[-1] in ("renamed", "failed") else None


# -- 1. the crossing arrives on the turn's last, text-only reply -----------------------------

TASK_FINAL = "Final-reply task: summarise the tree"


def test_a_crossing_on_the_final_text_reply_rotates_with_no_input(sandbox_factory, claude_bin_version):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.final_reply_crossing(p, TASK_FINAL))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_FINAL)  # the only key the test sends

    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=90)
    stop = cont.events(1, "stop")[0]  # the Stop at the end of the crossing turn
    assert stop["tokens"] is not None
    by = "stop" if stop["caught_up"] and stop["level"] == "rotate" else "late_stop"
    if by == "late_stop":  # the transcript was behind for all of the Stop hook's wait
        assert [r["caught_up"] for r in cont.events(1, "late_stop")] == [True]
    assert [t["to"] for t in cont.events(1, "transition")][:2] == ["ROTATION_PENDING", "HANDOFF_REQUESTED"]
    recs = {n: cont.record(n) for n in (1, 2)}
    assert recs[1]["state"] == "ROTATED" and recs[1]["successor"] == 2
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_FINAL)
    report_metrics("final-reply", {"version": claude_bin_version, "seen_by": by,
                                   "stop_waited_ms": stop["waited_ms"], "stop_source": stop["source"],
                                   "p4_ms": overhead_ms(sb, cont, done.session_id),
                                   "p5_tokens": cont.events(2, "bootstrap")[0]["chars"] // 4})


# -- 2. the user types while the rotation runs -------------------------------------------------

TASK_TYPING = "Typing task: keep a work log"


def _moment(cont, moment):
    if moment == "before the clear":  # the rotator is waiting for the turn to end
        cont.wait_event(1, "rotator_spawned", timeout=60)
    elif moment == "between clear and continuation":  # the successor has claimed; nothing typed yet
        cont.wait_event(2, "claim", timeout=60)
    else:  # "while our text goes in": the rotator is about to type the continuation
        cont.wait_event(1, "rotator", timeout=60, step="idle", phase="successor")


@pytest.mark.parametrize("moment", ["before the clear", "between clear and continuation", "while our text goes in"])
def test_what_the_user_types_during_a_rotation_reaches_one_session_verbatim(sandbox_factory, moment,
                                                                            claude_bin_version):
    sb = installed_sandbox(sandbox_factory,
                           lambda p: scenarios.with_default(rotation_scenario(p, task=TASK_TYPING)))
    cont = Continuity(sb)
    sb.start_claude()
    kb = sb.keyboard()
    prompt(sb, TASK_TYPING)
    _moment(cont, moment)
    kb.type(USER_TEXT, cps=12)  # a person, not a paste
    kb.press(b"\r")

    steps = sb.wait_for(lambda: rotator_done(cont), 90, what="the rotator to finish")
    assert steps[-1] == "renamed", steps
    sb.wait_for(lambda: any(USER_TEXT in r.latest_text for r in sb.model.main_requests()), 60,
                what="the user's prompt to reach the model")
    sb.wait_idle(60)
    prompts = {n: [e["text"] for e in cont.events(n, "prompt")] for n in cont.numbers()}
    submitted = [p for n in sorted(prompts) for p in prompts[n]]
    # Every submitted prompt is whole: the task, the user's text or our continuation - never a mix.
    assert set(submitted) <= {TASK_TYPING, USER_TEXT, CONT}, submitted
    assert submitted.count(USER_TEXT) == 1, submitted  # verbatim, exactly once
    assert submitted.count(CONT) <= 1, submitted
    assert cont.numbers() == [1, 2]  # one /clear, whole: one successor
    assert cont.record(1)["state"] == "ROTATED" and cont.record(1)["successor"] == 2
    succ_sid = cont.record(2)["session_id"]
    first = first_request(sb, succ_sid)
    boot = bootstrap_of(first)
    assert boot and boot.startswith("Continuing from cp-001 (%s-002)." % SLUG)
    went_to = 1 if USER_TEXT in prompts[1] else 2
    if went_to == 1:  # typed to the predecessor: the successor is told about it
        assert USER_TEXT in boot.split("## Prompts the user typed after the handoff was requested", 1)[1]
    else:  # the successor's own prompt: it got the handoff with it, first or right after ours
        assert prompts[2][0] in (USER_TEXT, CONT)
    for req in sb.model.main_requests():  # what the model got as typed prompts: each one whole
        for typed in typed_blocks(req):
            assert typed in (TASK_TYPING, USER_TEXT, CONT), typed
    report_metrics("typing", {"version": claude_bin_version, "moment": moment, "went_to": went_to,
                              "rotator": [s for s in steps if s in ("held", "taken_back", "draft_kept")]})


def test_a_draft_left_in_the_box_moves_to_the_successor_box(sandbox_factory):
    draft = "remember to rerun the slow tests"
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, task=TASK_TYPING))
    cfg = sb.run([sys.executable, "-c", "from cc_continuity import config; "
                                        "config.update_global({'rotator_draft_wait_s': 3})"],
                 env={"PYTHONPATH": REPO_ROOT})
    assert cfg.returncode == 0, cfg.stderr
    cont = Continuity(sb)
    sb.start_claude()
    kb = sb.keyboard()
    prompt(sb, TASK_TYPING)
    cont.wait_event(1, "rotator_spawned", timeout=60)
    kb.type(draft, cps=15)  # ... and the user walks away without pressing Enter

    steps = sb.wait_for(lambda: rotator_done(cont), 90, what="the rotator to finish")
    assert steps[-1] == "renamed", steps
    assert steps.index("held") < steps.index("draft_kept") < steps.index("clear_sent")
    assert [r["ok"] for r in cont.events(1, "rotator", step="draft_restored")] == [True]
    pane = Pane(sb.socket, sb.pane)
    sb.wait_for(lambda: Pane.input_text(pane.capture()) == draft, 20, what="the draft back in the box")
    submitted = [e["text"] for n in cont.numbers() for e in cont.events(n, "prompt")]
    assert all(draft not in p for p in submitted), submitted  # never sent on the user's behalf
    succ_sid = cont.record(2)["session_id"]
    sb.model.wait_for(lambda r: r.kind == "main" and r.session_id == succ_sid, timeout=30)
    boot = bootstrap_of(first_request(sb, succ_sid))
    assert draft in boot.split("## Typed in the input box during the rotation, not sent", 1)[1]


# -- 3. every tool of the crossing response is denied -------------------------------------------

TASK_BURST = "Burst task: do everything at once"


def test_every_tool_of_a_response_that_crosses_the_hard_ceiling_is_denied(sandbox_factory, claude_bin_version):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.crossing_burst(p, TASK_BURST, tools=3))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_BURST)

    answer = sb.model.wait_for(lambda r: r.rule == "hard-handoff", timeout=60)
    blocks = [b for m in answer.messages if isinstance(m.get("content"), list) for b in m["content"]]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    assert len(results) == 3, blocks
    why = [line for line in cont.hooks_log().splitlines() if "PreToolUse" in line]
    print("\n".join(why))
    for r in results:
        assert r.get("is_error") and "past the hard ceiling of 72%" in str(r), (results, why)
    for i in (1, 2, 3):
        assert not os.path.exists(os.path.join(sb.project, "burst-%d.txt" % i)), "tool %d ran" % i
    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=60)
    assert cont.record(1)["state"] == "ROTATED"
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_BURST)
    waits = [line for line in cont.hooks_log().splitlines() if "PreToolUse" in line]
    report_metrics("burst", {"version": claude_bin_version, "pre_tool_use": [w.split()[3] for w in waits],
                             "p4_ms": overhead_ms(sb, cont, done.session_id)})


# -- 4. kill -9 while the rotator waits; a restart in the same tmux session -----------------------

TASK_KILL = "Restart task: keep a work log"


def test_a_restarted_claude_gets_the_checkpoint_once_and_the_old_rotator_types_nothing(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.with_default(rotation_scenario(p, task=TASK_KILL)))
    cont = Continuity(sb)
    sb.start_claude()
    first_pid = sb.claude_pid
    prompt(sb, TASK_KILL)

    spawned = cont.wait_event(1, "rotator_spawned", timeout=60)  # the rotator is alive and waiting
    os.kill(first_pid, signal.SIGKILL)
    sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
    sb.start_claude()  # at once, in the same tmux session and window
    assert sb.claude_pid != first_pid
    claim = cont.wait_event(2, "claim", timeout=30)
    assert claim["checkpoint"] == "cp-001"
    prompt(sb, "continue")
    req = sb.model.wait_for(lambda r: r.kind == "main" and "continue" in r.latest_text
                            and r.session_id == cont.record(2)["session_id"], timeout=30)
    assert bootstrap_of(req), "the restarted session's first request has no bootstrap"
    failed = cont.wait_event(1, "rotator", timeout=60, step="failed")
    assert "claude %d" % first_pid in failed["reason"], failed
    time.sleep(2.0)  # a stale rotator would type /clear into the new claude now
    assert cont.numbers() == [1, 2], "something cleared the restarted claude"
    assert len(cont.events(2, "bootstrap")) == 1
    steps = [r["step"] for r in cont.events(1, "rotator")]
    assert "clear_sent" not in steps and "continuation_sent" not in steps, steps
    assert cont.record(2)["state"] == "ACTIVE" and cont.record(1)["successor"] == 2
    assert spawned["pid"] not in [int(p) for p in os.listdir("/proc") if p.isdigit()]


# -- 5. a subagent's view is in front when the rotator wants the box ------------------------------

TASK_SUB = "Subagent task: start a helper"
DOWN, ENTER = b"\x1b[B", b"\r"


def test_the_rotation_brings_the_main_view_forward_from_a_subagents_view(sandbox_factory, claude_bin_version):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.rotation_with_a_running_subagent(p, TASK_SUB))
    cont = Continuity(sb)
    sb.start_claude()
    kb = sb.keyboard()
    prompt(sb, TASK_SUB)
    sb.model.wait_for(lambda r: scenarios.SUB_PROMPT in r.latest_text, timeout=60)  # the subagent runs
    cont.wait_event(1, "transition", timeout=60, to="HANDOFF_REQUESTED")
    pane = Pane(sb.socket, sb.pane)
    sb.wait_for(lambda: "◯ general-purpose" in pane.capture(), 30, what="the agent list")
    # The user opens the subagent's view (Down to the list, Down to the agent, Enter) before the /clear.
    cont.wait_event(1, "rotator_spawned", timeout=60)
    for key in (DOWN, DOWN, ENTER):
        kb.press(key)
        time.sleep(0.25)

    steps = sb.wait_for(lambda: rotator_done(cont), 120, what="the rotator to finish")
    assert steps[-1] == "renamed", steps
    views = [(r["action"], r.get("keys"), r.get("listed")) for r in cont.events(1, "rotator", step="subagent_view")]
    assert views and views[0][0] == "a subagent's view is in front", views  # the shape this test is about
    prompts2 = [e["text"] for e in cont.events(2, "prompt")]
    assert prompts2[:1] == [CONT], prompts2  # the continuation reached the main conversation ...
    for req in sb.model.requests():  # ... and nothing of ours went to the subagent
        if scenarios.SUB_PROMPT in req.text:
            assert CONT not in req.latest_text and "/clear" not in req.latest_text
    assert cont.record(1)["state"] == "ROTATED" and cont.record(1)["successor"] == 2
    report_metrics("subagent-view", {"version": claude_bin_version, "rotator": views})
