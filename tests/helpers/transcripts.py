"""Claude Code transcripts shaped like the real ones (live observations, 2.1.328).

What matters for the meter, and is reproduced here:

* one JSON object per line, compact (``JSON.stringify``), raw UTF-8;
* an assistant response is split over several lines (one per content block,
  ``apiBlockIndex`` 0, 1, ...) that share ``message.id`` and the *same*
  final ``usage``;
* 8-64 KB ``prompt_snapshot`` attachments and ~44 KB ``api-request-shape``
  lines after every request, so the newest assistant line is far from the end;
* sidechain rows, ``<synthetic>`` rows, API-error rows, ``compact_boundary``
  system rows, and user ``tool_result`` rows whose text quotes other JSON.

Usage::

    t = Transcript(model="claude-sonnet-4-5")
    t.user("please run the tools")
    t.assistant(tokens=120_000, blocks=3)
    t.noise(kb=40)
    t.write(path)
"""

import json
import os
import random
import uuid as _uuid

VERSION = "2.1.328"


def usage(tokens, output=50, split=(0.0001, 0.05)):
    """A usage object whose input + cache_creation + cache_read == ``tokens``."""
    inp = max(1, int(tokens * split[0])) if tokens else 0
    creation = int(tokens * split[1])
    read = tokens - inp - creation
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": creation,
        "cache_read_input_tokens": read,
        "output_tokens": output,
        "output_tokens_details": {"thinking_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": creation},
        "iterations": [],
    }


