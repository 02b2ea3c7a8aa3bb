"""How the Stop hook asks for the handoff, against the real Claude Code.

``decision: block`` (and exit 2) make Claude Code show ``stop hook reported a
problem · ctrl+o to see`` under the prompt during every handoff request, which
reads like a failure.  ``hookSpecificOutput.additionalContext`` carries the
turn on just the same (the model gets the text, the next Stop has
``stop_hook_active``) with no such footer: hooks.stop_wire picks it on the
versions where this test passes.  One real rotation: the handoff request
reaches the model as additional context, the rotation completes, and the
footer never appears on the screen while it runs.
"""

import time

import pytest

from cc_continuity.rehearse import HANDOFF_REQUEST, rotation_scenario

from .common import Continuity, installed_sandbox, prompt

pytestmark = pytest.mark.e2e

TASK = "Stop shape task: keep a work log"
FOOTERS = ("hook reported a problem", "stop hook problem", "Stop hook reported a problem")


def test_handoff_request_without_the_problem_footer(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, rotations=1, task=TASK))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK)

    screens = []
    deadline = time.monotonic() + 120
    done = None
    while time.monotonic() < deadline:
        screens.append(sb.screen())
        done = [r for r in sb.model.requests() if r.rule == "finish"]
        if done:
            break
        time.sleep(0.15)
    assert done, "the rotation did not finish:\n" + screens[-1]
    cont.wait_event(1, "rotator", step="renamed")

    asked = [r for r in sb.model.requests() if r.kind == "main" and HANDOFF_REQUEST in r.text]
    assert asked, "the handoff request never reached the model"
    # The request travels as the Stop hook's additional context, not as a "blocking error".
    assert any("Stop hook additional context:" in r.text for r in asked), asked[0].messages[-1]
    assert not any("Stop hook blocking error" in r.text for r in asked)
    assert cont.record(1)["state"] == "ROTATED" and cont.record(1)["checkpoint"]["validation"] == "valid"
    shown = [f for s in screens for f in FOOTERS if f in s]
    assert not shown, "footer on screen during the rotation: %s" % shown[:1]
