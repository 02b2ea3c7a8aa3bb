"""The status line, run as installed (``'<python>' -S '<pkg>/cc_continuity/statusmain.py'``, shell form).

What it draws is checked with its own budget (``OWN_BUDGET_S``, 300 ms from ``main()``) raised to
:data:`ROOMY_S`: on a loaded machine a process can wait longer than that for a core, and the line is
then ``ctx ?`` (as it should be), which is not what those tests are about.  The same statusmain.py
runs, with the same arguments and stdin; only the constant differs.  The tests of the budget itself
(a stdin that never closes, a FIFO transcript, a slow chain set-up, issue 10) run the command as
installed, at 300 ms."""

import json
import os
import shlex
import stat
import subprocess
import sys
import time
import uuid

import pytest

from cc_continuity import config, paths, session
from cc_continuity.statusline import GUESSED
from cc_continuity.project import Project
from helpers.transcripts import STATUSMAIN, Transcript, claude_transcript_path, hook_env, hook_payload, run_hook

COMMAND = "%s -S %s" % (shlex.quote(sys.executable), shlex.quote(STATUSMAIN))
ROOMY_S = 30.0  # the budget of the tests of what it draws (not of when): see the module's docstring
# statusmain.py itself, run by ``python -S -c`` after the budget was raised in its module (argv: ours).
ROOMY = (
    "import sys\n"
    "sys.path[0] = %r\n"
    "from cc_continuity import statusline\n"
    "statusline.OWN_BUDGET_S = %r\n"
    "exec(compile(open(%r).read(), %r, 'exec'), {'__file__': %r, '__name__': '__main__'})\n"
    % (os.path.dirname(os.path.dirname(STATUSMAIN)), ROOMY_S, STATUSMAIN, STATUSMAIN, STATUSMAIN))
ROOMY_COMMAND = "%s -S -c %s" % (shlex.quote(sys.executable), shlex.quote(ROOMY))


class Session:
    """A registered session (SessionStart ran) and the status-line payloads Claude Code would send for it."""

    def __init__(self, repo, home):
        self.repo = str(repo)
        self.sid = str(uuid.uuid4())
        self.transcript = Transcript(session_id=self.sid, cwd=self.repo)
        self.path = claude_transcript_path(home, self.repo, self.sid)
        self.transcript.write(self.path)
        self.env = hook_env(self.repo, os.getpid())
        res = run_hook("SessionStart", hook_payload("SessionStart", self.sid, self.path, self.repo), self.env)
        assert res.returncode == 0 and res.stdout == b"", res.stderr

    @property
    def sdir(self):
        p = Project.discover(self.repo)
        return p.session_dir(p.lookup(self.sid))

    def payload(self, tokens=37010, window=1_000_000, model="claude-opus-5-5"):
        cu = None if tokens is None else {"input_tokens": 10, "output_tokens": 20,
                                          "cache_creation_input_tokens": 2000,
                                          "cache_read_input_tokens": tokens - 2010}
        return {
            "session_id": self.sid, "transcript_path": self.path, "cwd": self.repo,
            "prompt_id": "6ee8a792-0000-4000-8000-000000000000", "effort": {"level": "medium"},
            "model": {"id": model, "display_name": "Opus 5.5"},
            "workspace": {"current_dir": self.repo, "project_dir": self.repo, "added_dirs": []},
            "version": "2.1.328", "output_style": {"name": "default"},
            "cost": {"total_cost_usd": 0.2, "total_duration_ms": 21694, "total_api_duration_ms": 4083,
                     "total_lines_added": 0, "total_lines_removed": 0},
            "context_window": {
                "total_input_tokens": 0 if tokens is None else tokens, "total_output_tokens": 20,
                "context_window_size": window, "current_usage": cu,
                "used_percentage": None if tokens is None else round(100 * tokens / window),
                "remaining_percentage": None if tokens is None else 100 - round(100 * tokens / window)},
            "exceeds_200k_tokens": bool(tokens and tokens > 200_000), "fast_mode": False,
            "thinking": {"enabled": True},
        }

    def transition(self, *states):
        rec = session.load(self.sdir)
        for s in states:
            rec = session.transition(self.sdir, rec, s, "test")


