"""The real Gemini CLI 0.61 loading ``cc-continuity mcp`` from the user's settings (``mcpServers``) and the
scripted model calling its tool by the name it finds in the request (issue 39's first part)."""

import json
import os
import sys

import pytest

from helpers import REPO

pytestmark = pytest.mark.gemini
pytest.importorskip("mcp")

TASK = "Use the session tool and report"


def test_gemini_calls_our_mcp_tool_and_gets_this_sessions_answer(gemini_box):
    box = gemini_box()
    cc_home = os.path.join(box.root, "cchome")
    box.install_ours(cc_home, config={"window": 200_000})
    box.model.set_scenario({"rules": [
        {"name": "call", "when": {"last_user_contains": TASK}, "times": 1, "extract_from": "tools",
         "extract": {"tool": r"(?m)^(\S*session_context)$"},
         "reply": [{"type": "tool_use", "name": "{tool}", "input": {}}],
         "then": [{"reply": "The session tool answered."}]}]})
    box.settings["mcpServers"] = {"cc-continuity": {
        # (Gemini refuses PYTHONPATH in a server's env as "dangerous": the checkout goes on sys.path in the code)
        "command": sys.executable, "args": ["-c", "import sys; sys.path.insert(0, %r); from cc_continuity.cli "
                                                  "import main; sys.exit(main(['mcp']))" % REPO],
        "cwd": box.project, "env": {"CC_CONTINUITY_HOME": cc_home}}}  # (no blanket trust: the rule below)
    box.write_settings()
    with open(os.path.join(box.gemini_dir, "policies", "user-mcp.toml"), "w") as f:  # a narrow allow: one tool
        f.write('[[rule]]\nmcpName = "cc-continuity"\ntoolName = "session_context"\ndecision = "allow"\n'
                'priority = 200\n')
    run = box.run_print(TASK, timeout=120, env={"CC_CONTINUITY_HOME": cc_home})
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    mains = box.model.main_requests()
    called = [r for r in mains if r.rule == "call"]
    assert called, [(r.rule, len(r.tools), r.tools[6:]) for r in mains]
    answers = [p for r in mains if r.seq > called[0].seq for p in r.parts("functionResponse")]
    text = json.dumps(answers)
    print("the tool's name in Gemini's request: %s" % [t for t in called[0].tools if "session_context" in t])
    assert '\\"state\\"' in text or '"state"' in text, text[:2000]
