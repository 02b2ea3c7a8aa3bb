"""Issue 21, items 5 and 6: late prompts by the ledger's order; a handoff path that is not a file."""

import os
import time

from cc_continuity import config, session
from cc_continuity.hosts.claude.host import CLAUDE
from cc_continuity.rotation import context, start
from helpers.hookdriver import handoff_text, tokens_at

S1 = "fcfcfcfc-0000-4000-8000-000000000001"
S2 = "adadadad-0000-4000-8000-000000000002"
FILES = {"README.md": "hi\n", "src/app.py": "x = 1\n"}
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"})


def test_a_prompt_typed_after_the_request_with_the_clock_stepped_back_is_carried_over(make_project, monkeypatch):
    lad = make_project(files=FILES).work(sid=S1, prompts=("build the parser",))
    drv = lad.drv
    assert lad.request_handoff(S1).request["decision"] == "block"
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # the clock stepped back an hour
    ctx = context.Context("UserPromptSubmit", drv.payload("UserPromptSubmit", S1, prompt="also handle tabs"),
                           drv.env(S1), host=CLAUDE)
    start.prompt_submitted(ctx)
    monkeypatch.setattr(time, "time", real)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(GOOD)
    lad.said(S1, tokens_at(66), "Handoff written.")
    lad.stop(S1)
    text = lad.clear(S1, S2).cleared_out["hookSpecificOutput"]["additionalContext"]
    assert "Prompts the user typed after the handoff was requested" in text and "also handle tabs" in text, text


def test_a_directory_at_the_handoff_path_is_reported_once_and_replaced_by_the_machine_handoff(make_project):
    lad = make_project(files=FILES)
    drv = lad.drv
    drv.config(handoff_max_tries=2)
    lad.work(sid=S1, prompts=("build the parser",))
    assert lad.request_handoff(S1).request["decision"] == "block"
    os.makedirs(drv.handoff_path(S1))
    outs = []
    for i in range(3):
        lad.said(S1, tokens_at(66 + i), "Tried.")
        outs.append(lad.stop(S1, stop_hook_active=True))
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"], (rec["state"], outs)
    said = [o for o in outs if o and "was a directory, not a file" in o.get("systemMessage", "")]
    assert len(said) == 1, outs
    assert [p for p in os.listdir(os.path.dirname(drv.handoff_path(S1))) if ".not-a-file-" in p]
    assert os.path.isfile(drv.handoff_path(S1)) and "machine" in open(drv.handoff_path(S1)).read().lower()

