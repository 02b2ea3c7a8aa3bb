"""Gemini CLI's hook entry (hosts/gemini/hooks.py) on Gemini's own payloads: what each event does that is
Gemini's (a typed /clear's dropped context, our own block coming back as a prompt, SessionEnd fired more
than once, the handoff's draft in Gemini's temp folder), and the entry as installed: fail-open in a real
process.  The whole rotation against the real binary: tests/e2e/test_gemini_rotation_e2e.py."""

import json
import os
import shlex
import subprocess
import sys

import pytest

from cc_continuity import ledger, session
from cc_continuity.hosts.gemini import generations, hooks, host
from cc_continuity.install import settings
from helpers import REPO

SID = "9e9e9e9e-0000-4000-8000-0000000000e9"
SID2 = "9e9e9e9e-0000-4000-8000-0000000000f2"


class World:
    """A project and Gemini's files for it in this test's HOME; ``call`` runs the entry in-process."""

    def __init__(self, tmp_path):
        self.proj = tmp_path / "proj"
        self.proj.mkdir()
        subprocess.run(["git", "init", "-q", str(self.proj)], check=True)
        self.chats = tmp_path / "home" / ".gemini" / "tmp" / "proj" / "chats"
        self.chats.mkdir(parents=True)

    def session_file(self, sid=SID, tokens=20_000):
        path = self.chats / ("session-2026-12-07T12-00-%s.jsonl" % sid[:8])
        if not path.exists():
            path.write_text('{"sessionId":"%s","startTime":"2026-12-07T12:00:00.000Z","kind":"main"}\n' % sid)
        with open(path, "a") as f:
            f.write(json.dumps({"id": "m", "type": "gemini", "content": "ok", "tokens": {"input": tokens},
                                "model": "gemini-2.5-flash"}) + "\n")
        return str(path)

    def payload(self, event, sid=SID, **fields):
        return json.dumps(dict({"session_id": sid, "transcript_path": self.session_file(sid, fields.pop("tokens", 20_000)),
                                "cwd": str(self.proj), "timestamp": "t", "hook_event_name": event}, **fields))

    def call(self, event, sid=SID, **fields):
        """As the runner does: the answer, then what it carried noted as sent (only when it answered)."""
        text, outcome, key, after = hooks.answer(event, self.payload(event, sid, **fields))
        if text is not None:
            for then in after:
                then()
        return text, outcome, key, after

    def record(self, sid=SID):
        (rec,) = [session.load(os.path.dirname(p)) for p in self._states() if session.load(os.path.dirname(p))
                  ["session_id"] == sid]
        return rec

    def ledger(self, sid=SID):
        (sdir,) = [os.path.dirname(p) for p in self._states() if session.load(os.path.dirname(p))["session_id"] == sid]
        return ledger.read(session.ledger_path(sdir))

    def _states(self):
        base = os.path.join(os.environ["CC_CONTINUITY_HOME"], "projects")
        return [os.path.join(base, d, "sessions", n, "state.json") for d in os.listdir(base)
                for n in os.listdir(os.path.join(base, d, "sessions"))]


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def test_session_end_fired_again_is_one_line(world):
    world.call("SessionStart", source="startup")
    for _ in range(3):  # the TUI's /quit fires it three times
        assert world.call("SessionEnd", reason="exit")[0] is None
    assert [r["reason"] for r in world.ledger() if r["ev"] == "session_end"] == ["exit"]
    assert world.record()["state"] == session.ENDED


def test_our_own_block_coming_back_as_a_prompt_is_not_the_users(world, monkeypatch):
    world.call("SessionStart", source="startup")
    assert world.call("BeforeAgent", prompt="build the parser")[1] == "ok"
    reason = "cc-continuity: the handoff at /x is not complete yet (check 1 of 3)."
    hooks._say(generations.key(SID), reason)
    text, outcome, _, _ = world.call("BeforeAgent", prompt=reason)
    assert (text, outcome) == (None, "our own request")
    assert [r["text"] for r in world.ledger() if r["ev"] == "prompt"] == ["build the parser"]
    assert world.call("BeforeAgent", prompt=reason + " (typed by the user)")[1] == "ok"  # not ours: recorded


