"""The hooks, run exactly as installed (``python -S -c <bootstrap> <Event>``, rendered from the hook table) with Claude Code-shaped stdin.

Every test drives real processes against a real git repo, a temp HOME and CC_CONTINUITY_HOME.
"""

import json
import os
import re
import stat
import subprocess
import sys
import time
import uuid

import pytest

from cc_continuity import ledger, log, paths, session
from cc_continuity.hosts.claude import hooks as dispatch
from cc_continuity.project import Project
from helpers.transcripts import (Transcript, hook_command, claude_transcript_path, hook_env, hook_payload, run_hook,
                                 start_hook)

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (\S+) sid=(\S+) (\d+\.\d)ms (.*)$")

# claude-sonnet-4-5: a 200k window, so warn/rotate/hard = 110k/124k/144k tokens.
WARN_TOKENS, ROTATE_TOKENS, HARD_TOKENS = 112_000, 130_000, 150_000


class Claude:
    """One Claude Code process as its hooks see it: pid, project dir, current session and transcript."""

    def __init__(self, project, home, pid=None):
        self.project = str(project)
        self.home = str(home)
        self.pid = pid or os.getpid()
        self.env = hook_env(self.project, self.pid)
        self.new_session()

    def new_session(self, sid=None):
        self.sid = sid or str(uuid.uuid4())
        self.transcript = Transcript(session_id=self.sid, cwd=self.project)
        self.path = claude_transcript_path(self.home, self.project, self.sid)
        self.transcript.write(self.path)
        return self.sid

    def grow(self, tokens, **kw):
        """The model answered: a turn whose last response used ``tokens``."""
        self.transcript.turn(tokens, **kw)
        self.transcript.write(self.path)

    def payload(self, event, **fields):
        p = hook_payload(event, self.sid, self.path, self.project)
        p.update(fields)
        return {k: v for k, v in p.items() if v is not None}

    def hook(self, event, **fields):
        res = run_hook(event, self.payload(event, **fields), self.env)
        assert res.returncode == 0, res.stderr
        assert b"Traceback" not in res.stdout + res.stderr
        return res

    # -- what the hooks left behind -------------------------------------------------
    @property
    def proj(self):
        return Project.discover(self.project)

    def number(self, sid=None):
        return self.proj.lookup(sid or self.sid)

    def sdir(self, sid=None):
        return self.proj.session_dir(self.number(sid))

    def state(self, sid=None):
        return session.load(self.sdir(sid))

    def ledger(self, sid=None, ev=None):
        recs = ledger.read(session.ledger_path(self.sdir(sid)))
        return [r for r in recs if ev is None or r.get("ev") == ev]


def note_of(res, event):
    """The additionalContext of a hook's stdout (which must be exactly one JSON object)."""
    doc = json.loads(res.stdout)
    hso = doc["hookSpecificOutput"]
    assert hso["hookEventName"] == event
    return hso["additionalContext"]


def hook_log():
    try:
        with open(os.path.join(paths.logs_dir(), "hooks.log")) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


@pytest.fixture
def claude(git_repo, isolated_home):
    return Claude(git_repo, isolated_home)


# -- SessionStart ---------------------------------------------------------------------------
def test_session_start_registers(claude, git_repo):
    res = claude.hook("SessionStart")
    assert res.stdout == b""
    proj = claude.proj
    sdir = os.path.join(paths.home(), "projects", proj.key, "sessions", "001")
    rec = session.load(sdir)
    assert rec["name"] == "repo-001" and rec["number"] == 1
    assert rec["state"] == session.ACTIVE
    assert rec["session_id"] == claude.sid
    assert rec["pid"] == os.getpid()
    assert rec["transcript"] == claude.path
    assert rec["model"] == "claude-sonnet-4-5"
    assert rec["project_root"] == str(git_repo) and rec["slug"] == "repo"
    assert rec["predecessor"] is None
    assert os.readlink(os.path.join(proj.dir, "ids", claude.sid)) == "../sessions/001"
    starts = claude.ledger(ev="session_start")
    assert len(starts) == 1 and starts[0]["source"] == "startup" and starts[0]["name"] == "repo-001"
    assert ledger.verify(session.ledger_path(sdir))[0]


