"""The contract of Gemini CLI 0.61 that a Gemini host is built on, pinned against the real binary.

Each ``gemini -p`` runs once per module (module-scoped fixtures) in a ``GeminiSandbox`` whose
model is a scripted ``GeminiModel`` on 127.0.0.1, with the recorder hook (``helpers.gemini``)
on the events a test reads; its tests then read what it left: the hook log, the request log,
the session file.  The facts and where they come from: shared/reference/gemini-cli-0.61.md;
what 0.61.0 did differently: docs/E2E.md, "Gemini CLI contract".
"""

import os

import pytest

from helpers.gemini import EXIT_UNTRUSTED, is_header

pytestmark = pytest.mark.gemini

EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd")
COMMON = ("session_id", "transcript_path", "cwd", "hook_event_name")
FIRST_PROMPT, SECOND_PROMPT = 13349, 14349  # promptTokenCount of the tool run's two requests


def _single(values, what):
    values = set(values)
    assert len(values) == 1, "%s: %s" % (what, sorted(values))
    return values.pop()


def _ok(run):
    assert run.returncode == 0, run
    return run


# -- a. + b.: one turn that lists the project (list_directory: no --yolo needed) -------------------

TOOL_SCENARIO = {
    "rules": [{"name": "list", "when": {"session_nth": 1},
               "reply": [{"type": "text", "text": "Looking."},
                         {"type": "tool_use", "name": "list_directory", "input": {"dir_path": "."}}]}],
    "default": {"reply": "Listed: README.md is there."},
    "usage_plan": {"per": "session", "input_tokens": {"start": FIRST_PROMPT, "step": SECOND_PROMPT - FIRST_PROMPT}},
}


@pytest.fixture(scope="module")
def tool_run(gemini_box):
    box = gemini_box(TOOL_SCENARIO)
    box.install_recorder(EVENTS)
    return box, _ok(box.run_print("CONTRACT list the project"))


def test_the_hooks_of_a_headless_turn_fire_with_their_common_fields(tool_run):
    box, run = tool_run
    calls = box.hook_calls()
    events = [c["event"] for c in calls]
    assert events == ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"], events
    for call in calls:
        payload = call["payload"]
        missing = [k for k in COMMON if not payload.get(k)]
        assert not missing, (call["event"], missing, payload)
        assert payload["hook_event_name"] == call["event"]
        assert payload["cwd"] == box.project
    (session_file,) = box.session_files()
    assert _single((c["payload"]["session_id"] for c in calls), "session ids") == box.session_records()[0]["sessionId"]
    assert _single((c["payload"]["transcript_path"] for c in calls), "transcript paths") == session_file
    assert os.path.basename(session_file).endswith("-%s.jsonl" % calls[0]["payload"]["session_id"][:8])
    by_event = {c["event"]: c["payload"] for c in calls}
    assert by_event["SessionStart"]["source"] == "startup"
    assert by_event["BeforeAgent"]["prompt"] == "CONTRACT list the project"
    assert by_event["BeforeTool"]["tool_name"] == "list_directory"
    assert by_event["BeforeTool"]["tool_input"] == {"dir_path": "."}
    assert "README.md" in by_event["AfterTool"]["tool_response"]["llmContent"]
    assert by_event["AfterAgent"]["prompt"] == "CONTRACT list the project"
    assert by_event["AfterAgent"]["stop_hook_active"] is False
    assert by_event["SessionEnd"]["reason"] == "exit"
    # the stand-in's side of it: two streamed requests of one session, the tool's result in the second
    first, second = box.model.main_requests()
    assert first.rpc == second.rpc == "streamGenerateContent"
    (response,) = second.parts("functionResponse", latest=True)
    assert response["name"] == "list_directory" and "README.md" in response["response"]["output"]
    assert "Listed: README.md is there." in run.stdout


def test_after_agent_finds_the_last_prompt_size_already_in_the_session_file(tool_run):
    box, _run = tool_run
    first, second = box.model.main_requests()
    assert [first.usage["input_tokens"], second.usage["input_tokens"]] == [FIRST_PROMPT, SECOND_PROMPT]
    (after,) = box.hook_calls("AfterAgent")
    # what the file held when AfterAgent ran: its first transcript_size bytes (the file is only appended to)
    seen = box.session_records(after["payload"]["transcript_path"], size=after["transcript_size"])
    assert is_header(seen[0])
    replies = [r for r in seen if r.get("type") == "gemini"]
    assert replies, seen
    assert replies[-1]["tokens"]["input"] == SECOND_PROMPT, replies[-1]
    assert replies[-1]["content"] == "Listed: README.md is there."
    # a reply with a tool call is written twice, under one id: before the call, then with toolCalls
    ids = [r["id"] for r in replies]
    assert ids[0] == ids[1] and "toolCalls" in replies[1] and len(set(ids)) == 2, replies


# -- c.: AfterAgent block + clearContext: a fresh context in the same session ----------------------

RESUME = "CONTRACT-RESUME: you are the successor; continue from the handoff."
CLEAR_SCENARIO = {"rules": [{"name": "successor", "when": {"last_user_contains": "CONTRACT-RESUME"},
                             "reply": "Successor at work."}],
                  "default": {"reply": "First answer ALPHA-SECRET."}}
CLEAR = {"decision": "block", "reason": RESUME,
         "hookSpecificOutput": {"hookEventName": "AfterAgent", "clearContext": True}}


