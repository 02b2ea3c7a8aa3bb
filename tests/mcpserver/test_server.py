"""``cc-continuity mcp`` through the official SDK's own client over stdio (mcpserver/): every tool, a mutating one
denied and allowed, "this session" worked out on each call across a rotation, the server killed mid-call, and
the verb on a Python without the SDK.  The server is this test process's child, so the session whose agent
process is this test (``CLAUDE_PID``) is "this session"."""

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import pytest

pytest.importorskip("mcp")  # (the [mcp] extra; the dev extra installs it)

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp_types import Implementation  # noqa: E402

from cc_continuity import config, ledger, session  # noqa: E402
from cc_continuity.project import Project  # noqa: E402
from helpers.hookdriver import REPO, HookDriver, handoff_text, tokens_at  # noqa: E402

S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000b2"
TOOLS = ["checkpoint_bootstrap", "claim_checkpoint", "effect_begin", "effect_end", "list_checkpoints",
         "list_effects", "request_rotation", "session_context", "take_checkpoint", "verify_ledgers"]


def server_params(root):
    return StdioServerParameters(command=sys.executable, args=["-m", "cc_continuity", "mcp"], cwd=root,
                                 env=dict(os.environ, PYTHONPATH=REPO))


def calls(root, steps, client="cc-test"):
    """Run ``steps`` ([(tool, args)]) in one server; [(is_error, structured or text)], and the seconds from the
    server's start to its first answer."""
    out = []

    async def go():
        t0 = time.monotonic()
        async with stdio_client(server_params(root)) as (r, w):
            async with ClientSession(r, w, client_info=Implementation(name=client, version="1")) as s:
                await s.initialize()
                out.append(time.monotonic() - t0)
                listed = await s.list_tools()
                out.append(sorted(t.name for t in listed.tools))
                for tool, args in steps:
                    if callable(tool):
                        tool()
                        continue
                    res = await s.call_tool(tool, args)
                    text = res.content[0].text if res.content else ""
                    out.append((res.is_error, json.loads(text) if not res.is_error else text))
    anyio.run(go)
    return out


@pytest.fixture
def drv(tmp_path):
    d = HookDriver(tmp_path / "proj", claude_pid=os.getpid(), files={"README.md": "hi\n", "src/app.py": "x = 1\n"})
    d.transcript(S1).assistant(tokens_at(8))
    d.hook("SessionStart", S1, source="startup")
    d.hook("UserPromptSubmit", S1, prompt="build the parser")
    return d


def test_the_tools_listed_and_this_sessions_context_read(drv):
    started, listed, (err, ctx) = calls(drv.root, [("session_context", {})])
    assert listed == TOOLS and not err
    assert (ctx["session"], ctx["state"], ctx["thresholds"]) == ("proj-001", "ACTIVE",
                                                                 {"warn": 55, "rotate": 62, "hard": 72})
    print("server start to its first answer: %.2f s" % started)
    assert started < 10, "Codex gives an MCP server 10 s to start"


def test_this_session_is_worked_out_on_every_call_across_a_rotation(drv):
    """One server process: before the rotation it answers for proj-001, after the /clear for proj-002."""
    def rotate():
        drv.transcript(S1).assistant(tokens_at(65))
        drv.hook("Stop", S1)
        with open(drv.handoff_path(S1), "w") as f:
            f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}))
        drv.hook("Stop", S1, stop_hook_active=True)
        drv.hook("SessionEnd", S1, reason="clear")
        drv.hook("SessionStart", S2, source="clear")
    _, _, (e1, before), (e2, after), (e3, cps) = calls(drv.root, [
        ("session_context", {}), (rotate, None), ("session_context", {}), ("list_checkpoints", {})])
    assert not (e1 or e2 or e3)
    assert before["session"] == "proj-001" and after["session"] == "proj-002", (before, after)
    assert after["checkpoint_from"] == "cp-001", (after, drv.outcomes[-3:])
    [cp] = cps["checkpoints"]
    assert (cp["checkpoint"], cp["session"], cp["waiting"], cp["claimed_by"], cp["degraded"]) == (
        "cp-001", "proj-001", False, "proj-002", False)


