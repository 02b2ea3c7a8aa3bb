"""No self-certification: a handoff's claims checked against the tool record (claims.py, protocol, claim)."""

import pytest

from cc_continuity.rotation import handoff
from cc_continuity import config
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

S1 = "c1c1c1c1-0000-4000-8000-0000000000c1"
S2 = "c2c2c2c2-0000-4000-8000-0000000000c2"


def bash(cmd, code=0):
    return {"ev": "tool", "tool": "Bash", "target": cmd, "exit": code, **({"failed": True} if code else {})}


def edit(path):
    return {"ev": "tool", "tool": "Edit", "target": path}


@pytest.mark.parametrize("text,found", [
    ("All tests pass now. I pushed the branch.", ["tests pass", "pushed"]),
    ("The build is green and it is deployed to staging.", ["build is green", "deployed"]),
    ("Tests do not pass yet. Not pushed.", []),
    ("Next: make sure the tests pass, then push.", []),
    ("The parser was rewritten.", []),
])
def test_claims_are_found_in_affirmative_sentences_only(text, found):
    assert handoff.claimed(text) == found


def test_a_green_claim_after_a_failing_run_is_contradicted():
    got = handoff.check_claims("All tests pass.", [bash("python3 -m pytest -q", 0), bash("python3 -m pytest -q", 1)])
    assert got == [{"claim": "tests pass", "status": "contradicted",
                    "evidence": "the last `python3 -m pytest -q` exited 1"}]


def test_files_changed_after_the_run_void_the_claim_but_the_handoff_itself_does_not():
    tools = [bash("pytest -q"), edit("/p/src/app.py"), edit("/state/handoff.md")]
    assert handoff.check_claims("Tests pass.", tools)[0]["status"] == "contradicted"
    assert "changed after it (app.py" in handoff.check_claims("Tests pass.", tools)[0]["evidence"]
    assert handoff.check_claims("Tests pass.", tools[:1] + tools[2:], "/state/handoff.md")[0]["status"] == "confirmed"


def test_a_claim_with_no_command_behind_it_is_not_confirmed():
    got = handoff.check_claims("I pushed it and the build is green.", [bash("git status")])
    assert [g["status"] for g in got] == ["contradicted", "contradicted"]
    assert handoff.check_claims("Pushed.", [bash("git push origin main")])[0]["status"] == "confirmed"


def test_the_section_separates_confirmed_from_claimed():
    sec = handoff.claims_section(handoff.check_claims("Tests pass. Pushed.", [bash("pytest", 1), bash("git push")]))
    assert "- claimed, not confirmed: tests pass — the last `pytest` exited 1" in sec
    assert "- confirmed by the machine: pushed" in sec
    assert handoff.claims_section([]) == ""


def test_the_writer_is_shown_the_contradiction_once_and_the_successor_is_told(tmp_path):
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hello\n", "src/app.py": "x = 1\n"})
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("UserPromptSubmit", S1, prompt="fix the parser")
    drv.hook("PostToolUseFailure", S1, tool_name="Bash", tool_input={"command": "python3 -m pytest -q"},
             error="Exit code 1\n1 failed", is_interrupt=False)
    drv.transcript(S1).assistant(tokens_at(65))
    drv.hook("Stop", S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Current state": "The parser is fixed and all tests "
                                                                               "pass."}))
    out = drv.hook("Stop", S1, stop_hook_active=True)
    assert out and out["decision"] == "block", out
    assert "the handoff says tests pass, but the last `python3 -m pytest -q` exited 1" in out["reason"]
    assert [r["problems"] for r in drv.ledger(S1, ev="claims_contradicted")]
    out = drv.hook("Stop", S1, stop_hook_active=True)  # left as it is: verified, and marked for the successor
    assert drv.state(S1)["state"] in ("AWAITING_MANUAL_CLEAR", "ROTATING")
    drv.hook("SessionEnd", S1, reason="clear")
    drv.transcript(S2).assistant(tokens_at(3))
    text = drv.hook("SessionStart", S2, source="clear")["hookSpecificOutput"]["additionalContext"]
    assert "claimed, not confirmed: tests pass — the last `python3 -m pytest -q` exited 1" in text
    assert text.index("## Handoff (cp-001)") < text.index("## Machine facts") < text.index("claimed, not confirmed")


def test_a_confirmed_claim_does_not_hold_the_handoff(tmp_path):
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hello\n", "src/app.py": "x = 1\n"})
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("PostToolUse", S1, tool_input={"command": "python3 -m pytest -q"},
             tool_response={"stdout": "3 passed", "stderr": "", "interrupted": False})
    drv.transcript(S1).assistant(tokens_at(65))
    drv.hook("Stop", S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Current state": "All tests pass."}))
    drv.hook("Stop", S1, stop_hook_active=True)
    assert drv.state(S1)["state"] in ("AWAITING_MANUAL_CLEAR", "ROTATING")
    assert not drv.ledger(S1, ev="claims_contradicted")