def test_second_session_gets_002_and_resume_does_not_allocate(claude):
    first = claude.sid
    claude.hook("SessionStart")
    second = claude.new_session()
    claude.hook("SessionStart")
    assert claude.state()["name"] == "repo-002"
    assert claude.proj.numbers() == [1, 2]
    claude.sid = first
    claude.hook("SessionStart", source="resume", model=None)
    claude.hook("SessionStart", source="compact")
    assert claude.proj.numbers() == [1, 2]
    assert claude.number(first) == 1 and claude.number(second) == 2
    starts = claude.ledger(first, ev="session_start")
    assert [(s.get("again"), s["source"]) for s in starts] == [(None, "startup"), (True, "resume"), (True, "compact")]


def test_clear_links_predecessor_by_claude_pid(claude):
    claude.hook("SessionStart")
    old = claude.sid
    claude.hook("SessionEnd", reason="clear")
    assert claude.state(old)["state"] == session.ENDED
    claude.new_session()
    claude.hook("SessionStart", source="clear", model=None)  # no model field after /clear
    rec = claude.state()
    assert rec["name"] == "repo-002"
    assert rec["predecessor"] == 1
    assert claude.ledger(ev="session_start")[0]["predecessor"] == 1


def test_clear_in_another_process_is_not_a_predecessor(claude, git_repo, isolated_home):
    claude.hook("SessionStart")
    claude.hook("SessionEnd", reason="clear")
    other = Claude(git_repo, isolated_home, pid=1)  # a different Claude Code process
    other.hook("SessionStart", source="clear", model=None)
    assert other.state()["predecessor"] is None


def test_session_end_marks_live_session_ended(claude):
    claude.hook("SessionStart")
    res = claude.hook("SessionEnd", reason="prompt_input_exit")
    assert res.stdout == b""
    rec = claude.state()
    assert rec["state"] == session.ENDED
    assert rec["ended"]["reason"] == "prompt_input_exit"
    assert [(r["from"], r["to"]) for r in claude.ledger(ev="transition")] == [(session.ACTIVE, session.ENDED)]


def test_session_end_keeps_a_claimable_checkpoint(claude):
    claude.hook("SessionStart")
    sdir, rec = claude.sdir(), claude.state()
    for dst in (session.HANDOFF_REQUESTED, session.CHECKPOINT_VERIFIED):
        rec = session.transition(sdir, rec, dst, "test")
    claude.hook("SessionEnd", reason="other")
    rec = claude.state()
    assert rec["state"] == session.CHECKPOINT_VERIFIED
    assert rec["ended"]["reason"] == "other"


def test_session_end_of_unknown_session_writes_nothing(claude):
    res = claude.hook("SessionEnd", reason="other")
    assert res.stdout == b""
    assert not os.path.exists(paths.projects_dir())
    assert hook_log()[-1].split()[1:2] == ["SessionEnd"]


# -- UserPromptSubmit -------------------------------------------------------------------------
def test_prompt_is_ledgered_and_clears_signal_flags(claude):
    claude.hook("SessionStart")
    env = dict(claude.env, CLAUDE_CODE_SESSION_ID=claude.sid)
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "signal", "needs-human", "need the  API key"],
                         env=env, cwd=claude.project, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert claude.state()["flags"]["needs_human"]["text"] == "need the API key"
    prompt = "here is the key: use the staging one — ünïcödé"
    res = claude.hook("UserPromptSubmit", prompt=prompt)
    assert res.stdout == b""
    rec = claude.state()
    assert rec["flags"] == {}
    prompts = claude.ledger(ev="prompt")
    assert len(prompts) == 1 and prompts[0]["text"] == prompt and prompts[0]["chars"] == len(prompt)
    assert claude.ledger(ev="flags_cleared")[0]["flags"] == ["needs_human"]
    assert [r["ev"] for r in claude.ledger()][-3:] == ["signal", "prompt", "flags_cleared"]


