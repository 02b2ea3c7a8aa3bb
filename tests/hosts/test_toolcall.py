"""One tool-call step for every host (cc_continuity/rotation/toolcall.py): each host the registry lists
(cc_continuity/hosts/__init__.py HOSTS) decides a tool call through it, so no host skips the snapshot's wait,
the hard ceiling, the handoff's write or the hold."""

import ast
import importlib
import inspect
import json
import os

import pytest

from cc_continuity import hosts
from cc_continuity.rotation import host as port
from cc_continuity.rotation import toolcall
from helpers.hookdriver import HookDriver, tokens_at
from test_codex_hooks import World

HOSTS_DIR = os.path.dirname(hosts.__file__)
PUSH = "git push origin main"  # a side effect a repeat of which is held: every host's fast path sends it to the step


def _named(ref):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


# A host folder still being built, by its issue: its port and tool-call step are checked as a row's are, but it is
# not a row of hosts.HOSTS until its install piece and doctor unit exist (tests/hosts/test_host_units.py).
BEING_BUILT: dict[str, tuple[str, str, str]] = {}  # (none now: Gemini CLI became a row with issue 36)
STEPS = {**hosts.HOSTS, **{name: row[:2] for name, row in BEING_BUILT.items()}}


def test_the_registry_lists_every_host_folder():
    folders = sorted(d for d in os.listdir(HOSTS_DIR)
                     if os.path.isdir(os.path.join(HOSTS_DIR, d)) and d != "__pycache__")
    assert sorted(STEPS) == folders
    assert not set(BEING_BUILT) & set(hosts.HOSTS)
    for name, (host, _) in STEPS.items():
        cls = _named(host)
        assert issubclass(cls, port.Host) and cls.name == name


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_hosts_tool_call_step_calls_the_one_step(name):
    fn = _named(STEPS[name][1])
    calls = [node.func for node in ast.walk(ast.parse(inspect.getsource(fn).lstrip()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
    assert any(f.attr == "before_tool" and isinstance(f.value, ast.Name) and f.value.id == "toolcall" for f in calls)


def _claude(tmp_path):
    sid = "c1c1c1c1-0000-4000-8000-0000000000c1"
    drv = HookDriver(tmp_path / "proj")
    drv.transcript(sid).assistant(tokens_at(10), tool_uses=[("Bash", {"command": PUSH})])
    drv.hook("SessionStart", sid, source="startup")
    drv.hook("PostToolUse", sid)  # the card is built
    with open(drv.transcript(sid).path) as f:
        tid = json.loads(f.read().splitlines()[-1])["message"]["content"][0]["id"]
    out = drv.inproc("PreToolUse", sid, tool_name="Bash", tool_input={"command": PUSH}, tool_use_id=tid)
    return json.dumps(out)


def _codex(tmp_path):
    w = World(tmp_path)
    w.call("SessionStart")
    text, _, _, _ = w.call("PreToolUse", tool_input={"command": PUSH})
    return text


def _gemini(tmp_path):
    from cc_continuity.hosts.gemini import hooks as gemini

    sid = "9e9e9e9e-0000-4000-8000-0000000000e9"
    proj = tmp_path / "proj"
    proj.mkdir()
    chats = tmp_path / "home" / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    session_file = chats / ("session-2026-12-07T12-00-%s.jsonl" % sid[:8])
    session_file.write_text('{"sessionId":"%s","startTime":"2026-12-07T12:00:00.000Z","kind":"main"}\n'
                            '{"id":"m1","type":"gemini","content":"ok","tokens":{"input":20000},"model":"m"}\n' % sid)
    base = {"session_id": sid, "transcript_path": str(session_file), "cwd": str(proj), "timestamp": "t"}
    gemini.answer("SessionStart", json.dumps(dict(base, hook_event_name="SessionStart", source="startup")))
    text, _, _, _ = gemini.answer("BeforeTool", json.dumps(dict(base, hook_event_name="BeforeTool",
                                                                tool_name="run_shell_command",
                                                                tool_input={"command": PUSH})))
    return text


RUN = {"claude": _claude, "codex": _codex, "gemini": _gemini}  # a host's PreToolUse, on its own payload's shape


@pytest.mark.parametrize("name", sorted(STEPS))
def test_every_hosts_pre_tool_use_is_decided_by_the_one_step(name, tmp_path, monkeypatch):
    seen = []

    def spy(ctx, n, sdir, rec, tool, reading):
        seen.append((ctx.host.name, tool.name, tool.command))
        return "deny", "held by the one step"

    monkeypatch.setattr(toolcall, "before_tool", spy)
    assert name in RUN, "a host in hosts.HOSTS with no run here: add how its PreToolUse is called"
    answer = RUN[name](tmp_path)
    assert seen == [(name, {"gemini": "run_shell_command"}.get(name, "Bash"), PUSH)]
    assert "held by the one step" in answer and '"deny"' in answer
