"""Issue 10: a claim cut short by SIGKILL completes or rolls back; the successor never trips on it.

Before, a SessionStart(clear) killed after the predecessor's ROTATED save but before the
successor's own save left a successor that, once it had worked on (WARNED), logged an
illegal WARNED -> BOOTSTRAPPING transition on every later SessionStart, and never got its
handoff.  Here the real hook command is SIGKILLed in every gap of an unkilled run's
timeline and at each milestone (the successor's intent, the predecessor's ROTATED, the
successor's BOOTSTRAPPING); then the successor carries on the way a user would (an
ordinary prompt, a turn at the warn level, ``claude --resume``) and a new terminal starts.
Every time: no illegal transition anywhere, every ledger verifies, the checkpoint has
exactly one successor, and its bootstrap text arrives once (it can only be lost when the
kill lands after the claim was complete, with the hook's answer still unwritten).  The rotation
before the claim is the ladder's *verified* rung (tests/helpers/ladder.py), cleared in-process.
"""

import os
import signal
import time

from cc_continuity import ledger, session
from helpers.hookdriver import WriteFaults, file_contains, tokens_at
from helpers.ladder import S1, S2, Frozen

S3 = "c3c3c3c3-0000-4000-8000-000000000003"


def continuing(out):
    ctx = ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
    return "Continuing from cp-001" in ctx


class World(Frozen):
    """S1 verified (the ladder's rung) and cleared; S2's SessionStart(clear) is the claim under test."""

    def __init__(self, verified, tmp_path):
        super().__init__(verified, tmp_path)
        self.drv.transcript(S2).assistant(tokens_at(5))

    def restore(self):
        super().restore()
        self.drv.transcript(S2).assistant(tokens_at(5))

    def play_on(self):
        """The successor works on as a user would, then resumes; then another terminal starts."""
        d = self.drv
        outs = [d.hook("UserPromptSubmit", S2, prompt="what is next?")]  # not the rotator's continuation
        d.transcript(S2).assistant(tokens_at(58))  # ... and works into the warn level
        outs.append(d.hook("Stop", S2))
        outs += [d.hook("SessionStart", S2, source="resume") for _ in range(2)]
        outs.append(d.hook("UserPromptSubmit", S2, prompt="carry on"))
        env = d.env(S3, CLAUDE_PID=os.getpid())
        outs.append(d.hook("SessionStart", S3, env=env, source="startup"))
        return outs

    def check(self, outs, may_lose_bootstrap):
        d = self.drv
        proj = d.project
        for n in proj.numbers():
            sdir = proj.session_dir(n)
            if not os.path.exists(session.state_path(sdir)):
                continue
            ok, line, why = ledger.verify(session.ledger_path(sdir))
            assert ok, (sdir, line, why)
            for r in ledger.read(session.ledger_path(sdir)):
                assert r.get("ev") != "illegal_transition", r
                if r.get("ev") == "transition":
                    assert session.is_allowed(r["from"], r["to"]), r
        pred = d.state(S1)
        assert pred["state"] == session.ROTATED
        # Exactly one successor: S2 if its claim got as far as its intent, else whoever claimed next.
        for sid in (S2, S3):
            rec = d.state(sid)
            assert "claiming" not in rec, (sid, rec)
            adopted = bool(rec.get("predecessor_claimed")) and rec.get("predecessor") == d.number(S1)
            assert adopted is (pred["successor"] == d.number(sid)), (sid, rec, pred["successor"])
        failed = [o for o in d.outcomes if o[3].startswith(("error", "budget"))]
        assert failed == []
        delivered = sum(map(continuing, outs))
        assert delivered <= 1 if may_lose_bootstrap else delivered == 1, (delivered, outs)


