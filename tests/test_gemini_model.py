"""The scripted Gemini API (Gemini CLI's model), spoken to over real HTTP on loopback, as the CLI speaks it."""

import http.client
import json
import threading

import pytest

from helpers.gemini_model import SESSION_HEADER, GeminiModel

STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
GENERATE = "/v1beta/models/%s:generateContent"
TOOLS = [{"functionDeclarations": [{"name": "list_directory", "parameters": {"type": "object"}}]}]


def user(*texts):
    return {"role": "user", "parts": [{"text": t} for t in texts]}


def body(*contents, system="You are an interactive CLI agent.", **extra):
    return dict({"contents": list(contents), "systemInstruction": {"role": "user", "parts": [{"text": system}]},
                 "tools": TOOLS, "generationConfig": {"temperature": 1}}, **extra)


def post(model, path, payload, session="s1"):
    """POST; (status, [GenerateContentResponse...] from the SSE stream, or the JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    headers = {"content-type": "application/json", "x-goog-api-key": "k", SESSION_HEADER: session}
    conn.request("POST", path, json.dumps(payload).encode(), headers)
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    if resp.getheader("content-type") != "text/event-stream":
        return resp.status, json.loads(data)
    assert all(block.startswith("data: ") for block in data.split("\n\n") if block), data  # what the SDK reads
    return resp.status, [json.loads(block[len("data: "):]) for block in data.split("\n\n") if block]


def parts(chunks):
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


@pytest.fixture
def model():
    with GeminiModel() as m:
        yield m


def test_a_streamed_reply_is_split_over_chunks_and_the_last_one_closes_it(model):
    model.set_scenario({"default": {"reply": [{"type": "text", "text": "Hello there, world."},
                                              {"type": "tool_use", "name": "list_directory",
                                               "input": {"dir_path": "."}}]}})
    status, chunks = post(model, STREAM, body(user("hi")))
    assert status == 200 and len(chunks) == 3
    assert "".join(p.get("text", "") for p in parts(chunks)) == "Hello there, world."
    assert parts(chunks)[-1] == {"functionCall": {"name": "list_directory", "args": {"dir_path": "."}}}
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, "STOP"]
    assert ["usageMetadata" in c for c in chunks] == [False, False, True]
    (req,) = model.requests()
    assert (req.kind, req.rpc, req.model, req.session_id, req.rule) == (
        "main", "streamGenerateContent", "gemini-2.5-flash", "s1", "default")


def test_the_usage_plan_puts_the_prompt_at_a_chosen_size_per_session(model):
    model.set_scenario({"usage_plan": {"per": "session", "input_tokens": {"start": 13000, "step": 1000},
                                       "cache_read_input_tokens": 500}})
    got = []
    for session in ("s1", "s1", "s2"):
        _status, chunks = post(model, STREAM, body(user("go")), session=session)
        got.append(chunks[-1]["usageMetadata"])
    assert [u["promptTokenCount"] for u in got] == [13500, 14500, 13500]
    assert got[0]["cachedContentTokenCount"] == 500
    assert got[0]["totalTokenCount"] == got[0]["promptTokenCount"] + got[0]["candidatesTokenCount"]


def test_without_a_plan_the_prompt_grows_with_the_request(model):
    small = post(model, STREAM, body(user("x")))[1][-1]["usageMetadata"]["promptTokenCount"]
    big = post(model, STREAM, body(user("x" * 8000)))[1][-1]["usageMetadata"]["promptTokenCount"]
    assert 1900 <= big - small <= 2100  # the body's size / 4


def test_rules_read_the_input_since_the_model_last_spoke(model):
    model.set_scenario({"rules": [{"name": "resume", "when": {"last_user_contains": "RESUME"}, "reply": "Fresh."}],
                        "default": {"reply": "Default."}})
    old = body(user("RESUME earlier"), {"role": "model", "parts": [{"text": "ok"}]}, user("now something else"))
    assert post(model, STREAM, old)[1][-1]["candidates"][0]["content"]["parts"][-1]["text"] == "ult."
    response = {"functionResponse": {"name": "list_directory", "response": {"output": "RESUME.md"}}}
    post(model, STREAM, body(user("x"), {"role": "model", "parts": [{"text": "t"}]}, {"role": "user", "parts": [response]}))
    assert [r.rule for r in model.requests()] == ["default", "resume"]
    assert model.requests()[1].parts("functionResponse", latest=True) == [response["functionResponse"]]


def test_generate_content_is_side_compact_or_structured(model):
    status, side = post(model, GENERATE % "gemini-3.5-flash-lite", body(user("Summarize the user's intent")))
    assert status == 200 and side["candidates"][0]["finishReason"] == "STOP"
    compact = body(user("history"), system="You are a specialized system component responsible for distilling "
                                           "chat history into a structured XML <state_snapshot>.")
    text = post(model, GENERATE % "gemini-2.5-flash", compact)[1]["candidates"][0]["content"]["parts"][0]["text"]
    assert text.startswith("<state_snapshot>")
    schema = {"type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["user", "model"]}}}
    structured = body(user("who speaks next?"), generationConfig={"responseJsonSchema": schema})
    answer = post(model, GENERATE % "gemini-2.5-flash", structured)[1]["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(answer) == {"next_speaker": "user"}
    assert [(r.kind, r.rule) for r in model.requests()] == [("side", "side"), ("compact", "compact"),
                                                           ("side", "structured")]


def test_count_tokens_errors_and_unknown_routes(model):
    assert post(model, "/v1beta/models/gemini-2.5-flash:countTokens", body(user("x" * 400)))[1]["totalTokens"] >= 100
    model.set_scenario({"default": {"reply": "x", "error": {"status": 429, "type": "RESOURCE_EXHAUSTED",
                                                            "message": "slow down"}}})
    status, err = post(model, STREAM, body(user("x")))
    assert status == 429 and err["error"] == {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "slow down"}
    assert post(model, "/v1beta/models/m:embedContent", {})[0] == 404
    assert [r.kind for r in model.requests()] == ["count_tokens", "main", "other"]


def test_wait_for_sees_a_request_from_another_thread(model):
    worker = threading.Thread(target=post, args=(model, STREAM, body(user("late"))))
    worker.start()
    req = model.wait_for(lambda r: r.kind == "main" and "late" in r.latest_text, timeout=10)
    worker.join(10)
    assert req.seq == 1 and req.to_json()["rpc"] == "streamGenerateContent"
    with pytest.raises(TimeoutError):
        model.wait_for(lambda r: r.kind == "compact", timeout=0.2)
