"""A scripted stand-in for the Anthropic Messages API, listening on loopback.

Claude Code talks to whatever ``ANTHROPIC_BASE_URL`` names.  Pointing it here
lets the real CLI run end to end - hooks, ``/clear``, the whole rotation loop -
with every reply decided by a *scenario* instead of a model.  Tests use it, and
so does ``cc-continuity rehearse`` for users, hence standard library only.

A scenario is plain JSON-able data::

    {
      "rules": [                                   # first match wins
        {"name": "handoff",
         "when": {"last_user_contains": "Stop hook feedback"},
         "extract": {"path": r"write (/\\S+\\.md)"},   # must match; groups -> {vars}
         "reply": [{"type": "tool_use", "name": "Write",
                    "input": {"file_path": "{path}", "content": "{handoff}"}}],
         "then": ["Handoff written."],             # next replies in this session
         "usage": {"cache_read_input_tokens": 600000},
         "times": 1}
      ],
      "default": {"reply": "OK."},                 # when no rule matches
      "vars": {"handoff": "# Handoff ..."},        # for "{name}" templates
      "usage_plan": {"per": "session",             # or "request"
                     "cache_read_input_tokens": {"start": 1000, "step": 50000}},
      "compact_summary": "What happened so far."
    }

``when`` keys (all given ones must hold): ``last_user_contains`` (the input
since the model last spoke: user text, tool results and the ``role:"system"``
messages Claude Code puts inside ``messages[]``, where hook context and Stop
feedback arrive), ``any_text_contains`` (anywhere in the request),
``system_contains`` (top-level system prompt or system-role messages),
``nth`` (n-th main request overall, 1-based), ``session_nth`` (n-th main
request of this ``x-claude-code-session-id``), ``session_id`` and ``kind``
(``main`` by default; ``side``, ``compact`` or ``any``).  A string condition
may be a list: all of its strings must appear.

Other rule keys: ``extract`` (regexes searched in the latest input, or the
whole request with ``"extract_from": "any"``, or the names of the tools it offers, one a line, with
``"extract_from": "tools"``; a rule whose regex finds nothing
does not apply; group 1 - or the whole match - becomes ``{name}``, named groups
become variables too), ``then`` (replies served, in order, to the next main
requests of the same session before any rule is consulted: the tool-result
round trips), ``times`` (match at most N times), ``delay`` (seconds to hold
the reply, pinging meanwhile), ``error`` (``{"status", "type", "message"}``,
and ``headers``: a dict sent with it, e.g. ``retry-after`` or the rate-limit headers; answered instead of a
reply), ``hang`` (``true``: read the request and never
answer it, not even the headers, until the client goes away or the server
stops: a hung engine), ``stop_reason``.  Templates may also use
``{session_id}``, ``{n}`` and ``{session_n}``; unknown names stay as written.

Requests are classified: ``compact`` (the compaction prompt, recognised by its
"REMINDER: Do NOT call any tools"), ``side`` (structured-output calls such as
the title request, or calls without tools), ``main`` (the conversation).
Structured-output calls get JSON matching their schema; compaction gets a
summary; both can still be taken over by a rule with the matching ``kind``.

Like a vLLM server, every ``GET`` answers 200 (``/health``), and ``GET
/metrics`` serves a Prometheus page with ``vllm:iteration_tokens_total_count``
(grows with every reply streamed and every ping of a ``delay``: the engine at
work) and ``vllm:num_requests_running`` (Messages requests in flight, hung
ones included): a hung request freezes the counter while the gauge says busy.
"""

import argparse
import json
import os
import re
import select
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from .. import errors

__all__ = ["ScriptedModel", "Request", "ScenarioError", "validate_scenario", "load_scenario"]

COMPACT_MARK = "REMINDER: Do NOT call any tools"
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
DEFAULT_USAGE = {"input_tokens": 10, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "output_tokens": 5}
HEADERS_OF_INTEREST = ("x-claude-code-session-id", "user-agent", "anthropic-beta", "anthropic-version",
                       "content-type", "x-app")
WHEN_KEYS = {"last_user_contains", "any_text_contains", "system_contains", "nth", "session_nth",
             "session_id", "kind"}
