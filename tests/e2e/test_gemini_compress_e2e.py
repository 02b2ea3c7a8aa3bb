"""A turn that crosses our rotate level where Gemini CLI 0.61 would compress, against the real binary.

The scripted turn's context climbs through four tool calls: 300k, 560k, 650k, 700k tokens of a 1,000,000
window (our rotate level 620k, hard 720k).  Gemini compresses before a model round once the last prompt was
``model.compressionThreshold`` x 1,048,576 tokens: at its default 0.5 (524,288), mid-turn, after the 560k
round.  Without us (the control) it does: a compression request reaches the model.  Installed, our threshold
sits above our hard ceiling (0.70, 734,003): nothing is compressed, the turn ends, and the rotation runs at
its end (handoff, checkpoint, clear), the successor starting fresh.  A first short turn gives Gemini the
split point it needs to compress at all (one user turn alone is never compressed).
"""

import os

import pytest

from cc_continuity import ledger
from cc_continuity.rehearse import CONTINUATION, HANDOFF_REQUEST, handoff_text

pytestmark = pytest.mark.gemini

WARM = "Warm up: say hello"
TASK = "Compress task: run the four steps"
STEPS = (300_000, 560_000, 650_000, 700_000)


def _u(tokens):
    return {"input_tokens": tokens, "output_tokens": 20}


def _shell(n):
    return {"type": "tool_use", "name": "run_shell_command", "input": {"command": "echo step %d" % n,
                                                                        "description": "step %d" % n}}


def scenario():
    steps = [{"reply": [{"type": "text", "text": "Step %d." % (n + 1)}, _shell(n + 1)], "usage": _u(t)}
             for n, t in enumerate(STEPS[1:], start=1)]
    return {"rules": [
        {"name": "warm", "when": {"last_user_contains": WARM}, "reply": "Hello.", "usage": _u(100_000)},
        {"name": "handoff", "when": {"last_user_contains": HANDOFF_REQUEST},
         "extract": {"path": r"Handoff file \(absolute path\): (/\S+)"},
         "reply": [{"type": "text", "text": "Writing the handoff."},
                   {"type": "tool_use", "name": "write_file", "input": {"file_path": "{path}", "content": "{handoff}"}}],
         "usage": _u(705_000), "then": [{"reply": "Handoff written; ending the turn.", "usage": _u(706_000)}]},
        {"name": "successor", "when": {"last_user_contains": CONTINUATION}, "reply": "Picked up the handoff.",
         "usage": _u(40_000)},
        {"name": "work", "when": {"last_user_contains": TASK}, "times": 1,
         "reply": [{"type": "text", "text": "Step 1."}, _shell(1)], "usage": _u(STEPS[0]),
         "then": steps + [{"reply": "All four steps ran; ending the turn.", "usage": _u(702_000)}]},
    ], "vars": {"handoff": handoff_text(named="README.md")}, "default": {"reply": "Noted.", "usage": _u(100_000)}}


def _two_turns(box, env=None):
    first = box.run_print(WARM, args=["--yolo"], timeout=120, env=env)
    assert first.returncode == 0, first
    second = box.run_print(TASK, args=["--yolo", "--resume", "latest"], timeout=240, env=env)
    assert second.returncode == 0, second
    return [r.kind for r in box.model.requests()]


def test_without_us_gemini_compresses_mid_turn(gemini_box):
    box = gemini_box(scenario())
    kinds = _two_turns(box)
    assert "compact" in kinds, kinds  # the control: this turn does compress at Gemini's defaults


def test_installed_the_turn_is_not_compressed_and_rotates_at_its_end(gemini_box):
    box = gemini_box(scenario())
    cc_home = os.path.join(box.root, "cchome")
    said = box.install_ours(cc_home, config={"window": 1_000_000})
    assert "model.compressionThreshold 0.7: Gemini compresses at 734003 tokens" in said
    kinds = _two_turns(box, env={"CC_CONTINUITY_HOME": cc_home})
    assert "compact" not in kinds, kinds
    (proj,) = os.listdir(os.path.join(cc_home, "projects"))
    sdir = os.path.join(cc_home, "projects", proj, "sessions", "001")
    evs = [r["ev"] for r in ledger.read(os.path.join(sdir, "ledger.jsonl"))]
    assert [e for e in evs if e in ("handoff_taken", "checkpoint", "generation")] == \
        ["handoff_taken", "checkpoint", "generation"], evs
    fresh = [r for r in box.model.main_requests() if CONTINUATION in r.text and len(r.contents) == 1]
    assert len(fresh) == 1 and "Step 4." not in fresh[0].text  # the successor starts from the handoff alone
