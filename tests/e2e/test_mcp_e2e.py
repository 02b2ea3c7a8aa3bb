"""The real Claude Code loading ``cc-continuity mcp`` at user scope (``claude mcp add --scope user``) and the
scripted model calling its tools by the names it finds in the request (issue 39's first part).

Our hooks are installed, so the session the MCP server answers for is the one Claude Code runs; the scripted
model takes the tool's name from the request it is sent (the tool list, or a deferred list behind a tool
search), calls it, and the next request carries the server's answer.  Also measured: what registering the
server adds to a ``claude -p`` start (its first request, with and without it).
"""

import json
import sys
import time

import pytest

from .common import installed_sandbox
from .harness import REPO_ROOT

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
    add = sb.run([sb.claude_bin, "mcp", "add", "--scope", "user", "cc-continuity",
                  "-e", "PYTHONPATH=%s" % REPO_ROOT, "-e", "CC_CONTINUITY_HOME=%s" % sb.cc_home,
                  "--", sys.executable, "-m", "cc_continuity", "mcp"], timeout=60)
    assert add.returncode == 0, add.stdout + add.stderr


def _first_request_s(sb):
    t0 = time.time()
    res = sb.run_print("hello there", ["--allowedTools", TOOL])
    assert res.returncode == 0, res.stderr[-2000:]
    firsts = [r for r in sb.model.requests() if r.time >= t0 and getattr(r, "kind", "main") == "main"]
    return firsts[0].time - t0


def test_claude_code_calls_our_mcp_tool_and_gets_this_sessions_answer(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, scenario)
    _register(sb)
    res = sb.run_print(TASK, ["--allowedTools", TOOL])
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