RULE_KEYS = {"name", "when", "extract", "extract_from", "reply", "then", "usage", "times", "delay",
             "error", "hang", "stop_reason"}
SCENARIO_KEYS = {"rules", "default", "vars", "usage_plan", "compact_summary", "model"}
KINDS = ("main", "side", "compact", "any")
PING_EVERY = 1.0
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


ScenarioError = errors.ScenarioError  # (defined with every error class, in errors.py)


# ---------------------------------------------------------------- scenario


def load_scenario(path):
    """Read and validate a scenario JSON file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ScenarioError("%s: not valid JSON: %s" % (path, e)) from None
    return validate_scenario(data)


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
    vars_ = scenario.get("vars", {})
    if not isinstance(vars_, dict) or not all(isinstance(v, str) for v in vars_.values()):
        raise ScenarioError("scenario.vars must map names to strings")
    plan = scenario.get("usage_plan")
    if plan is not None:
        if not isinstance(plan, dict):
            raise ScenarioError("usage_plan must be an object")
        if plan.get("per", "session") not in ("session", "request"):
            raise ScenarioError("usage_plan.per must be 'session' or 'request'")
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
    for key in ("compact_summary", "model"):
        if key in scenario and not isinstance(scenario[key], str):
            raise ScenarioError("scenario.%s must be a string" % key)
    return scenario


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _no_unknown(obj, known, where):
    unknown = sorted(set(obj) - known)
    if unknown:
        raise ScenarioError("%s: unknown key(s) %s (known: %s)"
                            % (where, ", ".join(unknown), ", ".join(sorted(known))))


def _check_rule(rule, where, allow_when=True):
    if not isinstance(rule, dict):
        raise ScenarioError("%s must be an object" % where)
    _no_unknown(rule, RULE_KEYS if allow_when else RULE_KEYS - {"when", "times"}, where)
    when = rule.get("when", {})
    if not isinstance(when, dict):
        raise ScenarioError("%s.when must be an object" % where)
    _no_unknown(when, WHEN_KEYS, where + ".when")
    for key in ("last_user_contains", "any_text_contains", "system_contains"):
        if key in when and not _is_needles(when[key]):
            raise ScenarioError("%s.when.%s must be a string or a list of strings" % (where, key))
    for key in ("nth", "session_nth"):
        if key in when and not (_is_count(when[key]) and when[key] >= 1):
            raise ScenarioError("%s.when.%s must be an integer >= 1" % (where, key))
    if when.get("kind", "main") not in KINDS:
        raise ScenarioError("%s.when.kind must be one of %s" % (where, ", ".join(KINDS)))
    extract = rule.get("extract", {})
    if not isinstance(extract, dict):
        raise ScenarioError("%s.extract must map names to regular expressions" % where)
    for name, pattern in extract.items():
        try:
            re.compile(pattern)
        except (re.error, TypeError) as e:
            raise ScenarioError("%s.extract.%s: bad regular expression: %s" % (where, name, e)) from None
    if rule.get("extract_from", "latest") not in ("latest", "any", "tools"):
        raise ScenarioError("%s.extract_from must be 'latest', 'any' or 'tools'" % where)
    if "times" in rule and not (_is_count(rule["times"]) and rule["times"] >= 1):
        raise ScenarioError("%s.times must be an integer >= 1" % where)
    if "hang" in rule and not isinstance(rule["hang"], bool):
        raise ScenarioError("%s.hang must be true or false" % where)
    if "error" in rule:
        err = rule["error"]
        if not isinstance(err, dict) or not isinstance(err.get("status", 400), int):
            raise ScenarioError("%s.error must be {status, type, message}" % where)
        if not isinstance(err.get("headers", {}), dict):
            raise ScenarioError("%s.error.headers must be an object of header names to values" % where)
    elif "reply" not in rule and not rule.get("hang"):
        raise ScenarioError("%s needs a reply (or an error)" % where)
    _check_reply_step(rule, where)
    then = rule.get("then", [])
    if not isinstance(then, list):
        raise ScenarioError("%s.then must be a list of replies" % where)
    for i, step in enumerate(then):
        step_where = "%s.then[%d]" % (where, i)
        if isinstance(step, dict):
            _no_unknown(step, {"reply", "usage", "delay", "stop_reason"}, step_where)
            _check_reply_step(step, step_where)
        else:
            _check_blocks(step, step_where)


def _check_reply_step(step, where):
    if "reply" in step:
        _check_blocks(step["reply"], where + ".reply")
    usage = step.get("usage", {})
    if not isinstance(usage, dict):
        raise ScenarioError("%s.usage must be an object" % where)
    for key, value in usage.items():
        if key not in USAGE_FIELDS:
            raise ScenarioError("%s.usage: unknown field %r (known: %s)" % (where, key, ", ".join(USAGE_FIELDS)))
        if not _is_count(value):
            raise ScenarioError("%s.usage.%s must be a non-negative integer" % (where, key))
    delay = step.get("delay", 0)
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or delay < 0:
        raise ScenarioError("%s.delay must be a non-negative number of seconds" % where)


def _check_blocks(blocks, where):
    if isinstance(blocks, str):
        return
    if not isinstance(blocks, list) or not blocks:
        raise ScenarioError("%s must be a string or a non-empty list of blocks" % where)
    for i, block in enumerate(blocks):
        here = "%s[%d]" % (where, i)
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            ok = isinstance(block.get("text"), str)
        elif kind == "tool_use":
            ok = isinstance(block.get("name"), str) and isinstance(block.get("input", {}), dict)
        elif kind == "thinking":
            ok = isinstance(block.get("thinking"), str)
        else:
            raise ScenarioError("%s: block type must be text, tool_use or thinking" % here)
        if not ok:
            raise ScenarioError("%s: malformed %s block" % (here, kind))


def _is_needles(v):
    return isinstance(v, str) or (isinstance(v, list) and v and all(isinstance(s, str) for s in v))


def _has_all(haystack, needles):
    if isinstance(needles, str):
        needles = [needles]
    return all(n in haystack for n in needles)


def _render(value, variables):
    """Fill ``{name}`` templates in every string of ``value``; unknown names stay as written."""
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_render(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, variables) for k, v in value.items()}
    return value


def _as_blocks(reply):
    return [{"type": "text", "text": reply}] if isinstance(reply, str) else reply


# ---------------------------------------------------------------- requests


def _content_text(content):
    """Readable text of a message ``content`` (string or block list)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_result":
            parts.append(_content_text(block.get("content", "")))
        elif kind == "tool_use":
            parts.append(json.dumps(block.get("input", {}), ensure_ascii=False))
    return "\n".join(parts)


