"""State a newer cc-continuity wrote, read by this one (issue 20: a git marketplace auto-updates, so a
live session on the old version and a new one on the new version share CC_CONTINUITY_HOME).

This version is the older one for whatever comes next: what a newer one adds (keys in a record, in
project.json, in a checkpoint's manifest; ledger events; config keys; a session state; a card format)
must neither break this version's hooks nor be lost when this version rewrites the file.  Run through
the real hooks (HookDriver: a process per hook, the table as an install renders it) on the ladder's
*verified* rung (tests/helpers/ladder.py; its owner, dead_pid(), is gone: any new session claims it).
"""

import json
import os

from cc_continuity import card, ledger, session
from helpers.hookdriver import HookDriver, dead_pid, tokens_at

from helpers.ladder import S1
from test_claim import bootstrap_in

S2 = "b2b2b2b2-0000-4000-8000-000000000002"
NEWER = {"from_a_newer_version": {"lease": {"remote": "origin", "at": 1.5}, "list": [1, "two"]}}


def edit_json(path, **keys):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc.update(keys)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return doc


def test_a_checkpoint_a_newer_version_wrote_is_claimed_here_and_keeps_what_it_added(verified):
    drv = verified.drv  # its Claude process is gone: any new session claims it
    assert drv.claude_pid == dead_pid()
    sdir = drv.sdir(S1)
    rec = session.load(sdir)
    edit_json(session.state_path(sdir), **NEWER, checkpoint=dict(rec["checkpoint"], newer_field="kept"))
    edit_json(session.manifest_path(sdir), **NEWER)
    meta = os.path.join(drv.project.dir, "project.json")
    edit_json(meta, **NEWER)
    ledger.append(session.ledger_path(sdir), {"ev": "an_event_of_a_newer_version", **NEWER})
    drv.config(**{"a_key_of_a_newer_version": True})  # unknown here: a warning, never an error
    out = drv.hook("SessionStart", S2, env=drv.env(S2, CLAUDE_PID=os.getpid()), source="startup")
    assert bootstrap_in(json.dumps(out).encode())  # claimed (HookDriver fails on an error in hooks.log)
    pred = session.load(sdir)
    assert pred["state"] == session.ROTATED and pred["successor"] == drv.number(S2)
    assert pred["from_a_newer_version"] == NEWER["from_a_newer_version"] and pred["checkpoint"]["newer_field"] == "kept"
    with open(meta, encoding="utf-8") as f:
        assert json.load(f)["from_a_newer_version"] == NEWER["from_a_newer_version"]
    for n in (1, drv.number(S2)):
        assert ledger.verify(session.ledger_path(drv.sdir(number=n)))[0], n  # one chain, both versions' lines
    # The successor works on: a prompt, a tool call, a turn's end.
    t = drv.transcript(S2)
    drv.hook("UserPromptSubmit", S2, prompt="go on")
    t.assistant(tokens_at(10), tool_uses=[{"name": "Bash", "input": {"command": "ls"}}])
    drv.hook("PostToolUse", S2, tool_name="Bash", tool_input={"command": "ls"}, tool_response={"stdout": ""},
             tool_use_id="toolu_compat_1")
    drv.hook("Stop", S2)


def test_a_session_in_a_state_this_version_does_not_know_is_left_as_it_is(verified):
    drv = verified.drv
    assert drv.claude_pid == dead_pid()
    path = session.state_path(drv.sdir(S1))
    edit_json(path, state="A_STATE_OF_A_NEWER_VERSION")
    with open(path, "rb") as f:
        before = f.read()
    out = drv.hook("SessionStart", S2, env=drv.env(S2, CLAUDE_PID=os.getpid()), source="startup")
    assert not bootstrap_in(json.dumps(out).encode() if out else b"")  # not claimable here: not claimed
    with open(path, "rb") as f:
        assert f.read() == before  # nor rewritten
    drv.hook("UserPromptSubmit", S2, prompt="hello")
    assert drv.cli("status").returncode == 0


def test_a_card_of_a_newer_format_is_made_again_not_misread(tmp_path):
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hi\n"})
    t = drv.transcript(S1)
    t.assistant(tokens_at(5))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("PostToolUse", S1, tool_name="Bash", tool_input={"command": "ls"}, tool_response={"stdout": ""},
             tool_use_id="toolu_compat_2")
    cards = [os.path.join(d, f) for d, _, fs in os.walk(drv.cc_home) for f in fs if f == S1 + ".json"]
    assert len(cards) == 1, "no session card was made"
    for c in cards:
        edit_json(c, v=card.VERSION + 1, window="not a number")
    drv.hook("PostToolUse", S1, tool_name="Bash", tool_input={"command": "ls"}, tool_response={"stdout": ""},
             tool_use_id="toolu_compat_3")
    for c in cards:
        with open(c, encoding="utf-8") as f:
            assert json.load(f)["v"] == card.VERSION  # this version's card again
