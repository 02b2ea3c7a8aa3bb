"""The model id every rehearsal and e2e scenario runs as (``cc_continuity.rehearse.MODEL``), as the
real Claude Code shows it: no retirement or deprecation warning on screen, a 200k window in the
status line's input, and no auto mode in the shift+tab cycle.  Runs once per binary
(CC_CONTINUITY_CLAUDE_BIN): when a newer Claude Code starts to warn about the model, this fails and
says to pick another (`claude-sonnet-4-5` did, on 2.1.332, from 2026-11-30)."""

import json
import re
import time

import pytest

from cc_continuity.rehearse import MODEL, WINDOW

pytestmark = pytest.mark.e2e

WARNING = re.compile(r"retire|deprecat|remapped|Consider switching|/model to switch", re.I)
MODES = 5  # the shift+tab cycle is at most this long (default, accept edits, plan, auto, bypass)


def looked_at(sandbox_factory, name):
    """Start claude with ``name``, answer one prompt, walk the mode cycle once: (screens, status inputs)."""
    sb = sandbox_factory(model_name=name)
    record = sb.root + "/statusline.jsonl"
    doc = sb.settings()
    doc["statusLine"] = {"type": "command", "command": "cat >> %s; echo" % record}
    sb.write_settings(doc)
    sb.start_claude()
    time.sleep(1.0)  # a warning is drawn after the first idle frame
    screens = [sb.screen()]
    sb.ask("hello from the model check")
    screens.append(sb.screen())
    for _ in range(MODES):
        sb.keys("BTab")
        time.sleep(0.4)
        screens.append(sb.screen())
    inputs = []
    with open(record, encoding="utf-8") as f:
        for line in f:
            try:
                inputs.append(json.loads(line))
            except ValueError:
                pass
    return screens, inputs


def test_the_rehearsal_model_has_a_200k_window_no_auto_mode_and_no_warning(sandbox_factory, claude_bin_version):
    screens, inputs = looked_at(sandbox_factory, MODEL)
    warned = sorted({line.strip() for s in screens for line in s.splitlines() if WARNING.search(line)})
    assert not warned, ("Claude Code %s warns about %s (pick another model id for cc_continuity.rehearse.MODEL): %s"
                        % (claude_bin_version, MODEL, warned))
    windows = {(d.get("model") or {}).get("id"): (d.get("context_window") or {}).get("context_window_size")
               for d in inputs}
    assert windows.get(MODEL) == WINDOW, windows
    modes = [line.strip() for s in screens for line in s.splitlines() if "mode on" in line]
    assert modes and not [m for m in modes if "auto mode" in m], modes


def test_the_warning_check_sees_a_retired_model(sandbox_factory, claude_bin_version):
    """The check above can fail: 2.1.332 warns about claude-sonnet-4-5 (retired 2026-11-30)."""
    if claude_bin_version != "2.1.332":
        pytest.skip("2.1.332 is the version known to warn about claude-sonnet-4-5")
    screens, _ = looked_at(sandbox_factory, "claude-sonnet-4-5")
    assert [line for s in screens for line in s.splitlines() if WARNING.search(line)], screens[0]
