"""The scripted Messages API, spoken to over real HTTP on loopback."""

import http.client
import json
import os
import stat
import subprocess
import sys
import time

import pytest

from cc_continuity.rehearse.scripted_model import ScenarioError, ScriptedModel, load_scenario, validate_scenario

SID = "11111111-2222-3333-4444-555555555555"


def body(*messages, stream=True, tools=True, system="You are Claude Code.", **extra):
    return {"model": "claude-opus-5-5", "max_tokens": 128000, "stream": stream,
            "system": [{"type": "text", "text": system}],
            "tools": [{"name": "Write", "input_schema": {"type": "object"}}] if tools else [],
            "messages": list(messages), **extra}


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def post(model, payload, session=SID, path="/v1/messages?beta=true", conn=None):
    """POST and return (response, raw bytes); JSON-encodes dict payloads."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"content-type": "application/json", "x-api-key": "fake"}
    if session:
        headers["x-claude-code-session-id"] = session
    conn.request("POST", path, data, headers)
    resp = conn.getresponse()
    raw = resp.read()
    if own:
        conn.close()
    return resp, raw


def events(raw):
    """Parse an SSE body into [(event, data)]."""
    out = []
    for chunk in raw.decode("utf-8").split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.split("\n"))
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def assemble(evts):
    """Rebuild the message the way an SDK does: from start, deltas and the final delta."""
    message = None
    partial = {}
    for name, data in evts:
        assert data["type"] == name
        if name == "message_start":
            message = data["message"]
        elif name == "content_block_start":
            assert data["index"] == len(message["content"])
            message["content"].append(dict(data["content_block"]))
        elif name == "content_block_delta":
            block, delta = message["content"][data["index"]], data["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif name == "content_block_stop":
            if data["index"] in partial:
                message["content"][data["index"]]["input"] = json.loads(partial.pop(data["index"]))
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
            message["usage"] = data["usage"]
    assert evts[-1][0] == "message_stop"
    return message


def ask(model, *messages, session=SID, **kw):
    resp, raw = post(model, body(*messages, **kw), session=session)
    assert resp.status == 200, raw
    return assemble(events(raw))


@pytest.fixture
def serve(tmp_path):
    models = []

    def make(scenario=None, **kw):
        kw.setdefault("log_path", tmp_path / "model.jsonl")
        model = ScriptedModel(scenario, **kw).start()
        models.append(model)
        return model

    yield make
    for model in models:
        model.stop()


def test_text_reply_streams_as_sse_on_a_reusable_connection(serve):
    long_text = "A reply long enough to be cut into several text deltas. " * 3
    model = serve({"rules": [{"when": {"last_user_contains": "hello"}, "reply": long_text}]})
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    for _ in range(2):  # Claude Code keeps connections alive: the chunked stream must end cleanly
        resp, raw = post(model, body(user("hello there")), conn=conn)
        assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
        evts = events(raw)
        names = [n for n, _ in evts]
        assert names[:3] == ["message_start", "ping", "content_block_start"]
        assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
        assert names.count("content_block_delta") > 1
        message = assemble(evts)
        assert message["content"] == [{"type": "text", "text": long_text}]
        assert message["stop_reason"] == "end_turn" and message["role"] == "assistant"
        assert message["model"] == "claude-opus-5-5"
    conn.close()


def test_tool_use_input_is_reassembled_from_json_deltas(serve):
    content = "# Handoff\n\u00e9t\u00e9 \"quoted\" {braces}\n" + "x" * 300
    model = serve({"rules": [{"when": {"last_user_contains": "write it"},
                              "reply": [{"type": "text", "text": "Writing."},
                                        {"type": "tool_use", "name": "Write",
                                         "input": {"file_path": "/tmp/h.md", "content": content}}]}]})
    message = ask(model, user("please write it"))
    text, tool = message["content"]
    assert text == {"type": "text", "text": "Writing."}
    assert tool["type"] == "tool_use" and tool["name"] == "Write" and tool["id"].startswith("toolu_")
    assert tool["input"] == {"file_path": "/tmp/h.md", "content": content}
    assert message["stop_reason"] == "tool_use"
    assert model.requests()[0].reply[1]["id"] == tool["id"]  # the log records what was sent


def test_rules_match_the_input_since_the_model_last_spoke(serve):
    model = serve({"rules": [
        {"name": "old", "when": {"last_user_contains": "alpha"}, "reply": "matched old text"},
        {"name": "tool", "when": {"last_user_contains": ["beta-output", "gamma-context"]}, "reply": "tool+system"},
        {"name": "sys", "when": {"system_contains": "SYSTEM-MARK"}, "reply": "system seen"},
    ]})
    convo = [user("alpha prompt"),
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                           "content": [{"type": "text", "text": "beta-output"}]}]},
             {"role": "system", "content": "PostToolUse:Bash hook additional context: gamma-context"}]
    assert ask(model, *convo)["content"][0]["text"] == "tool+system"
    assert ask(model, user("alpha again"))["content"][0]["text"] == "matched old text"
    # system-role messages inside messages[] and the top-level system prompt both count
    assert ask(model, {"role": "system", "content": "x SYSTEM-MARK"}, user("hi"))["content"][0]["text"] == \
        "system seen"
    assert ask(model, user("hi"), system="top SYSTEM-MARK")["content"][0]["text"] == "system seen"
    assert ask(model, user("nothing here"))["content"][0]["text"] == "Scripted reply 5."
    assert [r.rule for r in model.requests()] == ["tool", "old", "sys", "sys", "default"]


def test_extracted_path_and_scenario_content_fill_the_tool_input(serve):
    model = serve({
        "rules": [{"name": "handoff", "when": {"last_user_contains": "Stop hook feedback"},
                   "extract": {"path": r"write (/\S+\.md)"},
                   "reply": [{"type": "tool_use", "name": "Write",
                              "input": {"file_path": "{path}", "content": "{handoff}for {session_id} {nope}"}}],
                   "then": ["Handoff written to {path}."]}],
        "vars": {"handoff": "# Handoff\nnext: step two\n"},
    })
    prior = [user("work"), {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    # no path in the feedback: the rule does not apply
    assert ask(model, *prior, user("Stop hook feedback:\nplease hurry"))["content"][0]["text"] == "Scripted reply 1."
    feedback = user("Stop hook feedback:\nContext is high: write /home/u/.cc/handoff-007.md now")
    tool = ask(model, *prior, feedback)["content"][0]
    assert tool["input"] == {"file_path": "/home/u/.cc/handoff-007.md",
                             "content": "# Handoff\nnext: step two\nfor %s {nope}" % SID}
    # the follow-up step goes to the same session only
    assert ask(model, user("other"), session="other-session")["content"][0]["text"] == "Scripted reply 3."
    tail = ask(model, *prior, feedback, {"role": "assistant", "content": [tool]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "ok"}]})
    assert tail["content"][0]["text"] == "Handoff written to /home/u/.cc/handoff-007.md."


def test_usage_plan_grows_per_session_and_rules_override(serve):
    model = serve({"usage_plan": {"per": "session", "input_tokens": 3,
                                  "cache_read_input_tokens": {"start": 1000, "step": 50000, "max": 90000}},
                   "rules": [{"when": {"last_user_contains": "fixed"}, "usage": {"output_tokens": 77,
                                                                                "cache_read_input_tokens": 5},
                              "reply": "fixed usage"}]})
    reads = [ask(model, user("go"))["usage"]["cache_read_input_tokens"] for _ in range(3)]
    assert reads == [1000, 51000, 90000]
    fresh = ask(model, user("go"), session="new-session")["usage"]
    assert fresh == {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000,
                     "output_tokens": 5}
    fixed = ask(model, user("fixed"))["usage"]
    assert (fixed["output_tokens"], fixed["cache_read_input_tokens"], fixed["input_tokens"]) == (77, 5, 3)
    per_request = serve({"usage_plan": {"per": "request", "cache_creation_input_tokens": {"start": 10, "step": 10}}})
    assert [ask(per_request, user("x"), session=s)["usage"]["cache_creation_input_tokens"]
            for s in ("a", "b", "a")] == [10, 20, 30]


def test_times_nth_and_session_nth(serve):
    model = serve({"rules": [
        {"name": "once", "when": {"last_user_contains": "ping"}, "reply": "first pong", "times": 1},
        {"name": "third", "when": {"nth": 3}, "reply": "third overall"},
        {"name": "s2", "when": {"session_nth": 2}, "reply": "second in session"},
    ]})
    assert ask(model, user("ping"))["content"][0]["text"] == "first pong"
    assert ask(model, user("ping"))["content"][0]["text"] == "second in session"
    assert ask(model, user("ping"), session="b")["content"][0]["text"] == "third overall"
    assert ask(model, user("ping"), session="b")["content"][0]["text"] == "second in session"
    assert ask(model, user("ping"), session="b")["content"][0]["text"] == "Scripted reply 5."


def test_non_streaming_reply_is_plain_json(serve):
    model = serve({"rules": [{"when": {"last_user_contains": "Hi"}, "reply": "plain",
                              "usage": {"input_tokens": 42}}]})
    resp, raw = post(model, body(user("Hi"), stream=False))
    assert resp.status == 200 and resp.getheader("content-type") == "application/json"
    message = json.loads(raw)
    assert message["content"] == [{"type": "text", "text": "plain"}]
    assert message["usage"]["input_tokens"] == 42 and message["stop_reason"] == "end_turn"
    assert resp.getheader("request-id").startswith("req_fake_")


def test_structured_side_call_gets_json_matching_its_schema(serve):
    model = serve({"rules": [{"when": {"last_user_contains": "title"}, "reply": "rules are for main requests"}]})
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "ok": {"type": "boolean"}},
              "required": ["title"]}
    message = ask(model, user("Generate a title"), tools=False,
                  output_config={"format": {"type": "json_schema", "schema": schema}})
    value = json.loads(message["content"][0]["text"])
    assert isinstance(value["title"], str) and value["title"] and value["ok"] is True
    (req,) = model.requests()
    assert (req.kind, req.rule) == ("side", "structured")


def test_compaction_request_gets_a_summary_and_is_not_main(serve):
    model = serve({"compact_summary": "Worked on the parser.",
                   "rules": [{"when": {"last_user_contains": "REMINDER"}, "reply": "main rule must not fire"}]})
    prompt = ("Your task is to create a detailed summary...\n\nREMINDER: Do NOT call any tools. "
              "Respond with plain text only")
    text = ask(model, user("work"), {"role": "assistant", "content": "done"}, user(prompt))["content"][0]["text"]
    assert "<summary>Worked on the parser.</summary>" in text and "<analysis>" in text
    assert model.requests()[0].kind == "compact" and model.main_requests() == []


def test_error_rule_and_delay_with_pings(serve):
    model = serve({"rules": [
        {"when": {"last_user_contains": "too long"},
         "error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}},
        {"when": {"last_user_contains": "slow"}, "reply": "eventually", "delay": 1.1},
    ]})
    resp, raw = post(model, body(user("too long")))
    assert resp.status == 400
    assert json.loads(raw)["error"] == {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}
    started = time.monotonic()
    resp, raw = post(model, body(user("slow")))
    assert time.monotonic() - started >= 1.0
    evts = events(raw)
    assert [n for n, _ in evts].count("ping") >= 2  # keep-alive pings while "thinking"
    assert assemble(evts)["content"][0]["text"] == "eventually"


def metrics(model):
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    assert resp.status == 200
    values = dict(line.split() for line in text.splitlines() if line and not line.startswith("#"))
    return int(values["vllm:num_requests_running"]), int(values["vllm:iteration_tokens_total_count"])


def test_a_hung_request_gets_nothing_and_freezes_the_metrics_while_health_answers(serve):
    """The vLLM failure /health cannot see: the engine holds a request, says nothing, counts nothing."""
    model = serve({"rules": [{"name": "stuck", "when": {"last_user_contains": "hang"}, "hang": True, "times": 1},
                             {"when": {"last_user_contains": "slow"}, "reply": "eventually", "delay": 2.1}]})
    assert metrics(model) == (0, 0)
    assert ask(model, user("warm up"))["content"][0]["text"] == "Scripted reply 1."
    assert metrics(model) == (0, 5)   # output_tokens of the reply
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=1.5)
    conn.request("POST", "/v1/messages", json.dumps(body(user("please hang"))).encode(),
                 {"content-type": "application/json", "x-claude-code-session-id": SID})
    with pytest.raises(TimeoutError):   # not even the status line arrives
        conn.getresponse()
    assert metrics(model) == (1, 5)
    conn2 = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    conn2.request("GET", "/health")
    assert conn2.getresponse().status == 200
    conn2.close()
    hung = model.requests(kind="main")[-1]
    assert (hung.rule, hung.status) == ("stuck", 0)
    conn.close()   # the client gives up: the server lets go of it
    deadline = time.monotonic() + 5
    while metrics(model)[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metrics(model) == (0, 5)
    # A slow reply is work: its pings move the counter while it runs.
    assert ask(model, user("hang again"))["content"][0]["text"].startswith("Scripted reply")   # times: 1
    before = metrics(model)[1]
    assert ask(model, user("slow one"))["content"][0]["text"] == "eventually"
    assert metrics(model)[1] >= before + 2 + 5


def test_a_restarted_model_listens_on_the_same_port_and_drops_hung_requests(serve):
    model = serve({"rules": [{"when": {"last_user_contains": "hang"}, "hang": True}]})
    port = model.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/messages", json.dumps(body(user("hang"))).encode(),
                 {"content-type": "application/json"})
    time.sleep(0.3)
    model.stop()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.getresponse()
    model.start()
    assert model.port == port
    assert ask(model, user("after the restart"))["content"][0]["text"] == "Scripted reply 2."


def test_hang_must_be_a_bool():
    with pytest.raises(ScenarioError, match="hang must be true or false"):
        validate_scenario({"rules": [{"hang": "yes"}]})
    validate_scenario({"rules": [{"hang": True}]})   # needs no reply


def test_other_paths_are_harmless(serve):
    model = serve()
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    conn.request("HEAD", "/api/hello")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read()) == {}
    conn.close()
    resp, raw = post(model, body(user("x")), path="/v1/elsewhere")
    assert resp.status == 404 and json.loads(raw)["type"] == "error"
    resp, raw = post(model, b"{not json", path="/v1/messages")
    assert resp.status == 400 and "scripted model" in json.loads(raw)["error"]["message"]
    resp, raw = post(model, body(user("x")), path="/v1/messages/count_tokens")
    assert resp.status == 200 and json.loads(raw)["input_tokens"] > 0
    assert ask(model, user("still serving"))["content"][0]["text"] == "Scripted reply 1."
    assert [(r.method, r.kind) for r in model.requests()] == [
        ("HEAD", "other"), ("GET", "other"), ("POST", "other"), ("POST", "invalid"),
        ("POST", "count_tokens"), ("POST", "main")]


def test_request_log_and_queries(serve, tmp_path):
    log = tmp_path / "log" / "requests.jsonl"
    log.parent.mkdir()
    model = serve({"rules": [{"when": {"last_user_contains": "handoff please"}, "reply": "ok"}]}, log_path=log)
    ask(model, user("first prompt"), session="s1")
    mark = model.mark()
    ask(model, user("handoff please"), session="s1")
    ask(model, user("SessionStart hook additional context: HANDOFF-XYZ"), session="s2")
    ask(model, user("title?"), session="s2", tools=False)

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(d["seq"], d["kind"], d["session_id"]) for d in lines] == [
        (1, "main", "s1"), (2, "main", "s1"), (3, "main", "s2"), (4, "side", "s2")]
    assert lines[0]["body"]["messages"][0]["content"][0]["text"] == "first prompt"
    assert lines[0]["headers"]["x-claude-code-session-id"] == "s1" and "x-api-key" not in lines[0]["headers"]
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600

    assert model.session_ids() == ["s1", "s2"]
    assert [r.seq for r in model.requests(since=mark)] == [2, 3, 4]
    assert [r.seq for r in model.main_requests("s2")] == [3]
    assert model.any_contains("HANDOFF-XYZ", session_id="s2")
    assert not model.any_contains("HANDOFF-XYZ", session_id="s1")
    assert model.first_main_after("handoff please").session_id == "s2"
    assert model.first_main_after(model.requests()[2]) is None  # seq 4 is a side call
    assert model.wait_for(lambda r: r.kind == "side", timeout=1).seq == 4
    with pytest.raises(TimeoutError, match="no matching request"):
        model.wait_for(lambda r: r.kind == "compact", timeout=0.2)


def test_bad_scenarios_are_rejected_with_the_place_named(tmp_path):
    cases = [
        ({"rules": [{"when": {"last_user_has": "x"}, "reply": "y"}]}, "rules[0].when: unknown key"),
        ({"rules": [{"extract": {"p": "(unclosed"}, "reply": "y"}]}, "rules[0].extract.p: bad regular"),
        ({"rules": [{"when": {}}]}, "rules[0] needs a reply"),
        ({"rules": [{"reply": [{"type": "image"}]}]}, "rules[0].reply[0]: block type"),
        ({"rules": [{"reply": "x", "usage": {"tokens": 1}}]}, "rules[0].usage: unknown field 'tokens'"),
        ({"usage_plan": {"per": "day"}}, "usage_plan.per"),
        ({"default": {"reply": "x", "times": 2}}, "default: unknown key"),
        ([1, 2], "scenario must be an object"),
    ]
    for scenario, message in cases:
        with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")
                           .replace("(", r"\(")):
            validate_scenario(scenario)
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(ScenarioError, match="bad.json: not valid JSON"):
        load_scenario(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"rules": [{"reply": "fine"}]}))
    assert load_scenario(good)["rules"][0]["reply"] == "fine"


def test_module_serves_a_scenario_file_until_stopped(tmp_path):
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"rules": [{"reply": "from the file"}]}))
    log = tmp_path / "cli.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "cc_continuity.rehearse.scripted_model", str(scenario), "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        host, port = url.rsplit("/", 1)[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("POST", "/v1/messages?beta=true", json.dumps(body(user("hi"))))
        assert assemble(events(conn.getresponse().read()))["content"][0]["text"] == "from the file"
        assert json.loads(log.read_text())["kind"] == "main"
    finally:
        proc.terminate()
        proc.wait(10)
    bad = subprocess.run([sys.executable, "-m", "cc_continuity.rehearse.scripted_model", str(tmp_path / "missing.json")],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "missing.json" in bad.stderr


def test_a_tools_name_is_taken_from_the_tools_the_request_offers(serve):
    """``extract_from: "tools"``: the names of the request's tools, one a line (an MCP tool's name is the
    host's to choose: the scripted model calls whatever the request offers)."""
    model = serve({"rules": [{"name": "call", "when": {"last_user_contains": "use it"}, "extract_from": "tools",
                              "extract": {"tool": r"(?m)^(\S*session_context)$"},
                              "reply": [{"type": "tool_use", "name": "{tool}", "input": {}}]}]})
    offered = [{"name": "Write", "input_schema": {"type": "object"}},
               {"name": "mcp_cc-continuity_session_context", "input_schema": {"type": "object"}}]
    assert ask(model, user("use it"))["content"][0]["text"] == "Scripted reply 1."  # Write only: not offered
    resp, raw = post(model, dict(body(user("use it")), tools=offered))
    assert resp.status == 200, raw
    got = assemble(events(raw))["content"][0]
    assert (got["type"], got["name"]) == ("tool_use", "mcp_cc-continuity_session_context")
    with pytest.raises(Exception, match="extract_from must be"):
        model.set_scenario({"rules": [{"name": "x", "extract_from": "headers", "reply": "no"}]})
