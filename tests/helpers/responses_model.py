"""A scripted stand-in for the OpenAI Responses API, listening on loopback: Codex CLI's model.

Codex 0.171 accepts only ``wire_api = "responses"`` for a custom provider, so a
``[model_providers.<name>] base_url = <this>/v1`` makes the real binary run whole
turns offline: hooks, ``exec_command`` tool calls, the thread-title request,
compaction.  Every reply is decided by a *scenario* (shared/reference/codex-cli-0.171.md
sections 4-5 for the wire as observed)::

    {
      "rules": [                                  # first match wins
        {"name": "handoff",
         "when": {"latest_contains": "write the handoff"},
         "extract": {"path": r"to (/\\S+\\.md)"},   # must match; group 1 -> {path}
         "extract_from": "latest",                # or "any", or "tools" (see below)
         "reply": [{"type": "exec_command", "cmd": "cat > {path} <<'EOF'\\n{handoff}\\nEOF"}],
         "then": ["Handoff written."],            # the next replies of this thread, in order; one may be
                                                  # {"reply": ..., "usage": {...}} (its own usage)
         "usage": {"input_tokens": 15000},
         "times": 1,
         "hold": "slow"}                          # the reply waits for model.release("slow")
      ],
      "default": {"reply": "OK."},
      "vars": {"handoff": "..."},
      "usage_plan": {"per": "thread", "input_tokens": {"start": 9000, "step": 2000}},
      "title": "Scripted title",
      "compact_summary": "What happened so far."
    }

``when`` keys (all given must hold): ``latest_contains`` (the input since the model
last spoke: user and developer messages, hook prompts, tool output), ``any_contains``
(anywhere in the request, instructions included), ``kind`` (``main`` by default,
``title``, ``compaction`` or ``any``), ``nth`` (n-th main request, 1-based) and
``thread_nth`` (n-th main request of this ``thread-id``).  A string condition may be
a list: all must appear.  A reply is a string (one assistant message) or a list of
steps: a string, ``{"type": "text", "text"}``, ``{"type": "exec_command", "cmd", ...}``
(a ``function_call`` whose arguments are the step's other keys) or
``{"type": "function_call", "name", "namespace"?, "arguments"?}`` (a call of any tool the
request offers: ``arguments`` an object, ``namespace`` set for a tool offered inside a
``namespace`` tool, as Codex 0.171 offers an MCP server's tools).  Templates:
``{name}`` from ``vars`` and ``extract``, ``{thread_id}``, ``{n}``; unknown stay.
``extract`` searches the latest input (``extract_from: "latest"``, the default), the
whole request (``"any"``) or the names of the tools it offers, one a line
(``"tools"``: a ``namespace`` tool's own name, then each tool inside it as
``<namespace> <tool>``); a rule whose regex finds nothing does not match, so a rule can
wait for a tool to be offered.

``hold`` makes a reply slow for as long as a test needs it to be, with no clock in
it: the request is logged (``wait_for`` sees it) and its reply waits until
``release(name)`` (or ``HOLD_LIMIT_S``, so a failing test cannot hang the server).

Requests are classified: ``compaction`` (``x-codex-turn-metadata`` says
``request_kind: compaction``, or the compaction prompt is the latest input),
``title`` (no tools: the "Generate a concise, single-line task title" request), else
``main``.  Title requests get ``title``; compaction gets ``compact_summary``; both can
be taken over by a rule with that ``kind``.

Usage reported in ``response.completed`` (what Codex writes to the rollout's
``token_count``): ``input_tokens`` is the request body's size / 4 (a stand-in for a
tokenizer, so context grows with the conversation) unless ``usage_plan`` or the
rule's ``usage`` says otherwise; ``output_tokens`` is the reply's size / 4 + 1.
"""

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPACT_MARK = "CONTEXT CHECKPOINT COMPACTION"
TITLE_MARK = "task title"
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
WHEN_KEYS = {"latest_contains", "any_contains", "kind", "nth", "thread_nth"}
RULE_KEYS = {"name", "when", "extract", "extract_from", "reply", "then", "usage", "times", "hold", "error"}
SCENARIO_KEYS = {"rules", "default", "vars", "usage_plan", "title", "compact_summary"}
KINDS = ("main", "title", "compaction", "any")
EXTRACT_FROM = ("latest", "any", "tools")
STEP_TYPES = ("text", "exec_command", "function_call")
HOLD_LIMIT_S = 120.0  # a held reply goes out after this even unreleased
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ScenarioError(ValueError):
    """The scenario is malformed; the message names the offending place."""