def test_long_prompt_is_capped_in_the_ledger(claude):
    claude.hook("SessionStart")
    claude.hook("UserPromptSubmit", prompt="p" * 50_000)
    rec = claude.ledger(ev="prompt")[0]
    assert rec["chars"] == 50_000 and 0 < len(rec["text"]) < 50_000


def test_prompt_without_session_start_registers(claude):
    """Hooks installed mid-session: the first event seen is not SessionStart."""
    claude.hook("UserPromptSubmit", prompt="hello")
    assert claude.state()["name"] == "repo-001"
    assert claude.ledger(ev="prompt")[0]["text"] == "hello"


# -- PostToolUse and the meter --------------------------------------------------------------
def test_post_tool_use_below_warn_is_silent(claude):
    claude.hook("SessionStart")
    claude.grow(60_000)
    res = claude.hook("PostToolUse")
    assert res.stdout == b""
    tools = claude.ledger(ev="tool")
    assert len(tools) == 1
    assert (tools[0]["tool"], tools[0]["tokens"], tools[0]["percent"]) == ("Bash", 60_000, 30.0)
    assert claude.state()["state"] == session.ACTIVE


def test_crossing_warn_gives_one_note(claude):
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    res = claude.hook("PostToolUse")
    note = note_of(res, "PostToolUse")
    assert "cc-continuity" in note and "56%" in note and re.search(r"200(k|,000)", note)
    assert claude.state()["state"] == session.WARNED
    assert claude.state()["levels_notified"] == ["warn"]
    res = claude.hook("PostToolUse")
    assert res.stdout == b"", "the note is given once"
    claude.grow(WARN_TOKENS + 2000)
    assert claude.hook("PostToolUse").stdout == b""
    levels = claude.ledger(ev="level")
    assert [(r["level"], r["tokens"]) for r in levels] == [("warn", WARN_TOKENS)]


def test_jump_straight_to_rotate(claude):
    claude.hook("SessionStart")
    claude.grow(ROTATE_TOKENS)
    note = note_of(claude.hook("PostToolUse"), "PostToolUse")
    assert "rotate" in note and "65%" in note
    rec = claude.state()
    assert rec["state"] == session.ROTATION_PENDING
    assert rec["levels_notified"] == ["warn", "rotate"]
    assert rec["last_reading"]["tokens"] == ROTATE_TOKENS
    assert claude.hook("PostToolUse").stdout == b""
    assert [(r["from"], r["to"]) for r in claude.ledger(ev="transition")] == [
        (session.ACTIVE, session.ROTATION_PENDING)]


def test_hard_level_note(claude):
    claude.hook("SessionStart")
    claude.grow(HARD_TOKENS)
    note = note_of(claude.hook("PostToolUse"), "PostToolUse")
    assert "hard ceiling" in note and "75%" in note
    assert claude.state()["levels_notified"] == ["warn", "rotate", "hard"]


def test_compaction_steps_back_down_and_notes_again(claude):
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    note_of(claude.hook("PostToolUse"), "PostToolUse")
    claude.transcript.compact_boundary(WARN_TOKENS, post_tokens=3000)
    claude.transcript.write(claude.path)
    assert claude.hook("PostToolUse").stdout == b""
    rec = claude.state()
    assert rec["state"] == session.ACTIVE and rec["levels_notified"] == []
    claude.grow(WARN_TOKENS + 1000)
    assert "cc-continuity" in note_of(claude.hook("PostToolUse"), "PostToolUse")


def test_window_from_config(claude, git_repo):
    claude.hook("SessionStart")
    os.makedirs(git_repo / ".claude", exist_ok=True)
    (git_repo / ".claude" / "continuity.json").write_text('{"window": 1000000}')
    claude.grow(WARN_TOKENS)
    assert claude.hook("PostToolUse").stdout == b""  # 11% of 1M
    assert claude.ledger(ev="tool")[-1]["percent"] == 11.2