def test_a_mutating_tool_is_denied_unless_the_users_own_config_names_the_client(drv, tmp_path):
    os.makedirs(os.path.join(drv.root, ".claude"), exist_ok=True)
    with open(os.path.join(drv.root, ".claude", "continuity.json"), "w") as f:
        json.dump({"mcp_clients": ["cc-test"]}, f)  # a repository's: not the user
    _, _, (err, text) = calls(drv.root, [("request_rotation", {})])
    assert err and "denied" in text and "'cc-test' is not in your mcp_clients" in text
    sdir = drv.sdir(S1)
    assert not session.load(sdir).get("rotate_requested")
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, (err, got) = calls(drv.root, [("request_rotation", {})], client="someone-else")
    assert err and "'someone-else' is not in your mcp_clients" in got


@pytest.mark.parametrize("where,mode", [("inside", 0o600), ("outside", 0o644)])
def test_a_repositorys_server_entry_cannot_point_the_allowlist_at_a_config_of_its_own(drv, tmp_path, where, mode):
    """A project's .mcp.json can start our server with any environment: a CC_CONTINUITY_HOME in the repository
    (its config.json naming the client), or one whose config git checked out 0644, allows nothing."""
    home = os.path.join(drv.root, ".evil") if where == "inside" else str(tmp_path / "elsewhere")
    os.makedirs(home, exist_ok=True)
    cfg = os.path.join(home, "config.json")
    with open(cfg, "w") as f:
        json.dump({"mcp_clients": ["cc-test"]}, f)
    os.chmod(cfg, mode)
    params = StdioServerParameters(command=sys.executable, args=["-m", "cc_continuity", "mcp"], cwd=drv.root,
                                   env=dict(os.environ, PYTHONPATH=REPO, CC_CONTINUITY_HOME=home))
    got = []

    async def go():
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w, client_info=Implementation(name="cc-test", version="1")) as sess:
                await sess.initialize()
                got.append(await sess.call_tool("take_checkpoint", {}))
    anyio.run(go)
    res = got[0]
    assert res.is_error and "may not be yours" in res.content[0].text, res.content[0].text
    assert ("inside the project" if where == "inside" else "mode 644") in res.content[0].text


def test_an_allowed_rotation_request_is_decided_by_the_harness_once(drv):
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, (e1, low) = calls(drv.root, [("request_rotation", {})])
    assert not e1 and low["granted"] is False and "below warn" in low["why"]
    drv.transcript(S1).assistant(tokens_at(57))
    drv.hook("PostToolUse", S1)  # the level is recorded: warn
    _, _, (e2, yes), (e3, again) = calls(drv.root, [("request_rotation", {}), ("request_rotation", {})])
    assert yes["granted"] is True and "end of this turn the handoff is asked for" in yes["what_happens"]
    assert again == {"granted": False, "why": "a rotation was asked for once in this session already"}
    assert session.load(drv.sdir(S1))["rotate_requested"] is True
    asked = [r for r in ledger.read(session.ledger_path(drv.sdir(S1))) if r["ev"] == "mcp_rotation_request"]
    assert [(r["by"], r["client"], r["granted"]) for r in asked] == [("agent", "cc-test", False),
                                                                     ("agent", "cc-test", True),
                                                                     ("agent", "cc-test", False)]
    out = drv.hook("Stop", S1)  # the harness acts at the turn's end
    assert "Handoff file (absolute path)" in out["reason"]


def test_bad_calls_get_a_clear_error(drv):
    _, _, (err, text) = calls(drv.root, [("no_such_tool", {})])
    assert err and "no_such_tool" in text


