"""Drive cc-continuity's hooks the way Claude Code does: real processes, live-shaped JSON.

A :class:`HookDriver` owns one project directory (a real git repo unless
``git=False``) and the environment Claude Code gives its hooks (HOME,
CC_CONTINUITY_HOME, CLAUDE_PROJECT_DIR, CLAUDE_PID, and TMUX/TMUX_PANE when
the session runs in tmux).  :meth:`HookDriver.hook` runs the installed
hook command (``transcripts.hook_command``: the hook table rendered as an install does) with a payload
shaped like the live observations, asserts exit 0 and that the hook did not
fail open (hooks swallow their own errors, so ``logs/hooks.log`` is checked),
and returns the parsed stdout or None.

Payload shapes follow reference/claude-code-live-observations.md: after
``/clear`` the SessionStart has no ``model``; the transcript is compact JSON
whose last main-thread assistant row carries the context usage.
"""

import json
import os
import re
import subprocess
import sys
import uuid

from cc_continuity import rehearse

from .transcripts import hook_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATUSMAIN = os.path.join(REPO, "cc_continuity", "statusmain.py")

MODEL = rehearse.MODEL  # a 200k window: 1% = 2 000 tokens
WINDOW = 200_000
LOG_LINE = re.compile(r"^\S+ (\S+) sid=(\S+) (\d+(?:\.\d+)?)ms (.*)$")
FAILED_OPEN = ("error", "budget-exceeded", "bad-stdin", "no-event")


def dead_pid(k=0):
    """A pid no process can have: Linux caps pid_max at 2**22."""
    return 2 ** 22 + 1000 + k


def tokens_at(percent, window=WINDOW):
    return int(window * percent / 100)


def compact(obj):
    """Compact JSON with raw UTF-8, as Claude Code writes its transcript."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def transcript_path(home, cwd, session_id):
    """``~/.claude/projects/<cwd, every non-alphanumeric char as '-'>/<session_id>.jsonl``."""
    munged = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    return os.path.join(home, ".claude", "projects", munged, session_id + ".jsonl")


class Transcript:
    """Appends rows to one session's transcript file."""

    def __init__(self, path, session_id, cwd, model=MODEL):
        self.path, self.session_id, self.cwd, self.model = path, session_id, cwd, model
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
        self.parent = None
        self.last_text = None  # text of the newest reply: what Stop's last_assistant_message names

    def _append(self, row):
        row.update({"parentUuid": self.parent, "isSidechain": False, "uuid": str(uuid.uuid4()),
                    "timestamp": "2026-11-30T00:04:39.569Z", "sessionId": self.session_id,
                    "version": "2.1.328", "cwd": self.cwd, "gitBranch": "main", "userType": "external"})
        self.parent = row["uuid"]
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(compact(row) + "\n")

    def user(self, text):
        self._append({"type": "user", "message": {"role": "user", "content": text}})

    def assistant(self, tokens, text="Working on it.", tool_uses=()):
        """One response whose usage puts ``tokens`` in context; one line per content block."""
        mid = "msg_fake_" + uuid.uuid4().hex[:20]
        usage = {"input_tokens": 3, "cache_creation_input_tokens": min(2000, tokens - 3),
                 "cache_read_input_tokens": max(0, tokens - 3 - min(2000, tokens - 3)), "output_tokens": 50,
                 "output_tokens_details": {"thinking_tokens": 0}, "service_tier": "standard"}
        self.last_text = text
        blocks = [{"type": "text", "text": text}] + [
            {"type": "tool_use", "id": "toolu_fake_" + uuid.uuid4().hex[:12], "name": name, "input": inp}
            for name, inp in tool_uses]
        for i, block in enumerate(blocks):
            self._append({"type": "assistant", "apiBlockIndex": i, "requestId": "req_fake_" + mid[9:],
                          "message": {"id": mid, "type": "message", "role": "assistant", "model": self.model,
                                      "content": [block], "stop_reason": "tool_use" if tool_uses else "end_turn",
                                      "stop_sequence": None, "usage": usage}})

    def todo_write(self, todos, tokens):
        self.assistant(tokens, "Updating the plan.", [("TodoWrite", {"todos": todos})])


