"""Session liveness from outside: real processes, real hooks writing real ledgers, real inotify events."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from cc_continuity import ledger, session
from cc_continuity.hosts.claude import hooks as dispatch
from cc_continuity.watch.liveness import (ACTIVE, DEAD, DONE, EXIT_HUNG, FAILED, LIMITED, STALLED, WAITING,
                                          LedgerFollower,
                                          ProcessTable, Scanner, SessionObs, TranscriptWatch, classify,
                                          looks_like_claude)
from helpers.transcripts import Transcript, claude_transcript_path, hook_env, hook_payload


# -- stand-ins shared with the other watchdog tests ----------------------------------

def spawn_claude(tmp_path, body="import time\ntime.sleep(120)\n", name="claude"):
    """A process whose name is ``claude`` (a script so named), like the real CLI's."""
    d = tmp_path / ("bin-%s" % uuid.uuid4().hex[:8])
    d.mkdir()
    script = d / name
    script.write_text("#!%s\n%s" % (sys.executable, body))
    script.chmod(0o755)
    proc = subprocess.Popen([str(script)], stdin=subprocess.DEVNULL, start_new_session=True)
    wait_for(lambda: _name(proc.pid) == name)
    return proc


def _name(pid):
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return None


def wait_for(cond, timeout=5.0, step=0.02):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(step)


def reap(*procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=5)


class Session:
    """One Claude Code session as its hooks report it (the real hook code, run in-process)."""

    def __init__(self, repo, home, pid, tmux=None):
        self.repo = str(repo)
        self.sid = str(uuid.uuid4())
        self.transcript = claude_transcript_path(home, self.repo, self.sid)
        t = Transcript(session_id=self.sid, cwd=self.repo)
        t.turn(1000)
        t.write(self.transcript)
        extra = {"TMUX": "%s,1,0" % tmux[0], "TMUX_PANE": tmux[1]} if tmux else {}
        self.env = hook_env(self.repo, pid, **extra)
        self.hook("SessionStart")

    def hook(self, event, **fields):
        payload = hook_payload(event, self.sid, self.transcript, self.repo, **fields)
        out, outcome, _ = dispatch.run(event, json.dumps(payload).encode(), self.env)
        assert not outcome.startswith(("error", "bad-stdin", "unknown", "no-")), outcome
        return out

    def prompt(self):
        self.hook("UserPromptSubmit")

    def stop(self):
        self.hook("Stop")

    def end(self, reason="prompt_input_exit"):
        self.hook("SessionEnd", reason=reason)

    def clear(self):
        """``/clear``: SessionEnd(clear) for this id, SessionStart(clear) for a new one, same process."""
        self.end("clear")
        nxt = Session.__new__(Session)
        nxt.repo, nxt.env = self.repo, self.env
        nxt.sid = str(uuid.uuid4())
        nxt.transcript = claude_transcript_path(os.environ["HOME"], self.repo, nxt.sid)
        Transcript(session_id=nxt.sid, cwd=self.repo).write(nxt.transcript)
        nxt.hook("SessionStart", source="clear")
        return nxt

    @property
    def sdir(self):
        from cc_continuity.project import Project

        p = Project.discover(self.repo)
        return p.session_dir(p.lookup(self.sid))

    @property
    def name(self):
        return session.load(self.sdir)["name"]

    def record(self):
        return session.load(self.sdir)


def by_name(observations):
    return {o.name: o for o in observations}


# -- classify (pure) ---------------------------------------------------------------


def obs(**kw):
    base = dict(key="k/001", name="p-001", state="ACTIVE", pid=42, alive=True, registered_at=0.0,
                mid_turn=False, turn_started=None, last_progress=0.0)
    base.update(kw)
    return SessionObs(**base)


