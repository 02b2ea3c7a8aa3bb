"""No self-certification: a handoff's claims checked against the tool record (claims.py, protocol, claim)."""

import pytest

from cc_continuity.rotation import handoff
from cc_continuity import config
from helpers.hookdriver import handoff_text, tokens_at

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
    assert [g["status"] for g in got] == ["unchecked", "unchecked"]  # claimed, not checked
    assert handoff.check_claims("Pushed.", [bash("git push origin main")])[0]["status"] == "confirmed"


def test_the_section_separates_confirmed_from_claimed():
    sec = handoff.claims_section(handoff.check_claims("Tests pass. Pushed.", [bash("pytest", 1), bash("git push")]))
    assert "- claimed, not confirmed: tests pass — the last `pytest` exited 1" in sec
    assert "- confirmed by the machine: pushed" in sec
    assert handoff.claims_section([]) == ""


def test_the_writer_is_shown_the_contradiction_once_and_the_successor_is_told(make_project):
    lad = make_project(files={"README.md": "hello\n", "src/app.py": "x = 1\n"})  # the ladder, in-process
    drv = lad.drv
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    lad.prompt(S1, "fix the parser")
    drv.inproc("PostToolUseFailure", S1, tool_name="Bash", tool_input={"command": "python3 -m pytest -q"},
               error="Exit code 1\n1 failed", is_interrupt=False)
    lad.said(S1, tokens_at(65))
    lad.request_handoff(S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Current state": "The parser is fixed and all tests "
                                                                               "pass."}))
    out = lad.stop(S1, stop_hook_active=True)
    assert out and out["decision"] == "block", out
    assert "the handoff says tests pass, but the last `python3 -m pytest -q` exited 1" in out["reason"]
    assert [r["problems"] for r in drv.ledger(S1, ev="claims_contradicted")]
    out = lad.stop(S1, stop_hook_active=True)  # left as it is: verified, and marked for the successor
    assert drv.state(S1)["state"] in ("AWAITING_MANUAL_CLEAR", "ROTATING")
    text = lad.clear(S1, S2).cleared_out["hookSpecificOutput"]["additionalContext"]
    assert "claimed, not confirmed: tests pass — the last `python3 -m pytest -q` exited 1" in text
    assert text.index("## Handoff (cp-001)") < text.index("## Machine facts") < text.index("claimed, not confirmed")


