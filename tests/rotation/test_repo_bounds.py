"""Issue 21: a repository's thresholds are applied only within sane bounds, and a rotation loop stops.

A committed ``{"window": 1000}`` used to put every session at 1600 %: every tool denied and a
handoff forced at every turn end, successors included, with no warning.  Now it is ignored,
warned once per version of the file and key, and tools are allowed.  A successor already past
*rotate* after its first reply, before any tool, would only start the next session the same way:
it does not rotate, and the user is told once.
"""

import json
import os

import pytest

from cc_continuity import config, session
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

S1 = "c9c9c9c9-0000-4000-8000-000000000001"
S2 = "dadadada-0000-4000-8000-000000000002"
S3 = "ebebebeb-0000-4000-8000-000000000003"
FILES = {"README.md": "hi\n", "src/app.py": "x = 1\n"}


def repo_config(drv, doc):
    path = os.path.join(drv.root, ".claude", "continuity.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


@pytest.mark.parametrize("doc", [
    {"window": 1000}, {"rotate_tokens": 5000}, {"rotate": 5}, {"hard": 10}, {"warn": 1},
    {"handoff_min_chars": 20000}, {"handoff_min_chars": 3000, "handoff_max_chars": 4000},
    {"bootstrap_max_tokens": 300}, {"handoff_sections": ["S%d" % i for i in range(13)]},
    {"handoff_max_chars": 500},
], ids=lambda d: ",".join("%s=%s" % (k, str(v)[:10]) for k, v in d.items()))
def test_out_of_bounds_repository_values_are_ignored(tmp_path, doc):
    drv = HookDriver(tmp_path / "proj", files=FILES)
    repo_config(drv, doc)
    cfg = config.load(drv.root)
    bad = [k for k in doc if not (k == "handoff_max_chars" and len(doc) == 2)]
    assert sorted(k for _, k, _ in cfg.ignored) == sorted(bad), cfg.ignored
    for k in bad:
        assert cfg[k] == config.DEFAULTS[k], (k, cfg[k])


def test_a_window_of_1000_is_warned_once_per_file_version_and_tools_are_allowed(make_project):
    lad = make_project(files=FILES)  # the ladder, in-process; PreToolUse by the real adapter in-process
    drv = lad.drv
    repo_config(drv, {"window": 1000, "statusline_color": False})
    lad.said(S1, tokens_at(20))
    out = lad.start(S1)
    assert "window" in out["systemMessage"] and "said once per version" in out["systemMessage"], out
    assert drv.inproc("PreToolUse", S1) is None  # 20 % of the real window: allowed (1000 tokens would be 4000 %)
    lad.prompt(S1, "hello")
    lad.said(S1, tokens_at(21))
    assert lad.stop(S1) is None and drv.state(S1)["state"] == session.ACTIVE
    lad.said(S2, tokens_at(5))
    assert "systemMessage" not in (lad.start(S2) or {})  # not at every start
    repo_config(drv, {"window": 2000})  # a new version of the file: said again
    lad.said(S3, tokens_at(5))
    assert "window" in (lad.start(S3) or {}).get("systemMessage", "")


def test_a_successor_past_rotate_before_any_tool_stops_the_loop_and_says_so_once(make_project):
    lad = make_project(files=FILES).work(sid=S1, prompts=("build the parser",))  # the ladder, in-process
    drv = lad.drv
    lad.request_handoff(S1)
    lad.write_handoff(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}), S1)
    lad.said(S1, tokens_at(66), "Handoff written.")
    lad.stop(S1)
    lad.clear(S1, S2, tokens=None)  # S2's transcript has no reply yet
    lad.prompt(S2, "carry on")
    lad.said(S2, tokens_at(70), "Read the handoff.")  # its first request, no tool: past rotate
    out = lad.stop(S2)
    assert "will not rotate" in out["systemMessage"], out
    rec = drv.state(S2)
    assert rec["loop_stopped"] and rec["state"] not in (session.HANDOFF_REQUESTED, session.ROTATION_PENDING)
    assert drv.inproc("PreToolUse", S2) is None  # not denied either
    lad.said(S2, tokens_at(75), "More.")
    assert lad.stop(S2) is None  # said once
    assert len(drv.ledger(S2, ev="rotation_loop_stopped")) == 1
