"""Bounded actions: the planner driven with made-up times, the executor against real panes and processes."""

import dataclasses
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time

import psutil
import pytest

from cc_continuity.watch import Settings
from cc_continuity.watch.executor import Executor, digest
from cc_continuity.watch.planner import (ESCALATE, KILL, NUDGE, POWER_CYCLE, PUSH_DEAD, PUSH_FAILED, PUSH_NOTICE,
                                         PUSH_SERVER, ROTATION_STUCK, TERMINATE, Action, Brain, escalate_text,
                                         failure_text, nudge_text, outage_text, with_digest)
from cc_continuity.watch.liveness import DEAD, EXIT_HUNG, FAILED, LIMITED, STALLED, WAITING, SessionObs
from cc_continuity.watch.probe import DOWN, UP, ProbeResult
from helpers import FAKE_PROMPT, FakeRun
from test_liveness import reap, spawn_claude, wait_for

T0 = 1_764_500_000.0          # 2025-11-30 10:53:20 UTC
HAS_TMUX = __import__("shutil").which("tmux") is not None


def S(**kw):
    base = dict(health_url="http://127.0.0.1:9/health", grace=60, stall=600, exit_hang=30, max_actions=3,
                backoff=300, fail_threshold=3, quiet=0)
    base.update(kw)
    return Settings(**base)


def ok(t):
    return ProbeResult(at=t, ok=True, ms=3, health="HTTP 200")


def bad(t):
    return ProbeResult(at=t, ok=False, ms=3, health="refused")


def sess(**kw):
    base = dict(key="proj-abc/003", name="proj-003", slug="proj", number=3, state="ACTIVE", pid=4242, alive=True,
                registered_at=T0 - 1000, mid_turn=False, turn_started=None, last_progress=T0 - 1000,
                pane=("/tmp/sock", "%1"))
    base.update(kw)
    return SessionObs(**base)


def kinds(actions):
    return [a.kind for a in actions]


def run_all(brain, actions, now, outcome="done"):
    for a in actions:
        brain.record(a, outcome, now, "test")
    return actions


# -- wording ----------------------------------------------------------------------


def test_the_nudge_says_why_the_turn_stopped():
    assert outage_text(T0, T0 + 465) == "down from 2025-11-30 10:53:20 to 11:01:05 UTC (7m45s)"
    assert outage_text(T0 + 46000, T0 + 50000) == \
        "down from 2025-11-30 23:40:00 to 2025-12-01 00:46:40 UTC (1h06m)"
    text = nudge_text(T0, T0 + 465)
    assert text == ("[cc-continuity watchdog] Your last turn stopped because the model server was down from "
                    "2025-11-30 10:53:20 to 11:01:05 UTC (7m45s). It is back up now, so please continue where "
                    "you left off.")
    assert "no progress for 10m05s" in escalate_text(605)
    assert with_digest("x.", "engine died") == "x. Server log: engine died"
    assert with_digest("x.", None) == "x."


# -- the planner: outages and nudges ------------------------------------------------------


def outage(brain, s, start=T0 + 10, end=T0 + 100):
    """Server up, three failures from ``start`` (DOWN), back at ``end``; returns all actions."""
    out = []
    out += brain.cycle(T0, ok(T0), [s])
    for i in range(3):
        out += brain.cycle(start + 10 * i, bad(start + 10 * i), [s])
    out += brain.cycle(end, ok(end), [s])
    return out


def test_a_turn_frozen_by_an_outage_is_nudged_once_the_server_is_back_for_the_grace():
    b = Brain(S())
    s = sess(mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 8)
    pushed = outage(b, s)
    assert [(a.kind, a.event) for a in pushed] == [(PUSH_SERVER, "server-degraded"), (PUSH_SERVER, "server-down"),
                                                  (PUSH_SERVER, "server-up")]
    assert "after 3 failed probes: health refused" in pushed[1].text
    assert "down from 2025-11-30 10:53:30 to 10:55:00 UTC (1m30s)" in pushed[2].text
    assert b.cycle(T0 + 159, ok(T0 + 159), [s]) == []                       # grace not over
    acts = b.cycle(T0 + 160, ok(T0 + 160), [s])
    assert kinds(acts) == [NUDGE]
    a = acts[0]
    assert a.text == nudge_text(T0 + 10, T0 + 100) and a.pid == 4242 and a.pane == ("/tmp/sock", "%1")
    assert b.sessions[s.key]["class"] == STALLED


def test_no_nudge_when_the_turn_carried_on_by_itself_or_started_after_the_outage():
    b = Brain(S())
    went_on = sess(key="p/1", mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 101)
    later = sess(key="p/2", mid_turn=True, turn_started=T0 + 120, last_progress=T0 + 120)
    idle = sess(key="p/3", mid_turn=False, last_progress=T0 + 5)
    gone = sess(key="p/4", alive=False, mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 5)
    tool = sess(key="p/5", mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 5, tool_running=True)
    everyone = [went_on, later, idle, gone, tool]
    for s in everyone:
        outage(b, s)
    acts = b.cycle(T0 + 200, ok(T0 + 200), everyone)
    assert NUDGE not in kinds(acts)
    assert kinds(acts) == [PUSH_DEAD] and acts[0].session == "p/4"


def test_one_outage_gets_one_nudge_and_one_escalation_however_long_the_turn_stays_frozen():
    b = Brain(S(max_actions=3, backoff=300, stall=600))
    s = sess(mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 8)
    outage(b, s)
    when = []
    t = T0 + 160
    while t < T0 + 2 * 86400:                           # two days of cycles every 15 s, never resolved
        acts = b.cycle(t, ok(t), [s])
        if acts:
            assert kinds(acts) in ([NUDGE], [ESCALATE])
            when.append((acts[0].kind, t - (T0 + 160)))
            run_all(b, acts, t)
        t += 15
    # The nudge for the outage, then (still frozen, server up for the stall time) one escalation.
    assert when == [(NUDGE, 0), (ESCALATE, 540)]
    status = b.status(t)["sessions"][0]
    assert status["counts"] == {NUDGE: 1, ESCALATE: 1}
    assert b.sessions[s.key]["handled"] == {NUDGE: ["outage:%.3f" % (T0 + 10)], ESCALATE: ["stall:%.3f" % (T0 + 5)]}