# ---------------------------------------------------------------- scenario


def validate_scenario(scenario):
    """Return ``scenario`` (``None`` -> empty) after checking its shape."""
    if scenario is None:
        return {"rules": []}
    if not isinstance(scenario, dict):
        raise ScenarioError("scenario must be an object, got %s" % type(scenario).__name__)
    _no_unknown(scenario, SCENARIO_KEYS, "scenario")
    rules = scenario.get("rules", [])
    if not isinstance(rules, list):
        raise ScenarioError("scenario.rules must be a list")
    for i, rule in enumerate(rules):
        _check_rule(rule, "rules[%d]" % i)
    if "default" in scenario:
        _check_rule(scenario["default"], "default", allow_when=False)
    if not isinstance(scenario.get("vars", {}), dict) or not all(
            isinstance(v, str) for v in scenario.get("vars", {}).values()):
        raise ScenarioError("scenario.vars must map names to strings")
    plan = scenario.get("usage_plan")
    if plan is not None:
        if not isinstance(plan, dict) or plan.get("per", "thread") not in ("thread", "request"):
            raise ScenarioError("usage_plan must be an object whose 'per' is 'thread' or 'request'")
        for key, spec in plan.items():
            if key == "per":
                continue
            if key not in USAGE_FIELDS:
                raise ScenarioError("usage_plan: unknown field %r (known: %s)" % (key, ", ".join(USAGE_FIELDS)))
            if isinstance(spec, dict):
                _no_unknown(spec, {"start", "step", "max"}, "usage_plan.%s" % key)
                if not all(_is_count(v) for v in spec.values()):
                    raise ScenarioError("usage_plan.%s: start/step/max must be non-negative integers" % key)
            elif not _is_count(spec):
                raise ScenarioError("usage_plan.%s must be a non-negative integer or {start, step}" % key)
    for key in ("title", "compact_summary"):
        if key in scenario and not isinstance(scenario[key], str):
            raise ScenarioError("scenario.%s must be a string" % key)
    return scenario


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _no_unknown(obj, known, where):
    unknown = set(obj) - known
    if unknown:
        raise ScenarioError("%s: unknown key(s) %s (known: %s)" % (where, ", ".join(sorted(unknown)),
                                                                   ", ".join(sorted(known))))


def _check_rule(rule, where, allow_when=True):
    if not isinstance(rule, dict):
        raise ScenarioError("%s must be an object" % where)
    _no_unknown(rule, RULE_KEYS if allow_when else {"reply", "usage"}, where)
    if "error" in rule:
        err = rule["error"]
        if not isinstance(err, dict) or not isinstance(err.get("status"), int) or not isinstance(
                err.get("headers", {}), dict):
            raise ScenarioError("%s.error must be {status, body?, headers?}" % where)
        return
    if "reply" not in rule:
        raise ScenarioError("%s: 'reply' is required" % where)
    _check_reply(rule["reply"], where + ".reply")
    when = rule.get("when", {})
    if not isinstance(when, dict):
        raise ScenarioError("%s.when must be an object" % where)
    _no_unknown(when, WHEN_KEYS, where + ".when")
    for key in ("latest_contains", "any_contains"):
        v = when.get(key)
        if v is not None and not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(s, str) for s in v))):
            raise ScenarioError("%s.when.%s must be a string or a list of strings" % (where, key))
    if when.get("kind", "main") not in KINDS:
        raise ScenarioError("%s.when.kind must be one of %s" % (where, ", ".join(KINDS)))
    for key in ("nth", "thread_nth"):
        if key in when and not (_is_count(when[key]) and when[key] >= 1):
            raise ScenarioError("%s.when.%s must be an integer >= 1" % (where, key))
    extract = rule.get("extract", {})
    if not isinstance(extract, dict) or not all(isinstance(v, str) for v in extract.values()):
        raise ScenarioError("%s.extract must map names to regexes" % where)
    for name, pattern in extract.items():
        try:
            re.compile(pattern)
        except re.error as e:
            raise ScenarioError("%s.extract.%s: bad regex: %s" % (where, name, e)) from None
    if rule.get("extract_from", "latest") not in EXTRACT_FROM:
        raise ScenarioError("%s.extract_from must be one of %s" % (where, ", ".join(EXTRACT_FROM)))
    then = rule.get("then", [])
    if not isinstance(then, list):
        raise ScenarioError("%s.then must be a list of replies" % where)
    for i, reply in enumerate(then):
        if isinstance(reply, dict):
            _check_rule(reply, "%s.then[%d]" % (where, i), allow_when=False)
        else:
            _check_reply(reply, "%s.then[%d]" % (where, i))
    _check_usage(rule.get("usage", {}), where)
    if "times" in rule and not (_is_count(rule["times"]) and rule["times"] >= 1):
        raise ScenarioError("%s.times must be an integer >= 1" % where)
    if "hold" in rule and not (isinstance(rule["hold"], str) and rule["hold"]):
        raise ScenarioError("%s.hold must be a non-empty name" % where)


