"""The scripted Responses API (Codex CLI's model), spoken to over real HTTP on loopback."""

import http.client
import json
import threading

import pytest

from helpers.responses_model import ResponsesModel, ScenarioError, validate_scenario

THREAD = "01a23442-a4bc-7200-90b4-88b9d98a93b0"
TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]


def msg(role, text):
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def body(*items, tools=TOOLS):
    return {"model": "scripted-model", "stream": True, "instructions": "", "input": list(items), "tools": tools,
            "tool_choice": "auto", "parallel_tool_calls": True, "store": False}


def post(model, payload, thread=THREAD, kind="turn", path="/v1/responses", raw=None):
    """POST, return (status, [(event, data)] parsed from the SSE stream, or the JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    headers = {"content-type": "application/json", "accept": "text/event-stream", "authorization": "Bearer k",
               "thread-id": thread, "session-id": thread,
               "x-codex-turn-metadata": json.dumps({"request_kind": kind, "history_initialization": "new"})}
    conn.request("POST", path, raw if raw is not None else json.dumps(payload).encode(), headers)
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    if resp.getheader("content-type") != "text/event-stream":
        return resp.status, json.loads(data)
    events = []
    for block in data.split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.split("\n"))
            events.append((lines["event"], json.loads(lines["data"])))
    return resp.status, events


def done_items(events):
    return [d["item"] for e, d in events if e == "response.output_item.done"]


def usage(events):
    assert events[-1][0] == "response.completed"
    return events[-1][1]["response"]["usage"]


@pytest.fixture
def model():
    m = ResponsesModel().start()
    yield m
    m.stop()


def test_a_text_reply_streams_in_the_order_codex_reads(model):
    model.set_scenario({"default": {"reply": "STANDIN: hello there"}})
    status, events = post(model, body(msg("user", "hi")))
    assert status == 200
    names = [e for e, _ in events]
    assert names == ["response.created", "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.delta", "response.output_item.done",
                     "response.completed"]
    assert all(d["type"] == e for e, d in events), "each data names its event"
    assert "".join(d["delta"] for e, d in events if e == "response.output_text.delta") == "STANDIN: hello there"
    item = done_items(events)[0]
    assert item["role"] == "assistant" and item["content"][0] == {"type": "output_text",
                                                                  "text": "STANDIN: hello there", "annotations": []}
    u = usage(events)
    assert u["total_tokens"] == u["input_tokens"] + u["output_tokens"] and u["input_tokens"] > 0
    assert events[0][1]["response"]["id"] == events[-1][1]["response"]["id"]


def test_exec_command_calls_then_the_follow_up_sees_the_output(model):
    model.set_scenario({"rules": [{"name": "tool", "when": {"latest_contains": "run a tool"},
                                   "reply": [{"type": "exec_command", "cmd": "echo hi", "workdir": "/tmp"}],
                                   "then": ["Tool done."]}]})
    _, events = post(model, body(msg("user", "please run a tool")))
    call = done_items(events)[0]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "echo hi", "workdir": "/tmp"}
    follow = body(msg("user", "please run a tool"), call,
                  {"type": "function_call_output", "call_id": call["call_id"], "output": "hi\n"})
    _, events = post(model, follow)
    assert done_items(events)[0]["content"][0]["text"] == "Tool done."
    reqs = model.requests()
    assert [r.rule for r in reqs] == ["tool", "then"]
    assert reqs[1].latest_text == "hi\n", "the input since the model spoke is the tool's output"
    # then is per thread and used up: the next request of the thread gets the default again.
    _, events = post(model, body(msg("user", "again")))
    assert done_items(events)[0]["content"][0]["text"] == "OK."


def test_the_tool_less_title_request_and_compaction_are_told_apart(model):
    model.set_scenario({"title": "Fix the parser", "compact_summary": "SUMMARY-1",
                        "default": {"reply": "main reply"}})
    _, events = post(model, body(msg("user", "Generate a concise, single-line task title"), tools=[]))
    assert done_items(events)[0]["content"][0]["text"] == "Fix the parser"
    _, events = post(model, body(msg("user", "work"), msg("assistant", "ok"),
                                 msg("user", "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff")),
                     kind="turn")
    assert done_items(events)[0]["content"][0]["text"] == "SUMMARY-1", "recognised by its prompt"
    _, events = post(model, body(msg("user", "anything")), kind="compaction")
    assert done_items(events)[0]["content"][0]["text"] == "SUMMARY-1", "recognised by its metadata"
    assert [r.kind for r in model.requests()] == ["title", "compaction", "compaction"]
    assert model.requests(kind="main") == []
    # A rule of that kind takes it over; a main rule does not.
    model.set_scenario({"rules": [{"when": {"latest_contains": "anything"}, "reply": "main only"},
                                  {"name": "c", "when": {"kind": "compaction"}, "reply": "RULED"}]})
    _, events = post(model, body(msg("user", "anything")), kind="compaction")
    assert done_items(events)[0]["content"][0]["text"] == "RULED"


def test_usage_is_planned_per_thread_and_a_rule_overrides_it(model):
    model.set_scenario({"usage_plan": {"input_tokens": {"start": 9000, "step": 2000, "max": 12000}},
                        "rules": [{"name": "big", "when": {"latest_contains": "big"}, "reply": "x",
                                   "usage": {"input_tokens": 18000, "output_tokens": 40}}]})
    seen = [usage(post(model, body(msg("user", "n")))[1])["input_tokens"] for _ in range(3)]
    assert seen == [9000, 11000, 12000]
    assert usage(post(model, body(msg("user", "n")), thread="other")[1])["input_tokens"] == 9000, "per thread"
    u = usage(post(model, body(msg("user", "big")))[1])
    assert (u["input_tokens"], u["output_tokens"], u["total_tokens"]) == (18000, 40, 18040)
    # A "then" reply may carry its own usage (the context a tool's output left); one without keeps the plan.
    model.set_scenario({"rules": [{"name": "step", "when": {"latest_contains": "step"}, "reply": "a",
                                   "then": [{"reply": "b", "usage": {"input_tokens": 25000}}, "c"]}]})
    seen = [usage(post(model, body(msg("user", "step")), thread="t3")[1])["input_tokens"] for _ in range(3)]
    assert seen[1] == 25000 and seen[0] < 1000 and seen[2] < 1000


def test_by_default_input_tokens_grow_with_the_request(model):
    small = usage(post(model, body(msg("user", "a")))[1])["input_tokens"]
    large = usage(post(model, body(msg("user", "a" * 40000)))[1])["input_tokens"]
    assert large - small >= 9900


def test_when_keys_extract_templates_and_times(model):
    model.set_scenario({"vars": {"who": "world"},
                        "rules": [{"name": "second", "when": {"thread_nth": 2}, "reply": "second of {thread_id}"},
                                  {"name": "path", "when": {"latest_contains": ["write", "handoff"]},
                                   "extract": {"path": r"to (/\S+\.md)"}, "times": 1,
                                   "reply": [{"type": "exec_command", "cmd": "echo {who} > {path}"}]}]})
    _, events = post(model, body(msg("user", "write the handoff to /tmp/h.md now")))
    assert json.loads(done_items(events)[0]["arguments"]) == {"cmd": "echo world > /tmp/h.md"}
    _, events = post(model, body(msg("user", "x")))
    assert done_items(events)[0]["content"][0]["text"] == "second of " + THREAD
    _, events = post(model, body(msg("user", "write the handoff to /tmp/h.md now")))
    assert done_items(events)[0]["content"][0]["text"] == "OK.", "times: 1 is used up"
    # latest_contains looks only after the model last spoke.
    _, events = post(model, body(msg("user", "write the handoff to /tmp/a.md"), msg("assistant", "done"),
                                 msg("user", "thanks")), thread="t2")
    assert done_items(events)[0]["content"][0]["text"] == "OK."


def test_a_held_reply_waits_for_its_release_and_is_seen_before(model):
    """A slow reply with no clock in it: the request is there to wait for, its answer goes once released."""
    model.set_scenario({"rules": [{"name": "slow", "when": {"latest_contains": "slow"}, "reply": "late",
                                   "hold": "slow"}]})
    got = []
    t = threading.Thread(target=lambda: got.append(post(model, body(msg("user", "a slow one")))))
    t.start()
    (req,) = model.wait_for(lambda reqs: [r for r in reqs if r.hold == "slow"], timeout=5)
    t.join(0.2)
    assert t.is_alive() and not got, "no answer before the release"
    assert done_items(post(model, body(msg("user", "another")))[1])[0]["content"][0]["text"] == "OK.", \
        "other requests are answered meanwhile"
    model.release("slow")
    t.join(5)
    assert done_items(got[0][1])[0]["content"][0]["text"] == "late" and req.rule == "slow"


def test_requests_are_logged_without_the_key(model, tmp_path):
    log = tmp_path / "model.jsonl"
    m = ResponsesModel({"default": {"reply": "hi"}}, log_path=log).start()
    try:
        post(m, body(msg("developer", "DEV-TEXT"), msg("user", "USER-TEXT")))
        got = m.wait_for(lambda reqs: reqs[0] if reqs else None, timeout=5)
    finally:
        m.stop()
    assert got.messages("developer") == ["DEV-TEXT"] and got.messages("user") == ["USER-TEXT"]
    assert got.metadata["request_kind"] == "turn" and got.thread_id == THREAD
    row = json.loads(log.read_text().splitlines()[0])
    assert row["kind"] == "main" and row["rule"] == "default" and row["body"]["input"][1]["role"] == "user"
    assert "authorization" not in row["headers"] and "Bearer" not in log.read_text()
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_what_is_not_scripted_is_refused_clearly(model):
    status, data = post(model, None, raw=b"{not json")
    assert status == 400 and "not JSON" in data["error"]["message"]
    status, data = post(model, body(msg("user", "x")), path="/v1/chat/completions")
    assert status == 404 and "only POST /v1/responses" in data["error"]["message"]
    assert model.requests() == []


@pytest.mark.parametrize("scenario, where", [
    ([], "must be an object"),
    ({"rulez": []}, "unknown key(s) rulez"),
    ({"rules": [{"when": {}}]}, "rules[0]: 'reply' is required"),
    ({"rules": [{"reply": [{"type": "tool_use"}]}]}, "rules[0].reply[0]"),
    ({"rules": [{"reply": [{"type": "exec_command"}]}]}, "needs 'cmd'"),
    ({"rules": [{"reply": "x", "when": {"kind": "side"}}]}, "when.kind must be one of"),
    ({"rules": [{"reply": "x", "extract": {"p": "("}}]}, "extract.p: bad regex"),
    ({"rules": [{"reply": "x", "usage": {"cache_read_input_tokens": 5}}]}, "usage must map"),
    ({"usage_plan": {"per": "session"}}, "'per' is 'thread' or 'request'"),
    ({"usage_plan": {"input_tokens": {"begin": 1}}}, "usage_plan.input_tokens: unknown key(s) begin"),
    ({"title": 5}, "scenario.title must be a string"),
    ({"rules": [{"reply": "x", "hold": ""}]}, "hold must be a non-empty name"),
    ({"rules": [{"reply": "x", "then": [{"reply": "y", "usage": {"input_tokens": -1}}]}]}, "then[0].usage must map"),
])
def test_a_malformed_scenario_names_the_place(scenario, where):
    with pytest.raises(ScenarioError) as e:
        validate_scenario(scenario)
    assert where in str(e.value)