def test_a_typed_clear_drops_the_bootstrap_so_the_next_prompt_carries_it(world):
    """Gemini drops SessionStart's additionalContext after a typed /clear: the claim is made there, the
    bootstrap goes out with the successor's first prompt (BeforeAgent), once."""
    world.call("SessionStart", source="startup")
    rec = world.record()
    sdir = os.path.join(os.environ["CC_CONTINUITY_HOME"], "projects", os.listdir(
        os.path.join(os.environ["CC_CONTINUITY_HOME"], "projects"))[0], "sessions", "%03d" % rec["number"])
    # a verified checkpoint waiting for the user's own /clear, as the ladder leaves one
    from helpers.ladder import HANDOFF

    os.makedirs(session.checkpoint_dir(sdir), exist_ok=True)
    with open(session.handoff_path(sdir), "w") as f:
        f.write(HANDOFF)
    rec.update(state=session.AWAITING_MANUAL_CLEAR, checkpoint={"id": "cp-001"}, driver="manual")
    session.save(sdir, rec)
    with open(session.manifest_path(sdir), "w") as f:
        json.dump({"id": "cp-001", "git": {}, "handoff": {"validation": "valid"}}, f)
    world.call("SessionEnd", reason="clear")
    text, outcome, _, after = world.call("SessionStart", SID2, source="clear")
    assert outcome.startswith("claimed cp-001") and after == []
    assert text is None or "additionalContext" not in text
    first, _, _, _ = world.call("BeforeAgent", SID2, prompt="go on")
    boot = json.loads(first)["hookSpecificOutput"]["additionalContext"]
    assert boot.startswith("Continuing from cp-001")
    again, _, _, _ = world.call("BeforeAgent", SID2, prompt="and more")
    assert again is None or "Continuing from cp-001" not in again


def test_the_handoffs_draft_is_taken_only_as_a_regular_file_of_ours(world, tmp_path):
    world.call("SessionStart", source="startup")
    n = world.record()["number"]
    draft = hooks.draft_path(world.session_file(), n)
    assert draft == str(world.chats.parent / ("continuity-handoff-%03d.md" % n))
    assert hooks.draft_path("/elsewhere/session.jsonl", n) is None and hooks.draft_path(None, n) is None
    secret = tmp_path / "secret.txt"
    secret.write_text("not a handoff")
    os.symlink(secret, draft)
    sdir = os.path.dirname(world._states()[0])
    ctx = host.GeminiContext("AfterAgent", json.loads(world.payload("AfterAgent", prompt="p", stop_hook_active=False)))
    assert hooks._take_draft(ctx, n, sdir, draft) is False  # a link is not followed
    assert not os.path.exists(session.handoff_path(sdir)) and os.path.islink(draft)
    os.unlink(draft)
    with open(draft, "w") as f:
        f.write("# Handoff\n")
    assert hooks._take_draft(ctx, n, sdir, draft) is True
    assert not os.path.exists(draft) and open(session.handoff_path(sdir)).read() == "# Handoff\n"
    with open(draft, "wb") as f:
        f.write(b"x" * (hooks.MAX_DRAFT + 1))
    assert hooks._take_draft(ctx, n, sdir, draft) is False and os.path.exists(draft)  # too big: left, not taken
    assert open(session.handoff_path(sdir)).read() == "# Handoff\n"
    os.unlink(draft)
    assert os.stat(session.handoff_path(sdir)).st_mode & 0o777 == 0o600
    assert [r["ev"] for r in ledger.read(session.ledger_path(sdir))][-2:] == ["handoff_taken", "handoff_draft_refused"]


def test_generations_key_a_session_across_its_silent_clears():
    assert (generations.key(SID), generations.generation(SID)) == (SID, 1)
    assert generations.next_generation(SID) == 2 and generations.key(SID) == SID + "_g2"
    assert generations.next_generation(SID) == 3 and generations.key(SID, 2) == SID + "_g2" and generations.key(SID2) == SID2
    assert os.stat(os.path.dirname(generations._generation_path(SID))).st_mode & 0o777 == 0o700


@pytest.mark.parametrize("stdin", [b"", b"{not json", json.dumps({"hook_event_name": "BeforeTool"}).encode()])
def test_the_installed_command_fails_open_on_what_is_not_geminis(world, stdin):
    command = [sys.executable, "-S", "-c", settings.boot_code(REPO, hooks.HOOK_MARK), "BeforeTool"]
    res = subprocess.run(command, input=stdin, capture_output=True, timeout=60, env=dict(os.environ, PYTHONPATH=""))
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    with open(os.path.join(os.environ["CC_CONTINUITY_HOME"], "logs", "hooks.log")) as f:
        assert "gemini:BeforeTool sid=- " in f.read().splitlines()[-1]
    assert shlex.join(command)  # the shape a hook table carries (a shell command line)


def test_the_installed_command_answers_a_real_payload(world):
    command = [sys.executable, "-S", "-c", settings.boot_code(REPO, hooks.HOOK_MARK), "SessionStart"]
    res = subprocess.run(command, input=world.payload("SessionStart", source="startup").encode(), capture_output=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=""))
    assert res.returncode == 0 and res.stderr == b"", res.stderr
    assert world.record()["host"] == "gemini" and world.record()["state"] == session.ACTIVE


STEADY = ("import sys, json\n"
          "sys.path.insert(0, %r)\n"
          "before = set(sys.modules)\n"
          "from cc_continuity.hosts.gemini import hooks\n"
          "text, outcome, _, _ = hooks.answer(sys.argv[1], sys.stdin.read())\n"
          "print(json.dumps([text, outcome, sorted(m for m in set(sys.modules) - before if m.startswith('cc_'))]))\n"
          % REPO)