@pytest.mark.parametrize("kw, now, want", [
    (dict(), 10, WAITING),
    (dict(mid_turn=True, turn_started=5, last_progress=8), 10, ACTIVE),
    (dict(mid_turn=True, turn_started=5, last_progress=8), 608, STALLED),
    (dict(mid_turn=True, turn_started=5, last_progress=8, tool_running=True), 9000, ACTIVE),
    (dict(mid_turn=True, alive=False), 10, DEAD),
    (dict(mid_turn=False, alive=False), 10, DONE),
    (dict(alive=None, mid_turn=True, turn_started=5, last_progress=5), 10, ACTIVE),   # no pid: no verdict on it
    (dict(ended_at=100, ended_reason="prompt_input_exit", state="ENDED"), 110, DONE),   # still within the grace
    (dict(ended_at=100, ended_reason="prompt_input_exit", state="ENDED"), 130, EXIT_HUNG),
    (dict(ended_at=100, ended_reason="clear", state="ROTATED"), 999, DONE),             # /clear keeps the process
    (dict(ended_at=100, ended_reason="logout", shared_pid=True), 999, DONE),
    (dict(ended_at=100, ended_reason="logout", alive=False, mid_turn=True), 999, DONE),
    (dict(state="ROTATED", ended_at=None), 999, DONE),
    (dict(failed_at=9, failed_error="server_error"), 10, FAILED),       # the turn died on an API error
    (dict(failed_at=9, failed_error="unknown"), 10, FAILED),
    (dict(failed_at=9, failed_error="rate_limit"), 10, LIMITED),        # a limit: Claude Code waits it out
    (dict(failed_at=9, failed_error="billing_error"), 10, LIMITED),
    (dict(failed_at=9, failed_error="server_error", alive=False), 10, DONE),
    (dict(failed_at=9, failed_error="server_error", mid_turn=True, turn_started=9.5, last_progress=9.5), 20,
     ACTIVE),                                                            # a new prompt after the failure
])
def test_classify(kw, now, want):
    assert classify(obs(**kw), now, stall=600, exit_hang=30) == want


# -- the ledger follower -------------------------------------------------------------


