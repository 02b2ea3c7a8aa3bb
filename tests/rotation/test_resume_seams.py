"""Issue 21: `claude --resume` / `--continue` of a conversation that was rotated away from.

The resumed conversation becomes a record of its own (``resumed_from``), is told where the work
went, is never denied a tool before its first turn end, and never claims the newer checkpoint
its successor left (a checkpoint verified, its process gone): the chain stays a chain.  After
every scenario a walk over every record's predecessor/successor links fails on a cycle or a
link that is not returned.  The sessions climb the ladder in-process (tests/helpers/ladder.py; each
process a CLAUDE_PID: ``agent_pid``), PreToolUse by the real adapter in-process.
"""

import os
import subprocess
import sys

import pytest

from cc_continuity import config, session
from helpers.hookdriver import dead_pid, handoff_text, tokens_at
from helpers.ladder import S1, S2

FILES = {"README.md": "hi\n", "src/app.py": "x = 1\n"}
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"})


def walk_links(drv):
    """Every record's links point back, and following predecessors (or successors) never comes round."""
    proj = drv.project
    recs = {n: session.load(proj.session_dir(n)) for n in proj.numbers()
            if os.path.exists(session.state_path(proj.session_dir(n)))}
    for n, rec in recs.items():
        p, s = rec.get("predecessor"), rec.get("successor")
        if p is not None and rec.get("predecessor_claimed"):
            assert recs[p].get("successor") == n, (n, p, recs[p].get("successor"))
        if s is not None:
            assert recs[s].get("predecessor") == n, (n, s, recs[s].get("predecessor"))
        for key in ("predecessor", "successor", "resumed_from"):
            seen, at = {n}, rec.get(key)
            while at is not None:
                assert at not in seen, "cycle through %s: %s" % (key, sorted(seen | {at}))
                seen.add(at)
                at = recs[at].get(key)
    return recs


def rotate(lad, sid, percent_at=10):
    """``sid`` (started) works, crosses rotate, writes GOOD: verified (the ladder's rungs)."""
    lad.said(sid, tokens_at(percent_at))
    lad.prompt(sid, "work on")
    lad.said(sid, tokens_at(65), "Step finished.")
    assert lad.request_handoff(sid).request["decision"] == "block"
    lad.verify(GOOD, sid, reply="Handoff written.", percent=66)
    assert lad.drv.state(sid)["state"] == session.AWAITING_MANUAL_CLEAR


def started_and_rotated(make_project):
    """S1 started, rotated (cp-001 verified) and cleared: the ladder, in-process."""
    lad = make_project(files=FILES)
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    rotate(lad, S1)
    assert lad.end(S1, reason="clear") is None
    return lad


@pytest.fixture
def live():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("successor", ["dead, holding a verified checkpoint", "live"])
def test_resume_of_a_rotated_conversation(make_project, live, successor):
    lad = started_and_rotated(make_project)
    drv = lad.drv
    pid2 = live if successor == "live" else drv.claude_pid
    lad.said(S2, tokens_at(5))
    assert "Continuing from cp-001" in lad.start(S2, source="clear", agent_pid=pid2)[
        "hookSpecificOutput"]["additionalContext"]
    if successor != "live":
        rotate(lad, S2, percent_at=20)  # cp-002 verified; its process (dead: drv.claude_pid) is gone
    # the user reopens the first conversation, in a new process, far above the hard ceiling
    pid1 = dead_pid(7)
    env1 = drv.env(S1, CLAUDE_PID=pid1)
    lad.said(S1, tokens_at(97), "Old reply.")
    out = lad.start(S1, source="resume", agent_pid=pid1, context_tokens=tokens_at(97))
    text = out["hookSpecificOutput"]["additionalContext"]
    assert "was rotated away from" in text and "cp-001" in text and "proj-002" in text, text
    assert "at its end it hands off to a fresh session" in text and "claude --resume %s" % S2 in text
    assert "Continuing from cp-002" not in text
    n = drv.number(S1)
    rec = drv.state(S1)
    assert n == 3 and rec["resumed_from"] == 1 and rec["state"] == session.ACTIVE
    assert drv.state(number=1)["state"] == session.ROTATED and drv.state(number=1)["successor"] == 2
    s2 = drv.state(S2)
    assert s2.get("successor") is None  # its checkpoint is not taken by the old conversation
    # never denied a tool before its first turn end, though far above the hard ceiling
    assert drv.inproc("PreToolUse", S1, env=env1) is None
    lad.said(S1, tokens_at(97), "Resumed reply.")
    out = lad.stop(S1, agent_pid=pid1)
    assert out and out["decision"] == "block"  # it hands off at that turn's end, as it was told
    assert "resume_grace" not in drv.state(S1)
    walk_links(drv)
    # a second resume of the same conversation stays on its own record
    lad.start(S1, source="resume", agent_pid=pid1)
    assert drv.number(S1) == 3
    walk_links(drv)


def test_continue_after_a_rotation_keeps_the_chain(make_project):
    """`claude --continue` opens the newest conversation (the successor): an ordinary resume of an ACTIVE one."""
    lad = started_and_rotated(make_project)
    drv = lad.drv
    lad.said(S2, tokens_at(5))
    lad.start(S2, source="clear")
    lad.claim(S2, "carry on")
    lad.end(S2, reason="prompt_input_exit")
    out = lad.start(S2, source="resume", agent_pid=dead_pid(9))
    assert not out or "Continuing from" not in str(out)  # delivered once, not again
    assert drv.number(S2) == 2 and drv.state(S2)["state"] == session.ACTIVE
    walk_links(drv)
