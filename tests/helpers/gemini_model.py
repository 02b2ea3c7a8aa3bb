"""A scripted stand-in for the Gemini API (``generativelanguage`` v1beta) on loopback: Gemini CLI's model.

Gemini CLI 0.61 with ``security.auth.selectedType: "gemini-api-key"`` sends every model
call to ``$GOOGLE_GEMINI_BASE_URL`` (plain http only to 127.0.0.1/localhost), so pointing
it here runs the real CLI offline: hooks, tool calls, clearContext, compression
(shared/reference/gemini-cli-0.61.md section 4 for the wire).

It is :class:`cc_continuity.rehearse.scripted_model.ScriptedModel` with a Gemini face:
the same scenario (rules, ``when``, ``extract``, ``then``, ``times``, ``delay``,
``error``, ``hang``, ``usage_plan``: see that module), the same request log,
``requests()``, ``mark()`` and ``wait_for(predicate, timeout)``.  What differs:

- Routes: ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (SSE
  ``data: <GenerateContentResponse>`` events, text split over chunks, the last chunk
  with ``finishReason: "STOP"`` and ``usageMetadata``), ``:generateContent`` (one JSON)
  and ``:countTokens`` (``{"totalTokens": <text size / 4>}``).
- Kinds: ``main`` (the streamed conversation), ``compact`` (a compression request:
  the ``<state_snapshot>`` prompt or its check), ``side`` (any other ``generateContent``:
  the title/intent summary, JSON checks), ``count_tokens``.  A ``side`` request that
  asks for JSON (``responseJsonSchema``) gets a value of its schema; ``compact`` gets
  ``<state_snapshot>`` around ``compact_summary``.
- Reply blocks keep the Claude names: ``{"type": "text"}`` is a text part,
  ``{"type": "tool_use", "name", "input"}`` a ``functionCall`` part (``input`` are its
  ``args``), ``{"type": "thinking"}`` a ``thought`` part.
- Usage keeps the Claude names too and reads as a context size: ``promptTokenCount`` =
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``,
  ``cachedContentTokenCount`` = ``cache_read_input_tokens``, ``candidatesTokenCount`` =
  ``output_tokens``.  With no plan and no rule usage, ``input_tokens`` is the request
  body's size / 4 (the context grows with the conversation).
- Sessions: the Gemini API carries no session id.  ``session_id`` is the
  ``x-scripted-session`` header, which a client sets through
  ``GEMINI_CLI_CUSTOM_HEADERS`` (``GeminiSandbox.run_print`` does, one per run), else
  ``None`` (all requests one session).
"""

import json
import re
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from cc_continuity.rehearse import scripted_model as base
from cc_continuity.rehearse.scripted_model import Request, ScriptedModel, sample_for_schema

__all__ = ["GeminiModel", "GeminiRequest", "SESSION_HEADER", "part_text", "classify"]

SESSION_HEADER = "x-scripted-session"
HEADERS_OF_INTEREST = ("user-agent", "x-goog-api-client", "content-type", SESSION_HEADER)
COMPACT_MARKS = ("<state_snapshot>", "state_snapshot")
_ROUTE = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<rpc>[A-Za-z]+)$")
STREAM, GENERATE, COUNT = "streamGenerateContent", "generateContent", "countTokens"


def part_text(part):
    """Readable text of one ``Part``: its text, a function call's args, a function response."""
    if not isinstance(part, dict):
        return ""
    if "text" in part:
        return str(part["text"])
    if "functionCall" in part:
        call = part["functionCall"] or {}
        return "%s %s" % (call.get("name", ""), json.dumps(call.get("args", {}), ensure_ascii=False))
    if "functionResponse" in part:
        resp = part["functionResponse"] or {}
        return "%s %s" % (resp.get("name", ""), json.dumps(resp.get("response", {}), ensure_ascii=False))
    return ""


def _content_text(content):
    parts = content.get("parts", []) if isinstance(content, dict) else []
    return "\n".join(part_text(p) for p in parts)


@dataclass
class GeminiRequest(Request):
    """One logged request: ``model`` and ``rpc`` from the URL, the body's ``contents``."""

    model: str = None
    rpc: str = None

    @property
    def contents(self):
        contents = self.body.get("contents", []) if isinstance(self.body, dict) else []
        return [c for c in contents if isinstance(c, dict)]

    messages = contents  # what the base class's helpers call the conversation

    @property
    def tools(self):
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return [d.get("name") for t in tools if isinstance(t, dict)
                for d in t.get("functionDeclarations", []) if isinstance(d, dict)]

    @cached_property
    def system_text(self):
        system = self.body.get("systemInstruction") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return _content_text(system) if isinstance(system, dict) else ""

    def latest_contents(self):
        """The contents since the model last spoke (user text, function responses)."""
        contents = self.contents
        roles = [c.get("role") for c in contents]
        return contents[len(roles) - roles[::-1].index("model"):] if "model" in roles else contents

    @cached_property
    def latest_text(self):
        return "\n".join(_content_text(c) for c in self.latest_contents())

    @cached_property
    def text(self):
        """All readable text: system instruction and every content."""
        return "\n".join([self.system_text] + [_content_text(c) for c in self.contents])

    def parts(self, key, latest=False):
        """The ``key`` values (``"text"``, ``"functionCall"``, ``"functionResponse"``) of the parts."""
        contents = self.latest_contents() if latest else self.contents
        return [p[key] for c in contents for p in c.get("parts", []) if isinstance(p, dict) and key in p]

    def to_json(self):
        return dict(super().to_json(), model=self.model, rpc=self.rpc)