@dataclass
class Request:
    """One logged HTTP request and what the server answered."""

    seq: int
    time: float
    method: str
    path: str
    headers: dict
    body: object = None
    kind: str = "other"  # main | side | compact | count_tokens | other (HEAD, GET, unknown) | invalid
    session_id: str = None
    rule: str = None  # what answered it: a rule name/index, "default", "then", "structured", "compact"
    reply: list = field(default_factory=list)
    usage: dict = None
    status: int = 200

    @property
    def messages(self):
        return self.body.get("messages", []) if isinstance(self.body, dict) else []

    @property
    def tools(self):
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return [t.get("name") for t in tools if isinstance(t, dict)]

    @cached_property
    def system_text(self):
        """Top-level system prompt plus every ``role:"system"`` message."""
        system = self.body.get("system", "") if isinstance(self.body, dict) else ""
        parts = [_content_text(system)]
        parts += [_content_text(m.get("content")) for m in self.messages if m.get("role") == "system"]
        return "\n".join(parts)

    @cached_property
    def latest_text(self):
        """Everything sent since the model last spoke (user, tool results, system-role messages)."""
        msgs = self.messages
        start = 0
        for i, m in enumerate(msgs):
            if m.get("role") == "assistant":
                start = i + 1
        return "\n".join(_content_text(m.get("content")) for m in msgs[start:])

    @cached_property
    def text(self):
        """All readable text of the request: system prompt, every message, tool inputs."""
        system = self.body.get("system", "") if isinstance(self.body, dict) else ""
        return "\n".join([_content_text(system)] + [_content_text(m.get("content")) for m in self.messages])

    def contains(self, needle):
        return needle in self.text

    def to_json(self):
        return {"seq": self.seq, "time": self.time, "method": self.method, "path": self.path,
                "kind": self.kind, "session_id": self.session_id, "status": self.status,
                "headers": self.headers, "rule": self.rule, "reply": self.reply, "usage": self.usage,
                "body": self.body}


