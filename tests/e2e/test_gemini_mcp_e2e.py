"""The real Gemini CLI 0.61 loading ``cc-continuity mcp`` from the user's settings (``mcpServers``) and the
scripted model calling its tool by the name it finds in the request (issue 39's first part)."""

import json
import os
import subprocess
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


def test_install_mcp_registers_the_server_gemini_calls_its_read_only_tool_unasked_and_uninstall_gives_back(
        gemini_box):
    """``cc-continuity install --agent gemini --mcp``: ``mcpServers.cc-continuity`` in the user's settings.json
    and one policy rule per read-only tool (mcpName + toolName); ``gemini -p`` calls the tool with no rule of
    the test's own; ``uninstall --agent gemini`` gives settings.json back byte for byte and removes the policy."""
    box = gemini_box()
    cc_home = os.path.join(box.root, "cchome")
    with open(box.settings_path, "rb") as f:
        before = f.read()
    said = box.install_ours(cc_home, config={"window": 200_000}, args=("--mcp",))
    assert "gemini: mcp: mcpServers.cc-continuity in" in said, said
    entry = box.settings["mcpServers"]["cc-continuity"]
    assert entry["command"] == os.path.join(cc_home, "bin", "cc-continuity") and entry["args"] == ["mcp"], entry
    with open(os.path.join(box.gemini_dir, "policies", "cc-continuity.toml")) as f:
        policy = f.read()
    assert policy.count('mcpName = "cc-continuity"') == 5 and 'toolName = "take_checkpoint"' not in policy
    box.model.set_scenario({"rules": [
        {"name": "call", "when": {"last_user_contains": TASK}, "times": 1, "extract_from": "tools",
         "extract": {"tool": r"(?m)^(\S*session_context)$"},
         "reply": [{"type": "tool_use", "name": "{tool}", "input": {}}],
         "then": [{"reply": "The session tool answered."}]}]})
    run = box.run_print(TASK, timeout=120, env={"CC_CONTINUITY_HOME": cc_home})
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    mains = box.model.main_requests()
    called = [r for r in mains if r.rule == "call"]
    assert called, [(r.rule, r.tools[6:]) for r in mains]
    answers = json.dumps([p for r in mains if r.seq > called[0].seq for p in r.parts("functionResponse")])
    assert "state" in answers and "-001" in answers, answers[:2000]
    env = dict(box.env(), CC_CONTINUITY_HOME=cc_home, PYTHONPATH=REPO)
    gone = subprocess.run([sys.executable, "-m", "cc_continuity", "uninstall", "--agent", "gemini"], cwd=box.project,
                          env=env, capture_output=True, text=True, timeout=300)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    with open(box.settings_path, "rb") as f:
        assert f.read() == before, gone.stdout
    assert not os.path.exists(os.path.join(box.gemini_dir, "policies", "cc-continuity.toml"))