def test_stop_parks_the_note_for_the_next_prompt(claude):
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    res = claude.hook("Stop")
    assert res.stdout == b"", "Stop output would make the turn continue"
    rec = claude.state()
    assert rec["state"] == session.WARNED
    parked = rec["pending_note"]
    assert "56%" in parked
    stops = claude.ledger(ev="stop")
    assert (stops[0]["tokens"], stops[0]["level"], stops[0]["stop_hook_active"]) == (WARN_TOKENS, "warn", False)
    res = claude.hook("UserPromptSubmit", prompt="go on")
    assert note_of(res, "UserPromptSubmit") == parked
    assert "pending_note" not in claude.state()
    assert claude.hook("UserPromptSubmit", prompt="again").stdout == b""


def test_pre_compact_is_ledgered(claude):
    claude.hook("SessionStart")
    res = claude.hook("PreCompact", trigger="auto")
    assert res.stdout == b""
    assert claude.ledger(ev="precompact")[0]["trigger"] == "auto"


# -- fail-open and disabling ---------------------------------------------------------------
def test_unknown_event_is_ignored(claude):
    res = run_hook("MessageDisplay", claude.payload("MessageDisplay", delta="Running bash.", final=True),
                   claude.env)
    assert (res.returncode, res.stdout) == (0, b"")
    assert not os.path.exists(paths.projects_dir())
    line = LOG_LINE.match(hook_log()[-1])
    assert line and line.group(1) == "MessageDisplay" and line.group(4) == "ignored"


def test_no_event_argument_uses_hook_event_name(claude):
    """Without argv the event comes from the payload's hook_event_name."""
    res = subprocess.run(hook_command("SessionStart")[:-1], input=json.dumps(claude.payload("SessionStart")).encode(),
                         env=claude.env, capture_output=True, timeout=60)
    assert (res.returncode, res.stdout) == (0, b"")
    assert LOG_LINE.match(hook_log()[-1]).group(1) == "?"
    assert claude.state()["name"] == "repo-001"


@pytest.mark.parametrize("event", ["SessionStart", "PostToolUse", "UserPromptSubmit", "Stop", "SessionEnd"])
def test_cc_continuity_0_writes_nothing(claude, event):
    claude.grow(ROTATE_TOKENS)
    env = dict(claude.env, CC_CONTINUITY="0")
    res = run_hook(event, claude.payload(event), env)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    assert not os.path.exists(paths.projects_dir())
    line = LOG_LINE.match(hook_log()[-1])
    assert line.group(1) == event and line.group(4) == "disabled"


def test_project_disabled_does_not_register(claude, git_repo):
    os.makedirs(git_repo / ".claude")
    (git_repo / ".claude" / "continuity.json").write_text('{"enabled": false}')
    res = claude.hook("SessionStart")
    assert res.stdout == b""
    assert claude.number() is None
    assert "project disabled" in hook_log()[-1]


def test_bad_config_fails_open(claude, git_repo):
    os.makedirs(git_repo / ".claude")
    (git_repo / ".claude" / "continuity.json").write_text('{"warn": "high"}')
    for event in ("SessionStart", "PostToolUse", "UserPromptSubmit", "Stop"):
        res = claude.hook(event)
        assert res.stdout == b""
        assert event in hook_log()[-1]
        assert "ConfigError" in hook_log()[-1] and "warn" in hook_log()[-1]
    assert claude.number() is None
    assert not os.path.exists(os.path.join(claude.proj.dir, "ids", claude.sid))


def test_bad_config_allocates_no_session_numbers(claude, git_repo):
    os.makedirs(git_repo / ".claude")
    (git_repo / ".claude" / "continuity.json").write_text('{"warn": "high"}')
    for _ in range(3):
        claude.hook("PostToolUse")
    assert claude.proj.numbers() == []
    assert claude.proj.peek_next_number() == 1




@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "PreToolUse", "PreCompact",
                                   "PostToolUse"])
def test_disabled_project_hooks_write_no_session(claude, git_repo, event):
    os.makedirs(git_repo / ".claude")
    (git_repo / ".claude" / "continuity.json").write_text('{"enabled": false}')
    claude.grow(ROTATE_TOKENS)
    claude.hook("SessionStart")
    for _ in range(2):
        res = claude.hook(event)
        assert res.stdout == b""
    assert claude.proj.numbers() == []