def statusline(payload, env=None, no_color=True, timeout=30, as_installed=False):
    """One run; ``as_installed``: at its own 300 ms budget (the deadline tests), else at ROOMY_S."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    e = dict(os.environ if env is None else env)
    e.pop("CLAUDE_PROJECT_DIR", None)  # the status line finds the project from its payload
    if no_color:
        e["NO_COLOR"] = "1"
    else:
        e.pop("NO_COLOR", None)
    t0 = time.monotonic()
    res = subprocess.run(COMMAND if as_installed else ROOMY_COMMAND, shell=True, input=raw, capture_output=True,
                         env=e, timeout=timeout)
    res.elapsed = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    res.lines = res.stdout.decode("utf-8").splitlines()
    return res


@pytest.fixture
def sess(git_repo, isolated_home):
    return Session(git_repo, isolated_home)


def write_chain(command, **extra):
    paths.ensure_dir(paths.home())
    with open(os.path.join(paths.home(), "install.json"), "w") as f:
        json.dump({"statusline_chain": {"type": "command", "command": command, "padding": 0, **extra}}, f)


def script(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


# -- levels and marks ----------------------------------------------------------------------------
@pytest.mark.parametrize("tokens,expected", [
    (37_010, "ctx 3% ▯▯▯▯▯ ok"),
    (400_000, "ctx 40% ▮▮▯▯▯ ok"),
    (560_000, "ctx 56% ▮▮▮▯▯ warn"),
    (650_000, "ctx 65% ▮▮▮▯▯ rotate"),
    (800_000, "ctx 80% ▮▮▮▮▯ hard"),
    (1_000_000, "ctx 100% ▮▮▮▮▮ hard"),
])
def test_levels(sess, tokens, expected):
    res = statusline(sess.payload(tokens))
    assert res.lines == [expected + " · repo-001"]


def test_colors(sess):
    res = statusline(sess.payload(560_000), no_color=False)
    assert res.lines[0].startswith("\x1b[33mctx 56% ▮▮▮▯▯ warn\x1b[0m")
    res = statusline(sess.payload(800_000), no_color=False)
    assert "\x1b[31m" in res.lines[0]
    res = statusline(sess.payload(800_000), no_color=True)
    assert "\x1b" not in res.stdout.decode()


def test_color_off_in_config(sess):
    with open(paths.config_file(), "w") as f:
        json.dump({"statusline_color": False}, f)
    res = statusline(sess.payload(800_000), no_color=False)
    assert "\x1b" not in res.stdout.decode() and "hard" in res.lines[0]


def test_null_usage_after_clear_falls_back_to_transcript(sess):
    res = statusline(sess.payload(None))
    assert res.lines == ["ctx ? ▯▯▯▯▯ ok · repo-001"]
    sess.transcript.turn(250_000)
    sess.transcript.write(sess.path)
    res = statusline(sess.payload(None))
    assert res.lines == ["ctx 25% ▮▯▯▯▯ ok · repo-001"]


@pytest.mark.parametrize("states,mark", [
    ((session.ROTATION_PENDING,), "⟳ rotation pending"),
    ((session.HANDOFF_REQUESTED,), "✎ writing handoff"),
    ((session.HANDOFF_REQUESTED, session.CHECKPOINT_VERIFIED, session.AWAITING_MANUAL_CLEAR),
     "⚠ type /clear to rotate"),
])
def test_state_marks(sess, states, mark):
    sess.transition(*states)
    res = statusline(sess.payload(650_000))
    assert res.lines == ["ctx 65% ▮▮▮▯▯ rotate · repo-001 · " + mark]


def test_needs_human_shows_blocked_until_next_prompt(sess):
    env = dict(sess.env, CLAUDE_CODE_SESSION_ID=sess.sid)
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "signal", "needs-human", "which database?"],
                         env=env, cwd=sess.repo, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001 · ⛔ BLOCKED"]
    run_hook("UserPromptSubmit", hook_payload("UserPromptSubmit", sess.sid, sess.path, sess.repo), sess.env)
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]


def test_unknown_session_shows_only_the_meter(sess):
    p = sess.payload(560_000)
    p["session_id"] = str(uuid.uuid4())
    assert statusline(p).lines == ["ctx 56% ▮▮▮▯▯ warn"]


def test_turning_the_project_off_shows_immediately(sess):
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "off"], cwd=sess.repo, capture_output=True,
                         text=True, timeout=60, env=dict(os.environ, CLAUDE_PROJECT_DIR=sess.repo))
    assert res.returncode == 0, res.stderr
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · continuity off · repo-001"]


def test_config_error_is_shown_not_raised(sess, git_repo):
    os.makedirs(git_repo / ".claude", exist_ok=True)
    (git_repo / ".claude" / "continuity.json").write_text('{"warn": "high"}')
    res = statusline(sess.payload())
    assert len(res.lines) == 1
    assert res.lines[0].startswith("ctx ?") and "config error" in res.lines[0] and "warn" in res.lines[0]


def test_window_is_remembered_for_the_hooks(sess):
    """Hooks never see the window; the status line leaves it for them (200k model id, 1M actual window)."""
    sess.transcript.turn(150_000)
    sess.transcript.write(sess.path)
    statusline(sess.payload(150_000, window=1_000_000, model="claude-sonnet-4-5[1m]"))
    with open(os.path.join(sess.sdir, "statusline.json")) as f:
        assert json.load(f) == {"window": 1_000_000}
    res = run_hook("PostToolUse", hook_payload("PostToolUse", sess.sid, sess.path, sess.repo), sess.env)
    assert (res.returncode, res.stdout) == (0, b""), "15% of 1M: no note (75% of the model's 200k would be hard)"
    from cc_continuity import ledger

    tools = [r for r in ledger.read(session.ledger_path(sess.sdir)) if r["ev"] == "tool"]
    assert tools[-1]["percent"] == 15.0


# -- the chained user status line --------------------------------------------------------------
def test_chained_command_runs_first_with_the_same_stdin(sess, tmp_path):
    seen = tmp_path / "chain-stdin"
    chain = script(tmp_path, "theirs.sh",
                   'cat > %s\nsid=$(sed -n \'s/.*"session_id": *"\\([^"]*\\)".*/\\1/p\' %s)\necho "THEIRS sid=$sid"\n'
                   % (shlex.quote(str(seen)), shlex.quote(str(seen))))
    write_chain(shlex.quote(chain) + " --flag")
    raw = json.dumps(sess.payload(560_000)).encode()
    res = statusline(raw)
    assert res.lines == ["THEIRS sid=%s" % sess.sid, "ctx 56% ▮▮▮▯▯ warn · repo-001"]
    assert seen.read_bytes() == raw


def test_our_timer_does_not_rerun_a_chained_command_that_asked_for_no_timer(sess, tmp_path):
    """Ours refreshes every REFRESH_S s; theirs (say, a costly usage report) runs only when its stdin changed."""
    runs = tmp_path / "runs"
    chain = script(tmp_path, "count.sh", 'cat >/dev/null\necho x >> %s\necho "THEIRS $(wc -l < %s)"\n'
                   % (shlex.quote(str(runs)), shlex.quote(str(runs))))
    write_chain(shlex.quote(chain))
    tick = sess.payload(560_000)
    assert statusline(tick).lines[0] == "THEIRS 1"
    assert statusline(tick).lines == ["THEIRS 1", "ctx 56% ▮▮▮▯▯ warn · repo-001"]  # a timer tick: shown again
    assert runs.read_text().count("x") == 1
    assert statusline(sess.payload(650_000)).lines[0] == "THEIRS 2"  # a new reading: theirs runs
    sess.transition("HANDOFF_REQUESTED")
    assert statusline(sess.payload(650_000)).lines == ["THEIRS 2", "ctx 65% ▮▮▮▯▯ rotate · repo-001 · ✎ writing handoff"]
    # a status line with a timer of its own runs on every tick, as it asked
    write_chain(shlex.quote(chain), refreshInterval=3)
    assert statusline(tick).lines[0] == "THEIRS 3"
    assert statusline(tick).lines[0] == "THEIRS 4"


def test_slow_chained_command_is_cut_off(sess, tmp_path):
    with open(paths.config_file(), "w") as f:
        json.dump({"statusline_chain_timeout_ms": 300}, f)
    chain = script(tmp_path, "slow.sh", "cat >/dev/null\nsleep 6\necho late\n")
    write_chain(shlex.quote(chain))
    res = statusline(sess.payload(), timeout=30)
    assert res.lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]
    assert res.elapsed < 0.3 + 4.0, "took %.1fs" % res.elapsed


def test_ours_is_drawn_before_a_slow_chain_setup_can_take_our_budget(sess, tmp_path):
    """Under load, starting the user's status line (a config import, a process start) alone took our
    300 ms and the user saw ``ctx ?``: ours is drawn first, the setup has a budget of its own."""
    chain = script(tmp_path, "theirs.sh", "cat >/dev/null\necho THEIRS\n")
    write_chain(shlex.quote(chain))
    slow_setup = (
        "import sys, time\n"
        "sys.path[0] = %r\n"
        "from cc_continuity import statusline\n"
        "real = statusline.start_chained\n"
        "def slow(*a):\n"
        "    time.sleep(2 * statusline.OWN_BUDGET_S)\n"
        "    return real(*a)\n"
        "statusline.start_chained = slow\n"
        "statusline.main()\n" % os.path.dirname(os.path.dirname(STATUSMAIN)))
    e = dict(os.environ, NO_COLOR="1")
    e.pop("CLAUDE_PROJECT_DIR", None)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-S", "-c", slow_setup], input=json.dumps(sess.payload()).encode(),
                         capture_output=True, env=e, timeout=30)
    assert res.returncode == 0, res.stderr
    # the setup ran past its own budget: theirs is not shown this time, ours is whole
    assert res.stdout.decode().splitlines() == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]
    assert time.monotonic() - t0 < 0.6 + 4.0  # the slowed setup, and no wait on theirs


def test_failing_chained_command_is_dropped(sess, tmp_path):
    chain = script(tmp_path, "bad.sh", "cat >/dev/null\necho half-broken\nexit 3\n")
    write_chain(shlex.quote(chain))
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]
    write_chain(str(tmp_path / "does-not-exist.sh"))
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]


def test_garbage_install_json_is_ignored(sess):
    paths.ensure_dir(paths.home())
    with open(os.path.join(paths.home(), "install.json"), "w") as f:
        f.write('{"statusline_chain": 7}')
    assert statusline(sess.payload()).lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [b"", b"not json", b"\xff\xfe\x00", b"[1, 2]", b"null", b"[" * 100_000,
                                 b'{"session_id": "abc', b'{"session_id": 5, "cwd": {"a": 1}, "context_window": []}'])
def test_bad_stdin_still_one_line(git_repo, raw):
    res = statusline(raw)
    assert len(res.lines) == 1 and res.lines[0].startswith("ctx ")
    assert b"Traceback" not in res.stderr


def test_truncated_stdin_is_reported_as_bad_input(git_repo):
    res = statusline(b'{"session_id": "abc')
    assert res.lines == ["ctx ? · cc-continuity: bad status input"]


def test_not_json_is_reported_as_bad_input(git_repo):
    assert statusline(b"not json").lines == ["ctx ? · cc-continuity: bad status input"]


# -- issue 10: one deadline for the whole run ---------------------------------------------------
from cc_continuity import statusline as statusline_mod  # noqa: E402

BUDGET = statusline_mod.OWN_BUDGET_S


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_a_stdin_that_never_closes_does_not_hang_it(sess):
    e = dict(os.environ, NO_COLOR="1")
    r, w = os.pipe()  # we keep the write end open: no EOF, ever
    try:
        os.write(w, json.dumps(sess.payload())[:40].encode())  # part of a payload, then nothing
        t0 = time.monotonic()
        p = subprocess.Popen(COMMAND, shell=True, stdin=r, stdout=subprocess.PIPE, env=e)
        out, _ = p.communicate(timeout=BUDGET + 5)
        elapsed = time.monotonic() - t0
    finally:
        os.close(r)
        os.close(w)
    assert p.returncode == 0 and elapsed < BUDGET + 2, elapsed
    assert out.decode().startswith("ctx ?")


def test_a_fifo_transcript_does_not_hang_it(sess, tmp_path):
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    payload = sess.payload(tokens=None)  # no usage in the payload: the status line reads the transcript
    payload["transcript_path"] = str(fifo)
    res = statusline(payload, timeout=BUDGET + 5, as_installed=True)
    assert res.elapsed < BUDGET + 2, "took %.1fs" % res.elapsed
    assert len(res.lines) == 1 and res.lines[0].startswith("ctx ")


def test_a_hung_chained_command_and_its_children_are_killed_at_its_timeout(sess, tmp_path):
    with open(paths.config_file(), "w") as f:
        json.dump({"statusline_chain_timeout_ms": 400}, f)
    pids = tmp_path / "pids"
    hang = script(tmp_path, "hang.sh", "echo $$ > %s\nsleep 300 &\necho $! >> %s\nwait\n"
                  % (shlex.quote(str(pids)), shlex.quote(str(pids))))
    write_chain(shlex.quote(hang))
    res = statusline(sess.payload(), timeout=30)
    assert res.lines == ["ctx 3% ▯▯▯▯▯ ok · repo-001"]
    assert res.elapsed < 0.4 + BUDGET + 1, "took %.1fs" % res.elapsed
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 2
    # Left to finish in the background for a bounded time (issue 22), then its whole group is killed.
    deadline = time.monotonic() + min(statusline_mod.BACKGROUND_MAX_S, max(
        statusline_mod.BACKGROUND_MIN_S, statusline_mod.BACKGROUND_FACTOR * 0.4)) + 5
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if _alive(p)], "the chained command's process group outlived the status line"


def test_the_chain_carried_in_our_own_command_wins_and_needs_no_record(sess, tmp_path):
    """install puts the user's status line into ours (--chain JSON): no install.json needed at all."""
    theirs = script(tmp_path, "theirs.sh", "cat >/dev/null\necho FROM-ARGV\n")
    write_chain("echo FROM-RECORD")
    chain = json.dumps({"type": "command", "command": shlex.quote(theirs), "padding": 0})
    e = dict(os.environ, NO_COLOR="1")
    cmd = ROOMY_COMMAND + " --chain " + shlex.quote(chain)
    res = subprocess.run(cmd, shell=True, input=json.dumps(sess.payload()).encode(), capture_output=True, env=e,
                         timeout=30)
    assert res.stdout.decode().splitlines() == ["FROM-ARGV", "ctx 3% ▯▯▯▯▯ ok · repo-001"]
    os.unlink(os.path.join(paths.home(), "install.json"))
    res = subprocess.run(cmd, shell=True, input=json.dumps(sess.payload()).encode(), capture_output=True, env=e,
                         timeout=30)
    assert res.stdout.decode().splitlines()[0] == "FROM-ARGV"