def test_across_outages_nudges_stop_at_the_cap_with_a_doubling_backoff():
    """Each outage freezes a fresh turn: one nudge each, 300 s then 600 s apart at least, then the cap."""
    b = Brain(S(max_actions=3, backoff=300, stall=10 ** 6, grace=60))
    nudged = []
    t = T0
    b.cycle(t, ok(t), [])
    for _ in range(8):                                   # an outage every 200 s
        s = sess(mid_turn=True, turn_started=t + 1, last_progress=t + 2)
        for i in range(3):
            b.cycle(t + 10 + i, bad(t + 10 + i), [s])
        b.cycle(t + 50, ok(t + 50), [s])
        for dt in range(50, 200, 15):
            acts = b.cycle(t + dt, ok(t + dt), [s])
            nudged += [a.episode for a in acts if a.kind == NUDGE]
            run_all(b, acts, t + dt)
        t += 200
    starts = [float(e.split(":")[1]) for e in nudged]
    assert len(starts) == 3 and len(set(nudged)) == 3     # the cap, each for its own outage
    assert starts[1] - starts[0] >= 300 and starts[2] - starts[1] >= 600


def test_a_deferred_nudge_is_not_counted_and_logged_once():
    b = Brain(S(max_actions=1))
    s = sess(mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 8)
    outage(b, s)
    news = []
    for i in range(5):
        t = T0 + 160 + i
        acts = b.cycle(t, ok(t), [s])
        assert kinds(acts) == [NUDGE]
        news.append(b.record(acts[0], "deferred", t, "prompt box busy"))
    assert news == [True, False, False, False, False]
    assert b.record(acts[0], "deferred", t, "text typed in the prompt box") is True
    acts = b.cycle(T0 + 170, ok(T0 + 170), [s])
    run_all(b, acts, T0 + 170)
    assert NUDGE not in kinds(b.cycle(T0 + 9999, ok(T0 + 9999), [s]))   # cap 1 reached only by the real one


def test_a_mangled_state_file_does_not_break_planning():
    doc = {"server": {"state": "UP", "since": "yesterday", "outages": [[1, 2], "x", [None, 3]]},
           "sessions": {"proj-abc/003": {"gates": {"nudge": ["3", None], "kill": [1, "soon"], "escalate": [2, T0]},
                                         "seen": "never", "terminated_at": [1], "last_action": 7}, "bad": 5},
           "power_cycles": ["x", T0]}
    b = Brain(S(), doc)
    assert b.server.state == "UNKNOWN" and b.server.outages == [[1, 2]] and b.power == [T0]
    assert b.sessions["proj-abc/003"]["gates"] == {"escalate": [2, T0]}
    s = sess(mid_turn=True, turn_started=T0 - 5000, last_progress=T0 - 5000)
    b.cycle(T0 + 10, ok(T0 + 10), [s])
    assert b.status(T0 + 10)["sessions"][0]["counts"] == {"escalate": 2}


def test_counters_and_handled_episodes_survive_a_restart():
    b = Brain(S(max_actions=2))
    s = sess(mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 8)
    outage(b, s)
    assert kinds(run_all(b, b.cycle(T0 + 160, ok(T0 + 160), [s]), T0 + 160)) == [NUDGE]
    again = Brain(S(max_actions=2), json.loads(json.dumps(b.to_json())))
    assert again.server.state == UP and again.server.last_outage() == [T0 + 10, T0 + 100]
    assert again.sessions[s.key]["gates"][NUDGE][0] == 1
    assert NUDGE not in kinds(again.cycle(T0 + 5000, ok(T0 + 5000), [s]))   # that outage had its nudge
    b.sessions[s.key]["gates"][NUDGE] = [2, T0 + 200]
    again = Brain(S(max_actions=2), json.loads(json.dumps(b.to_json())))
    assert again.next_allowed(s.key, NUDGE, T0 + 500) is None                  # the cap came back too


# -- escalation -----------------------------------------------------------------------------


def test_a_turn_frozen_with_the_server_up_is_escalated_after_the_stall_time():
    b = Brain(S(stall=600))
    b.cycle(T0, ok(T0), [])
    s = sess(mid_turn=True, turn_started=T0 + 100, last_progress=T0 + 100)
    assert b.cycle(T0 + 699, ok(T0 + 699), [s]) == []
    acts = b.cycle(T0 + 700, ok(T0 + 700), [s])
    assert kinds(acts) == [ESCALATE]
    assert acts[0].text == escalate_text(600) and "no progress for 10m00s" in acts[0].why


def test_no_escalation_while_the_server_is_down_or_just_back():
    b = Brain(S(stall=600, grace=60))
    s = sess(mid_turn=True, turn_started=T0 - 5000, last_progress=T0 - 5000)   # quiet long before
    b.cycle(T0, bad(T0), [s])
    b.cycle(T0 + 1, bad(T0 + 1), [s])
    acts = b.cycle(T0 + 2, bad(T0 + 2), [s])
    assert b.server.state == DOWN and ESCALATE not in kinds(acts)
    for t in range(3, 1000, 50):
        assert ESCALATE not in kinds(b.cycle(T0 + t, bad(T0 + t), [s]))
    back = T0 + 1000
    acts = b.cycle(back, ok(back), [s])
    assert ESCALATE not in kinds(acts)
    # Frozen long before the outage: the outage is not the reason, so no outage nudge; it is
    # escalated once the server has been up for the stall time.
    assert b.cycle(back + 60, ok(back + 60), [s]) == []
    assert b.cycle(back + 599, ok(back + 599), [s]) == []
    assert kinds(b.cycle(back + 600, ok(back + 600), [s])) == [ESCALATE]
    # A turn that was moving when the server went down: nudged (once) after the grace, escalated
    # after the stall time with the server up if the nudge did not help.
    b = Brain(S(stall=600, grace=60))
    s = sess(mid_turn=True, turn_started=T0 - 100, last_progress=T0 - 10)
    for t in (0, 1, 2):
        b.cycle(T0 + t, bad(T0 + t), [s])
    b.cycle(back, ok(back), [s])
    assert kinds(run_all(b, b.cycle(back + 60, ok(back + 60), [s]), back + 60)) == [NUDGE]
    assert b.cycle(back + 360, ok(back + 360), [s]) == []        # one nudge per outage
    assert b.cycle(back + 599, ok(back + 599), [s]) == []
    assert kinds(b.cycle(back + 600, ok(back + 600), [s])) == [ESCALATE]
    # A nudge that found the pane busy (deferred) does not hold the escalation back.
    b = Brain(S(stall=600, grace=60))
    for t in (0, 1, 2):
        b.cycle(T0 + t, bad(T0 + t), [s])
    b.cycle(back, ok(back), [s])
    for t in range(60, 600, 15):
        acts = b.cycle(back + t, ok(back + t), [s])
        assert kinds(acts) == [NUDGE]
        b.record(acts[0], "deferred", back + t, "prompt box busy")
    assert kinds(b.cycle(back + 600, ok(back + 600), [s])) == [ESCALATE]