def test_fifo_transcript_cannot_hang_the_hook(claude, tmp_path):
    claude.hook("SessionStart")
    fifo = str(tmp_path / "transcript.fifo")
    os.mkfifo(fifo)
    t0 = time.monotonic()
    res = run_hook("PostToolUse", claude.payload("PostToolUse", transcript_path=fifo), claude.env, timeout=60)
    took = time.monotonic() - t0
    assert (res.returncode, res.stdout) == (0, b"")
    assert took < 1.0, "hook took %.1fs (it sat out its %.1f s budget before)" % (took, dispatch.BUDGET["PostToolUse"])
    assert "transcript refused: %s is a FIFO" % fifo in hook_log()[-1]  # refused at once: never opened


def test_corrupt_state_file_fails_open(claude):
    claude.hook("SessionStart")
    with open(os.path.join(claude.sdir(), "state.json"), "wb") as f:
        f.write(b'{"number":1,"state":"ACT')
    claude.grow(60_000)
    for event in ("PostToolUse", "UserPromptSubmit", "Stop"):
        res = claude.hook(event)
        assert res.stdout == b""
        assert LOG_LINE.match(hook_log()[-1]).group(1) == event


def test_corrupt_state_file_is_re_registered(claude):
    claude.hook("SessionStart")
    with open(os.path.join(claude.sdir(), "state.json"), "wb") as f:
        f.write(b'{"number":1,"state":"ACT')
    claude.grow(60_000)
    res = claude.hook("PostToolUse")
    assert res.stdout == b""
    rec = claude.state()
    assert rec["session_id"] == claude.sid and rec["state"] == session.ACTIVE
    assert claude.ledger(ev="tool")[-1]["tokens"] == 60_000


def test_state_file_with_unknown_state_is_re_registered(claude):
    """Valid JSON but not a record we know: the session gets a fresh record, the hook still works."""
    claude.hook("SessionStart")
    with open(os.path.join(claude.sdir(), "state.json"), "wb") as f:
        f.write(b'{"number":1,"state":"EXPLODED"}')
    claude.grow(60_000)
    assert claude.hook("PostToolUse").stdout == b""
    rec = claude.state()
    assert rec["session_id"] == claude.sid and rec["state"] == session.ACTIVE
    assert claude.ledger(ev="tool")[-1]["tokens"] == 60_000


def test_payload_without_session_id_fails_open(claude):
    p = claude.payload("PostToolUse")
    del p["session_id"]
    res = run_hook("PostToolUse", p, claude.env)
    assert (res.returncode, res.stdout) == (0, b"")
    assert not os.path.exists(paths.projects_dir())
    assert "PostToolUse" in hook_log()[-1]


def test_hook_without_claude_project_dir_uses_payload_cwd(claude, git_repo):
    sub = git_repo / "sub"
    sub.mkdir()
    env = dict(claude.env)
    del env["CLAUDE_PROJECT_DIR"]
    res = run_hook("SessionStart", hook_payload("SessionStart", claude.sid, claude.path, str(sub)), env)
    assert (res.returncode, res.stdout) == (0, b"")
    assert claude.state()["name"] == "repo-001"


def test_cli_hook_route_behaves_the_same(claude):
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "hook", "PostToolUse"],
                         input=json.dumps(claude.payload("PostToolUse")).encode(), env=claude.env,
                         capture_output=True, timeout=60)
    assert res.returncode == 0
    assert "56%" in note_of(res, "PostToolUse")


# -- logging --------------------------------------------------------------------------------
def test_every_invocation_logs_one_line(claude):
    events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
              "Notification", "SessionEnd"]
    for ev in events:
        claude.hook(ev)
    run_hook("PostToolUse", b"\xff{not json", claude.env)
    lines = hook_log()
    assert len(lines) == len(events) + 1
    for ev, line in zip(events + ["PostToolUse"], lines):
        m = LOG_LINE.match(line)
        assert m, line
        assert m.group(1) == ev
        assert float(m.group(3)) >= 0
    assert LOG_LINE.match(lines[0]).group(2) == claude.sid[:8]
    assert "bad-stdin" in lines[-1]
    assert oct(os.stat(os.path.join(paths.logs_dir(), "hooks.log")).st_mode & 0o777) == oct(0o600)