def classify(body):
    """``main``, ``side`` or ``compact`` for a Messages API request body."""
    probe = Request(0, 0.0, "POST", "/v1/messages", {}, body)
    if COMPACT_MARK in probe.latest_text:
        return "compact"
    if _output_schema(body) is not None or not body.get("tools"):
        return "side"
    return "main"


def _output_schema(body):
    fmt = (body.get("output_config") or {}).get("format") if isinstance(body.get("output_config"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return fmt.get("schema") or {}
    return None


def sample_for_schema(schema, name="value"):
    """A small JSON value that satisfies a (simple) JSON schema."""
    if not isinstance(schema, dict):
        return "scripted"
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return sample_for_schema(schema[key][0], name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        return {k: sample_for_schema(v, k) for k, v in props.items()}
    if kind == "array":
        return [sample_for_schema(schema.get("items", {}), name)] * schema.get("minItems", 0)
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "null":
        return None
    return "Scripted %s" % name


# ---------------------------------------------------------------- server


class ScriptedModel:
    """The fake API server.  ``with ScriptedModel(scenario) as m: ... m.url``.

    Every request is kept in memory (``requests()``) and, with ``log_path``,
    appended to a JSONL file (0600) as it arrives.
    """

    def __init__(self, scenario=None, log_path=None, host="127.0.0.1", port=0):
        self._lock = threading.Condition()
        self._scenario = validate_scenario(scenario)
        self._used = {}  # rule index -> times matched
        self._then = {}  # session id -> pending scripted steps
        self._requests = []
        self._main_count = 0
        self._session_counts = {}
        self._next_seq = 1
        self._log_path = os.fspath(log_path) if log_path else None
        self._address = (host, port)
        self._running = 0    # Messages requests in flight (for /metrics)
        self._progress = 0   # work done: replies streamed, pings sent (for /metrics)
        self._stopping = threading.Event()
        self._server = None
        self._thread = None

    # lifecycle
    def start(self):
        if self._server is not None:
            return self
        handler = type("Handler", (_Handler,), {"model": self})
        self._stopping.clear()
        self._server = ThreadingHTTPServer(self._address, handler)
        # Started again after stop(), it listens on the same port (a restarted server).
        self._address = (self._address[0], self._server.server_address[1])
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is None:
            return
        self._stopping.set()   # hung requests let go of their connections
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
            raise RuntimeError("ScriptedModel is not running; call start()")
        return self._server.server_address[1]

    @property
    def url(self):
        return "http://%s:%d" % (self._address[0], self.port)

    @property
    def log_path(self):
        return self._log_path

    def set_scenario(self, scenario):
        """Swap the scenario mid-run (rule counters and pending ``then`` steps reset)."""
        scenario = validate_scenario(scenario)
        with self._lock:
            self._scenario, self._used, self._then = scenario, {}, {}

    # queries
    def requests(self, kind=None, session_id=None, since=0):
        """Logged requests, oldest first; filter by kind, session id, or ``seq >= since``."""
        with self._lock:
            found = list(self._requests)
        return [r for r in found
                if (kind is None or r.kind == kind)
                and (session_id is None or r.session_id == session_id)
                and r.seq >= since]

    def main_requests(self, session_id=None):
        return self.requests(kind="main", session_id=session_id)

    def session_ids(self):
        """Session ids of main requests, in order of first appearance."""
        seen = []
        for r in self.main_requests():
            if r.session_id not in seen:
                seen.append(r.session_id)
        return seen

    def mark(self):
        """The seq the next request will get: pass it as ``since=``."""
        with self._lock:
            return self._next_seq

    def any_contains(self, text, kind=None, session_id=None):
        return any(r.contains(text) for r in self.requests(kind=kind, session_id=session_id))

    def first_main_after(self, after, session_id=None):
        """First main request logged after ``after``: a seq number, a Request, or a text
        (after the first request containing it).  ``None`` if there is none yet."""
        if isinstance(after, Request):
            after = after.seq
        elif isinstance(after, str):
            hit = next((r for r in self.requests() if r.contains(after)), None)
            if hit is None:
                return None
            after = hit.seq
        return next((r for r in self.main_requests(session_id) if r.seq > after), None)

    def wait_for(self, predicate, timeout=10.0):
        """Block until a logged request satisfies ``predicate``; return it (TimeoutError otherwise)."""
        deadline = time.monotonic() + timeout
        checked = 0
        with self._lock:
            while True:
                for r in self._requests[checked:]:
                    if predicate(r):
                        return r
                checked = len(self._requests)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no matching request within %.1fs; seen: %s" % (timeout, self._summary()))
                self._lock.wait(left)

    def _summary(self):
        return ", ".join("#%d %s %s sid=%s rule=%s" % (r.seq, r.method, r.kind, (r.session_id or "-")[:8], r.rule)
                         for r in self._requests[-8:]) or "nothing"

    # request handling (called from handler threads)
    def _record(self, req):
        with self._lock:
            req.seq = self._next_seq
            self._next_seq += 1
            self._requests.append(req)
            if self._log_path:
                fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as f:
                    f.write(json.dumps(req.to_json(), ensure_ascii=False) + "\n")
            self._lock.notify_all()

    def _plan(self, req):
        """Decide the answer to a Messages API request: a dict with blocks/usage/delay/error."""
        with self._lock:
            scenario = self._scenario
            if req.kind == "main":
                self._main_count += 1
                self._session_counts[req.session_id] = self._session_counts.get(req.session_id, 0) + 1
            nth, session_nth = self._main_count, self._session_counts.get(req.session_id, 0)
            variables = dict(scenario.get("vars", {}))
            variables.update(session_id=req.session_id or "", n=str(nth), session_n=str(session_nth))
            step, name = None, None
            pending = self._then.get(req.session_id) if req.kind == "main" else None
            if pending:
                step, name = pending.pop(0), "then"
                variables.update(step.pop("_vars", {}))
            else:
                for i, rule in enumerate(scenario.get("rules", [])):
                    extracted = self._match(i, rule, req, nth, session_nth)
                    if extracted is None:
                        continue
                    self._used[i] = self._used.get(i, 0) + 1
                    variables.update(extracted)
                    step, name = rule, rule.get("name", "rules[%d]" % i)
                    then = [dict(s) if isinstance(s, dict) else {"reply": s} for s in rule.get("then", [])]
                    for s in then:
                        s["_vars"] = dict(extracted)
                    if then and req.kind == "main":
                        self._then[req.session_id] = then
                    break
        if step is None:
            step, name = self._builtin(req, scenario)
        plan = {"rule": name, "delay": step.get("delay", 0), "error": step.get("error"),
                "hang": bool(step.get("hang"))}
        if plan["error"] is None and not plan["hang"]:
            plan["blocks"] = _render(_as_blocks(step["reply"]), variables)
            plan["usage"] = self._usage(req, scenario, step.get("usage", {}), nth, session_nth)
            plan["stop_reason"] = step.get("stop_reason") or (
                "tool_use" if any(b["type"] == "tool_use" for b in plan["blocks"]) else "end_turn")
        return plan

    def _match(self, index, rule, req, nth, session_nth):
        """Extracted variables if ``rule`` applies to ``req``, else ``None``."""
        when = rule.get("when", {})
        kind = when.get("kind", "main")
        if kind != "any" and kind != req.kind:
            return None
        if self._used.get(index, 0) >= rule.get("times", float("inf")):
            return None
        if "nth" in when and when["nth"] != nth:
            return None
        if "session_nth" in when and when["session_nth"] != session_nth:
            return None
        if "session_id" in when and when["session_id"] != req.session_id:
            return None
        if "last_user_contains" in when and not _has_all(req.latest_text, when["last_user_contains"]):
            return None
        if "any_text_contains" in when and not _has_all(req.text, when["any_text_contains"]):
            return None
        if "system_contains" in when and not _has_all(req.system_text, when["system_contains"]):
            return None
        source = {"any": lambda: req.text, "tools": lambda: "\n".join(req.tools)}.get(
            rule.get("extract_from"), lambda: req.latest_text)()
        extracted = {}
        for var, pattern in rule.get("extract", {}).items():
            m = re.search(pattern, source)
            if m is None:
                return None
            groups = m.groupdict()
            if groups:
                extracted.update({k: v for k, v in groups.items() if v is not None})
            extracted[var] = m.group(1) if m.re.groups else m.group(0)
        return extracted

    def _builtin(self, req, scenario):
        """The answer when no rule took the request."""
        if req.kind == "compact":
            summary = scenario.get("compact_summary", "Scripted compaction summary.")
            text = "<analysis>Scripted analysis.</analysis>\n<summary>%s</summary>" % summary
            return {"reply": text}, "compact"
        schema = _output_schema(req.body)
        if schema is not None:
            return {"reply": json.dumps(sample_for_schema(schema))}, "structured"
        if req.kind == "side":
            return {"reply": "OK"}, "side"
        default = scenario.get("default", {"reply": "Scripted reply {n}."})
        return default, "default"

    def _usage(self, req, scenario, override, nth, session_nth):
        usage = dict(DEFAULT_USAGE)
        plan = scenario.get("usage_plan")
        if plan and req.kind == "main":
            n = (session_nth if plan.get("per", "session") == "session" else nth) - 1
            for key, spec in plan.items():
                if key == "per":
                    continue
                if isinstance(spec, dict):
                    value = spec.get("start", 0) + spec.get("step", 0) * n
                    usage[key] = min(value, spec["max"]) if "max" in spec else value
                else:
                    usage[key] = spec
        usage.update(override)
        return usage

    def _model_name(self, req):
        return self._scenario.get("model") or (req.body or {}).get("model") or "claude-scripted"

    def _count(self, running=0, progress=0):
        with self._lock:
            self._running += running
            self._progress += progress

    def metrics(self):
        """The Prometheus text of ``GET /metrics`` (vLLM's names)."""
        with self._lock:
            running, progress = self._running, self._progress
        return ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %d\n"
                "# TYPE vllm:iteration_tokens_total histogram\nvllm:iteration_tokens_total_count %d\n"
                % (running, progress))


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; SSE bodies go out chunked so pings can precede a delay."""

    protocol_version = "HTTP/1.1"
    model = None  # set on the per-server subclass
    _in_flight = False  # this connection's current Messages request still counts as running
    server_version = "ScriptedModel/1"

    def log_message(self, fmt, *args):  # the JSONL log is the record; keep stderr quiet
        pass

    def _headers_of_interest(self):
        return {k: self.headers[k] for k in HEADERS_OF_INTEREST if self.headers.get(k) is not None}

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _new_request(self, body=None, kind="other"):
        sid = self.headers.get("x-claude-code-session-id")
        return Request(0, time.time(), self.command, self.path, self._headers_of_interest(), body, kind, sid)

    def _send_json(self, status, payload, request_id=None, headers=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if request_id:
            self.send_header("request-id", request_id)
        for name, value in (headers or {}).items():
            self.send_header(str(name), str(value))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):
        self.model._record(self._new_request())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.model._record(self._new_request())
        if urlsplit(self.path).path == "/metrics":
            data = self.model.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._send_json(200, {})

    def do_POST(self):
        raw = self._read_body()
        path = urlsplit(self.path).path
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            req = self._new_request(raw.decode("utf-8", "replace"), "invalid")
            req.status = 400
            self.model._record(req)
            return self._send_json(400, _error("invalid_request_error", "scripted model: %s" % e))
        if path == "/v1/messages/count_tokens":
            req = self._new_request(body, "count_tokens")
            self.model._record(req)
            return self._send_json(200, {"input_tokens": max(1, len(req.text) // 4)})
        if path != "/v1/messages":
            req = self._new_request(body, "other")
            req.status = 404
            self.model._record(req)
            return self._send_json(404, _error("not_found_error", "scripted model: no route %s" % path))
        req = self._new_request(body, classify(body))
        self.model._count(running=1)
        self._in_flight = True
        try:
            self._answer(req, body)
        finally:
            self._settle()

    def _settle(self, progress=0):
        """The request stops running and its work is counted: before its last bytes go out, so a client
        that has its reply never reads /metrics from before it (once per request)."""
        if self._in_flight:
            self._in_flight = False
            self.model._count(running=-1, progress=progress)

    def _answer(self, req, body):
        plan = self.model._plan(req)
        req.rule = plan["rule"]
        request_id = "req_fake_" + uuid.uuid4().hex[:24]
        if plan["hang"]:
            req.status = 0
            self.model._record(req)
            return self._hang()
        if plan["error"] is not None:
            err = plan["error"]
            req.status = err.get("status", 400)
            self.model._record(req)
            time.sleep(plan["delay"])
            self._settle()
            return self._send_json(req.status, _error(err.get("type", "invalid_request_error"),
                                                      err.get("message", "scripted error")), request_id,
                                   err.get("headers"))
        blocks = [_finish_block(b) for b in plan["blocks"]]
        req.reply, req.usage = blocks, plan["usage"]
        self.model._record(req)
        message = {"id": "msg_fake_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
                   "model": self.model._model_name(req), "content": blocks,
                   "stop_reason": plan["stop_reason"], "stop_sequence": None, "usage": plan["usage"]}
        tokens = max(1, int(plan["usage"].get("output_tokens") or 0))
        if body.get("stream"):
            self._stream(message, plan["delay"], request_id, tokens)
        else:
            time.sleep(plan["delay"])
            self._settle(tokens)
            self._send_json(200, message, request_id)

    def _hang(self):
        """Say nothing until the client hangs up or the server stops (then drop the connection)."""
        sock = self.connection
        while not self.model._stopping.wait(0.1):
            try:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    break   # the client closed its end
            except OSError:
                break
        self.close_connection = True

    def _stream(self, message, delay, request_id, tokens):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()
        try:
            start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
            self._event("message_start", {"type": "message_start", "message": start})
            self._event("ping", {"type": "ping"})
            until = time.monotonic() + delay
            while time.monotonic() < until:
                time.sleep(min(PING_EVERY, until - time.monotonic()))
                self._event("ping", {"type": "ping"})
                self.model._count(progress=1)
            for index, block in enumerate(message["content"]):
                for name, data in _block_events(index, block):
                    self._event(name, data)
            self._settle(tokens)
            self._event("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                          "usage": message["usage"]})
            self._event("message_stop", {"type": "message_stop"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._settle(tokens)
            self.close_connection = True

    def _event(self, name, data):
        chunk = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data, ensure_ascii=False))).encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()


def _error(kind, message):
    return {"type": "error", "error": {"type": kind, "message": message}}


def _finish_block(block):
    """A reply block as the API would return it (tool ids filled in, defaults applied)."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id") or "toolu_fake_" + uuid.uuid4().hex[:24],
                "name": block["name"], "input": block.get("input", {})}
    return {"type": "thinking", "thinking": block["thinking"], "signature": block.get("signature", "scripted")}


def _pieces(text, size=48):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index, block):
    """The SSE events that stream one content block, deltas in small pieces."""
    kind = block["type"]
    if kind == "text":
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "text", "text": ""}}
        for piece in _pieces(block["text"]):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": piece}}
    elif kind == "tool_use":
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "tool_use", "id": block["id"],
                                                        "name": block["name"], "input": {}}}
        for piece in _pieces(json.dumps(block["input"], ensure_ascii=False)):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta", "partial_json": piece}}
    else:
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
        for piece in _pieces(block["thinking"]):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "thinking_delta", "thinking": piece}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "signature_delta", "signature": block["signature"]}}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def main(argv=None):
    """Serve a scenario file until interrupted: ``python -m cc_continuity.rehearse.scripted_model s.json``."""
    parser = argparse.ArgumentParser(prog="scripted_model", description=main.__doc__)
    parser.add_argument("scenario", nargs="?", help="scenario JSON file (default: empty scenario)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", help="append every request to this JSONL file")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario) if args.scenario else None
    except (OSError, ScenarioError) as e:
        print("scripted_model: %s" % e, file=sys.stderr)
        return 2
    with ScriptedModel(scenario, log_path=args.log, port=args.port) as model:
        print(model.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