def classify(rpc, body):
    """``main``, ``side`` or ``compact`` for a generate request (``rpc`` from the URL)."""
    if rpc == STREAM:
        return "main"
    probe = GeminiRequest(0, 0.0, "POST", "", {}, body)
    if any(mark in probe.system_text or mark in probe.latest_text for mark in COMPACT_MARKS):
        return "compact"
    return "side"


def _schema(body):
    config = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(config, dict):
        return None
    return config.get("responseJsonSchema") or config.get("responseSchema")


def _usage_metadata(usage):
    cached = usage.get("cache_read_input_tokens", 0)
    prompt = usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0) + cached
    out = usage.get("output_tokens", 0)
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta


def _parts(blocks, split):
    """Reply blocks (Claude names) as Gemini parts; with ``split``, a text in halves (two chunks when streamed)."""
    parts = []
    for block in blocks:
        if block["type"] == "text":
            text = block["text"]
            cut = len(text) // 2 if split else 0
            parts += [{"text": piece} for piece in (text[:cut], text[cut:]) if piece] or [{"text": ""}]
        elif block["type"] == "tool_use":
            parts.append({"functionCall": {"name": block["name"], "args": block.get("input", {})}})
        else:
            parts.append({"text": block["thinking"], "thought": True})
    return parts


def responses(blocks, usage, model, stream):
    """The ``GenerateContentResponse`` objects of a reply: one a part when streamed, the last one
    carrying ``finishReason`` and ``usageMetadata``; a single one otherwise."""
    parts = _parts(blocks, stream)
    groups = [[p] for p in parts] if stream else [parts]
    out = [{"candidates": [{"content": {"role": "model", "parts": g}, "index": 0}], "modelVersion": model,
            "responseId": uuid.uuid4().hex[:16]} for g in groups]
    out[-1]["candidates"][0]["finishReason"] = "STOP"
    out[-1]["usageMetadata"] = _usage_metadata(usage)
    return out


class GeminiModel(ScriptedModel):
    """The fake Gemini API.  ``with GeminiModel(scenario) as m: ... m.url`` (``GOOGLE_GEMINI_BASE_URL``)."""

    def start(self):
        if self._server is None:
            super().start()
            # Nobody knows the fresh port yet: the Gemini routes take every request from the first.
            self._server.RequestHandlerClass = type("Handler", (_Handler,), {"model": self})
        return self

    def main_requests(self, session_id=None):
        return self.requests(kind="main", session_id=session_id)

    def _builtin(self, req, scenario):
        if req.kind == "compact":
            summary = scenario.get("compact_summary", "Scripted summary of the work so far.")
            return {"reply": "<state_snapshot>\n%s\n</state_snapshot>" % summary}, "compact"
        schema = _schema(req.body)
        if schema is not None:
            return {"reply": json.dumps(sample_for_schema(schema))}, "structured"
        if req.kind == "side":
            return {"reply": "Scripted side answer."}, "side"
        return scenario.get("default", {"reply": "Scripted reply {n}."}), "default"

    def _usage(self, req, scenario, override, nth, session_nth):
        usage = super()._usage(req, scenario, override, nth, session_nth)
        given = set(override) | (set(scenario.get("usage_plan") or ()) if req.kind == "main" else set())
        if not given & {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}:
            usage["input_tokens"] = max(1, len(json.dumps(req.body)) // 4)
        return usage

    def _model_name(self, req):
        return self._scenario.get("model") or req.model or "gemini-scripted"


class _Handler(base._Handler):
    """The Gemini routes; HEAD, GET (and ``/metrics``), body reading and hanging are the base's."""

    server_version = "GeminiModel/1"

    def _headers_of_interest(self):
        return {k: self.headers[k] for k in HEADERS_OF_INTEREST if self.headers.get(k) is not None}

    def _new_request(self, body=None, kind="other", model=None, rpc=None):
        return GeminiRequest(0, time.time(), self.command, self.path, self._headers_of_interest(), body, kind,
                             self.headers.get(SESSION_HEADER), model=model, rpc=rpc)

    def do_POST(self):
        raw = self._read_body()
        route = _ROUTE.match(urlsplit(self.path).path)
        model, rpc = (route.group("model"), route.group("rpc")) if route else (None, None)
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            return self._refuse(400, "INVALID_ARGUMENT", "scripted model: %s" % e, raw.decode("utf-8", "replace"))
        if rpc == COUNT:
            req = self._new_request(body, "count_tokens", model, rpc)
            self.model._record(req)
            return self._send_json(200, {"totalTokens": max(1, len(req.text) // 4)})
        if rpc not in (STREAM, GENERATE):
            return self._refuse(404, "NOT_FOUND", "scripted model: no route %s" % self.path, body)
        self._answer(self._new_request(body, classify(rpc, body), model, rpc))

    def _refuse(self, status, kind, message, body):
        req = self._new_request(body, "invalid" if status == 400 else "other")
        req.status = status
        self.model._record(req)
        self._send_json(status, {"error": {"code": status, "message": message, "status": kind}})

    def _answer(self, req):
        plan = self.model._plan(req)
        err = plan["error"]
        req.rule, req.status = plan["rule"], 0 if plan["hang"] else (err.get("status", 400) if err else 200)
        if req.status == 200:
            req.reply, req.usage = plan["blocks"], plan["usage"]
        self.model._record(req)
        if plan["hang"]:
            return self._hang()
        self.model._stopping.wait(plan["delay"])
        if err is not None:
            return self._send_json(req.status, {"error": {"code": req.status, "status": err.get("type", "INTERNAL"),
                                                          "message": err.get("message", "scripted error")}})
        stream = req.rpc == STREAM
        answers = responses(plan["blocks"], plan["usage"], self.model._model_name(req), stream)
        if not stream:
            return self._send_json(200, answers[0])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for answer in answers:
                data = ("data: %s\n\n" % json.dumps(answer, ensure_ascii=False)).encode("utf-8")
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