def test_hooks_log_is_bounded(claude):
    paths.ensure_dir(paths.logs_dir())
    path = os.path.join(paths.logs_dir(), "hooks.log")
    filler = (b"x" * 99 + b"\n") * (log.MAX_BYTES // 100 + 1)
    with open(path, "wb") as f:
        f.write(filler)
    claude.hook("PreToolUse")
    assert os.path.getsize(path + ".1") == len(filler)
    assert len(hook_log()) == 1 and "PreToolUse" in hook_log()[0]
    # again: the old generation is replaced, never accumulated
    with open(path, "ab") as f:
        f.write(filler)
    claude.hook("PreToolUse")
    assert sorted(os.listdir(paths.logs_dir())) == ["hooks.log", "hooks.log.1"]
    assert os.path.getsize(path) < 1000
    assert os.path.getsize(path + ".1") <= log.MAX_BYTES + len(filler)


# -- permissions ----------------------------------------------------------------------------
def test_state_files_are_0600(claude):
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    claude.hook("PostToolUse")
    claude.hook("SessionEnd", reason="clear")
    bad = []
    for dirpath, dirnames, filenames in os.walk(paths.home()):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p) and stat.S_IMODE(os.lstat(p).st_mode) != 0o600:
                bad.append((p, oct(stat.S_IMODE(os.lstat(p).st_mode))))
    assert bad == []


def test_state_dirs_are_0700(claude):
    claude.hook("SessionStart")
    claude.hook("PostToolUse")
    bad = []
    for dirpath, dirnames, filenames in os.walk(paths.home()):
        if stat.S_IMODE(os.stat(dirpath).st_mode) != 0o700:
            bad.append(dirpath)
    assert bad == []


# -- concurrency ------------------------------------------------------------------------------
def test_64_concurrent_post_tool_use(claude):
    """Parallel tool calls: every line lands, the chain verifies, the state file is never torn."""
    claude.hook("SessionStart")
    claude.grow(WARN_TOKENS)
    state_file = os.path.join(claude.sdir(), "state.json")
    procs = [start_hook("PostToolUse", claude.payload("PostToolUse", tool_use_id="toolu_%02d" % i), claude.env)
             for i in range(64)]
    polls = 0
    while any(p.poll() is None for p in procs):
        with open(state_file, "rb") as f:
            rec = json.loads(f.read())  # never torn: always one whole JSON document
        assert rec["state"] in session.STATES
        polls += 1
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(out)
    assert polls > 0
    notes = [o for o in outs if o]
    assert len(notes) == 1, "exactly one process reports the crossing"
    assert "56%" in json.loads(notes[0])["hookSpecificOutput"]["additionalContext"]
    recs = claude.ledger()
    assert sum(r["ev"] == "tool" for r in recs) == 64
    assert sum(r["ev"] == "level" for r in recs) == 1
    assert [r["n"] for r in recs] == list(range(1, len(recs) + 1))
    assert ledger.verify(session.ledger_path(claude.sdir())) == (True, None, "%d lines ok" % len(recs))
    assert claude.state()["state"] == session.WARNED
    assert len([line for line in hook_log() if " PostToolUse " in line]) == 64


def test_concurrent_first_hooks_register_one_session(claude):
    """No SessionStart seen (installed mid-session) and 16 tool calls at once: still one session."""
    procs = [start_hook("PostToolUse", claude.payload("PostToolUse"), claude.env) for _ in range(16)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert (p.returncode, out) == (0, b""), err
    assert claude.proj.numbers() == [1]
    assert len(claude.ledger(ev="tool")) == 16
    assert ledger.verify(session.ledger_path(claude.sdir()))[0]
