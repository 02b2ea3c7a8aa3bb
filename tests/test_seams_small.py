"""Issue 21, items 5 and 6: late prompts by the ledger's order; a handoff path that is not a file."""

import os
import time

from cc_continuity import config, session
from cc_continuity.hosts.claude.host import CLAUDE
from cc_continuity.rotation import context, start
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

S1 = "fcfcfcfc-0000-4000-8000-000000000001"
S2 = "adadadad-0000-4000-8000-000000000002"
FILES = {"README.md": "hi\n", "src/app.py": "x = 1\n"}
GOOD = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"})


def requested(drv):
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("UserPromptSubmit", S1, prompt="build the parser")
    drv.transcript(S1).assistant(tokens_at(65), "Step finished.")
    assert drv.hook("Stop", S1)["decision"] == "block"


def test_a_prompt_typed_after_the_request_with_the_clock_stepped_back_is_carried_over(tmp_path, monkeypatch):
    drv = HookDriver(tmp_path / "proj", files=FILES)
    requested(drv)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # the clock stepped back an hour
    ctx = context.Context("UserPromptSubmit", drv.payload("UserPromptSubmit", S1, prompt="also handle tabs"),
                           drv.env(S1), host=CLAUDE)
    start.prompt_submitted(ctx)
    monkeypatch.setattr(time, "time", real)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(GOOD)
    drv.transcript(S1).assistant(tokens_at(66), "Handoff written.")
    drv.hook("Stop", S1)
    drv.hook("SessionEnd", S1, reason="clear")
    drv.transcript(S2).assistant(tokens_at(3))
    text = drv.hook("SessionStart", S2, source="clear")["hookSpecificOutput"]["additionalContext"]
    assert "Prompts the user typed after the handoff was requested" in text and "also handle tabs" in text, text


def test_a_directory_at_the_handoff_path_is_reported_once_and_replaced_by_the_machine_handoff(tmp_path):
    drv = HookDriver(tmp_path / "proj", files=FILES)
    drv.config(handoff_max_tries=2)
    requested(drv)
    os.makedirs(drv.handoff_path(S1))
    outs = []
    for i in range(3):
        drv.transcript(S1).assistant(tokens_at(66 + i), "Tried.")
        outs.append(drv.hook("Stop", S1, stop_hook_active=True))
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"], (rec["state"], outs)
    said = [o for o in outs if o and "was a directory, not a file" in o.get("systemMessage", "")]
    assert len(said) == 1, outs
    assert [p for p in os.listdir(os.path.dirname(drv.handoff_path(S1))) if ".not-a-file-" in p]
    assert os.path.isfile(drv.handoff_path(S1)) and "machine" in open(drv.handoff_path(S1)).read().lower()