def _check_usage(usage, where):
    if not isinstance(usage, dict) or not all(k in USAGE_FIELDS and _is_count(v) for k, v in usage.items()):
        raise ScenarioError("%s.usage must map %s to non-negative integers" % (where, "/".join(USAGE_FIELDS)))


def _check_reply(reply, where):
    steps = [reply] if isinstance(reply, str) else reply
    if not isinstance(steps, list) or not steps:
        raise ScenarioError("%s must be a string or a non-empty list of steps" % where)
    for i, step in enumerate(steps):
        if isinstance(step, str):
            continue
        if not isinstance(step, dict) or step.get("type") not in STEP_TYPES:
            raise ScenarioError("%s[%d]: a step is a string, {type: text}, {type: exec_command} or "
                                "{type: function_call}" % (where, i))
        if step["type"] == "text" and not isinstance(step.get("text"), str):
            raise ScenarioError("%s[%d]: a text step needs 'text' (a string)" % (where, i))
        if step["type"] == "exec_command" and not isinstance(step.get("cmd"), str):
            raise ScenarioError("%s[%d]: an exec_command step needs 'cmd' (a string)" % (where, i))
        if step["type"] == "function_call":
            _no_unknown(step, {"type", "name", "namespace", "arguments"}, "%s[%d]" % (where, i))
            if not (isinstance(step.get("name"), str) and step["name"]):
                raise ScenarioError("%s[%d]: a function_call step needs 'name' (a string)" % (where, i))
            if not isinstance(step.get("namespace", ""), str) or not isinstance(step.get("arguments", {}), dict):
                raise ScenarioError("%s[%d]: a function_call's 'namespace' is a string, its 'arguments' an "
                                    "object" % (where, i))


def _has_all(haystack, needles):
    return all(n in haystack for n in ([needles] if isinstance(needles, str) else needles))


def _render(value, variables):
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_render(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, variables) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- requests


def item_text(item):
    """Readable text of one Responses ``input`` item (message, tool call or its output)."""
    if not isinstance(item, dict):
        return ""
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))
    if kind == "function_call":
        name = "%s %s" % (item["namespace"], item.get("name", "")) if item.get("namespace") else item.get("name", "")
        return "%s %s" % (name, item.get("arguments", ""))
    if kind == "function_call_output":
        out = item.get("output")
        return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
    return ""