def dumps(row):
    """Compact JSON with raw UTF-8, like Claude Code's JSON.stringify."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


class Transcript:
    """Builds the lines of one session's ``<session_id>.jsonl``."""

    def __init__(self, session_id=None, cwd="/home/me/src/myproj", model="claude-sonnet-4-5", seed=0):
        self.session_id = session_id or str(_uuid.UUID(int=random.Random(seed).getrandbits(128)))
        self.cwd = cwd
        self.model = model
        self.rows = []
        self._rng = random.Random(seed)
        self._parent = None
        self._n = 0

    # -- plumbing -------------------------------------------------------------
    def _uuid(self):
        return str(_uuid.UUID(int=self._rng.getrandbits(128)))

    def _stamp(self):
        self._n += 1
        return "2026-11-30T00:%02d:%02d.%03dZ" % ((self._n // 60) % 60, self._n % 60, self._n % 1000)

    def _conversation(self, kind, sidechain=False, **fields):
        row = {"parentUuid": self._parent, "isSidechain": sidechain}
        row.update(fields)
        u = self._uuid()
        row.update({
            "type": kind, "uuid": u, "timestamp": self._stamp(), "userType": "external",
            "entrypoint": "cli", "cwd": self.cwd, "sessionId": self.session_id,
            "version": VERSION, "gitBranch": "main",
        })
        if not sidechain:
            self._parent = u
        self.rows.append(row)
        return row

    def raw(self, text):
        """A verbatim line (for torn or hand-made lines)."""
        self.rows.append(text)
        return text

    # -- conversation rows ------------------------------------------------------
    def user(self, text, **fields):
        return self._conversation("user", message={"role": "user", "content": text},
                                  promptId=self._uuid(), permissionMode="acceptEdits", **fields)

    def tool_result(self, content, tool_use_id="toolu_fake_01", is_error=False):
        """A user row carrying a tool result (``content`` is the tool's text output)."""
        return self._conversation(
            "user",
            message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}]},
            toolUseResult={"stdout": content, "stderr": "", "interrupted": False, "isImage": False},
            sourceToolAssistantUUID=self._parent,
        )

    def assistant(self, tokens, blocks=2, model=None, sidechain=False, synthetic=False, api_error=False,
                  content=None, output=50):
        """One API response split over ``blocks`` lines sharing message.id and usage."""
        model = "<synthetic>" if synthetic else (model or self.model)
        msg_id = "msg_fake_%s" % self._uuid().replace("-", "")[:24]
        req = "req_fake_%s" % self._uuid().replace("-", "")[:24]
        u = usage(tokens, output=output)
        if content is None:
            content = [{"type": "text", "text": "Working on it — step %d." % i} for i in range(blocks - 1)]
            content.append({"type": "tool_use", "id": "toolu_fake_%d" % self._n, "name": "Bash",
                            "input": {"command": "echo ok", "description": "Say ok"}})
        rows = []
        for i, block in enumerate(content):
            message = {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                       "content": [block], "stop_reason": "tool_use" if block.get("type") == "tool_use" else None,
                       "stop_sequence": None, "usage": u, "stop_details": None}
            fields = {"message": message, "apiBlockIndex": i, "requestId": req,
                      "requestRef": self._uuid(), "requestedModel": model}
            if api_error:
                fields["isApiErrorMessage"] = True
                fields["error"] = "rate_limit"
            rows.append(self._conversation("assistant", sidechain=sidechain, **fields))
        return rows

    def compact_boundary(self, pre_tokens, post_tokens=None, trigger="manual"):
        meta = {"trigger": trigger, "preTokens": pre_tokens, "durationMs": 1234, "userContext": "",
                "messagesSummarized": 12, "cumulativeDroppedTokens": 0}
        if post_tokens is not None:
            meta["postTokens"] = post_tokens
        row = self._conversation("system", subtype="compact_boundary", content="Conversation compacted",
                                 isMeta=False, level="info", compactMetadata=meta,
                                 logicalParentUuid=self._parent)
        self.user("This session is being continued from a previous conversation that ran out of context. "
                  "Summary:\nFake compaction summary.", isCompactSummary=True, isVisibleInTranscriptOnly=True)
        return row

    def system(self, subtype, **fields):
        return self._conversation("system", subtype=subtype, **fields)

    # -- the large, frequent lines between responses --------------------------
    def snapshot(self, size):
        """A ``prompt_snapshot`` attachment of about ``size`` bytes."""
        filler = _filler(self._rng, size)
        return self._conversation("attachment", attachment={"type": "prompt_snapshot", "content": filler})

    def api_request_shape(self, size=44 * 1024):
        filler = _filler(self._rng, size)
        row = {"type": "api-request-shape", "sessionId": self.session_id, "timestamp": self._stamp(),
               "shape": {"model": self.model, "system": filler, "tools": 13}}
        self.rows.append(row)
        return row

    def noise(self, kb=None):
        """What follows a request: a prompt snapshot (8-64 KB) and an api-request-shape (~44 KB)."""
        self.snapshot(1024 * (kb if kb is not None else self._rng.randint(8, 64)))
        self.api_request_shape()
        for kind in ("last-prompt", "cost-state"):
            self.rows.append({"type": kind, "sessionId": self.session_id, "leafUuid": self._parent,
                              "lastPrompt": "please run the tools", "totalCostUSD": 0.2})

    def turn(self, tokens, blocks=2, kb=None, final="All done."):
        """A user prompt, an assistant response, its tool result, the noise after it, and the turn's
        final reply (``final``; None for a turn still running) - what a Stop hook sees."""
        self.user("please continue")
        self.assistant(tokens, blocks=blocks)
        self.tool_result("ok")
        self.noise(kb)
        if final is not None:
            self.assistant(tokens, content=[{"type": "text", "text": final}])

    # -- output -----------------------------------------------------------------
    def lines(self):
        return [(r if isinstance(r, str) else dumps(r)).encode("utf-8") for r in self.rows]

    def data(self, trailing_newline=True):
        body = b"\n".join(self.lines())
        return body + (b"\n" if trailing_newline and body else b"")

    def write(self, path, trailing_newline=True):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(self.data(trailing_newline))
        return path

    def append_to(self, path, start=0):
        """Append rows[start:] to ``path`` (a transcript growing during a session)."""
        with open(path, "ab") as f:
            for line in self.lines()[start:]:
                f.write(line + b"\n")
        return len(self.rows)


def _filler(rng, size):
    """Printable text with some multi-byte characters and JSON-looking fragments."""
    words = ["context", "window", "tokens", "naïve", "café", "日本語", "handoff", "{\"k\":1}", "line\\n"]
    out = []
    n = 0
    while n < size:
        w = rng.choice(words)
        out.append(w)
        n += len(w.encode("utf-8")) + 1
    return " ".join(out)