class HookDriver:
    """One project and one Claude Code process (``claude_pid``) as its hooks see them."""

    def __init__(self, root, *, git=True, files=None, claude_pid=None, tmux=None, tmux_pane=None):
        self.root = os.path.realpath(str(root))
        os.makedirs(self.root, exist_ok=True)
        self.home = os.environ["HOME"]
        self.cc_home = os.environ["CC_CONTINUITY_HOME"]
        self.claude_pid = dead_pid() if claude_pid is None else claude_pid
        self.tmux, self.tmux_pane = tmux, tmux_pane
        self.transcripts = {}
        self.outcomes = []  # (event, sid, ms, outcome) of every hook run through hook()
        self.last_wire = None  # how the last Stop asked for more: "additionalContext", "decision" or None
        files = {"README.md": "hello\n"} if files is None else files
        for rel, text in files.items():
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        if git:
            self.git("init", "-q", "-b", "main")
            self.git("add", "-A")
            self.git("commit", "-q", "-m", "initial")

    # -- environment ------------------------------------------------------------
    def env(self, session_id=None, **extra):
        env = dict(os.environ)
        env.update({"CLAUDE_PROJECT_DIR": self.root, "CLAUDE_PID": str(self.claude_pid), "CLAUDECODE": "1",
                    "CLAUDE_CODE_ENTRYPOINT": "cli"})
        if session_id:
            env["CLAUDE_CODE_SESSION_ID"] = session_id
        if self.tmux:
            env["TMUX"], env["TMUX_PANE"] = self.tmux, self.tmux_pane
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    def config(self, **values):
        """Merge ``values`` into the global ``$CC_CONTINUITY_HOME/config.json``."""
        path = os.path.join(self.cc_home, "config.json")
        os.makedirs(self.cc_home, mode=0o700, exist_ok=True)
        try:
            with open(path) as f:
                doc = json.load(f)
        except FileNotFoundError:
            doc = {}
        doc.update(values)
        with open(path, "w") as f:
            json.dump(doc, f)

    def transcript(self, session_id):
        if session_id not in self.transcripts:
            self.transcripts[session_id] = Transcript(transcript_path(self.home, self.root, session_id),
                                                      session_id, self.root)
        return self.transcripts[session_id]

    # -- running hooks ----------------------------------------------------------
    def payload(self, event, session_id, **fields):
        p = {"session_id": session_id, "transcript_path": self.transcript(session_id).path, "cwd": self.root}
        if event not in ("SessionStart", "SessionEnd"):
            p.update({"prompt_id": str(uuid.uuid4()), "permission_mode": "acceptEdits"})
        p["hook_event_name"] = event
        if event == "SessionStart":
            p["source"] = fields.get("source", "startup")
            if p["source"] != "clear":  # observed: no model field after /clear
                p["model"] = MODEL
        elif event == "Stop":
            p.update({"effort": {"level": "medium"}, "stop_hook_active": False,
                      "last_assistant_message": self.transcript(session_id).last_text or "Done for now.",
                      "background_tasks": [], "session_crons": []})
        elif event in ("PreToolUse", "PostToolUse"):
            p.update({"effort": {"level": "medium"}, "tool_name": "Bash",
                      "tool_input": {"command": "echo ok", "description": "Say ok"},
                      "tool_use_id": "toolu_fake_" + uuid.uuid4().hex[:12]})
        elif event == "PreCompact":
            p.update({"trigger": "auto", "custom_instructions": ""})
        p.update(fields)
        return {k: v for k, v in p.items() if v is not None}

    def command(self, event):
        return hook_command(event)

    def hook(self, event, session_id, *, env=None, timeout=60, **fields):
        """Run one hook to completion; assert exit 0 and no fail-open; parsed stdout or None."""
        before = self._log_size()
        res = subprocess.run(self.command(event), input=compact(self.payload(event, session_id, **fields)).encode(),
                             env=env or self.env(session_id), cwd=self.root, capture_output=True, timeout=timeout)
        assert res.returncode == 0, (event, res.returncode, res.stderr)
        assert not res.stderr, (event, res.stderr)
        sid8 = session_id[:8]
        mine = [m for m in self.log_entries(start=before) if m[0] == event and m[1] == sid8]
        assert mine, "%s for %s wrote no hooks.log line" % (event, session_id)
        ms, outcome = mine[-1][2], mine[-1][3]
        self.outcomes.append((event, session_id, ms, outcome))
        assert not outcome.startswith(FAILED_OPEN), "%s failed open: %s" % (event, outcome)
        out = res.stdout.decode("utf-8")
        self.last_wire = None
        if not out:
            return None
        obj = json.loads(out)
        assert isinstance(obj, dict), out
        if event == "Stop":
            obj = self._stop_request(obj)
        return obj

    def _stop_request(self, obj):
        """A Stop's request for more, in the handler's terms: ``{"decision": "block", "reason": ...}``.

        On the Claude Code versions that take it (the transcript rows say 2.1.328) the wire
        shape is ``hookSpecificOutput.additionalContext`` (hooks.stop_wire); ``last_wire``
        says which one came, so tests about the request need not care.
        """
        hso = obj.get("hookSpecificOutput")
        if isinstance(hso, dict) and "additionalContext" in hso:
            assert obj == {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": hso["additionalContext"]}}, obj
            self.last_wire = "additionalContext"
            return {"decision": "block", "reason": hso["additionalContext"]}
        if obj.get("decision") == "block":
            self.last_wire = "decision"
        return obj

    def start(self, event, session_id, *, env=None, **fields):
        """Start one hook without waiting (stdin already complete); returns the Popen."""
        proc = subprocess.Popen(self.command(event), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env or self.env(session_id), cwd=self.root)
        proc.stdin.write(compact(self.payload(event, session_id, **fields)).encode())
        proc.stdin.close()
        proc.stdin = None  # so communicate() only reads
        return proc

    def inproc(self, event, session_id, *, env=None, **fields):
        """Run the hook's handler in this process: the same code as :meth:`hook` minus stdin/stdout.

        Used with :class:`WriteFaults` to stop a hook at an exact durable write.  Raises what the
        handler raises (a :class:`SimulatedKill` passes through the fail-open wrapper like a real kill).
        """
        from cc_continuity.hosts.claude import hooks as dispatch

        raw = compact(self.payload(event, session_id, **fields)).encode()
        out, outcome, _ = dispatch.run(event, raw, env=env or self.env(session_id))
        assert not outcome.startswith(FAILED_OPEN), "%s failed: %s" % (event, outcome)
        obj = json.loads(out) if out else None
        if out and dispatch._answered is not None:
            for then in dispatch._answered.after_output:  # as hooks.main does once the answer is written
                then()
        return self._stop_request(obj) if event == "Stop" and obj else obj

    def cli(self, *args, session_id=None, check=True):
        """``cc-continuity <args>`` in the project, as the agent's Bash tool would run it."""
        res = subprocess.run([sys.executable, "-m", "cc_continuity", *args], env=self.env(session_id),
                             cwd=self.root, capture_output=True, text=True, timeout=60)
        if check:
            assert res.returncode == 0, (args, res.returncode, res.stdout, res.stderr)
        return res

    def statusline(self, session_id, percent=None, python=None):
        """The status line's output for this session (context_window as Claude Code sends it)."""
        p = {"session_id": session_id, "transcript_path": self.transcript(session_id).path, "cwd": self.root,
             "model": {"id": MODEL, "display_name": "Haiku 4.5"},
             "workspace": {"current_dir": self.root, "project_dir": self.root, "added_dirs": []},
             "version": "2.1.328"}
        if percent is not None:
            tok = tokens_at(percent)
            p["context_window"] = {"total_input_tokens": tok, "total_output_tokens": 50,
                                   "context_window_size": WINDOW,
                                   "current_usage": {"input_tokens": 3, "output_tokens": 50,
                                                     "cache_creation_input_tokens": 0,
                                                     "cache_read_input_tokens": tok - 3},
                                   "used_percentage": int(percent), "remaining_percentage": 100 - int(percent)}
        env = self.env(session_id, NO_COLOR="1")
        res = subprocess.run([python or sys.executable, "-S", STATUSMAIN], input=compact(p).encode(), env=env,
                             cwd=self.root, capture_output=True, timeout=30)
        assert res.returncode == 0, res.stderr
        return res.stdout.decode("utf-8")

    # -- what the hooks left behind ------------------------------------------------
    @property
    def project(self):
        from cc_continuity.project import Project

        return Project(self.root)

    def number(self, session_id):
        return self.project.lookup(session_id)

    def sdir(self, session_id=None, number=None):
        n = number if number is not None else self.number(session_id)
        assert n is not None, "session %s is not registered" % session_id
        return self.project.session_dir(n)

    def state(self, session_id=None, number=None):
        from cc_continuity import session

        return session.load(self.sdir(session_id, number))

    def ledger(self, session_id=None, number=None, ev=None):
        from cc_continuity import ledger, session

        recs = ledger.read(session.ledger_path(self.sdir(session_id, number)))
        return [r for r in recs if ev is None or r.get("ev") == ev]

    def handoff_path(self, session_id=None, number=None):
        return os.path.join(self.sdir(session_id, number), "checkpoint", "handoff.md")

    def checkpoint_file(self, name, session_id=None, number=None):
        with open(os.path.join(self.sdir(session_id, number), "checkpoint", name)) as f:
            return json.load(f)

    def git(self, *args, check=True):
        res = subprocess.run(["git", *args], cwd=self.root, capture_output=True, timeout=60)
        if check:
            assert res.returncode == 0, (args, res.stderr)
        return res.stdout

    @property
    def log_path(self):
        return os.path.join(self.cc_home, "logs", "hooks.log")

    def _log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_entries(self, start=0):
        """[(event, sid8, ms, outcome)] of hooks.log from byte ``start`` on."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            m = LOG_LINE.match(line)
            if m:
                out.append((m.group(1), m.group(2), float(m.group(3)), m.group(4)))
        return out


def snapshot_jobs(marker):
    """Pids of running snapshot jobs (``cc_continuity.snapshot.job``) whose plan mentions ``marker``."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % name, "rb") as f:
                zombie = f.read().rpartition(b")")[2][:3] == b" Z "
        except OSError:
            continue
        if b"cc_continuity.snapshot.job" in cmd and marker.encode() in cmd and not zombie:
            pids.append(int(name))
    return pids


def wait_for_snapshot_jobs(marker, timeout=60):
    """A hook killed mid-checkpoint leaves its snapshot job running (by design): let it finish
    before a test puts the state directories back."""
    import time

    deadline = time.monotonic() + timeout
    while snapshot_jobs(marker):
        if time.monotonic() > deadline:
            raise AssertionError("snapshot jobs still running: %s" % snapshot_jobs(marker))
        time.sleep(0.02)


class SimulatedKill(BaseException):
    """Raised in place of a durable write: the process "dies" right there.

    A BaseException, so no ``except Exception`` in the code under test can swallow it; ``with``
    blocks still release their flocks, exactly as the kernel does for a killed process.
    """


class WriteFaults:
    """Count (and optionally stop at) every durable write a hook makes in this process.

    Durable writes are ``atomic.write_bytes`` (state, manifest, snapshot, markers, cards, project.json,
    pid files) and ``ledger.append``.  ``crash_at=k`` raises :class:`SimulatedKill` instead of write k
    (0-based), so every point *between* two writes - in particular between each pair of state
    transitions, and between a state save and its ledger line - can be reached deterministically.
    """

    def __init__(self, crash_at=None):
        self.crash_at = crash_at
        self.writes = []
        self.crashed = None

    def __enter__(self):
        from cc_continuity import atomic, ledger

        self._saved = (atomic.write_bytes, ledger.append)
        real_write, real_append = self._saved

        def write_bytes(path, data, *args, **kwargs):
            self._point("write %s" % _tail(path))
            return real_write(path, data, *args, **kwargs)

        def append(path, record):
            what = record.get("ev")
            if what == "transition":
                what = "transition %s->%s" % (record.get("from"), record.get("to"))
            self._point("ledger %s %s" % (_tail(path), what))
            return real_append(path, record)

        atomic.write_bytes, ledger.append = write_bytes, append
        return self

    def _point(self, label):
        if self.crash_at is not None and len(self.writes) == self.crash_at:
            self.crashed = label
            raise SimulatedKill(label)
        self.writes.append(label)

    def __exit__(self, *exc):
        from cc_continuity import atomic, ledger

        atomic.write_bytes, ledger.append = self._saved
        return exc[0] is SimulatedKill  # the "killed" process simply stops


def file_contains(path, needle):
    """A predicate: does the file at ``path`` hold ``needle`` right now (False while it is missing)?"""
    def seen():
        try:
            with open(path, "rb") as f:
                return needle in f.read()
        except OSError:
            return False
    return seen


def _tail(path):
    parts = str(path).split("/")
    return "/".join(parts[-3:])


def handoff_text(sections, body="Details of the work: the parser in `src/app.py` is being rewritten.",
                 extra=None, title="# Handoff"):
    """A handoff with every section in ``sections`` filled (``extra``: {section: text} overrides)."""
    extra = extra or {}
    parts = [title, ""]
    for name in sections:
        parts += ["## %s" % name, extra.get(name, "%s %s" % (name, body)), ""]
    return "\n".join(parts)