@dataclass
class Request:
    """One logged ``POST /v1/responses`` and what the server answered."""

    seq: int
    time: float
    path: str
    headers: dict
    body: dict
    kind: str = "main"
    thread_id: str = None
    rule: str = None
    reply: list = field(default_factory=list)
    usage: dict = None
    hold: str = None
    error: dict = None  # an error rule's {status, body, headers}: answered instead of a stream

    @property
    def input(self):
        items = self.body.get("input", [])
        return items if isinstance(items, list) else []

    @property
    def tools(self):
        return [t.get("name") or t.get("type") for t in self.body.get("tools") or [] if isinstance(t, dict)]

    @property
    def tool_names(self):
        """Every tool the request offers, one a line: a ``namespace`` tool's name, then each tool inside it
        as ``<namespace> <tool>`` (what ``extract_from: "tools"`` searches)."""
        lines = []
        for t in self.body.get("tools") or []:
            if not isinstance(t, dict):
                continue
            lines.append(str(t.get("name") or t.get("type")))
            if t.get("type") == "namespace":
                lines += ["%s %s" % (t.get("name"), s.get("name")) for s in t.get("tools") or [] if isinstance(s, dict)]
        return "\n".join(lines)

    @property
    def metadata(self):
        """``x-codex-turn-metadata`` as a dict (request_kind, history_initialization, ...)."""
        try:
            meta = json.loads(self.headers.get("x-codex-turn-metadata") or "{}")
        except ValueError:
            return {}
        return meta if isinstance(meta, dict) else {}

    def latest_items(self):
        """The input items since the model last spoke (after its last message or tool call)."""
        items = self.input
        start = 0
        for i, it in enumerate(items):
            if isinstance(it, dict) and (it.get("role") == "assistant" or it.get("type") == "function_call"):
                start = i + 1
        return items[start:]

    @property
    def latest_text(self):
        return "\n".join(item_text(it) for it in self.latest_items())

    @property
    def text(self):
        return "\n".join([str(self.body.get("instructions") or "")] + [item_text(it) for it in self.input])

    def messages(self, role):
        """Texts of the input's messages of ``role`` (``user``, ``developer``, ``assistant``)."""
        return [item_text(it) for it in self.input if isinstance(it, dict) and it.get("role") == role]

    def to_json(self):
        return {"seq": self.seq, "time": self.time, "path": self.path, "kind": self.kind,
                "thread_id": self.thread_id, "headers": self.headers, "rule": self.rule, "hold": self.hold,
                "reply": self.reply, "usage": self.usage, "body": self.body}


def classify(body, headers):
    """``main``, ``title`` or ``compaction`` for a Responses request."""
    probe = Request(0, 0.0, "/v1/responses", headers, body)
    if probe.metadata.get("request_kind") == "compaction" or COMPACT_MARK in probe.latest_text:
        return "compaction"
    if not body.get("tools"):
        return "title"
    return "main"


