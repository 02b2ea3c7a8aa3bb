"""``configure --window auto``'s question (serverwindow/) against stand-ins on 127.0.0.1 that answer as each server
documents: llama.cpp's server README (GET /props, router mode), vLLM's OpenAI-compatible server (/v1/models'
ModelCard), Ollama's API docs (/api/ps, /api/show), LM Studio's REST API v1 ("List your models"), LiteLLM's
"Model Management" (/model/info) and Anthropic's "Get a Model"; and the ways they fail: no such endpoint, a
model not loaded, a slow answer, HTML from a proxy, a 401, a redirect, no server at all."""

import json
import socket
import time

import pytest

from cc_continuity.serverwindow import ask, shapes
from helpers.standin import ok, stand_in  # noqa: F401  (a fixture)


LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 32768, "params": {"n_predict": -1}}, "total_slots": 1,
               "model_path": "/models/qwen.gguf", "chat_template": "…", "build_info": "b6000"}


@pytest.mark.parametrize("routes, model, want, asked", [
    ({"GET /props": ok(LLAMA_PROPS)}, "qwen", (32768, shapes.EXACT, "llama-server"), ["GET /props"]),
    ({"GET /props": ok({"role": "router", "models": ["qwen", "llama"]}),  # router mode: per model
      "GET /props?model=qwen": ok(LLAMA_PROPS)}, "qwen", (32768, shapes.EXACT, "llama-server"),
     ["GET /props", "GET /props?model=qwen"]),
    ({"GET /v1/models": ok({"object": "list", "data": [
        {"id": "other", "object": "model", "max_model_len": 4096},
        {"id": "Qwen/Qwen3-Coder", "object": "model", "owned_by": "vllm", "root": "Qwen/Qwen3-Coder",
         "max_model_len": 131072}]})}, "Qwen/Qwen3-Coder", (131072, shapes.EXACT, "vLLM"), None),
    ({"GET /api/ps": ok({"models": [{"name": "qwen3:latest", "model": "qwen3:latest", "size": 1,
                                     "context_length": 8192}]})}, "qwen3", (8192, shapes.EXACT, "Ollama"),
     ["GET /props", "GET /props?model=qwen3", "GET /api/ps"]),
    ({"GET /api/ps": ok({"models": []}),  # not loaded: the model's num_ctx as the ceiling
      "POST /api/show": ok({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
                            "parameters": "num_ctx 16384\nstop \"<|im_end|>\""})},
     "qwen3", (16384, shapes.CEILING, "Ollama"), None),
    ({"GET /api/ps": ok({"models": []}),
      "POST /api/show": ok({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
                            "parameters": "stop \"<|im_end|>\""})}, "qwen3", (40960, shapes.CEILING, "Ollama"), None),
    ({"GET /api/v1/models": ok({"models": [{"type": "llm", "key": "qwen/qwen3-8b", "max_context_length": 131072,
                                            "loaded_instances": [{"id": "qwen/qwen3-8b",
                                                                  "config": {"context_length": 4096}}]}]})},
     "qwen/qwen3-8b", (4096, shapes.EXACT, "LM Studio"), None),
    ({"GET /api/v1/models": ok({"models": [{"type": "llm", "key": "qwen/qwen3-8b", "max_context_length": 131072,
                                            "loaded_instances": []}]})},
     "qwen/qwen3-8b", (131072, shapes.CEILING, "LM Studio"), None),
    ({"GET /model/info": ok({"data": [{"model_name": "qwen", "litellm_params": {"model": "hosted_vllm/qwen"},
                                       "model_info": {"max_input_tokens": 32000, "max_tokens": 8192}}]})},
     "qwen", (32000, shapes.EXACT, "LiteLLM"), None),
    ({"GET /v1/models/qwen": ok({"type": "model", "id": "qwen", "display_name": "Qwen", "created_at": "x",
                                 "max_input_tokens": 200000, "max_tokens": 8192})},
     "qwen", (200000, shapes.EXACT, "Messages API"), None),
])
def test_each_server_shape_is_read_from_the_field_its_documents_name(stand_in, routes, model, want, asked):
    s = stand_in(routes)
    got = ask.ask(s.url + "/v1", model)  # (a base URL as a host is given it: /v1 dropped)
    assert got.answer is not None, got.to_json()
    assert (got.answer.tokens, got.answer.kind, got.answer.server) == want, got.to_json()
    if asked:
        assert s.paths() == asked
    assert len(s.seen) == len(got.tried) <= len(shapes.SHAPES) + 1  # one request a shape (Ollama's two)


def test_the_training_size_is_never_taken_for_the_window(stand_in):
    s = stand_in({"GET /v1/models": ok({"object": "list", "data": [
        {"id": "qwen", "object": "model", "meta": {"n_ctx_train": 262144, "n_params": 1}}]})})
    got = ask.ask(s.url, "qwen")
    assert got.answer is None and "GET /v1/models: not this shape" in got.tried