def claude_transcript_path(home, cwd, session_id):
    """Where Claude Code keeps a transcript: ``~/.claude/projects/<munged cwd>/<id>.jsonl``."""
    munged = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    return os.path.join(str(home), ".claude", "projects", munged, session_id + ".jsonl")


# -- hook payloads as Claude Code sends them, and the installed hook command ---
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATUSMAIN = os.path.join(REPO, "cc_continuity", "statusmain.py")
_TABLE = {}


def hook_command(event, python=None, root=REPO):
    """The hook command exactly as an install writes it (the plugin's hooks.json, rendered for
    this checkout, or an app-shaped ``root``, and ``python``): the tests run what users run, not a
    second bootstrap."""
    import sys

    from cc_continuity.install import settings

    python = python or sys.executable
    if (python, root) not in _TABLE:
        _TABLE[python, root] = settings.render_fragment(settings.load_fragment(), python, root)["hooks"]
    for groups in _TABLE[python, root].values():
        for group in groups:
            for h in group["hooks"]:
                if h.get("args", [])[-1:] == [event]:
                    return [h["command"]] + h["args"]
    # An event no table installs (the mod's, which mod.js runs itself) takes the same bootstrap.
    return [python, "-S", "-c", settings.boot_code(root), event]


def hook_payload(event, session_id, transcript_path, cwd, **extra):
    """A stdin object for ``event`` with the fields observed live (extra fields override)."""
    p = {"session_id": session_id, "transcript_path": transcript_path, "cwd": cwd}
    if event not in ("SessionStart", "SessionEnd"):
        p.update({"prompt_id": "98a9a4dd-0000-4000-8000-000000000001", "permission_mode": "acceptEdits"})
    p["hook_event_name"] = event
    if event == "SessionStart":
        p.update({"source": "startup", "model": "claude-sonnet-4-5"})
    elif event == "UserPromptSubmit":
        p["prompt"] = "please run the tools"
        p["prompt_id"] = str(_uuid.uuid4())  # each prompt its own (a repeated id is a twin: hosts/claude/hooks' first)
    elif event in ("PreToolUse", "PostToolUse"):
        p.update({"effort": {"level": "medium"}, "tool_name": "Bash",
                  "tool_input": {"command": "echo ok", "description": "Say ok"},
                  "tool_use_id": "toolu_fake_" + _uuid.uuid4().hex[:12]})  # each call its own
        if event == "PostToolUse":
            p.update({"tool_response": {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False,
                                        "noOutputExpected": False}, "duration_ms": 106})
    elif event == "Stop":
        p.update({"effort": {"level": "medium"}, "stop_hook_active": False,
                  "last_assistant_message": "All done.", "background_tasks": [], "session_crons": []})
    elif event == "SessionEnd":
        p["reason"] = "prompt_input_exit"
    elif event == "PreCompact":
        p.update({"trigger": "manual", "custom_instructions": ""})
    p.update(extra)
    for k in [k for k, v in p.items() if v is None]:
        del p[k]
    return p


def hook_env(project_dir, claude_pid=None, **extra):
    """The environment Claude Code gives a hook (on top of the test's own)."""
    env = dict(os.environ)
    env.update({"CLAUDE_PROJECT_DIR": str(project_dir), "CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"})
    if claude_pid is not None:
        env["CLAUDE_PID"] = str(claude_pid)
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run_hook(event, payload, env, timeout=60):
    """Run the hook exactly as an install does (:func:`hook_command`)."""
    import subprocess

    raw = payload if isinstance(payload, (bytes, bytearray)) else json.dumps(payload).encode("utf-8")
    if env.get("CLAUDE_CODE_SESSION_ID") is None and isinstance(payload, dict) and isinstance(payload.get("session_id"), str):
        env = dict(env, CLAUDE_CODE_SESSION_ID=payload["session_id"])
    return subprocess.run(hook_command(event), input=raw, env=env,
                          capture_output=True, timeout=timeout, cwd=env.get("CLAUDE_PROJECT_DIR"))


def start_hook(event, payload, env):
    """Start the hook command without waiting (for concurrency tests); returns the Popen."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as stdin:
        stdin.write(json.dumps(payload).encode("utf-8"))
        stdin.seek(0)
        return subprocess.Popen(hook_command(event), stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=env.get("CLAUDE_PROJECT_DIR"))