def test_a_server_killed_mid_call_loses_nothing_and_leaves_no_lock(drv):
    proj = Project.discover(drv.root)
    proc = subprocess.Popen([sys.executable, "-m", "cc_continuity", "mcp"], cwd=drv.root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=REPO))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cc-test", "version": "1"}}}
    proc.stdin.write((json.dumps(init) + "\n").encode())
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline().replace(b" ", b"")
    proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
    with proj.lock():  # the call waits on the project lock while the server is killed
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "request_rotation", "arguments": {}}}) + "\n").encode())
        proc.stdin.flush()
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    with proj.lock(timeout=2):  # nothing of the dead server holds it
        pass
    assert session.load(drv.sdir(S1))["state"] == "ACTIVE"
    assert ledger.verify(session.ledger_path(drv.sdir(S1)))[0]


def test_the_verb_on_a_python_without_the_sdk_says_how_to_get_it(drv):
    code = "import sys; sys.modules['mcp'] = None; from cc_continuity.cli import main; sys.exit(main(['mcp']))"
    res = subprocess.run([sys.executable, "-c", code], cwd=drv.root, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=REPO))
    assert res.returncode == 2 and "pip install 'cc-continuity[mcp]'" in res.stderr, res.stderr


@pytest.mark.parametrize("on,said", [
    (False, "the plugin's MCP server is off: run `cc-continuity configure --mcp-server on`"),
    (True, "the plugin's MCP server is on but its SDK is not built yet")])
def test_the_plugins_server_before_its_sdk_is_built_says_the_one_step(drv, tmp_path, on, said):
    """The marketplace plugin's entry starts the verb in every session; with no SDK in its data folder yet it
    exits at once (Claude Code marks the server failed, shown only in /mcp) and says why, for /mcp's detail."""
    config.update_global({"mcp_server": on})
    code = "import sys; sys.modules['mcp'] = None; from cc_continuity.cli import main; sys.exit(main(['mcp']))"
    res = subprocess.run([sys.executable, "-c", code], cwd=drv.root, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=REPO, CLAUDE_PLUGIN_DATA=str(tmp_path / "data")))
    assert res.returncode == 2 and said in res.stderr and res.stdout == "", res.stderr


def test_a_programs_post_routed_through_begin_and_end_is_held_on_a_repeat_after_a_crash(drv):
    """An agent posts from inside a program (invisible to the Bash classifier): through effect_begin and
    effect_end.  The server dies between the POST and its end; a new server refuses the same key, with the
    code only the user can give, and the scripted POST is never made twice.  A finished one is held too; an
    effect under another key goes."""
    from helpers import benchscript

    server = benchscript.load("continuity").Counter()
    try:
        def post():
            subprocess.run(["curl", "-s", "-X", "POST", "-d", "release v1 is out", server.url + "/notify"],
                           check=True, capture_output=True, timeout=30)
        config.update_global({"mcp_clients": ["cc-test"]})
        key = {"key": "announce release v1", "what": "POST the v1 announcement"}
        _, _, (e1, begun) = calls(drv.root, [("effect_begin", key), (post, None)])  # then the server dies: no end
        assert not e1 and begun["begun"] is True
        _, _, (e2, held) = calls(drv.root, [("effect_begin", key)])
        assert e2 and "may already have had its effect" in held and "(held: repeat %s)" % begun["code"] in held, held
        assert sum(server.counts.values()) == 1
        other = {"key": "announce release v2", "what": "POST the v2 announcement"}
        _, _, (e3, b2), (e4, ended), (e5, again) = calls(drv.root, [
            ("effect_begin", other), (post, None), ("effect_end", {"key": other["key"], "ok": True}),
            ("effect_begin", other)])
        assert not (e3 or e4) and ended == {"ended": True, "token": b2["token"], "ok": True,
                                            "recorded_as": "reported by the agent"}
        assert e5 and "already had its effect" in again
        assert sum(server.counts.values()) == 2
        recs = [json.loads(x) for x in open(os.path.join(Project.discover(drv.root).dir, "effects.jsonl"))]
        assert all(r["by"] == "agent" and r["client"] == "cc-test" for r in recs) and len(recs) == 3
        assert not any("release" in json.dumps(r) for r in recs if r["ph"] == "done")  # digests, not the text
    finally:
        server.close()