def test_without_a_probe_a_frozen_turn_is_still_escalated():
    b = Brain(S(health_url=None, stall=600))
    s = sess(mid_turn=True, turn_started=T0, last_progress=T0)
    assert b.cycle(T0 + 599, None, [s]) == []
    assert kinds(b.cycle(T0 + 600, None, [s])) == [ESCALATE]


# -- processes hung on exit, dead sessions ------------------------------------------------------


def test_hung_on_exit_gets_sigterm_then_sigkill_then_stops():
    b = Brain(S(exit_hang=30, backoff=300, max_actions=3))
    s = sess(state="ENDED", ended_at=T0, ended_reason="prompt_input_exit")
    assert b.cycle(T0 + 29, None, [s]) == []
    seen = []
    for t in range(30, 20000, 5):
        acts = b.cycle(T0 + t, None, [s])
        seen += [(a.kind, t) for a in acts]
        run_all(b, acts, T0 + t)
    assert seen[0] == (TERMINATE, 30)
    assert seen[1] == (KILL, 60)                          # exit_hang after SIGTERM
    assert [k for k, _ in seen] == [TERMINATE, KILL, KILL, KILL]
    assert [t for _, t in seen[2:]] == [360, 960]          # then backoff 300, 600: capped at 3
    assert b.sessions[s.key]["class"] == EXIT_HUNG


def test_a_dead_session_is_pushed_once():
    b = Brain(S())
    s = sess(alive=False, mid_turn=True, turn_started=T0)
    total = []
    for t in range(0, 5000, 15):
        acts = b.cycle(T0 + t, None, [s])
        total += acts
        run_all(b, acts, T0 + t)
    assert kinds(total) == [PUSH_DEAD]
    assert "Claude process 4242 gone mid-turn (last prompt 2025-11-30 10:53:20 UTC)" == total[0].why
    assert b.sessions[s.key]["class"] == DEAD


def test_max_actions_zero_disables_every_session_action():
    b = Brain(S(max_actions=0, stall=10))
    group = [sess(key="a", alive=False, mid_turn=True), sess(key="b", mid_turn=True, turn_started=T0, last_progress=T0),
             sess(key="c", ended_at=T0, ended_reason="other", state="ENDED")]
    for t in range(0, 3000, 15):
        assert [a for a in b.cycle(T0 + t, ok(T0 + t), group) if a.kind != PUSH_SERVER] == []


# -- the server: pushes and the power cycle --------------------------------------------------------


def test_a_flapping_server_does_not_flood_pushes():
    b = Brain(S(backoff=300))
    pushes = []
    for i in range(2000):                 # every other probe fails, every 10 s: 2000 state changes
        t = T0 + 10 * i
        pushes += [a for a in b.cycle(t, ok(t) if i % 2 == 0 else bad(t), []) if a.kind == PUSH_SERVER]
    degraded = [a for a in pushes if a.event == "server-degraded"]
    assert 60 <= len(degraded) <= 20000 // 300 + 1
    assert len([a for a in pushes if a.event == "server-up"]) == len(degraded)    # one all-clear for each
    assert not [a for a in pushes if a.event == "server-down"]      # never 3 failures in a row


def test_power_cycle_waits_then_respects_cooldown_and_daily_cap():
    b = Brain(S(power_cycle_command="true", power_cycle_after=900, power_cycle_cooldown=3600,
                power_cycle_daily_cap=2))
    runs = []
    for i in range(3 * 1440):             # three days DOWN, a probe a minute
        t = T0 + 60 * i
        for a in b.cycle(t, bad(t), []):
            if a.kind == POWER_CYCLE:
                runs.append(t - T0)
                b.record(a, "done", t)
    assert runs[0] == 900
    assert all(b - a >= 3600 for a, b in zip(runs, runs[1:]))
    for start in range(0, 3 * 86400, 600):
        assert len([r for r in runs if start <= r < start + 86400]) <= 2
    assert len(runs) == 6


def test_no_power_cycle_without_a_command_or_while_up():
    b = Brain(S(power_cycle_after=0.01))
    for i in range(100):
        assert POWER_CYCLE not in kinds(b.cycle(T0 + i, bad(T0 + i), []))
    b = Brain(S(power_cycle_command="true", power_cycle_after=0.01))
    for i in range(100):
        assert POWER_CYCLE not in kinds(b.cycle(T0 + i, ok(T0 + i), []))


def test_random_histories_never_exceed_any_cap():
    rng = random.Random(20251130)
    for _round in range(4):
        s = S(max_actions=rng.randint(1, 4), backoff=rng.choice([0.5, 30, 300]), stall=rng.choice([20, 600]),
              exit_hang=rng.choice([1, 30]), grace=rng.choice([0, 60]), fail_threshold=rng.randint(1, 3),
              rotation_stuck=rng.choice([50, 900]),
              power_cycle_command="true", power_cycle_after=100, power_cycle_cooldown=500, power_cycle_daily_cap=2)
        b = Brain(s)
        pids = {k: 1000 + i for i, k in enumerate("abcdef")}
        counts = {}
        last_at = {}
        episodes_done = set()
        last_fail, last_notice = {}, {}
        t = T0
        for _ in range(3000):
            t += rng.choice([1, 5, 15, 60])
            group = []
            for k in "abcdef":
                progress = t - rng.choice([0, 5, 30, 700, 5000])
                if rng.random() < 0.05:
                    last_notice[k] = t
                fail = rng.random() < 0.3
                if fail:   # a session's latest failure only moves forward (it is the ledger's latest)
                    last_fail[k] = max(last_fail.get(k, 0), progress)
                group.append(sess(key=k, name=k, pid=pids[k], alive=rng.random() > 0.2,
                                  mid_turn=rng.random() > 0.3 and not fail, turn_started=progress - 1,
                                  last_progress=progress,
                                  ended_at=(t - rng.choice([0, 40])) if rng.random() < 0.2 else None,
                                  ended_reason=rng.choice(["clear", "logout", "other"]),
                                  failed_at=last_fail[k] if fail else None,
                                  failed_error=rng.choice(["server_error", "rate_limit", "unknown"]) if fail else None,
                                  state=rng.choice(["ACTIVE", "ACTIVE", "ROTATING", "AWAITING_MANUAL_CLEAR"]),
                                  state_since=t - rng.choice([0, 100, 2000]), sdir="/x",
                                  notice_at=last_notice.setdefault(k, t) if rng.random() < 0.5 else None,
                                  notice="quota_auto_resume_fired"))
            probe = ok(t) if rng.random() > 0.3 else bad(t)
            for a in b.cycle(t, probe, group):
                outcome = rng.choice(["done", "done", "failed", "gone", "deferred", "idle"])
                b.record(a, outcome, t)
                if outcome in ("done", "idle", "gone") and a.episode and a.episode.startswith(("fail:", "notice:")):
                    assert (a.session, a.kind, a.episode) not in episodes_done, a
                    episodes_done.add((a.session, a.kind, a.episode))
                if outcome == "deferred" or a.session is None or a.kind in (PUSH_FAILED, PUSH_NOTICE):
                    continue
                key = (a.session, a.kind)
                counts[key] = counts.get(key, 0) + 1
                if key in last_at:
                    assert t - last_at[key] >= s.backoff * 2 ** (counts[key] - 2) - 1e-6
                last_at[key] = t
        for (session_key, kind), n in counts.items():
            assert n <= (min(1, s.max_actions) if kind == PUSH_DEAD else s.max_actions), (kind, n)
        assert len([p for p in b.power if t - p < 86400]) <= 2


