"""Reading Claude Code's input box on real screens, both versions (captured with ``capture-pane -e``).

``data/claude_box_screens.json`` holds screens of the real 2.1.328 and 2.1.332 in
tmux (the UI exploration behind issue 16): an empty box, typed text, the dim
placeholders an API error leaves (``Resend your message to try again``, ``Once
fixed, resend your message``, ``Run /rewind to go back``), a busy box, the prompt
Escape puts back, a subagent's ``Message @…`` placeholder.  Each is read as the
watchdog and the rotator read it.
"""

import dataclasses
import json
import os

import pytest

from cc_continuity.tmux import Pane, Screen, strip_styles
from cc_continuity.watch.executor import _is_prompt
from cc_continuity.watch.planner import Action
from helpers import TESTS

CASES = json.load(open(os.path.join(TESTS, "data", "claude_box_screens.json"),
                       encoding="utf-8"))


def screen(case):
    return Screen("\n".join(strip_styles(r) for r in case["rows"]), case["rows"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: "%s %s" % (c["version"], c["name"]))
def test_the_box_reads_as_on_the_real_screen(case):
    sc = screen(case)
    assert Pane.input_text(sc) == case["text"], case["source"]
    assert Pane.is_idle(sc) == case["idle"], case["source"]


def test_both_versions_and_every_placeholder_are_covered():
    versions = {c["version"] for c in CASES}
    assert versions == {"2.1.328", "2.1.332"}
    for v in versions:
        plain = [c.get("plain") or "" for c in CASES if c["version"] == v]
        for hint in ("Resend your message to try again", "Once fixed, resend your message", "Run /rewind to go back"):
            assert any(hint in p for p in plain), (v, hint)


PLACEHOLDERS = [c for c in CASES if c["text"] == "" and (c.get("plain") or str(screen(c))).count("❯\xa0")
                and Pane.input_text(str(screen(c)))]


@pytest.mark.parametrize("case", PLACEHOLDERS,
                         ids=lambda c: "%s %s" % (c["version"], c["name"]))
def test_without_the_styles_a_placeholder_would_read_as_typed_text(case):
    """The bug of issue 16: plain capture-pane text cannot tell a placeholder from the user's text."""
    plain = str(screen(case))
    assert Pane.input_text(plain) != "" and Pane.input_text(screen(case)) == ""


def test_the_placeholders_are_all_there():
    names = {(c["version"], c["name"]) for c in PLACEHOLDERS}
    for v in ("2.1.328", "2.1.332"):
        for name in ("API error 500: placeholder", "API error 529: placeholder",
                     "API error 413 (request_too_large): the box", "API error 401 (authentication_error): the box",
                     "subagent view, list focus: its placeholder"):
            assert (v, name) in names


def test_a_restored_prompt_is_known_only_by_the_turn_it_belongs_to():
    """Escape's restored prompt is byte-identical to typed text: only the ledger's prompt tells it apart."""
    for v in ("2.1.328", "2.1.332"):
        restored = next(c for c in CASES if c["version"] == v and c["name"] == "prompt put back by Escape")
        typed_on = next(c for c in CASES if c["version"] == v and c["name"] == "prompt put back, then typed on")
        box = Pane.input_text(screen(restored))
        turn = Action("escalate", why="x", prompt_text="please hangme now", prompt_chars=17)
        assert _is_prompt(box, turn)
        assert not _is_prompt(Pane.input_text(screen(typed_on)), turn)        # the user added to it
        assert not _is_prompt(box, dataclasses.replace(turn, prompt_text="another prompt", prompt_chars=14))
        assert not _is_prompt(box, dataclasses.replace(turn, prompt_chars=9000))   # the ledger kept only a part