def test_effect_tools_are_guarded_and_check_their_arguments(drv):
    _, _, (err, text) = calls(drv.root, [("effect_begin", {"key": "k", "what": "w"})])
    assert err and "denied" in text
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, (e1, t1), (e2, t2), (e3, t3) = calls(drv.root, [("effect_begin", {"key": "  ", "what": "w"}),
                                                         ("effect_end", {"key": "never begun", "ok": True}),
                                                         ("effect_end", {"key": "k", "ok": "maybe"})])
    assert e1 and "key must be a non-empty string" in t1
    assert e2 and "no begun effect with this key" in t2
    assert e3 and "ok" in t3


def test_a_waiting_checkpoint_is_revalidated_and_its_bootstrap_read_without_claiming_it(drv):
    drv.transcript(S1).assistant(tokens_at(65))
    drv.hook("Stop", S1)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}))
    drv.hook("Stop", S1, stop_hook_active=True)
    with open(os.path.join(drv.root, "src", "app.py"), "a") as f:
        f.write("y = 2\n")  # the work tree moved on since the checkpoint
    _, _, (e1, cps), (e2, boot), (e3, missing) = calls(drv.root, [
        ("list_checkpoints", {}), ("checkpoint_bootstrap", {"checkpoint": "cp-001"}),
        ("checkpoint_bootstrap", {"checkpoint": "cp-999"})])
    assert not (e1 or e2) and e3 and "no checkpoint 'cp-999'" in missing
    [cp] = cps["checkpoints"]
    assert cp["waiting"] is True and cp["revalidation"]["verdict"] and cp["revalidation"]["changed_count"] >= 1, cp
    assert boot["claimed"] is False and "cp-001" in boot["bootstrap"] and "## Next steps" in boot["bootstrap"]
    rec = session.load(drv.sdir(S1))
    assert rec["state"] in session.CLAIMABLE and not rec.get("successor")  # read, not claimed
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, (e4, got), (e5, again), (e6, after) = calls(drv.root, [
        ("claim_checkpoint", {"checkpoint": "cp-001"}), ("claim_checkpoint", {"checkpoint": "cp-001"}),
        ("list_checkpoints", {})])
    assert not e4 and got["claimed"] is True and got["session"] == "proj-002" and "cp-001" in got["bootstrap"]
    assert e5 and "cp-001 is claimed already by proj-002" in again
    assert after["checkpoints"][0]["claimed_by"] == "proj-002" and after["checkpoints"][0]["waiting"] is False
    client = session.load(drv.sdir(number=2))
    assert (client["state"], client["source"], client["host"], client["checkpoint_from"]) == (
        "ENDED", "mcp", "mcp:cc-test", "cp-001")


