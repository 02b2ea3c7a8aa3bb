"""The real Claude Code loading ``cc-continuity mcp`` as ``cc-continuity install --mcp`` registers it (``claude
mcp add --scope user``, the read-only tools allowed in settings.json) and the scripted model calling its tools
by the names it finds in the request, with no ``--allowedTools``: the install's narrow rule lets it run.

Our hooks are installed, so the session the MCP server answers for is the one Claude Code runs; the scripted
model takes the tool's name from the request it is sent (the tool list, or a deferred list behind a tool
search), calls it, and the next request carries the server's answer.  Also measured: what registering the
server adds to a ``claude -p`` start (its first request, with and without it).
"""

import json
import os
import time

import pytest

from .common import installed_sandbox

pytestmark = pytest.mark.e2e
pytest.importorskip("mcp")

TASK = "Use the session tool and report"
TOOL = "mcp__cc-continuity__session_context"


def scenario(project):
    return {"rules": [
        {"name": "call", "when": {"last_user_contains": TASK}, "times": 1, "extract_from": "any",
         "extract": {"tool": r"(mcp__cc-continuity__session_context)"},
         "reply": [{"type": "text", "text": "Asking cc-continuity."},
                   {"type": "tool_use", "name": "{tool}", "input": {}}],
         "then": [{"reply": "The session tool answered."}]},
    ]}


def _register(sb):
    add = sb.cli("install", "--no-wrapper", "--mcp", timeout=300)
    assert add.returncode == 0, add.stdout + add.stderr
    assert "mcp: the server cc-continuity at Claude Code's user scope added" in add.stdout, add.stdout
    return add


def _user_entry(sb):
    with open(os.path.join(sb.home, ".claude.json")) as f:
        return (json.load(f).get("mcpServers") or {}).get("cc-continuity")


def _first_request_s(sb):
    t0 = time.time()
    res = sb.run_print("hello there")
    assert res.returncode == 0, res.stderr[-2000:]
    firsts = [r for r in sb.model.requests() if r.time >= t0 and getattr(r, "kind", "main") == "main"]
    return firsts[0].time - t0


def test_claude_code_calls_our_mcp_tool_and_gets_this_sessions_answer(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, scenario)
    _register(sb)
    res = sb.run_print(TASK)  # no --allowedTools: the install's rule for the read-only tools
    assert res.returncode == 0, res.stderr[-3000:]
    mains = [r for r in sb.model.requests() if getattr(r, "kind", "main") == "main"]
    called = [r for r in mains if r.rule == "call"]
    assert called, [(r.rule, r.tools[:5]) for r in mains]
    print("the tool was %s" % ("in the request's tool list" if TOOL in called[0].tools else
                               "named only in the request's text (deferred behind a tool search)"))
    after = [r for r in mains if r.seq > called[0].seq]
    assert after, "no request after the tool call"
    results = [b for m in after[0].messages if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    text = json.dumps(results)
    assert '\\"state\\"' in text and "-001" in text and "is_error\": true" not in text, text[:2000]


def test_what_the_server_adds_to_a_sessions_start(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: {"rules": []})
    without = [_first_request_s(sb) for _ in range(3)]
    _register(sb)
    with_mcp = [_first_request_s(sb) for _ in range(3)]
    print("claude -p start to its first request: without the MCP server %s s, with it %s s" % (
        ", ".join("%.2f" % x for x in without), ", ".join("%.2f" % x for x in with_mcp)))
    assert max(with_mcp) < 30


def test_install_mcp_registers_a_server_claude_code_connects_to_and_uninstall_takes_it_out_exactly(sandbox_factory):
    sb = sandbox_factory(model_name="claude-sonnet-4-5")
    with open(os.path.join(sb.home, ".claude", "settings.json"), "rb") as f:
        before = f.read()
    _register(sb)
    entry = _user_entry(sb)
    assert entry["command"] == os.path.join(sb.cc_home, "bin", "cc-continuity") and entry["args"] == ["mcp"], entry
    assert TOOL in sb.settings()["permissions"]["allow"]
    assert not [r for r in sb.settings()["permissions"]["allow"] if "take_checkpoint" in r or r.endswith("__*")]
    listed = sb.run([sb.claude_bin, "mcp", "list"], timeout=120)
    print(listed.stdout)
    assert "cc-continuity" in listed.stdout and "Connected" in listed.stdout, listed.stdout + listed.stderr
    doctor = sb.cli("doctor", timeout=300)
    row = [line for line in doctor.stdout.splitlines() if "mcp-server" in line]
    print(row)
    assert row and row[0].lstrip().startswith("ok") and "lists its 10 tools" in row[0], doctor.stdout
    again = sb.cli("install", "--no-wrapper", timeout=300)  # left out: as the last install left it
    assert "user scope unchanged" in again.stdout, again.stdout
    off = sb.cli("install", "--no-wrapper", "--no-mcp", timeout=300)
    assert "user scope removed" in off.stdout and "the server is off (--no-mcp)" in off.stdout and _user_entry(sb) is None, off.stdout
    assert TOOL not in json.dumps(sb.settings()) and not os.path.exists(os.path.join(sb.cc_home, "mcp-lib"))
    _register(sb)
    gone = sb.cli("uninstall", timeout=300)
    assert gone.returncode == 0 and "user scope removed" in gone.stdout, gone.stdout + gone.stderr
    assert _user_entry(sb) is None and not os.path.exists(os.path.join(sb.cc_home, "mcp-lib"))
    with open(os.path.join(sb.home, ".claude", "settings.json"), "rb") as f:
        assert f.read() == before