def test_an_ollama_model_not_loaded_and_without_a_ceiling_is_unknown_until_loaded(stand_in):
    s = stand_in({"GET /api/ps": ok({"models": []}), "POST /api/show": ok({"modelfile": "FROM x"})})
    got = ask.ask(s.url, "qwen3")
    assert got.answer.tokens is None and got.answer.kind == shapes.NOT_LOADED, got.to_json()
    body = json.loads([b for m, p, _, b in s.seen if p == "/api/show"][0])
    assert body == {"model": "qwen3"}


@pytest.mark.parametrize("routes, why", [
    ({}, "no endpoint"),  # every path 404
    ({"GET %s" % p: (200, "<html><body>Sign in to the proxy</body></html>", "text/html", 0)
      for p in ("/props", "/props?model=m", "/api/ps", "/api/v1/models", "/model/info", "/v1/models", "/v1/models/m")},
     "HTML"),
])
def test_no_answer_in_any_shape_is_none_after_one_request_a_shape(stand_in, routes, why):
    s = stand_in(routes)
    got = ask.ask(s.url, "m")
    assert got.answer is None and len(s.seen) == len(shapes.SHAPES), (why, got.to_json())


def test_a_slow_server_is_asked_once_and_the_whole_question_takes_one_timeout(stand_in):
    s = stand_in({"GET /props": ok(LLAMA_PROPS, delay=5)})
    t0 = time.monotonic()
    got = ask.ask(s.url, "m")  # the default bound, 2 s
    took = time.monotonic() - t0
    assert got.answer is None and "did not answer in 2 s" in got.why and len(s.seen) == 1
    assert ask.TIMEOUT_S <= took < ask.TIMEOUT_S + 1.0, took


def test_no_server_at_all_stops_at_once():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    got = ask.ask("http://127.0.0.1:%d" % port, "m")
    assert got.answer is None and "no server answers" in got.why and len(got.tried) == 1 and got.seconds < 1


def test_a_credential_goes_only_after_a_401_and_only_to_that_server(stand_in):
    other = stand_in({"GET /props": ok(LLAMA_PROPS)})
    s = stand_in({"GET /props": (401, {"error": "auth"}, None, 0)})
    s.routes["GET /api/ps"] = (302, other.url + "/props", None, 0)  # a redirect elsewhere: never followed
    got = ask.ask(s.url, "m", {"authorization": "Bearer sk-local-123"})
    first, second = s.seen[0], s.seen[1]
    assert (first[1], "authorization" in first[2]) == ("/props", False)
    assert (second[1], second[2].get("authorization")) == ("/props", "Bearer sk-local-123")
    assert not other.seen and got.answer is None
    s.routes["GET /props"] = ok(LLAMA_PROPS)
    s.seen.clear()
    assert ask.ask(s.url, "m", {"authorization": "Bearer sk-local-123"}).answer.tokens == 32768
    assert "authorization" not in s.seen[0][2]  # a server that asks for none gets none


def test_a_base_url_that_is_not_http_is_refused():
    got = ask.ask("file:///etc/passwd", "m")
    assert got.answer is None and "not an http(s) URL" in got.why and got.tried == []


def test_a_litellm_proxy_as_recorded_from_1_108_7(stand_in):
    """The answers a real LiteLLM proxy 1.108.7 (PyPI, in front of a stand-in) gave: 404 JSON on the other shapes'
    paths, 401 on /model/info without its master key, then ``data[].model_info.max_input_tokens`` (186 keys,
    nearly all null) for the entry whose config set it; an entry without it is null, so nothing is known."""
    info = {"data": [
        {"model_name": "qwen-local", "litellm_params": {"model": "openai/qwen", "api_base": "http://127.0.0.1:1/v1"},
         "model_info": {"id": "ab" * 32, "db_model": False, "max_tokens": None, "max_input_tokens": None,
                        "max_output_tokens": None, "key": "openai/qwen", "litellm_provider": "openai",
                        "mode": None, "supports_vision": None}},
        {"model_name": "qwen-local-32k", "litellm_params": {"model": "openai/qwen2"},
         "model_info": {"id": "cd" * 32, "max_input_tokens": 32768, "max_tokens": None, "key": "openai/qwen2"}}]}
    denied = (401, {"error": {"message": "Authentication Error, No api key passed in.", "type": "auth_error",
                              "param": "None", "code": "401"}}, None, 0)
    routes = {"GET %s" % p: (404, {"detail": "Not Found"}, None, 0)
              for p in ("/props", "/props?model=qwen-local-32k", "/api/ps", "/api/v1/models")}
    routes["GET /model/info"] = lambda h: ok(info) if h.get("authorization") == "Bearer sk-lab-1234" else denied
    s = stand_in(routes)
    got = ask.ask(s.url + "/v1", "qwen-local-32k", {"authorization": "Bearer sk-lab-1234"})
    assert (got.answer.tokens, got.answer.server) == (32768, "LiteLLM") and "LiteLLM's own figure" in got.answer.note
    got = ask.ask(s.url, "qwen-local", {"authorization": "Bearer sk-lab-1234"})
    assert got.answer is None or got.answer.server != "LiteLLM", got.to_json()  # null: not taken for a window