# -- the executor, for real ------------------------------------------------------------------------


def test_every_push_maps_to_an_event_the_notifier_knows():
    from cc_continuity import notify
    from cc_continuity.watch.executor import PUSH_EVENTS, push_name

    for event in PUSH_EVENTS:
        assert push_name(event, notify.EVENTS) in notify.EVENTS, event
    assert push_name("session-escalated", {"blocked": 1}) == "blocked"
    assert push_name("session-escalated", {"session-escalated": 1, "blocked": 1}) == "session-escalated"
    assert push_name("nope", {"blocked": 1}) is None


def test_digest_is_a_short_redacted_tail(tmp_path):
    log = tmp_path / "vllm.log"
    lines = ["INFO step %d ok" % i for i in range(40)]
    lines[-3] = "ERROR engine core died; api_key=sk-ant-" + "a1B2c3D4" * 6
    lines[-2] = "\x1b[31mCUDA out of memory\x1b[0m\ttried to allocate"
    log.write_text("\n".join(lines) + "\n")
    d = digest(S(digest_file=str(log)))
    assert "\n" not in d and len(d) <= 300
    assert "INFO step 39 ok" in d and "INFO step 31 ok" not in d            # the last 8 lines only
    assert "sk-ant-" not in d and "[REDACTED:" in d
    assert "| CUDA out of memory tried to allocate |" in d and "\x1b" not in d and "[31m" not in d
    assert digest(S(digest_file=str(tmp_path / "missing.log"))).startswith("(cannot read")
    assert digest(S()) is None


def test_digest_command_output_and_timeout():
    token = "ghp_" + "Z9y8X7w6V5" * 4
    d = digest(S(digest_command="echo 'GPU 0: 100%% util'; echo token=%s >&2; echo last" % token))
    assert d.startswith("GPU 0: 100% util") and token not in d and d.endswith("last")
    t0 = time.monotonic()
    d = digest(S(digest_command="echo started; sleep 30", probe_timeout=0.3))
    assert time.monotonic() - t0 < 3
    assert d == "started | (digest command timed out)"


# real tmux panes with a stand-in claude (the fake prompt box, run under the name ``claude``)

# The fake prompt, run as a process named ``claude``.  Like a terminal UI (ink), it takes an ESC
# that arrives on its own as the Escape key (recorded as an "escape" event) rather than as the
# start of an escape sequence that would swallow whatever is typed next.  What Escape does to a
# busy prompt is Claude Code's, observed on 2.1.328 and 2.1.332 (``$FAKE_ESCAPE``):
# ``restore:<text>`` ends the turn and puts its prompt back in the box (nothing had streamed yet),
# ``interrupt`` ends it with an empty box ("Interrupted · What should Claude do instead?"),
# ``ignore`` (or unset) changes nothing.
CLAUDE_STAND_IN = """#!%(python)s
import os
import sys
sys.path.insert(0, %(helpers)r)
import fake_prompt

_feed = fake_prompt.FakePrompt.feed
MODE = os.environ.get("FAKE_ESCAPE", "ignore")


def feed(self, data):
    if data == b"\\x1b":
        if self.opts.raw:
            with open(self.opts.raw, "ab") as f:
                f.write(data)
        self.record(ev="escape", busy=self.busy())
        if self.busy() and MODE != "ignore":
            self.busy_until = 0
            if MODE.startswith("restore:"):
                self.buffer = MODE[len("restore:"):]
                self.cursor = len(self.buffer)
        return
    _feed(self, data)


fake_prompt.FakePrompt.feed = feed
sys.exit(fake_prompt.main())
"""


def start_claude_pane(server, workdir, *fake_args, session="work", escape=None):
    """The fake prompt as a process named ``claude`` in a new pane: (FakeRun, pid).  ``escape``: what
    Escape does to it while busy (``restore:<prompt>``, ``interrupt``; default nothing)."""
    os.makedirs(workdir, exist_ok=True)
    script = os.path.join(workdir, "claude")
    with open(script, "w") as f:
        f.write(CLAUDE_STAND_IN % {"python": sys.executable, "helpers": os.path.dirname(FAKE_PROMPT)})
    os.chmod(script, 0o755)
    files = FakeRun.files(workdir)
    cmd = shlex.join(([] if escape is None else ["env", "FAKE_ESCAPE=" + escape])
                     + [script, "--out", files["out"], "--raw", files["raw"], *fake_args])
    pane_id = server.tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", session, "-P", "-F", "#{pane_id}",
                          "%s 2>%s" % (cmd, shlex.quote(files["err"]))).strip()
    run = FakeRun(server, pane_id, workdir)
    screen = wait_for(lambda: (lambda s: s if "❯" in s and "fake-prompt pid" in s else None)(run.pane.capture()),
                      timeout=10)
    assert screen, run.stderr()
    pid = int(re.search(r"fake-prompt pid (\d+)", screen).group(1))
    assert psutil.Process(pid).name() == "claude"
    return run, pid


class Pushes(list):
    def __call__(self, event, text="", slug=None, session=None):
        self.append((event, text, slug, session))
        return True


def nudge_action(run, pid, server, kind=NUDGE, text=None):
    return Action(kind, why="test reason", session="proj-abc/003", name="proj-003", slug="proj", number=3,
                  pid=pid, registered_at=time.time(), pane=(server.socket, run.pane_id),
                  text=text or nudge_text(T0, T0 + 465))


needs_tmux = pytest.mark.skipif(not HAS_TMUX, reason="needs tmux")