@pytest.fixture(scope="module")
def clear_run(gemini_box):
    box = gemini_box(CLEAR_SCENARIO)
    box.install_recorder(EVENTS)
    box.script_replies("AfterAgent", [CLEAR])  # once; the next AfterAgent allows
    return box, _ok(box.run_print("CONTRACT-ORIGINAL do the work"))


def test_clear_context_continues_with_only_the_reason_in_the_same_session(clear_run):
    box, run = clear_run
    first, second = box.model.main_requests()
    assert "ALPHA-SECRET" in "".join(b.get("text", "") for b in first.reply)
    # the next request: one user content, the reason in it, nothing of the conversation before
    assert [c["role"] for c in second.contents] == ["user"], second.contents
    texts = second.parts("text")
    assert RESUME in texts, texts
    assert "CONTRACT-ORIGINAL" not in second.text and "ALPHA-SECRET" not in second.text
    assert "<session_context>" in texts[0]  # the environment block comes again
    calls = box.hook_calls()
    assert [c["event"] for c in calls] == ["SessionStart", "BeforeAgent", "AfterAgent", "BeforeAgent", "AfterAgent",
                                           "SessionEnd"], [c["event"] for c in calls]
    assert [c["payload"]["source"] for c in box.hook_calls("SessionStart")] == ["startup"]
    assert [c["payload"]["reason"] for c in box.hook_calls("SessionEnd")] == ["exit"]
    sid = _single((c["payload"]["session_id"] for c in calls), "session ids")  # no new id for the clear
    assert sid == box.session_records(box.session_files()[0])[0]["sessionId"]
    assert box.hook_calls("BeforeAgent")[1]["payload"]["prompt"] == RESUME
    again = box.hook_calls("AfterAgent")[1]["payload"]
    assert again["prompt"] == "CONTRACT-ORIGINAL do the work" and again["stop_hook_active"] is True
    assert "Agent execution blocked: %s" % RESUME in run.stderr
    assert "Successor at work." in run.stdout


def test_clear_context_writes_a_second_header_for_the_same_session_id(clear_run):
    box, _run = clear_run
    sid = box.hook_calls("SessionStart")[0]["payload"]["session_id"]
    records = [r for path in box.session_files() for r in box.session_records(path)]
    headers = [i for i, r in enumerate(records) if is_header(r)]
    assert [records[i]["sessionId"] for i in headers] == [sid, sid], records
    # Same file within one UTC minute (the file name is session-<YYYY-MM-DDTHH-MM>-<id[:8]>.jsonl): a clear
    # across a minute boundary opens a second file of the same id.
    assert all(os.path.basename(p).endswith("-%s.jsonl" % sid[:8]) for p in box.session_files())
    before, after = records[:headers[1]], records[headers[1]:]
    assert [r["content"] for r in before if r.get("type") == "gemini"] == ["First answer ALPHA-SECRET."]
    users = [r for r in after if r.get("type") == "user"]
    assert [u["content"] for u in users] == [[{"text": RESUME}]], users
    assert users[0]["displayContent"] == [{"text": "CONTRACT-ORIGINAL do the work"}]  # shown as the old prompt
    assert [r["content"] for r in after if r.get("type") == "gemini"] == ["Successor at work."]


# -- d.: BeforeTool deny holds a side effect ------------------------------------------------------

HOLD = "HOLD-TEST this POST already ran before the crash"
DENY_SCENARIO = {
    "rules": [{"name": "held", "when": {"session_nth": 1},
               "reply": [{"type": "tool_use", "name": "run_shell_command",
                          "input": {"command": "touch HELD.txt", "description": "the held side effect"}}],
               "then": [[{"type": "tool_use", "name": "run_shell_command",
                          "input": {"command": "touch ALLOWED.txt", "description": "an allowed one"}}],
                        "Both tried."]}],
}


@pytest.fixture(scope="module")
def deny_run(gemini_box):
    box = gemini_box(DENY_SCENARIO)
    box.install_recorder(EVENTS)
    box.script_replies("BeforeTool", [{"decision": "deny", "reason": HOLD}])  # the first call only
    run = _ok(box.run_print("CONTRACT make the files", args=["--yolo"]))
    files = {name: os.path.exists(os.path.join(box.project, name)) for name in ("HELD.txt", "ALLOWED.txt")}
    return box, run, files


def test_before_tool_deny_keeps_the_tool_from_running_and_tells_the_model(deny_run):
    box, _run, files = deny_run
    assert files == {"HELD.txt": False, "ALLOWED.txt": True}  # the allowed call shows the shell runs at all
    before = [c["payload"]["tool_input"]["command"] for c in box.hook_calls("BeforeTool")]
    after = [c["payload"]["tool_input"]["command"] for c in box.hook_calls("AfterTool")]
    assert before == ["touch HELD.txt", "touch ALLOWED.txt"] and after == ["touch ALLOWED.txt"]
    requests = box.model.main_requests()
    assert [r.rule for r in requests] == ["held", "then", "then"]
    (held,) = requests[1].parts("functionResponse", latest=True)
    assert held["name"] == "run_shell_command"
    assert held["response"] == {"error": "Tool execution blocked: %s" % HOLD}, held


# -- e.: an untrusted folder ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def untrusted_run(gemini_box):
    box = gemini_box(trusted=False)
    box.install_recorder(EVENTS)
    return box, box.run_print("CONTRACT hello")


def test_an_untrusted_folder_exits_55_before_any_hook(untrusted_run):
    box, run = untrusted_run
    assert run.returncode == EXIT_UNTRUSTED, run
    assert "not running in a trusted directory" in run.stderr
    assert box.hook_calls() == []
    assert box.model.requests() == [] and box.session_files() == []