def test_ledger_follower_reads_only_new_lines_and_survives_torn_and_replaced_files(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    f = LedgerFollower(path)
    f.update()                                     # no file yet: nothing, no error
    assert not f.mid_turn
    ledger.append(path, {"ev": "session_start"})
    p = ledger.append(path, {"ev": "prompt", "text": "go"})
    f.update()
    assert f.mid_turn and f.prompt == p["ts"]
    offset = f.offset
    f.update()
    assert f.offset == offset                      # nothing new: nothing read
    ledger.append(path, {"ev": "tool", "tool": "Bash"})
    with open(path, "ab") as fh:                   # a line still being written
        fh.write(b'{"n":99,"ts":1.0,"ev":"st')
    f.update()
    assert f.mid_turn and f.tool is not None and f.partial.startswith(b'{"n":99')
    with open(path, "ab") as fh:
        fh.write(b'op"}\n')
    f.update()
    assert f.stop == 1.0 and f.mid_turn            # the stop is older than the prompt
    s = ledger.append(path, {"ev": "stop"})
    f.update()
    assert not f.mid_turn and f.stop == s["ts"]
    os.replace(path, path + ".old")                # replaced by a new file: start over
    ledger.append(path, {"ev": "prompt"})
    f.update()
    assert f.mid_turn and f.stop is None


def test_a_stop_failure_ends_the_turn_and_the_follower_keeps_what_the_watchdog_needs(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    f = LedgerFollower(path)
    ledger.append(path, {"ev": "session_start"})
    ledger.append(path, {"ev": "transition", "from": "ACTIVE", "to": "WARNED"})
    p = ledger.append(path, {"ev": "prompt", "text": "fix the parser\nthen the tests", "chars": 29})
    ledger.append(path, {"ev": "tool", "tool": "Bash", "percent": 41.5})
    f.update()
    assert f.mid_turn and not f.turn_failed and f.percent == 41.5
    assert (f.prompt_text, f.prompt_chars) == ("fix the parser\nthen the tests", 29)
    fail = ledger.append(path, {"ev": "stop_failure", "error": "server_error"})
    f.update()
    assert not f.mid_turn and f.turn_failed and (f.failed, f.failed_error) == (fail["ts"], "server_error")
    assert f.turn_end == fail["ts"]
    n = ledger.append(path, {"ev": "notification", "type": "quota_auto_resume_stale", "message": "x"})
    ledger.append(path, {"ev": "notification", "type": "idle_prompt"})
    f.update()
    assert (f.notice, f.notice_type) == (n["ts"], "quota_auto_resume_stale")
    time.sleep(0.002)                              # the ledger stamps whole milliseconds
    again = ledger.append(path, {"ev": "prompt", "text": "continue", "chars": 8})
    f.update()
    assert f.mid_turn and not f.turn_failed and f.prompt == again["ts"] and f.prompt_text == "continue"
    time.sleep(0.002)
    ledger.append(path, {"ev": "stop", "percent": 44.0})
    f.update()
    assert not f.mid_turn and not f.turn_failed and f.percent == 44.0   # a Stop after the failure: a good turn
    time.sleep(0.002)
    ledger.append(path, {"ev": "stop_failure", "error": 5})
    f.update()
    assert f.turn_failed and f.failed_error == "unknown"
    assert f.prompt < p["ts"] + 3600 and f.transition is not None


def test_the_scanner_reports_failed_turns_from_the_real_stop_failure_hook(git_repo, isolated_home, tmp_path):
    proc = spawn_claude(tmp_path)
    try:
        s = Session(git_repo, isolated_home, proc.pid)
        s.hook("UserPromptSubmit", prompt="Outage task: keep going")
        s.hook("StopFailure", error="server_error", last_assistant_message="API Error: Connection refused")
        o = by_name(Scanner(stall=600).scan(time.time()))[s.name]
        assert (o.failed_error, o.mid_turn, o.prompt_text) == ("server_error", False, "Outage task: keep going")
        assert classify(o, time.time(), 600, 30) == FAILED and o.sdir == s.sdir
        time.sleep(0.002)
        s.hook("UserPromptSubmit", prompt="continue")
        o = by_name(Scanner(stall=600).scan(time.time()))[s.name]
        assert o.failed_error is None and o.mid_turn
    finally:
        reap(proc)


def test_looks_like_claude():
    assert looks_like_claude("claude", ["claude"])
    assert looks_like_claude("claude.exe", [])
    assert looks_like_claude("node", ["/usr/bin/node", "/opt/lib/node_modules/@anthropic-ai/claude-code/cli.js"])
    assert looks_like_claude("2.1.328", ["/home/me/.local/bin/claude", "--resume"])
    assert not looks_like_claude("sleep", ["sleep", "100"])
    assert not looks_like_claude("bash", ["bash", "-c", "claude"])   # a shell mentioning it is not it


# -- processes --------------------------------------------------------------------------


def test_process_identity_is_checked_before_trusting_a_pid(tmp_path):
    table = ProcessTable()
    before = time.time()
    claude = spawn_claude(tmp_path)
    other = subprocess.Popen(["sleep", "60"])
    try:
        born = time.time()
        started = table._entry(claude.pid)[1]
        assert before - 0.05 <= started <= born + 0.05                          # true wall-clock start time
        assert table.find(claude.pid, registered_at=born) is not None
        assert table.find(claude.pid, registered_at=None) is not None
        # Registered well before this process started: the pid was recycled.
        assert table.find(claude.pid, registered_at=born - 3600) is None
        assert table.find(claude.pid, registered_at=born - 0.7) is None         # even 0.7 s is told apart
        assert table.find(other.pid, registered_at=born) is None          # not Claude
        assert table.find(None, born) is None and table.find(1, born) is None and table.find(True, born) is None
        claude.kill()
        claude.wait()
        assert table.find(claude.pid, registered_at=born) is None         # gone (cached entry dropped)
    finally:
        reap(claude, other)


def test_a_zombie_is_not_alive(tmp_path):
    claude = spawn_claude(tmp_path, body="import sys\nsys.exit(0)\n")
    try:
        wait_for(lambda: psutil.Process(claude.pid).status() == psutil.STATUS_ZOMBIE)
        assert ProcessTable().find(claude.pid, registered_at=None) is None   # exited, not reaped yet
    finally:
        reap(claude)


def test_tool_running_means_a_child_started_during_the_turn(tmp_path):
    body = "import subprocess, time\nsubprocess.Popen(['sleep', '30'])\ntime.sleep(60)\n"
    claude = spawn_claude(tmp_path, body=body)
    table = ProcessTable()
    try:
        proc = table.find(claude.pid, None)
        assert wait_for(lambda: proc.children())
        started = proc.children()[0].create_time()
        assert table.tool_running(proc, since=started - 1)
        assert not table.tool_running(proc, since=started + 60)           # e.g. an MCP server from before the turn
    finally:
        for c in psutil.Process(claude.pid).children():
            c.kill()
        reap(claude)


# -- transcripts ------------------------------------------------------------------------


def test_transcript_growth_comes_from_filesystem_events(tmp_path):
    d = tmp_path / "projects" / "-tmp-x"
    d.mkdir(parents=True)
    mine, other = d / "a.jsonl", d / "b.jsonl"
    mine.write_text("{}\n")
    other.write_text("{}\n")
    old = time.time() - 1000
    os.utime(mine, (old, old))
    clock = {"t": 5000.0}
    w = TranscriptWatch(clock=lambda: clock["t"]).start()
    try:
        w.sync([str(mine)])
        assert w.last_growth(str(mine)) == pytest.approx(old)          # before any event: the mtime
        assert w.watched_dirs == [str(d)]
        with open(other, "a") as f:
            f.write("{}\n")
        with open(mine, "a") as f:
            f.write('{"type":"assistant"}\n')
        assert wait_for(lambda: w.last_growth(str(mine)) == 5000.0, timeout=3)
        assert w.last_growth(str(other)) is None                       # not tracked: ignored
        clock["t"] = 6000.0
        with open(mine, "a") as f:
            f.write("{}\n")
        assert wait_for(lambda: w.last_growth(str(mine)) == 6000.0, timeout=3)
        w.sync([])                                                      # session gone: watch dropped
        assert w.watched_dirs == [] and w.last_growth(str(mine)) is None
    finally:
        w.stop()


# -- the scanner over sessions registered by the real hooks ---------------------------------


def test_scanner_classifies_every_kind_of_session(git_repo, isolated_home, tmp_path):
    procs = [spawn_claude(tmp_path) for _ in range(5)]
    sleeper = subprocess.Popen(["sleep", "60"])
    watch = TranscriptWatch().start()
    try:
        waiting = Session(git_repo, isolated_home, procs[0].pid)
        waiting.prompt()
        waiting.stop()

        working = Session(git_repo, isolated_home, procs[1].pid)
        working.prompt()

        hung = Session(git_repo, isolated_home, procs[3].pid)
        hung.end()                                 # SessionEnd, but the process stays

        cleared = Session(git_repo, isolated_home, procs[4].pid)
        successor = cleared.clear()                # same process, new session

        not_claude = Session(git_repo, isolated_home, sleeper.pid)
        not_claude.end()

        # Last: a session started after it would take over its machine handoff and end it (issue 14).
        crashed = Session(git_repo, isolated_home, procs[2].pid)
        crashed.prompt()
        procs[2].kill()
        procs[2].wait()

        scanner = Scanner(transcripts=watch, stall=0.6)
        # The working session works: its transcript grows now, however long the hooks above took.
        before = by_name(scanner.scan(time.time()))[working.name].last_progress
        time.sleep(0.05)
        with open(working.transcript, "a") as f:
            f.write('{"type":"assistant"}\n')
        assert wait_for(lambda: by_name(scanner.scan(time.time()))[working.name].last_progress > before)
        now = time.time()
        seen = by_name(scanner.scan(now))
        assert len(seen) == 7
        cls = {name: classify(o, now + 0.1, stall=0.6, exit_hang=30) for name, o in seen.items()}
        assert cls[waiting.name] == WAITING
        assert cls[working.name] == ACTIVE
        assert cls[crashed.name] == DEAD
        assert cls[hung.name] == DONE                    # ended only just now
        assert classify(seen[hung.name], now + 31, 0.6, 30) == EXIT_HUNG
        assert cls[cleared.name] == DONE and seen[cleared.name].shared_pid
        assert cls[successor.name] == WAITING
        assert seen[not_claude.name].alive is False and cls[not_claude.name] == DONE   # a sleep is not Claude

        # The working session: stalled without growth, active again when its transcript grows.
        later = time.time() + 1.0
        o = by_name(scanner.scan(later))[working.name]
        assert classify(o, later, 0.6, 30) == STALLED
        before = o.last_progress
        time.sleep(0.05)
        with open(working.transcript, "a") as f:
            f.write('{"type":"assistant"}\n')
        assert wait_for(lambda: by_name(scanner.scan(time.time()))[working.name].last_progress > before)
        o = by_name(scanner.scan(time.time()))[working.name]
        assert classify(o, time.time(), 0.6, 30) == ACTIVE
        assert set(watch.watched_dirs) == {os.path.dirname(working.transcript)}
    finally:
        watch.stop()
        reap(sleeper, *procs)


def test_a_resumed_session_is_not_ended_and_its_new_process_is_trusted(git_repo, isolated_home, tmp_path):
    first = spawn_claude(tmp_path)
    try:
        s = Session(git_repo, isolated_home, first.pid)
        s.prompt()
        s.end()
        reap(first)
        now = time.time()
        o = by_name(Scanner().scan(now))[s.name]
        assert o.ended_at is not None and classify(o, now, 600, 30) == DONE
        time.sleep(0.05)
        second = spawn_claude(tmp_path)                 # claude --resume <id>: a new process, same record
        s.env = hook_env(s.repo, second.pid)
        s.hook("SessionStart", source="resume")
        s.prompt()
        assert s.record()["state"] == session.ACTIVE     # SessionStart(resume) brings the record back
        assert "ended" not in s.record()
        o = by_name(Scanner().scan(time.time()))[s.name]
        assert o.ended_at is None and o.alive and o.mid_turn
        assert o.pid == second.pid and o.registered_at >= psutil.Process(second.pid).create_time()
        assert classify(o, time.time(), 600, 30) == ACTIVE
        reap(second)
    finally:
        reap(first)


def test_unreadable_sessions_are_skipped_and_reported_once(git_repo, isolated_home, tmp_path):
    from cc_continuity import log, paths

    claude = spawn_claude(tmp_path)
    try:
        good = Session(git_repo, isolated_home, claude.pid)
        bad = Session(git_repo, isolated_home, claude.pid)
        with open(session.state_path(bad.sdir), "w") as f:
            f.write("{not json")
        scanner = Scanner()
        for _ in range(3):
            names = [o.name for o in scanner.scan()]
            assert names == [good.name]
        with open(os.path.join(paths.logs_dir(), "watchdog.log")) as f:
            assert f.read().count("skipping unreadable session") == 1
        assert log  # the module that wrote it
    finally:
        reap(claude)


def test_sigterm_to_a_stand_in_is_observed(git_repo, isolated_home, tmp_path):
    claude = spawn_claude(tmp_path)
    try:
        s = Session(git_repo, isolated_home, claude.pid)
        s.prompt()
        scanner = Scanner()
        assert by_name(scanner.scan())[s.name].alive
        os.kill(claude.pid, signal.SIGTERM)
        claude.wait(timeout=5)
        o = by_name(scanner.scan())[s.name]
        assert o.alive is False and classify(o, time.time(), 600, 30) == DEAD
    finally:
        reap(claude)