def test_sigkill_of_the_claiming_session_start_mid_flight(verified, tmp_path):
    w = World(verified, tmp_path)
    s1 = session.state_path(w.drv.sdir(S1))
    t0 = time.time()
    out, _ = w.drv.start("SessionStart", S2, source="clear").communicate(timeout=60)
    end = time.time() - t0
    assert w.drv.state(S2)["state"] == session.BOOTSTRAPPING
    marks = [0.0] + [r["ts"] - t0 for r in w.drv.ledger(S2) + w.drv.ledger(S1) if r["ts"] > t0] + [end]
    marks.sort()
    triggers = [("%.0f ms" % ((a + b) * 500), lambda d=(a + b) / 2, t=None: time.monotonic() - t >= d)
                for a, b in zip(marks, marks[1:]) if b - a >= 0.005]
    s2_state = lambda: session.state_path(w.drv.sdir(S2))
    milestones = [
        ("intent saved", lambda: file_contains(s2_state(), b'"claiming"')()),
        ("predecessor ROTATED", file_contains(s1, b'"ROTATED"')),
        ("successor BOOTSTRAPPING", lambda: file_contains(s2_state(), b'"BOOTSTRAPPING"')()),
    ]
    triggers += [(name, lambda p=p, t=None: p()) for name, p in milestones]
    landed = []
    for name, fire in triggers:
        w.restore()
        started = time.monotonic()
        proc = w.drv.start("SessionStart", S2, source="clear")
        while proc.poll() is None:
            try:
                if fire(t=started):
                    break
            except (AssertionError, OSError):
                pass  # S2 not registered yet
            time.sleep(0.0002)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        killed = proc.returncode == -signal.SIGKILL
        n2 = w.drv.number(S2)
        rec = session.load(w.drv.sdir(S2)) if n2 is not None else None
        done = bool(rec and rec.get("predecessor_claimed"))
        landed.append((name, "%s%s%s" % ((rec or {}).get("state"), " claiming" if (rec or {}).get("claiming") else "",
                                          " claimed" if done else "") if killed else "finished"))
        first = [None if killed else __import__("json").loads(out or b"null")]
        intended = bool(rec and (rec.get("claiming") is not None or done))
        w.check(first + w.play_on(), may_lose_bootstrap=killed and done)
        if intended:
            assert w.drv.state(S1)["successor"] == n2  # a claim that got its intent down completes for S2
    print("kill trigger -> successor state: %s" % landed)


def _cut(verified, tmp_path, crash_at_label):
    """S2's claim stopped (in-process) right before the durable write named by ``crash_at_label``."""
    w = World(verified, tmp_path)
    with WriteFaults() as probe:
        w.drv.inproc("SessionStart", S2, source="clear")
    k = next(i for i, label in enumerate(probe.writes) if crash_at_label(label))
    w.restore()
    with WriteFaults(crash_at=k) as f:
        w.drv.inproc("SessionStart", S2, source="clear")
    assert f.crashed
    return w, f.crashed


def test_cut_after_the_predecessor_moved_completes_on_the_next_prompt_whatever_the_state(verified, tmp_path):
    # The ROTATED save happened; its ledger line and everything of the successor's did not.
    w, crashed = _cut(verified, tmp_path, lambda label: label.endswith("transition AWAITING_MANUAL_CLEAR->ROTATED"))
    assert w.drv.state(S1)["state"] == session.ROTATED and w.drv.state(S2)["claiming"] == w.drv.number(S1)
    w.drv.transcript(S2).assistant(tokens_at(58))
    # the turn's end is the next hook that can add context (issue 21): it completes the claim and the turn
    # goes on with the handoff
    out = w.drv.hook("Stop", S2)
    assert out and out["decision"] == "block" and out["reason"].startswith("Continuing from cp-001"), out
    rec = w.drv.state(S2)
    assert rec["predecessor_claimed"] and "claiming" not in rec and rec["bootstrap"]["sent"] == "Stop"
    out = w.drv.hook("UserPromptSubmit", S2, prompt="hello again")
    assert not continuing(out), out  # delivered once
    assert w.drv.state(S2)["state"] == session.ACTIVE
    assert w.drv.hook("SessionStart", S2, source="resume") is None
    assert not w.drv.ledger(S2, ev="illegal_transition")


def test_cut_before_the_predecessor_moved_rolls_back_when_another_session_took_it(verified, tmp_path):
    # Only the successor's intent was saved; then a new terminal (S3) claims the checkpoint first.
    w, crashed = _cut(verified, tmp_path, lambda label: label.endswith("transition AWAITING_MANUAL_CLEAR->ROTATED"))
    w.restore()
    with WriteFaults() as probe:
        w.drv.inproc("SessionStart", S2, source="clear")
    k = next(i for i, label in enumerate(probe.writes) if label.endswith("001/state.json"))
    w.restore()
    with WriteFaults(crash_at=k):
        w.drv.inproc("SessionStart", S2, source="clear")
    assert w.drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert w.drv.state(S2)["claiming"] == w.drv.number(S1)
    env = w.drv.env(S3, CLAUDE_PID=2 ** 22 + 777)  # another Claude process; S1's own process is gone
    assert continuing(w.drv.hook("SessionStart", S3, env=env, source="startup"))
    assert w.drv.state(S1)["successor"] == w.drv.number(S3)
    assert not continuing(w.drv.hook("UserPromptSubmit", S2, prompt="hello"))
    rec = w.drv.state(S2)
    assert "claiming" not in rec and not rec.get("predecessor_claimed")
    assert w.drv.ledger(S2, ev="claim_rolled_back")
    assert not [r for n in w.drv.project.numbers()
                for r in ledger.read(session.ledger_path(w.drv.project.session_dir(n)))
                if r.get("ev") == "illegal_transition"]
