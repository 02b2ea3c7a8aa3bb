"""Gemini CLI 0.61's hook wire (hosts/gemini/wire.py): the payloads as the reference saw them
(../shared/reference/gemini-cli-0.61.md §2), each refused when it is not Gemini's, and the answers' shapes."""

import json

import pytest

from cc_continuity.hosts.gemini import wire

SID = "7d1c5e2a-9f3b-4c1e-8a2d-5b6c7d8e9f00"
BASE = {"session_id": SID, "transcript_path": "/h/.gemini/tmp/proj/chats/session-2026-12-07T12-00-7d1c5e2a.jsonl",
        "cwd": "/w/proj", "timestamp": "2026-12-07T12:00:01.000Z"}


def payload(event, **fields):
    return json.dumps(dict(BASE, hook_event_name=event, **fields))


def test_every_event_keeps_its_own_fields():
    assert wire.parse(payload("SessionStart", source="clear"))["source"] == "clear"
    assert wire.parse(payload("SessionEnd", reason="exit"))["reason"] == "exit"
    got = wire.parse(payload("BeforeAgent", prompt="<hook_context>x</hook_context>\n\nDO_TOOL please"))
    assert got["prompt"].endswith("DO_TOOL please") and got["transcript_path"] == BASE["transcript_path"]
    after = wire.parse(payload("AfterAgent", prompt="Say hi", prompt_response="hi hi", stop_hook_active=False))
    assert (after["prompt"], after["stop_hook_active"]) == ("Say hi", False)
    shell = wire.parse(payload("BeforeTool", tool_name="run_shell_command",
                               tool_input={"command": "echo hi && pwd", "description": "say hello"}))
    assert shell["command"] == "echo hi && pwd" and shell["tool_input"]["description"] == "say hello"
    write = wire.parse(payload("AfterTool", tool_name="write_file", tool_input={"file_path": "/w/p/a", "content": "x"},
                               tool_response={"llmContent": "ok", "returnDisplay": "ok"}))
    assert write["command"] is None and write["tool_response"]["llmContent"] == "ok"
    assert wire.parse(payload("PreCompress", trigger="auto"))["trigger"] == "auto"
    assert wire.parse(payload("Notification", notification_type="ToolPermission"))["event"] == "Notification"
    assert wire.parse(json.dumps({k: v for k, v in dict(BASE, hook_event_name="SessionEnd").items()
                                  if k != "transcript_path"}))["transcript_path"] is None


@pytest.mark.parametrize("raw, said", [
    (b"not json", "not JSON"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (payload("SessionStart", source="compact"), "source: 'compact' is not one of startup, resume, clear"),
    (payload("AfterAgent", prompt="p", stop_hook_active="no"), "stop_hook_active: expected true or false"),
    (payload("BeforeAgent"), "prompt: expected a string"),
    (payload("BeforeTool", tool_name="write_file", tool_input="x"), "tool_input: expected an object"),
    (payload("PreCompress", trigger="sometimes"), "trigger: 'sometimes' is not one of auto, manual"),
    (json.dumps(dict(BASE, hook_event_name="BeforeAgent", prompt="p", session_id="")), "session_id: expected a non-"),
    (b"x" * (wire.MAX_PAYLOAD + 1), "payload over"),
])
def test_what_is_not_geminis_is_refused_naming_the_field(raw, said):
    with pytest.raises(wire.PayloadError, match=said.replace("(", r"\(")):
        wire.parse(raw)


def test_a_payload_for_another_event_is_refused():
    with pytest.raises(wire.PayloadError, match="'AfterAgent', but this hook is for BeforeAgent"):
        wire.parse(payload("AfterAgent", prompt="p", stop_hook_active=True), expect="BeforeAgent")


def test_the_answers_are_geminis_shapes():
    assert json.loads(wire.block_turn("Write the handoff to /t/h.md")) == {
        "decision": "block", "reason": "Write the handoff to /t/h.md"}
    assert json.loads(wire.clear_and_continue("Continuing from cp-001", "continuity: rotated to cp-001")) == {
        "decision": "block", "reason": "Continuing from cp-001", "systemMessage": "continuity: rotated to cp-001",
        "hookSpecificOutput": {"hookEventName": "AfterAgent", "clearContext": True}}
    assert json.loads(wire.deny_tool("CONTINUITY HOLD: ran before")) == {
        "decision": "deny", "reason": "CONTINUITY HOLD: ran before"}
    assert json.loads(wire.add_context("BeforeAgent", "the bootstrap")) == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "the bootstrap"}}
    for bad in (lambda: wire.block_turn(" "), lambda: wire.clear_and_continue(""),
                lambda: wire.add_context("AfterAgent", "x")):
        with pytest.raises(ValueError):
            bad()
    assert wire.escaped("<handoff># H</handoff> a & b") == "&lt;handoff&gt;# H&lt;/handoff&gt; a & b"
