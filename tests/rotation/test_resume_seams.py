"""Issue 21: `claude --resume` / `--continue` of a conversation that was rotated away from.

The resumed conversation becomes a record of its own (``resumed_from``), is told where the work
went, is never denied a tool before its first turn end, and never claims the newer checkpoint
its successor left (a checkpoint verified, its process gone): the chain stays a chain.  After
every scenario a walk over every record's predecessor/successor links fails on a cycle or a
link that is not returned.
"""

import os
import subprocess
import sys

import pytest

from cc_continuity import config, session
from helpers.hookdriver import HookDriver, dead_pid, handoff_text, tokens_at

S1 = "a7a7a7a7-0000-4000-8000-000000000001"
S2 = "b8b8b8b8-0000-4000-8000-000000000002"
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


def rotate(drv, sid, percent_at=10, env=None):
    drv.transcript(sid).assistant(tokens_at(percent_at))
    drv.hook("UserPromptSubmit", sid, env=env, prompt="work on")
    drv.transcript(sid).assistant(tokens_at(65), "Step finished.")
    assert drv.hook("Stop", sid, env=env)["decision"] == "block"
    with open(drv.handoff_path(sid), "w") as f:
        f.write(GOOD)
    drv.transcript(sid).assistant(tokens_at(66), "Handoff written.")
    drv.hook("Stop", sid, env=env)
    assert drv.state(sid)["state"] == session.AWAITING_MANUAL_CLEAR


@pytest.fixture
def live():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("successor", ["dead, holding a verified checkpoint", "live"])
def test_resume_of_a_rotated_conversation(tmp_path, live, successor):
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hi\n", "src/app.py": "x = 1\n"})
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    rotate(drv, S1)
    drv.hook("SessionEnd", S1, reason="clear")
    env2 = drv.env(S2, CLAUDE_PID=live if successor == "live" else drv.claude_pid)
    drv.transcript(S2).assistant(tokens_at(5))
    assert "Continuing from cp-001" in drv.hook("SessionStart", S2, env=env2, source="clear")[
        "hookSpecificOutput"]["additionalContext"]
    if successor != "live":
        rotate(drv, S2, percent_at=20, env=env2)  # cp-002 verified; its process (dead) is gone
    # the user reopens the first conversation, in a new process, far above the hard ceiling
    env1 = drv.env(S1, CLAUDE_PID=dead_pid(7))
    drv.transcript(S1).assistant(tokens_at(97), "Old reply.")
    out = drv.hook("SessionStart", S1, env=env1, source="resume", context_tokens=tokens_at(97))
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
    assert drv.hook("PreToolUse", S1, env=env1) is None
    drv.transcript(S1).assistant(tokens_at(97), "Resumed reply.")
    out = drv.hook("Stop", S1, env=env1)
    assert out and out["decision"] == "block"  # it hands off at that turn's end, as it was told
    assert "resume_grace" not in drv.state(S1)
    walk_links(drv)
    # a second resume of the same conversation stays on its own record
    drv.hook("SessionStart", S1, env=env1, source="resume")
    assert drv.number(S1) == 3
    walk_links(drv)


def test_continue_after_a_rotation_keeps_the_chain(tmp_path):
    """`claude --continue` opens the newest conversation (the successor): an ordinary resume of an ACTIVE one."""
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hi\n", "src/app.py": "x = 1\n"})
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    rotate(drv, S1)
    drv.hook("SessionEnd", S1, reason="clear")
    drv.transcript(S2).assistant(tokens_at(5))
    drv.hook("SessionStart", S2, source="clear")
    drv.hook("UserPromptSubmit", S2, prompt="carry on")
    drv.hook("SessionEnd", S2, reason="prompt_input_exit")
    out = drv.hook("SessionStart", S2, env=drv.env(S2, CLAUDE_PID=dead_pid(9)), source="resume")
    assert not out or "Continuing from" not in str(out)  # delivered once, not again
    assert drv.number(S2) == 2 and drv.state(S2)["state"] == session.ACTIVE
    walk_links(drv)