def test_a_confirmed_claim_does_not_hold_the_handoff(make_project):
    lad = make_project(files={"README.md": "hello\n", "src/app.py": "x = 1\n"})  # the ladder, in-process
    drv = lad.drv
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    drv.inproc("PostToolUse", S1, tool_input={"command": "python3 -m pytest -q"},
               tool_response={"stdout": "3 passed", "stderr": "", "interrupted": False})
    lad.said(S1, tokens_at(65))
    lad.request_handoff(S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Current state": "All tests pass."}))
    lad.stop(S1, stop_hook_active=True)
    assert drv.state(S1)["state"] in ("AWAITING_MANUAL_CLEAR", "ROTATING")
    assert not drv.ledger(S1, ev="claims_contradicted")


# -- issue 33: what a command's own exit status proves, and which sentences claim ------------------------

# (the record, oldest first; the claim; its status)
PROVING = [
    ([bash("python3 -m pytest -q")], "tests pass", "confirmed"),
    ([bash("pytest -q && echo ok")], "tests pass", "confirmed"),
    ([bash("cd src && make test")], "tests pass", "confirmed"),
    ([bash("make -C src test")], "tests pass", "confirmed"),
    ([bash("set -o pipefail; pytest -q | tail -3")], "tests pass", "confirmed"),
    ([bash("timeout 600 npm test")], "tests pass", "confirmed"),
    ([bash("go test ./...")], "tests pass", "confirmed"),
    ([bash("npm run test:unit")], "tests pass", "confirmed"),
    ([bash("poetry run pytest")], "tests pass", "confirmed"),
    ([bash("pytest -q"), bash("git status"), bash("cat src/app.py | grep x")], "tests pass", "confirmed"),
    ([bash("cargo build --release")], "build is green", "confirmed"),
    ([bash("make")], "build is green", "confirmed"),
    ([bash("npm run build")], "build is green", "confirmed"),
    ([bash("tsc -p .")], "build is green", "confirmed"),
    ([bash("git push origin main")], "pushed", "confirmed"),
    ([bash("git -C repo push")], "pushed", "confirmed"),
    ([bash("fly deploy")], "deployed", "confirmed"),
    ([bash("npm publish")], "deployed", "confirmed"),
]
NOT_PROVING = [
    ([bash("python3 -m pytest -q 2>&1 | tail -3")], "tests pass"),
    ([bash("pytest -q || true")], "tests pass"),
    ([bash("pytest -q; echo done")], "tests pass"),
    ([bash("pytest -q", 1), bash("pip install pytest")], "tests pass"),
    ([bash("echo pytest")], "tests pass"),
    ([bash("grep -rn pytest .")], "tests pass"),
    ([bash("pytest --collect-only")], "tests pass"),
    ([bash("pytest -q"), bash("sed -i s/a/b/ src/app.py")], "tests pass"),
    ([bash("pytest -q"), bash("git stash pop")], "tests pass"),
    ([bash("pytest -q"), bash("python3 gen.py")], "tests pass"),
    ([bash("pytest -q"), bash("echo x > src/app.py")], "tests pass"),
    ([bash("! pytest -q")], "tests pass"),
    ([bash("git push --dry-run")], "pushed"),
    ([bash("git push -n origin main")], "pushed"),
    ([bash("gh release view v1")], "deployed"),
    ([bash("git log --grep release")], "deployed"),
    ([bash("make clean")], "build is green"),
    ([bash("tsc --version")], "build is green"),
    ([bash("npm publish --dry-run")], "deployed"),
    ([bash("cargo build 2>&1 | tail -5")], "build is green"),
]


@pytest.mark.parametrize("tools, claim, status", PROVING, ids=[str(t[-1]["target"]) for t, _, _ in PROVING])
def test_a_command_whose_own_exit_status_shows_it_confirms_the_claim(tools, claim, status):
    text = {"tests pass": "All tests pass.", "build is green": "The build is green.", "pushed": "I pushed the branch.",
            "deployed": "It is deployed."}[claim]
    (got,) = handoff.check_claims(text, tools)
    assert (got["claim"], got["status"]) == (claim, status), got


@pytest.mark.parametrize("tools, claim", NOT_PROVING, ids=[str(t[-1]["target"]) for t, _ in NOT_PROVING])
def test_a_record_that_proves_nothing_never_confirms(tools, claim):
    text = {"tests pass": "All tests pass.", "build is green": "The build is green.", "pushed": "I pushed the branch.",
            "deployed": "It is deployed."}[claim]
    (got,) = handoff.check_claims(text, tools)
    assert got["claim"] == claim and got["status"] != "confirmed", got


CLAIMING = ["All tests pass.", "The tests pass now", "Tests passed locally with pytest.", "The build is green.",
            "I pushed the branch to origin.", "The service is deployed to staging.", "CI is green and tests pass."]
NOT_CLAIMING = [
    "None of the tests pass.", "The tests do not pass yet.", "Tests don't pass.", "No tests pass.",
    "Make sure tests pass.", "Merge when tests pass.", "Once tests pass, push.", "If the tests pass, deploy.",
    "Tests should pass after the fix.", "Ensure the build is green before merging.", "Do the tests pass?",
    "Verify that the tests pass.", "Nothing is pushed yet.", "It will be deployed tomorrow.",
    "Run the suite until the tests pass.", "Tests pass only when the cache is warm? unclear.",
]


@pytest.mark.parametrize("sentence", CLAIMING)
def test_an_affirmative_sentence_claims(sentence):
    assert handoff.claimed(sentence), sentence


@pytest.mark.parametrize("sentence", NOT_CLAIMING)
def test_a_negated_conditional_or_imperative_sentence_claims_nothing(sentence):
    assert handoff.claimed(sentence) == [], sentence