def sse(events):
    """The SSE bytes for a list of Responses stream events."""
    return b"".join(("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e))).encode() for e in events)


def stream_events(resp_id, steps, usage):
    """``response.created`` ... ``response.completed{usage}`` for ``steps`` (rendered reply steps)."""
    events = [{"type": "response.created", "response": {"id": resp_id, "status": "in_progress", "output": []}}]
    output = []
    for index, step in enumerate(steps):
        if step["type"] == "text":
            item_id = "msg_%s_%d" % (resp_id, index)
            text = step["text"]
            halves = [text[: len(text) // 2], text[len(text) // 2:]]
            item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            events.append({"type": "response.content_part.added", "item_id": item_id, "output_index": index,
                           "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
            for half in halves:
                events.append({"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                               "content_index": 0, "delta": half})
            done = dict(item, status="completed",
                        content=[{"type": "output_text", "text": text, "annotations": []}])
        else:
            called = step["type"] == "function_call"  # (an exec_command step's other keys are its arguments)
            name, args = (step["name"], step.get("arguments", {})) if called else (
                "exec_command", {k: v for k, v in step.items() if k != "type"})
            done = {"type": "function_call", "id": "fc_%s_%d" % (resp_id, index), "status": "completed",
                    "call_id": "call_%s_%d" % (resp_id, index), "name": name, "arguments": json.dumps(args)}
            if called and step.get("namespace"):
                done["namespace"] = step["namespace"]
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": dict(done, status="in_progress", arguments="")})
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
        output.append(done)
    events.append({"type": "response.completed",
                   "response": {"id": resp_id, "status": "completed", "output": output, "usage": usage}})
    return events


def _usage(fields):
    inp, out = fields.get("input_tokens", 0), fields.get("output_tokens", 0)
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": fields.get("cached_tokens", 0)},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": fields.get("reasoning_tokens", 0)},
            "total_tokens": inp + out}


# ---------------------------------------------------------------- server


class ResponsesModel:
    """The fake Responses API.  ``with ResponsesModel(scenario) as m: ... m.base_url``.

    Every request is kept (``requests()``) and, with ``log_path``, appended to a
    JSONL file as it arrives.
    """

    def __init__(self, scenario=None, log_path=None):
        self._lock = threading.Condition()
        self._scenario = validate_scenario(scenario)
        self._used = {}
        self._then = {}
        self._requests = []
        self._main_count = 0
        self._thread_counts = {}
        self._log_path = os.fspath(log_path) if log_path else None
        self._released = set()
        self._stopping = False
        self._server = None
        self._thread = None

    def start(self):
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), {"model": self}))
            self._server.daemon_threads = True
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="responses-model", daemon=True)
            self._thread.start()
        return self

    def stop(self):
        with self._lock:  # held replies go out: their threads end with the server
            self._stopping = True
            self._lock.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        if self._server is None:
            raise RuntimeError("ResponsesModel is not running; call start()")
        return self._server.server_address[1]

    @property
    def base_url(self):
        """What a Codex ``[model_providers.<name>] base_url`` names."""
        return "http://127.0.0.1:%d/v1" % self.port

    def set_scenario(self, scenario):
        scenario = validate_scenario(scenario)
        with self._lock:
            self._scenario, self._used, self._then = scenario, {}, {}

    def requests(self, kind=None, thread_id=None):
        with self._lock:
            return [r for r in self._requests if (kind is None or r.kind == kind)
                    and (thread_id is None or r.thread_id == thread_id)]

    def wait_for(self, predicate, timeout=10.0):
        """Block until ``predicate(requests)`` is true; return it, or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                got = predicate(list(self._requests))
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = ", ".join("%s/%s" % (r.kind, r.metadata.get("history_initialization")) for r in self._requests)
                    raise TimeoutError("no such request within %.1fs (seen: %s)" % (timeout, seen or "none"))
                self._lock.wait(left)

    def release(self, name):
        """Let the replies held under ``name`` go out (now and from now on)."""
        with self._lock:
            self._released.add(name)
            self._lock.notify_all()

    def _await_release(self, req):
        """Block the reply to ``req`` until its hold is released (or HOLD_LIMIT_S passed)."""
        deadline = time.monotonic() + HOLD_LIMIT_S
        with self._lock:
            while req.hold not in self._released and not self._stopping and time.monotonic() < deadline:
                self._lock.wait(deadline - time.monotonic())

    # answering
    def answer(self, path, headers, body, size):
        """Decide the reply for one request; return ``(Request, stream events)``."""
        kind = classify(body, headers)
        thread_id = headers.get("thread-id") or headers.get("session-id")
        with self._lock:
            req = Request(len(self._requests) + 1, time.time(), path, headers, body, kind, thread_id)
            rule, steps, usage, req.hold = self._plan(req, size)
            req.rule, req.usage = rule, usage
            req.reply = steps
            self._requests.append(req)
            if self._log_path:
                fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, (json.dumps(req.to_json()) + "\n").encode())
                finally:
                    os.close(fd)
            self._lock.notify_all()
        if req.hold:
            self._await_release(req)
        return req, stream_events("resp_%d" % req.seq, steps, usage)

    def _plan(self, req, size):
        sc = self._scenario
        variables = dict(sc.get("vars", {}), thread_id=req.thread_id or "", n=str(req.seq))
        nth = thread_nth = 0
        if req.kind == "main":
            self._main_count += 1
            self._thread_counts[req.thread_id] = self._thread_counts.get(req.thread_id, 0) + 1
            nth, thread_nth = self._main_count, self._thread_counts[req.thread_id]
        name, reply, fields, hold = None, None, {}, None
        pending = self._then.get(req.thread_id) if req.kind == "main" else None
        if pending:
            name, reply = "then", pending.pop(0)
            if isinstance(reply, dict):
                reply, fields = reply["reply"], dict(reply.get("usage", {}))
        else:
            for index, rule in enumerate(sc.get("rules", [])):
                got = self._match(index, rule, req, nth, thread_nth)
                if got is None:
                    continue
                variables.update(got)
                self._used[index] = self._used.get(index, 0) + 1
                name, reply, fields = rule.get("name", str(index)), rule.get("reply", []), dict(rule.get("usage", {}))
                hold = rule.get("hold")
                req.error = rule.get("error")
                if rule.get("then"):
                    self._then[req.thread_id] = list(rule["then"])
                break
        if reply is None:
            if req.kind == "title":
                name, reply = "title", sc.get("title", "Scripted task")
            elif req.kind == "compaction":
                name, reply = "compaction", sc.get("compact_summary", "Scripted summary of the work so far.")
            else:
                default = sc.get("default", {"reply": "OK."})
                name, reply, fields = "default", default["reply"], dict(default.get("usage", {}))
        steps = [{"type": "text", "text": s} if isinstance(s, str) else s
                 for s in _render([reply] if isinstance(reply, str) else reply, variables)]
        planned = self._planned_usage(req, thread_nth or nth)
        planned.update(fields)
        planned.setdefault("input_tokens", size // 4)
        planned.setdefault("output_tokens", len(json.dumps(steps)) // 4 + 1)
        return name, steps, _usage(planned), hold

    def _planned_usage(self, req, n):
        plan = self._scenario.get("usage_plan")
        if not plan or req.kind != "main":
            return {}
        if plan.get("per", "thread") == "request":
            n = req.seq
        out = {}
        for key, spec in plan.items():
            if key == "per":
                continue
            if isinstance(spec, int):
                out[key] = spec
            else:
                value = spec.get("start", 0) + spec.get("step", 0) * (max(n, 1) - 1)
                out[key] = min(value, spec["max"]) if "max" in spec else value
        return out

    def _match(self, index, rule, req, nth, thread_nth):
        if "times" in rule and self._used.get(index, 0) >= rule["times"]:
            return None
        when = rule.get("when", {})
        kind = when.get("kind", "main")
        if kind != "any" and kind != req.kind:
            return None
        if "nth" in when and when["nth"] != nth:
            return None
        if "thread_nth" in when and when["thread_nth"] != thread_nth:
            return None
        if "latest_contains" in when and not _has_all(req.latest_text, when["latest_contains"]):
            return None
        if "any_contains" in when and not _has_all(req.text, when["any_contains"]):
            return None
        got = {}
        source = {"any": lambda: req.text, "tools": lambda: req.tool_names}.get(
            rule.get("extract_from"), lambda: req.latest_text)()
        for name, pattern in rule.get("extract", {}).items():
            m = re.search(pattern, source)
            if not m:
                return None
            got[name] = m.group(1) if m.groups() else m.group(0)
            got.update({k: v for k, v in m.groupdict().items() if v is not None})
        return got


class _Handler(BaseHTTPRequestHandler):
    model = None  # set per server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):  # the client went away (a killed pane): nothing to answer
            pass

    def do_GET(self):  # health checks, /models: nothing to list
        self._send(200, b'{"object":"list","data":[]}', "application/json")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding"):
            self._send(415, b'{"error":{"message":"compressed bodies are not scripted"}}', "application/json")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, b'{"error":{"message":"body is not JSON"}}', "application/json")
            return
        if not self.path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
            self._send(404, b'{"error":{"message":"only POST /v1/responses is scripted"}}', "application/json")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        headers.pop("authorization", None)  # never logged
        req, events = self.model.answer(self.path, headers, body, len(raw))
        if req.error:  # an error rule: its status, body and headers (a limit, a server error)
            err = req.error
            self._send(err["status"], json.dumps(err.get("body") or {"error": {"message": "scripted error"}}).encode(),
                       "application/json", err.get("headers"))
            return
        self._send(200, sse(events), "text/event-stream")

    def _send(self, status, data, ctype, headers=None):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(str(name), str(value))
        self.end_headers()
        self.wfile.write(data)