# -- issue 22: our part within 300 ms whatever the chained one does; a slow one shows its last output --
def test_a_slow_chained_status_line_shows_its_last_output_and_is_refreshed_in_the_background(sess, tmp_path):
    with open(paths.config_file(), "w") as f:
        json.dump({"statusline_chain_timeout_ms": 300}, f)
    runs = tmp_path / "runs"
    chain = script(tmp_path, "slow.sh", "cat >/dev/null\nsleep 1\necho x >> %s\necho \"THEIRS $(wc -l < %s)\"\n"
                   % (shlex.quote(str(runs)), shlex.quote(str(runs))))
    write_chain(shlex.quote(chain))
    first = statusline(sess.payload(560_000))
    assert first.lines == ["ctx 56% ▮▮▮▯▯ warn · repo-001"]  # nothing to show yet: ours alone, on time
    assert first.elapsed < 0.3 + statusline_mod.OWN_BUDGET_S + 1.5, first.elapsed
    cache = session.chain_cache_path(sess.sdir)
    deadline = time.monotonic() + 15
    while not os.path.exists(cache) and time.monotonic() < deadline:  # the background run keeps its output
        time.sleep(0.05)
    second = statusline(sess.payload(600_000))  # a new reading: theirs runs again, slow again
    assert second.lines == ["THEIRS 1", "ctx 60% ▮▮▮▯▯ warn · repo-001"]
    assert second.elapsed < 0.3 + statusline_mod.OWN_BUDGET_S + 1.5, second.elapsed