def settled(*runs):
    """Wait until tmux's activity stamp of each pane is a second old (its session was just made)."""
    for run in runs:
        stamp = run.pane.activity()
        time.sleep(max(0.0, stamp + 1.05 - time.time()))


@needs_tmux
def test_nudge_types_literally_only_into_an_idle_empty_box(server, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("engine restarted; run $(rm -rf ~) `id` C-c Enter; password=hunter2hunter2\n")
    pushes = Pushes()
    ex = Executor(S(digest_file=str(log), interval=0.05), push_fn=pushes)
    run, pid = start_claude_pane(server, str(tmp_path / "busy"), "--busy-start", "30", session="busy")
    assert ex.run(nudge_action(run, pid, server)) == ("deferred", "prompt box busy")
    run2, pid2 = start_claude_pane(server, str(tmp_path / "typing"), "--initial", "my half typed", session="typing")
    assert ex.run(nudge_action(run2, pid2, server)) == ("deferred", "text typed in the prompt box")
    time.sleep(0.3)
    assert run.submitted() == [] and run2.submitted() == []
    assert "my half typed" in run2.pane.capture()                           # the user's text is untouched

    run3, pid3 = start_claude_pane(server, str(tmp_path / "idle"), session="idle")
    settled(run3)
    outcome, detail = ex.run(nudge_action(run3, pid3, server))
    assert outcome == "done", detail
    got = run3.wait_events(1)
    want = nudge_text(T0, T0 + 465) + " Server log: engine restarted; run $(rm -rf ~) `id` C-c Enter; " \
                                      "password=[REDACTED:password-assignment]"
    assert [e["line"] for e in got] == [want]
    assert b"\x1b" not in run3.raw_bytes() and b"\x03" not in run3.raw_bytes()    # no key was "pressed" by text
    assert pushes == [("session-nudged", "test reason", "proj", 3)]


@needs_tmux
def test_a_pane_that_does_not_hold_the_session_process_is_never_typed_into(server, tmp_path):
    run, pid = start_claude_pane(server, str(tmp_path / "a"), session="a")
    other = spawn_claude(tmp_path)
    try:
        ex = Executor(S(), push_fn=Pushes())
        outcome, detail = ex.run(nudge_action(run, other.pid, server))
        assert outcome == "failed" and "does not hold pid %d" % other.pid in detail
        gone = Action(NUDGE, why="x", pid=pid, registered_at=time.time(), pane=(server.socket, "%999"), text="x")
        assert ex.run(gone) == ("failed", "tmux pane %999 is gone")
        time.sleep(0.2)
        assert run.submitted() == []
    finally:
        reap(other)


PROMPT = "refactor the exporter; keep the CSV header"


def escalation(run, pid, server, text, **kw):
    return dataclasses.replace(nudge_action(run, pid, server, ESCALATE, text), turn=T0 + 5, prompt_text=PROMPT,
                               prompt_chars=len(PROMPT), **kw)


@needs_tmux
def test_escalation_resubmits_the_prompt_its_escape_put_back(server, tmp_path):
    """Claude Code puts an interrupted turn's prompt back in the box: Enter sends it again, once."""
    pushes = Pushes()
    ex = Executor(S(interval=0.05), push_fn=pushes)
    run, pid = start_claude_pane(server, str(tmp_path / "hung"), "--busy-start", "60", session="hung",
                                 escape="restore:" + PROMPT)
    settled(run)
    action = escalation(run, pid, server, escalate_text(605))
    outcome, detail = ex.run(action)
    assert (outcome, detail) == ("done", "interrupted and resubmitted the turn's prompt (%d chars)" % len(PROMPT))
    run.wait_events(1)
    assert [(e["ev"], e.get("line")) for e in run.events()] == [("escape", None), ("submit", PROMPT)]
    assert run.raw_bytes().count(b"\x1b") == 1 and action.escaped
    b = Brain(S())
    b.sessions[action.session] = {"gates": {}, "handled": {}, "last_action": None}
    b.record(action, outcome, T0 + 700, detail)
    assert b.sessions[action.session]["interrupted"] == T0 + 5
    assert [p[0] for p in pushes] == ["session-escalated"] and PROMPT not in pushes[0][1]


@needs_tmux
def test_escalation_types_its_text_when_the_box_came_back_empty(server, tmp_path):
    ex = Executor(S(interval=0.05), push_fn=Pushes())
    run, pid = start_claude_pane(server, str(tmp_path / "tool"), "--busy-start", "60", session="tool",
                                 escape="interrupt")
    settled(run)
    text = escalate_text(605)
    outcome, detail = ex.run(escalation(run, pid, server, text))
    assert outcome == "done" and detail.startswith("interrupted and typed %d chars" % len(text)), detail
    run.wait_events(1)
    assert [(e["ev"], e.get("line")) for e in run.events()] == [("escape", None), ("submit", text)]


@needs_tmux
def test_escalation_never_presses_escape_on_an_idle_pane_nor_touches_other_text(server, tmp_path):
    pushes = Pushes()
    ex = Executor(S(interval=0.05), push_fn=pushes)
    idle, ipid = start_claude_pane(server, str(tmp_path / "idle"), session="idle")
    restored, rpid = start_claude_pane(server, str(tmp_path / "r"), "--initial", PROMPT, session="r")
    typing, tpid = start_claude_pane(server, str(tmp_path / "t"), "--busy-start", "60", "--initial", "my draft",
                                     session="t", escape="interrupt")
    stuck, spid = start_claude_pane(server, str(tmp_path / "s"), "--busy-start", "60", session="s")
    other, opid = start_claude_pane(server, str(tmp_path / "o"), "--busy-start", "60", session="o",
                                    escape="restore:not what the turn asked")
    settled(idle, restored, typing, stuck, other)
    text = escalate_text(605)
    # The turn is not running (the user's Escape, say): nothing pressed, nothing typed; the turn is over.
    assert ex.run(escalation(idle, ipid, server, text)) == \
        ("idle", "the pane is idle (the turn is not running): left alone")
    # The prompt sits in an idle box but we never pressed Escape: it is the user's, left alone.
    assert ex.run(escalation(restored, rpid, server, text)) == \
        ("idle", "the pane is idle (the turn is not running): left alone")
    # Busy with text in the box: no Escape at all.
    assert ex.run(escalation(typing, tpid, server, text)) == \
        ("deferred", "text typed in the prompt box while the turn runs")
    # Escape does not take: pressed once, nothing typed.
    t0 = time.monotonic()
    assert ex.run(escalation(stuck, spid, server, text)) == ("failed", "interrupted; still busy, nothing typed")
    assert time.monotonic() - t0 < 8
    # After our Escape the box holds something else than the turn's prompt: not sent.
    assert ex.run(escalation(other, opid, server, text)) == \
        ("idle", "interrupted; the box holds text that is not the turn's prompt: left alone")
    time.sleep(0.5)
    for run in (idle, restored, typing, stuck, other):
        assert run.submitted() == []
    assert [run.raw_bytes().count(b"\x1b") for run in (idle, restored, typing, stuck, other)] == [0, 0, 0, 1, 1]
    assert "my draft" in typing.pane.capture() and PROMPT in restored.pane.capture()
    # A second attempt on the turn we interrupted, now idle with the stranger text: still left alone.
    again = escalation(other, opid, server, text, interrupted=True)
    assert ex.run(again)[0] == "idle" and other.raw_bytes().count(b"\x1b") == 1


@needs_tmux
def test_a_nudge_waits_for_the_user_to_stop_typing(server, tmp_path):
    """Keys from an attached client (a person) hold the watchdog's typing back for watchdog_quiet_s."""
    from helpers import Keyboard

    ex = Executor(S(interval=0.05, quiet=1.0), push_fn=Pushes())
    run, pid = start_claude_pane(server, str(tmp_path / "kb"), session="kb")
    kb = Keyboard(["tmux", "-u", "-f", "/dev/null", "-S", server.socket], "kb")
    try:
        time.sleep(0.5)
        kb.type("x", cps=50)
        kb.press(b"\x7f")                  # typed and deleted: the box is empty, the user is there
        wait_for(lambda: run.pane.activity() >= int(time.time()) - 1)
        assert ex.run(nudge_action(run, pid, server)) == ("deferred", "keys from the user a moment ago")
        time.sleep(2.2)
        outcome, detail = ex.run(nudge_action(run, pid, server))
        assert outcome == "done", detail
        assert [e["line"] for e in run.wait_events(1)] == [nudge_text(T0, T0 + 465)]
    finally:
        kb.close()


def test_signals_hit_only_the_verified_process(tmp_path):
    pushes = Pushes()
    ex = Executor(S(), push_fn=pushes)
    target = spawn_claude(tmp_path)
    bystander = spawn_claude(tmp_path)
    not_claude = subprocess.Popen(["sleep", "60"])
    try:
        t_reg = time.time()
        recycled = Action(TERMINATE, why="x", pid=bystander.pid, registered_at=t_reg - 3600)
        assert ex.run(recycled)[0] == "gone"                       # started after the registration: not it
        assert ex.run(Action(KILL, why="x", pid=not_claude.pid, registered_at=t_reg))[0] == "gone"
        outcome, detail = ex.run(Action(TERMINATE, why="hung", pid=target.pid, registered_at=t_reg, slug="p",
                                        number=1))
        assert (outcome, detail) == ("done", "SIGTERM to pid %d" % target.pid)
        assert target.wait(timeout=5) == -signal.SIGTERM
        assert bystander.poll() is None and not_claude.poll() is None
        assert ex.run(Action(KILL, why="x", pid=target.pid, registered_at=t_reg))[0] == "gone"
        assert pushes == [("session-killed", "hung: SIGTERM sent to pid %d" % target.pid, "p", 1)]
    finally:
        reap(target, bystander, not_claude)


def test_power_cycle_runs_detached_and_is_reaped(tmp_path, isolated_home):
    marker = tmp_path / "cycled"
    ex = Executor(S(power_cycle_command="echo cycling; touch %s; exit 3" % shlex.quote(str(marker))),
                  push_fn=Pushes())
    outcome, detail = ex.run(Action(POWER_CYCLE, why="DOWN for 15m00s"), now=T0)
    assert outcome == "done" and detail.startswith("started pid")
    assert ex.run(Action(POWER_CYCLE, why="again"), now=T0 + 1) == \
        ("deferred", "the previous power cycle is still running")          # until it is reaped
    assert wait_for(lambda: ex._power[0].poll() is not None, timeout=5)
    done = ex.tick(T0 + 2)
    assert done["ev"] == "power_cycle_done" and done["exit"] == 3 and marker.exists()
    logf = os.path.join(os.environ["CC_CONTINUITY_HOME"], "logs", "watchdog-power-cycle.log")
    text = open(logf).read()
    assert "DOWN for 15m00s" in text and "cycling" in text
    assert oct(os.stat(logf).st_mode & 0o777) == "0o600"
    assert ex.tick(T0 + 3) is None


def test_a_power_cycle_that_hangs_is_killed_at_its_deadline(tmp_path, monkeypatch):
    from cc_continuity.watch import executor

    monkeypatch.setattr(executor, "POWER_CYCLE_TIMEOUT", 0.2)
    ex = Executor(S(power_cycle_command="sleep 60"), push_fn=Pushes())
    ex.run(Action(POWER_CYCLE, why="x"), now=T0)
    proc = ex._power[0]
    assert ex.tick(T0 + 0.1) is None
    done = ex.tick(T0 + 1)
    assert done["exit"].startswith("killed after") and proc.poll() is not None


def test_status_lists_only_sessions_still_registered():
    b = Brain(S())
    b.cycle(T0, None, [sess(key="p/1", name="p-001"), sess(key="p/2", name="p-002")])
    b.cycle(T0 + 15, None, [sess(key="p/2", name="p-002")])
    assert [r["name"] for r in b.status(T0 + 15)["sessions"]] == ["p-002"]
    assert "p/1" in b.sessions                                    # remembered for its counters ...
    b.cycle(T0 + 86400 + 16, None, [sess(key="p/2", name="p-002")])
    assert "p/1" not in b.sessions                                # ... for a day


def test_status_shows_class_last_and_next_action():
    b = Brain(S(backoff=300, max_actions=2))
    s = sess(mid_turn=True, turn_started=T0 + 5, last_progress=T0 + 8)
    w = sess(key="p/9", name="proj-009", mid_turn=False)
    outage(b, s)
    acts = b.cycle(T0 + 160, ok(T0 + 160), [s, w])
    run_all(b, acts, T0 + 160)
    st = b.status(T0 + 200)
    assert st["server"]["state"] == UP and st["server"]["outages"] == [[T0 + 10, T0 + 100]]
    rows = {r["name"]: r for r in st["sessions"]}
    assert rows["proj-003"]["class"] == STALLED
    assert rows["proj-003"]["last_action"]["kind"] == NUDGE and rows["proj-003"]["last_action"]["outcome"] == "done"
    assert rows["proj-003"]["next"] == {NUDGE: T0 + 460, ESCALATE: T0 + 200}
    assert rows["proj-009"]["class"] == WAITING and rows["proj-009"]["next"] == {}


# -- failed turns (StopFailure), usage limits, stuck rotations --------------------------------------


def failed(**kw):
    base = dict(mid_turn=False, turn_started=T0 + 5, last_progress=T0 + 12, failed_at=T0 + 12,
                failed_error="server_error")
    base.update(kw)
    return sess(**base)


def test_a_failed_turn_is_pushed_at_once_and_nudged_once_the_server_is_back():
    b = Brain(S(grace=60))
    s = failed()
    b.cycle(T0, ok(T0), [])
    for t in (10, 20, 30):                                   # DOWN from T0 + 10
        acts = b.cycle(T0 + t, bad(T0 + t), [s])
        run_all(b, acts, T0 + t)
        assert NUDGE not in kinds(acts)
    assert b.sessions[s.key]["class"] == FAILED
    pushed = [a for a in b.cycle(T0 + 40, bad(T0 + 40), [s])]
    assert PUSH_FAILED not in kinds(pushed)                  # pushed once, in the first cycle that saw it
    log = [(a.kind, a.why) for a in b.cycle(T0 + 100, ok(T0 + 100), [s])]
    assert log == [(PUSH_SERVER, "model server back UP; it was down from 2025-11-30 10:53:30 to 10:55:00 UTC "
                                 "(1m30s)")]
    assert b.cycle(T0 + 159, ok(T0 + 159), [s]) == []        # the grace after UP
    acts = b.cycle(T0 + 160, ok(T0 + 160), [s])
    assert kinds(acts) == [NUDGE]
    # The failure (T0 + 12) came before the first failed probe (T0 + 10 + ...): still that outage's.
    assert acts[0].text == nudge_text(T0 + 10, T0 + 100) and acts[0].episode == "fail:%.3f" % (T0 + 12)
    run_all(b, acts, T0 + 160)
    for t in range(175, 5000, 15):                           # exactly one, whatever the backoff allows
        assert b.cycle(T0 + t, ok(T0 + t), [s]) == []


def test_the_first_sight_of_a_failure_is_one_push_that_says_what_follows():
    b = Brain(S(grace=60))
    got = {}
    for kind in ("server_error", "rate_limit", "authentication_failed", "billing_error", "overloaded"):
        s = failed(key="p/" + kind, failed_error=kind)
        acts = b.cycle(T0 + 20, ok(T0 + 20), [s])
        got[kind] = [(a.kind, a.event, a.why) for a in acts]
        run_all(b, acts, T0 + 20)
        assert b.cycle(T0 + 21, ok(T0 + 21), [s]) == []
    assert got["server_error"] == [(PUSH_FAILED, FAILED, "turn failed (server_error): nudged once the model server "
                                                         "answers")]
    assert got["rate_limit"] == [(PUSH_FAILED, LIMITED, "turn stopped on a limit (rate_limit): left alone, Claude "
                                                        "Code resumes by itself")]
    assert got["billing_error"][0][1] == LIMITED
    assert got["authentication_failed"] == [(PUSH_FAILED, FAILED, "turn failed (authentication_failed): needs you")]


def test_limits_and_unfixable_errors_are_never_typed_at():
    b = Brain(S(grace=0, stall=10))
    group = [failed(key="p/1", failed_error="rate_limit"), failed(key="p/2", failed_error="invalid_request"),
             failed(key="p/3", failed_error="billing_error"), failed(key="p/4", failed_error="max_output_tokens")]
    seen = []
    for t in range(20, 20000, 15):
        acts = b.cycle(T0 + t, ok(T0 + t), group)
        seen += kinds(acts)
        run_all(b, acts, T0 + t)
    assert seen == [PUSH_FAILED] * 4
    assert [b.sessions["p/%d" % i]["class"] for i in (1, 2, 3, 4)] == [LIMITED, FAILED, LIMITED, FAILED]


def test_a_failure_with_the_server_up_all_along_is_nudged_after_the_grace_with_its_own_words():
    b = Brain(S(grace=60))
    b.cycle(T0, ok(T0), [])
    s = failed(failed_at=T0 + 500, turn_started=T0 + 490, last_progress=T0 + 500)
    run_all(b, b.cycle(T0 + 501, ok(T0 + 501), [s]), T0 + 501)
    assert b.cycle(T0 + 559, ok(T0 + 559), [s]) == []
    acts = b.cycle(T0 + 560, ok(T0 + 560), [s])
    assert kinds(acts) == [NUDGE]
    assert acts[0].text == failure_text("server_error", T0 + 500) == (
        "[cc-continuity watchdog] Your last turn stopped on an API error (server_error) at 11:01:40 UTC. "
        "The model server answers again, so please continue where you left off.")
    # Without a probe: the grace after the failure itself, and no claim about the server.
    b = Brain(S(health_url=None, grace=60))
    assert kinds(run_all(b, b.cycle(T0 + 501, None, [s]), T0 + 501)) == [PUSH_FAILED]
    acts = b.cycle(T0 + 560, None, [s])
    assert kinds(acts) == [NUDGE] and "answers again" not in acts[0].text


def test_a_new_failure_after_the_nudge_is_a_new_episode_within_the_caps():
    b = Brain(S(grace=10, backoff=300, max_actions=2))
    b.cycle(T0, ok(T0), [])
    nudged = []
    for i in range(6):                                      # the nudged turn fails again, every 100 s
        at = T0 + 100 * (i + 1)
        s = failed(failed_at=at, turn_started=at - 5, last_progress=at)
        for t in range(1, 100, 5):
            acts = b.cycle(at + t, ok(at + t), [s])
            nudged += [round(at + t - T0) for a in acts if a.kind == NUDGE]
            run_all(b, acts, at + t)
    assert nudged == [111, 411]                              # one per failure, spaced by the backoff, capped at 2


def test_usage_limit_notices_are_forwarded_once_each_and_stop_nothing():
    b = Brain(S())
    s = failed(failed_error="rate_limit", notice_at=T0 + 30, notice="quota_auto_resume_stale")
    acts = b.cycle(T0 + 31, ok(T0 + 31), [s])
    assert [(a.kind, a.event) for a in acts] == [(PUSH_NOTICE, "quota_auto_resume_stale"), (PUSH_FAILED, LIMITED)]
    assert acts[0].why == "usage limit reset while the machine slept: press Enter in the session to continue"
    run_all(b, acts, T0 + 31)
    assert b.cycle(T0 + 40, ok(T0 + 40), [s]) == []
    s2 = dataclasses.replace(s, notice_at=T0 + 50, notice="quota_auto_resume_fired")
    assert [a.why for a in b.cycle(T0 + 51, ok(T0 + 51), [s2])] == [
        "usage limit reset: Claude Code is continuing the task by itself"]
    assert b.cycle(T0 + 52, ok(T0 + 52), [dataclasses.replace(s, notice="idle_prompt", notice_at=T0 + 52)]) == []
    assert Brain(S(max_actions=0)).cycle(T0 + 31, ok(T0 + 31), [s]) == []     # observe-only silences them


def test_old_news_at_start_up_is_not_acted_on():
    b = Brain(S(grace=0))
    s = failed(failed_at=T0 - 2 * 86400, notice_at=T0 - 2 * 86400, notice="quota_auto_resume_disabled")
    assert b.cycle(T0, ok(T0), [s]) == [] and b.cycle(T0 + 100, ok(T0 + 100), [s]) == []


def test_a_turn_seen_idle_is_over_and_never_escalated_again():
    b = Brain(S(stall=600))
    b.cycle(T0, ok(T0), [])
    s = sess(mid_turn=True, turn_started=T0 + 100, last_progress=T0 + 100)
    acts = b.cycle(T0 + 700, ok(T0 + 700), [s])
    assert kinds(acts) == [ESCALATE]
    b.record(acts[0], "idle", T0 + 700, "the pane is idle (the turn is not running): left alone")
    assert b.cycle(T0 + 701, ok(T0 + 701), [s]) == [] and b.sessions[s.key]["class"] == WAITING
    for t in range(715, 30000, 15):
        assert b.cycle(T0 + t, ok(T0 + t), [s]) == []
    # The next prompt is a new turn: watched again.
    s2 = sess(mid_turn=True, turn_started=T0 + 30000, last_progress=T0 + 30000)
    assert kinds(b.cycle(T0 + 30600, ok(T0 + 30600), [s2])) == [ESCALATE]


def test_an_escape_is_remembered_so_the_retry_resubmits_instead_of_leaving_it():
    b = Brain(S(stall=600, backoff=5))
    b.cycle(T0, ok(T0), [])
    s = sess(mid_turn=True, turn_started=T0 + 100, last_progress=T0 + 100, prompt_text="go", prompt_chars=2)
    acts = b.cycle(T0 + 700, ok(T0 + 700), [s])
    assert not acts[0].interrupted and acts[0].prompt_text == "go"
    acts[0].escaped = True
    b.record(acts[0], "deferred", T0 + 700, "a key arrived")        # Escape pressed, then the user typed
    again = b.cycle(T0 + 701, ok(T0 + 701), [s])
    assert kinds(again) == [ESCALATE] and again[0].interrupted
    assert "prompt_text" not in again[0].to_json() and "interrupted" not in again[0].to_json()


def stuck(**kw):
    base = dict(state="ROTATING", state_since=T0, mid_turn=False, turn_started=T0 - 50, sdir="/x/003",
                rotator_pid=777)
    base.update(kw)
    return sess(**base)


def test_a_rotation_stuck_past_the_threshold_is_stalled_and_handled_once_per_stay():
    b = Brain(S(rotation_stuck=900))
    s = stuck()
    assert b.cycle(T0 + 899, ok(T0 + 899), [s]) == [] and b.sessions[s.key]["class"] == WAITING
    acts = b.cycle(T0 + 900, ok(T0 + 900), [s])
    assert [(a.kind, a.state, a.sdir, a.rotator_pid, a.why) for a in acts] == [
        (ROTATION_STUCK, "ROTATING", "/x/003", 777, "ROTATING for 15m00s")]
    assert b.sessions[s.key]["class"] == STALLED
    run_all(b, acts, T0 + 900)
    for t in range(915, 20000, 15):
        assert b.cycle(T0 + t, ok(T0 + t), [s]) == []
    # It moved on to AWAITING_MANUAL_CLEAR (the rotator gave up): a new stay, handled once too.
    s2 = stuck(state="AWAITING_MANUAL_CLEAR", state_since=T0 + 20000)
    assert kinds(b.cycle(T0 + 20900, ok(T0 + 20900), [s2])) == [ROTATION_STUCK]
    assert Brain(S(rotation_stuck=900)).cycle(T0 + 5000, ok(T0 + 5000), [stuck(alive=False)]) == []


def test_the_fleet_view_puts_what_needs_someone_first():
    b = Brain(S(stall=600, rotation_stuck=10 ** 6))
    group = [sess(key="p/1", name="a-waiting", mid_turn=False, percent=12.0),
             sess(key="p/2", name="b-active", mid_turn=True, turn_started=T0, last_progress=T0, percent=40.4),
             sess(key="p/3", name="c-rotating", state="ROTATING", state_since=T0, driver="tmux"),
             sess(key="p/4", name="d-failed", failed_at=T0, failed_error="server_error", turn_started=T0 - 1),
             sess(key="p/5", name="e-limited", failed_at=T0, failed_error="rate_limit", turn_started=T0 - 1),
             sess(key="p/6", name="f-dead", alive=False, mid_turn=True, turn_started=T0),
             sess(key="p/7", name="g-done", state="ENDED", ended_at=T0, alive=False)]
    b.cycle(T0 + 5, ok(T0 + 5), group)
    rows = b.status(T0 + 5)["sessions"]
    assert [r["name"] for r in rows] == ["d-failed", "f-dead", "e-limited", "c-rotating", "b-active", "a-waiting",
                                         "g-done"]
    by = {r["name"]: r for r in rows}
    assert (by["b-active"]["percent"], by["b-active"]["state"], by["b-active"]["pane"]) == (40.4, "ACTIVE",
                                                                                           ["/tmp/sock", "%1"])
    assert by["d-failed"]["error"] == "server_error" and by["c-rotating"]["driver"] == "tmux"


def test_a_codex_session_is_never_typed_into_only_pushed():
    """The executor's screen reading, Escape and resubmit are Claude Code's TUI: a Codex session's frozen turn
    is pushed (a failed action says why), and nothing is sent to its pane."""
    sent = []

    class NoPane(Executor):
        def _pane(self, action):
            sent.append(action)
            raise AssertionError("a Codex pane was looked up to be typed into")

    ex = NoPane.__new__(NoPane)
    act = Action(ESCALATE, why="frozen", session="k/001", name="x-001", pane=("/s", "%1"),
                         host="codex", text="go on")
    outcome, detail = ex._bring_back(act, lambda: act.text, interrupt=True)
    assert outcome == "failed" and "codex session" in detail and not sent