def _steady(world, event, **fields):
    res = subprocess.run([sys.executable, "-S", "-c", STEADY, event], input=world.payload(event, **fields).encode(),
                         capture_output=True, timeout=60, check=True, env=dict(os.environ, PYTHONPATH=""))
    return json.loads(res.stdout)


def test_a_steady_tool_call_is_answered_without_the_steps(world):
    """The card, the record and the session file's tail (hosts/toolpath.py): no rotation module, no context."""
    world.call("SessionStart", source="startup")
    world.call("AfterTool", tool_name="read_file", tool_input={"file_path": "README.md"}, tool_response={})  # card
    text, outcome, loaded = _steady(world, "AfterTool", tool_name="list_directory", tool_input={"dir_path": "."},
                                    tool_response={})
    assert (text, outcome) == (None, "ok")
    assert not [m for m in loaded if m.startswith("cc_continuity.rotation")], loaded
    assert [r["tool"] for r in world.ledger() if r["ev"] == "tool"][-1] == "list_directory"  # the action, recorded
    text, outcome, loaded = _steady(world, "BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls"})
    assert (text, outcome) == (None, "ok") and not [m for m in loaded if m.startswith("cc_continuity.rotation")]
    # a possible side effect, a level crossed: the steps decide
    _, _, loaded = _steady(world, "BeforeTool", tool_name="run_shell_command", tool_input={"command": "curl -X POST https://api.example.invalid/hook"})
    assert "cc_continuity.rotation.toolcall" in loaded
    _, outcome, loaded = _steady(world, "AfterTool", tool_name="write_file", tool_input={"file_path": "a"},
                                 tool_response={}, tokens=650_000)  # (no window configured: Gemini's 1M)
    assert outcome == "level rotate" and "cc_continuity.rotation.turn" in loaded


def test_a_session_id_that_could_name_a_path_is_not_used(world, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    for event, fields in (("BeforeTool", {"tool_name": "read_file", "tool_input": {"file_path": "a"}}),
                          ("BeforeAgent", {"prompt": "hi"}), ("AfterAgent", {"prompt": "p", "stop_hook_active": False})):
        payload = json.loads(world.payload(event, **fields))
        payload["session_id"] = "../../outside/x"
        text, outcome, key, after = hooks.answer(event, json.dumps(payload))
        assert (text, outcome, key, after) == (None, "session id not usable", None, [])
    assert not os.path.exists(os.path.join(os.environ["CC_CONTINUITY_HOME"], "projects"))  # nothing registered


POST = "curl -s -X POST -d 'release v1 is out' https://api.example.invalid/notify"


def _shell(world, event, sid=SID, command=POST, **fields):
    return world.call(event, sid, tool_name="run_shell_command",
                      tool_input={"command": command, "description": "announce"}, **fields)


def _effects(world):
    from cc_continuity.holds import effects

    (pdir,) = {os.path.dirname(os.path.dirname(os.path.dirname(p))) for p in world._states()}
    return effects.read(pdir)


def test_a_side_effect_is_paired_by_the_call_itself_and_its_repeat_denied(world):
    """Gemini's payloads carry no call id: the call (session, tool, arguments) pairs BeforeTool and AfterTool,
    so a POST that ran is done, and the same POST again is denied (Gemini can only deny)."""
    world.call("SessionStart", source="startup")
    assert _shell(world, "BeforeTool")[0] is None
    _shell(world, "AfterTool", tool_response={"llmContent": "Output: ok", "returnDisplay": "ok"})
    recs = _effects(world)
    assert [r["ph"] for r in recs] == ["intent", "done"] and recs[0]["tu"] == recs[1]["tu"] \
        and recs[1]["ok"] is True and recs[0]["tu"].startswith("g")
    text = json.loads(_shell(world, "BeforeTool")[0])
    assert text["decision"] == "deny" and "already had its effect" in text["reason"]
    assert "repeat %s" % recs[0]["k"][:8] in text["reason"]
    # a tool that could not run at all (Gemini's own error object) failed: its retry runs
    other = POST.replace("v1", "v2")
    assert _shell(world, "BeforeTool", command=other)[0] is None
    _shell(world, "AfterTool", command=other, tool_response={"llmContent": "x", "error": {"message": "spawn ENOENT"}})
    assert _effects(world)[-1]["ok"] is False and _effects(world)[-1]["exit"] == 127
    assert _shell(world, "BeforeTool", command=other)[0] is None


def test_a_side_effect_cut_off_by_a_crash_is_held_in_the_next_session(world):
    world.call("SessionStart", source="startup")
    assert _shell(world, "BeforeTool")[0] is None  # ... and Gemini died before AfterTool
    world.call("SessionStart", SID2, source="startup")
    text = json.loads(_shell(world, "BeforeTool", SID2)[0])
    assert text["decision"] == "deny" and "Check whether it took effect" in text["reason"]
    assert [r["ph"] for r in _effects(world)] == ["intent"]  # a held call never runs: no second intent
