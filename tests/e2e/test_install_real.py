"""Issue 3 against the real Claude Code binary: install for real, then `claude -p` runs our hooks.

No hand-written settings: `cc-continuity install` merges into the sandbox HOME's
settings.json (which already holds the sandbox's permissions), and the session
ledger proves that SessionStart, UserPromptSubmit and Stop ran.  Then `doctor`
is green for everything an install controls.
"""

import glob
import json
import os


def _ledger_events(cc_home):
    events = []
    for path in sorted(glob.glob(os.path.join(cc_home, "projects", "*", "sessions", "*", "ledger.jsonl"))):
        with open(path) as f:
            events += [json.loads(line)["ev"] for line in f]
    return events


def test_install_then_claude_print_runs_our_hooks_and_doctor_is_green(sandbox_factory):
    sb = sandbox_factory(scenario={"default": {"reply": [{"type": "text", "text": "hello from the scripted model"}]}})
    before = sb.settings()
    r = sb.cli("install", "--no-wrapper", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    after = sb.settings()
    assert after["permissions"] == before["permissions"], "install must keep the user's keys"
    assert set(after["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                                   "PreCompact", "SessionEnd"}

    p = sb.run_print("hello")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "hello from the scripted model" in p.stdout

    events = _ledger_events(sb.cc_home)
    assert "session_start" in events, events
    assert "prompt" in events, events
    assert "stop" in events, events
    from cc_continuity import ledger

    for path in glob.glob(os.path.join(sb.cc_home, "projects", "*", "sessions", "*", "ledger.jsonl")):
        assert ledger.verify(path)[0]
    v = sb.cli("verify")
    assert v.returncode == 0, v.stdout + v.stderr

    with open(os.path.join(sb.cc_home, "logs", "hooks.log")) as f:
        log = f.read()
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert event in log
    assert "error" not in log, log

    d = sb.cli("doctor", "--json")
    results = {r["name"]: r for r in json.loads(d.stdout)}
    # Everything install is responsible for must be green in a fresh sandbox.
    for name in ("hooks", "statusline", "skills", "app", "hook-probe", "trust"):
        matching = [r for n, r in results.items() if n.startswith(name)]
        assert matching, (name, sorted(results))
        for res in matching:
            assert res["ok"], res
