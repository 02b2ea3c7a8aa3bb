"""The MCP server in the plugin forms (issue 39): the marketplace plugin's own entry (``.mcp.json``), whose SDK is
built in the plugin's data folder only once the user turned the server on, on an interpreter with none of our
packages; and ``install --plugin --mcp``, whose plugin carries an entry to the app copy.  The scripted model
calls the tool by the name it finds in the request."""

import glob
import json
import os
import time

import pytest

from cc_continuity.rehearse import MODEL

from .test_marketplace_e2e import REPLY, install_from, market, package_less  # noqa: F401 (market: a fixture)

pytestmark = pytest.mark.e2e
pytest.importorskip("mcp")

TASK = "Use the session tool and report"
TOOL = "mcp__plugin_cc-continuity_cc-continuity__session_context"
SERVER = "plugin:cc-continuity:cc-continuity"
DATA = os.path.join(".claude", "plugins", "data", "cc-continuity-cc-continuity")


def scenario(project=None):
    return {"rules": [
        {"name": "call", "when": {"last_user_contains": TASK}, "times": 1, "extract_from": "any",
         "extract": {"tool": r"(mcp__plugin_cc-continuity_cc-continuity__session_context)"},
         "reply": [{"type": "text", "text": "Asking cc-continuity."}, {"type": "tool_use", "name": "{tool}", "input": {}}],
         "then": [{"reply": "The session tool answered."}]}],
        "default": REPLY["default"]}


def init_servers(stdout):
    for line in stdout.splitlines():
        if line.startswith("{") and '"subtype":"init"' in line.replace(" ", ""):
            return json.loads(line).get("mcp_servers") or []
    raise AssertionError("no init event: %s" % stdout[:2000])


def answered(sb):
    """The tool call's answer, as the next request carries it (a JSON text)."""
    mains = [r for r in sb.model.requests() if getattr(r, "kind", "main") == "main"]
    called = [r for r in mains if r.rule == "call"]
    assert called, [(r.rule, r.tools[:5]) for r in mains]
    after = [r for r in mains if r.seq > called[0].seq]
    assert after, "no request after the tool call"
    return json.dumps([b for m in after[0].messages if m.get("role") == "user" and isinstance(m.get("content"), list)
                       for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"])


def sdk_env(sb, timeout=420):
    data = os.path.join(sb.home, DATA)

    def done():
        for path in glob.glob(os.path.join(data, "envs", "*", ".complete")):
            with open(path) as f:
                info = json.load(f)
            if glob.glob(os.path.join(os.path.dirname(path), "lib", "python*", "site-packages", "mcp")):
                return dict(info, path=os.path.dirname(path))
        failed = glob.glob(os.path.join(data, "envs", "*.failed"))
        assert not failed, open(failed[0]).read()
        return None
    return sb.wait_for(done, timeout, what="the MCP server's SDK in the plugin's data folder")


def test_the_marketplace_plugins_server_is_off_until_turned_on_then_its_sdk_is_built_and_it_connects(
        sandbox_factory, market, tmp_path):
    """Off (the default): a session works as before and starts no sooner or later; Claude Code reports the
    plugin's server failed (only /mcp shows it) and nothing is built.  ``configure --mcp-server on``: the next
    session's start builds the SDK in the plugin's data folder, and Claude Code's own health check connects to
    the server.  (A session within 15 minutes of the failure does not try it again: Claude Code caches a
    plugin server's failure; /mcp reconnects it at once.  So the tool call is made in the other form's test.)"""
    first, _ = package_less(tmp_path, "venv-base")
    sb = sandbox_factory(scenario=scenario(), python_first=first)
    install_from(sb, market("dir"))
    t0 = time.time()
    off = sb.run_print("hello", ["--output-format", "stream-json", "--verbose"])
    assert off.returncode == 0 and "hello from the scripted model" in off.stdout, off.stderr[-2000:]
    print("off: %s, the session's first request %.2f s after its start" % (
        init_servers(off.stdout), sb.model.requests()[0].time - t0))
    assert {s["name"]: s["status"] for s in init_servers(off.stdout)} == {SERVER: "failed"}
    data = os.path.join(sb.home, DATA)
    time.sleep(3)
    assert not glob.glob(os.path.join(data, "envs", "*", "lib", "python*", "site-packages", "mcp")), \
        "the SDK was built before the user turned the server on"
    on = sb.cli("configure", "--mcp-server", "on")
    assert on.returncode == 0, on.stderr
    sb.run_print("hello again")  # its SessionStart starts the SDK's build
    built = sdk_env(sb)
    print("the SDK in the plugin's data folder: %.0f MB, %.0f s (%s)" % (built["bytes"] / 1e6, built["seconds"],
                                                                         built["installer"]))
    listed = sb.run([sb.claude_bin, "mcp", "list"], timeout=120)
    line = [ln for ln in listed.stdout.splitlines() if ln.startswith(SERVER)]
    assert line and "Connected" in line[0], listed.stdout + listed.stderr


def test_install_plugin_mcp_carries_the_entry_and_its_read_only_tools_run_unasked(sandbox_factory):
    sb = sandbox_factory(model_name=MODEL, scenario=scenario())
    before = sb.settings()
    p = sb.cli("install", "--no-wrapper", "--plugin", "--mcp", timeout=300)
    assert p.returncode == 0 and "/plugin/.mcp.json" in p.stdout, p.stdout + p.stderr
    assert TOOL in sb.settings()["permissions"]["allow"]
    res = sb.run_print(TASK)  # no --allowedTools: install's rule names the plugin's tool
    assert res.returncode == 0, res.stderr[-3000:]
    text = answered(sb)
    assert '\\"state\\"' in text and "-001" in text and "is_error\": true" not in text, text[:2000]
    off = sb.cli("install", "--no-wrapper", "--no-mcp", timeout=300)
    assert off.returncode == 0 and TOOL not in json.dumps(sb.settings()), off.stdout
    assert not os.path.exists(os.path.join(sb.cc_home, "plugin", ".mcp.json"))
    gone = sb.cli("uninstall", timeout=300)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    after = {k: v for k, v in sb.settings().items() if v not in ({}, [])}  # (Claude Code's emptied plugin keys)
    assert after == before, (after, before)