def test_only_the_user_on_a_terminal_lets_a_held_repeat_through(drv):
    """The hold's code, typed again by the user on a terminal (a pty here), lets one repeat through; the same verb
    from an agent's shell (no terminal) is refused, and the hold stays."""
    import pty

    config.update_global({"mcp_clients": ["cc-test"]})
    key = {"key": "deploy v3 to prod", "what": "deploy v3"}
    _, _, (_, begun), (e1, held) = calls(drv.root, [("effect_begin", key), ("effect_begin", key)])
    assert e1 and "repeat %s" % begun["code"] in held
    env = dict(os.environ, PYTHONPATH=REPO)
    agent = subprocess.run([sys.executable, "-m", "cc_continuity", "repeat", begun["code"]], cwd=drv.root, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert agent.returncode == 2 and "only you can lift a hold, on a terminal" in agent.stderr
    _, _, (e2, _) = calls(drv.root, [("effect_begin", key)])
    assert e2  # still held
    master, slave = pty.openpty()
    user = subprocess.Popen([sys.executable, "-m", "cc_continuity", "repeat", begun["code"]], cwd=drv.root, env=env,
                            stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    seen = b""
    while b"Type the code again" not in seen:
        seen += os.read(master, 4096)
    os.write(master, (begun["code"] + "\n").encode())
    assert user.wait(30) == 0
    os.close(master)
    _, _, (e3, again), (e4, _) = calls(drv.root, [("effect_begin", key), ("effect_begin", key)])
    assert not e3 and again["begun"] is True  # one repeat let through ...
    assert e4  # ... and only one


def test_the_effect_records_are_listed_with_who_recorded_them_and_their_outcome(drv):
    """A Bash effect the hooks recorded (the machine's) beside two an agent routed through the server: one ended,
    one begun and never ended (uncertain); the agent's are shown as reported, never as seen."""
    drv.hook("PreToolUse", S1, tool_name="Bash", tool_input={"command": "gh release create v9"}, tool_use_id="tu-1")
    drv.hook("PostToolUse", S1, tool_name="Bash", tool_input={"command": "gh release create v9"}, tool_use_id="tu-1",
             tool_response={"stdout": "", "stderr": "", "interrupted": False})
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, _, _, _, (err, got) = calls(drv.root, [
        ("effect_begin", {"key": "mail 1", "what": "send the invoice mail"}), ("effect_end", {"key": "mail 1", "ok": True}),
        ("effect_begin", {"key": "mail 2", "what": "send the reminder"}), ("list_effects", {})], client="cc-test")
    assert not err
    rows = got["effects"]
    assert [(r["what"], r["outcome"], r["recorded_by"]) for r in rows] == [
        ("send the reminder", "uncertain", "agent (reported)"), ("send the invoice mail", "done", "agent (reported)"),
        (rows[2]["what"], "done", "machine")], rows
    assert "release" in rows[2]["what"] and rows[1]["outcome_reported_by_agent"] is True
    assert all(r["session"] == "proj-001" for r in rows)


def test_a_checkpoint_taken_through_the_server_is_the_agents_and_touches_no_branch(drv):
    import subprocess as sp

    head = sp.run(["git", "rev-parse", "HEAD"], cwd=drv.root, capture_output=True, text=True).stdout
    with open(os.path.join(drv.root, "src", "app.py"), "a") as f:
        f.write("z = 3\n")
    _, _, (e1, denied) = calls(drv.root, [("take_checkpoint", {"message": "before the migration"})])
    assert e1 and "denied" in denied
    config.update_global({"mcp_clients": ["cc-test"]})
    _, _, (e2, got) = calls(drv.root, [("take_checkpoint", {"message": "before the migration"})])
    assert not e2 and got["snapshot"] == "taken" and "/manual/001-" in got["ref"], got
    assert got["recorded_as"] == "asked for by the agent" and os.path.isdir(got["facts"])
    shown = sp.run(["git", "show", "%s:src/app.py" % got["ref"]], cwd=drv.root, capture_output=True, text=True)
    assert "z = 3" in shown.stdout
    assert sp.run(["git", "rev-parse", "HEAD"], cwd=drv.root, capture_output=True, text=True).stdout == head
    assert "src/app.py" in sp.run(["git", "status", "--porcelain"], cwd=drv.root, capture_output=True,
                                  text=True).stdout  # the index and the tree as they were
    line = [r for r in ledger.read(session.ledger_path(drv.sdir(S1))) if r["ev"] == "manual_checkpoint"][-1]
    assert (line["by"], line["message"], line["ref"]) == ("agent", "before the migration", got["ref"])
