"""The Stop hook's request for more, in the shape the running Claude Code takes best.

``decision: block`` shows ``stop hook reported a problem`` under the prompt;
``additionalContext`` continues the turn the same way without it, on the
versions checked against the real binary (tests/e2e/test_stop_shape_e2e.py).
"""

import pytest

from cc_continuity.hosts.claude.hooks import STOP_CONTEXT_SINCE, stop_wire

BLOCK = {"decision": "block", "reason": "Write the handoff.\nHandoff file (absolute path): /x/h.md"}


@pytest.mark.parametrize("version", ["2.1.328", "2.1.332", "2.2.0", "3.0.1", "2.1.400-beta"])
def test_known_new_versions_get_additional_context(version):
    assert stop_wire(BLOCK, version) == {
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": BLOCK["reason"]}}


@pytest.mark.parametrize("version", [None, "", "2.1.327", "2.1.209", "1.0.99", "x.y", 7, "2.1.3a"])
def test_older_or_unknown_versions_keep_the_block(version):
    assert stop_wire(BLOCK, version) == BLOCK


def test_other_answers_pass_through():
    note = {"systemMessage": "cc-continuity: type /clear"}
    assert stop_wire(note, "2.1.332") is note
    assert stop_wire({"decision": "block"}, "2.1.332") == {"decision": "block"}
    assert STOP_CONTEXT_SINCE == (2, 1, 328)