def test_a_stdin_left_open_after_a_whole_payload_is_not_waited_on(sess):
    e = dict(os.environ, NO_COLOR="1")
    r, w = os.pipe()
    try:
        os.write(w, json.dumps(sess.payload(560_000)).encode())  # the whole payload, and no EOF
        # (ROOMY_S: waited on, it would be killed at the timeout below; with 300 ms it would say ctx ?)
        p = subprocess.Popen(ROOMY_COMMAND, shell=True, stdin=r, stdout=subprocess.PIPE, env=e)
        out, _ = p.communicate(timeout=BUDGET + 5)
    finally:
        os.close(r)
        os.close(w)
    assert out.decode().splitlines() == ["ctx 56% ▮▮▮▯▯ warn · repo-001"]


def test_our_budget_is_300_ms():
    assert statusline_mod.OWN_BUDGET_S <= 0.3


def test_a_window_that_is_a_guess_says_so_until_one_is_given(sess):
    """A model id Claude Code does not know: it reports the 1,000,000 it assumes (seen on 2.1.328 and 2.1.332),
    so the percentage is of a guess; said until the window is given (CLAUDE_CODE_MAX_CONTEXT_TOKENS, or ours)."""
    local = sess.payload(400_000, window=1_000_000, model="qwen3-coder-local")
    assert statusline(local).lines == ["ctx 40% ▮▮▯▯▯ ok · " + GUESSED + " · repo-001"]
    assert statusline(sess.payload(400_000)).lines == ["ctx 40% ▮▮▯▯▯ ok · repo-001"]  # a Claude id: known
    given = dict(os.environ, CLAUDE_CODE_MAX_CONTEXT_TOKENS="1000000")
    assert statusline(local, env=given).lines == ["ctx 40% ▮▮▯▯▯ ok · repo-001"]
    config.update_global({"window": 1_000_000})
    assert GUESSED not in statusline(local).lines[0]
