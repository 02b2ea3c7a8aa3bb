"""The turn's end and its crossing, when the transcript lags (Claude Code 2.1.328 timing).

Seen on the real binary: the model's final text reply took the context from 20 % to
63 %, the Stop hook ran before that row was on disk, read 20 % and let the turn end;
the session then sat idle past *rotate*.  And PreToolUse of the first tool of the
crossing response ran before that response's row, so one tool of the burst ran.
These tests write the rows *after* the hook has started, as Claude Code does, and
run the hooks exactly as installed.
"""

import os
import json
import threading
import time

import pytest

from cc_continuity import ledger, session
from cc_continuity.project import Project
from helpers.transcripts import Transcript, claude_transcript_path, hook_env, hook_payload, run_hook, start_hook

# claude-sonnet-4-5: a 200k window; 20 % / 63 % / 76 %.
LOW, ROTATE, HARD = 40_000, 126_000, 152_000
FINAL = "All done with the final answer."


class Session:
    def __init__(self, project, home):
        self.project, self.home = str(project), str(home)
        self.env = hook_env(self.project, 4242)
        self.sid = "5e55e55e-0000-4000-8000-000000000001"
        self.path = claude_transcript_path(self.home, self.project, self.sid)
        self.t = Transcript(session_id=self.sid, cwd=self.project)
        self.t.user("please do the work")
        self.t.assistant(LOW, content=[{"type": "text", "text": "Running."},
                                       {"type": "tool_use", "id": "toolu_first", "name": "Bash", "input": {}}])
        self.t.tool_result("ok", tool_use_id="toolu_first")
        self.t.noise(kb=20)
        self.t.write(self.path)
        self.written = len(self.t.rows)

    def hook(self, event, **fields):
        res = run_hook(event, hook_payload(event, self.sid, self.path, self.project, **fields), self.env)
        assert b"Traceback" not in res.stderr
        return res

    def start(self, event, **fields):
        return start_hook(event, hook_payload(event, self.sid, self.path, self.project, **fields), self.env)

    def watch_reads(self):
        """A function that returns once a hook has read the transcript after this call (its access time
        moves: a read updates it when it is older than the file's last change)."""
        os.utime(self.path, (0, os.stat(self.path).st_mtime))

        def read():
            deadline = time.monotonic() + 30
            while os.stat(self.path).st_atime == 0 and time.monotonic() < deadline:
                time.sleep(0.005)
        return read

    def append_later(self, delay, after_read=False):
        """Write the rows added since the last write after ``delay`` seconds (the transcript lagging).

        ``after_read``: the delay counts from the first time a hook reads the transcript from now on
        (seen by its access time, which a read updates once it is older than the file's change), not
        from now: however long the hook's interpreter takes to start, the rows come while it waits.
        """
        lines, self.written = self.t.lines()[self.written:], len(self.t.rows)
        read = self.watch_reads() if after_read else lambda: None

        def run():
            read()
            time.sleep(delay)
            with open(self.path, "ab") as f:
                for line in lines:
                    f.write(line + b"\n")
        th = threading.Thread(target=run)
        th.start()
        return th

    @property
    def sdir(self):
        proj = Project.discover(self.project)
        return proj.session_dir(proj.lookup(self.sid))

    def state(self):
        return session.load(self.sdir)

    def ledger(self, ev=None):
        return [r for r in ledger.read(session.ledger_path(self.sdir)) if ev is None or r.get("ev") == ev]


@pytest.fixture
def s(git_repo, isolated_home):
    sess = Session(git_repo, isolated_home)
    assert sess.hook("SessionStart").returncode == 0
    sess.hook("PostToolUse", tool_use_id="toolu_first")
    assert sess.state()["state"] == session.ACTIVE
    return sess


def test_stop_waits_for_the_final_reply_and_requests_the_handoff(s):
    s.t.assistant(ROTATE, content=[{"type": "text", "text": FINAL}])
    writer = s.append_later(0.3, after_read=True)  # the reply is written while Stop waits for it
    t0 = time.monotonic()
    res = s.hook("Stop", last_assistant_message=FINAL)
    writer.join()
    assert res.returncode == 0
    out = json.loads(res.stdout)
    # The transcript says 2.1.328: the request goes as additionalContext (hooks.stop_wire), no "problem" footer.
    assert list(out) == ["hookSpecificOutput"] and out["hookSpecificOutput"]["hookEventName"] == "Stop"
    reason = out["hookSpecificOutput"]["additionalContext"]
    assert "Handoff file (absolute path)" in reason
    assert "63.0%" in reason
    assert s.state()["state"] == session.HANDOFF_REQUESTED
    stop = s.ledger("stop")[-1]
    assert stop["caught_up"] is True and stop["tokens"] == ROTATE and stop["waited_ms"] >= 100  # it waited
    assert time.monotonic() - t0 < 3.0


def test_stop_does_not_act_on_a_stale_transcript_and_the_late_stop_does(s):
    """The reply is not written within the Stop hook's wait: it must not step back or forward on
    the stale 20 %; the late Stop (async, asyncRewake) waits longer and wakes the model."""
    s.t.assistant(ROTATE, content=[{"type": "text", "text": FINAL}])
    late = s.start("StopLate", last_assistant_message=FINAL)
    res = s.hook("Stop", last_assistant_message=FINAL)
    assert res.returncode == 0 and res.stdout == b""  # nothing decided on a reading that is behind
    stop = s.ledger("stop")[-1]
    assert stop["caught_up"] is False and stop["tokens"] == LOW and stop["waited_ms"] >= 2900
    assert s.state()["state"] == session.ACTIVE
    s.append_later(0.0).join()  # the transcript catches up, after the Stop hook gave up
    out, err = late.communicate(timeout=60)
    assert late.returncode == 2, (out, err)  # exit 2 of an asyncRewake hook wakes the model ...
    assert out == b""
    assert b"Handoff file (absolute path)" in err  # ... with this text
    assert s.state()["state"] == session.HANDOFF_REQUESTED
    assert [r["caught_up"] for r in s.ledger("late_stop")] == [True]


def test_the_late_stop_stays_quiet_when_the_stop_hook_saw_the_end(s):
    s.t.assistant(ROTATE, content=[{"type": "text", "text": FINAL}])
    s.append_later(0.0).join()
    late = s.start("StopLate", last_assistant_message=FINAL)
    res = s.hook("Stop", last_assistant_message=FINAL)
    assert "Handoff file" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    out, err = late.communicate(timeout=60)
    assert late.returncode == 0 and out == b"" and err == b""
    assert s.ledger("late_stop") == []


def test_the_late_stop_stays_quiet_below_rotate_and_when_the_session_moved_on(s):
    s.t.assistant(LOW + 2000, content=[{"type": "text", "text": FINAL}])
    late = s.start("StopLate", last_assistant_message=FINAL)
    s.hook("Stop", last_assistant_message=FINAL)  # behind: nothing decided
    s.append_later(0.0).join()
    out, err = late.communicate(timeout=60)
    assert late.returncode == 0 and err == b""  # caught up, but below rotate
    assert s.state()["state"] == session.ACTIVE
    # Past rotate, but the user already typed the next prompt: its own Stop will decide.
    s.t.user("next thing")
    s.t.assistant(ROTATE, content=[{"type": "text", "text": "Second."}])
    late = s.start("StopLate", last_assistant_message="Second.")
    s.hook("Stop", last_assistant_message="Second.")
    s.hook("UserPromptSubmit", prompt="and another")
    s.append_later(0.0).join()
    out, err = late.communicate(timeout=60)
    assert late.returncode == 0 and err == b""
    assert s.state()["state"] == session.ACTIVE


def test_the_status_lines_reading_counts_when_the_transcript_is_behind(s):
    """The status line carries Claude Code's own context numbers: a Stop that cannot see the reply
    in the transcript uses the reading the status line left after the hook started."""
    import subprocess
    import sys

    from helpers.transcripts import STATUSMAIN as statusmain
    payload = {"session_id": s.sid, "transcript_path": s.path, "cwd": s.project,
               "workspace": {"project_dir": s.project}, "model": {"id": "claude-sonnet-4-5"}, "version": "2.1.332",
               "context_window": {"context_window_size": 200_000, "total_input_tokens": ROTATE,
                                  "current_usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                                                    "cache_read_input_tokens": ROTATE - 10},
                                  "used_percentage": 63}}

    read = s.watch_reads()

    def status_line_later():
        read()  # the Stop hook is looking for the reply (however long its interpreter took to start) ...
        time.sleep(0.3)  # ... and Claude Code runs the status line ~0.3 s after the reply
        subprocess.run([sys.executable, "-S", statusmain], input=json.dumps(payload).encode(), env=s.env,
                       capture_output=True, timeout=30)
    th = threading.Thread(target=status_line_later)
    th.start()
    res = s.hook("Stop", last_assistant_message=FINAL)  # the reply never reaches the transcript
    th.join()
    assert "Handoff file" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    stop = s.ledger("stop")[-1]
    assert stop["caught_up"] is True and stop["source"] == "statusline" and stop["tokens"] == ROTATE


@pytest.mark.parametrize("delay", [0.0, 0.08, 0.3])
def test_every_tool_of_the_crossing_response_is_denied(s, delay):
    burst = [{"type": "tool_use", "id": "toolu_b%d" % i, "name": "Bash", "input": {"command": "touch b%d" % i}}
             for i in (1, 2, 3)]
    s.t.assistant(HARD, content=burst)
    writer = s.append_later(delay)  # the response's rows land after the first PreToolUse started
    outs = []
    for i in (1, 2, 3):
        res = s.hook("PreToolUse", tool_use_id="toolu_b%d" % i, tool_input={"command": "touch b%d" % i})
        outs.append(json.loads(res.stdout)["hookSpecificOutput"] if res.stdout else None)
    writer.join()
    assert [o and o["permissionDecision"] for o in outs] == ["deny", "deny", "deny"], outs
    assert "past the hard ceiling" in outs[0]["permissionDecisionReason"]
    assert [e["level"] for e in s.ledger("level")] == ["hard"]


def test_pre_tool_use_waits_only_while_the_transcript_grows(s):
    """A row that never comes (a transcript not being written) costs at most the quiet period."""
    t0 = time.monotonic()
    res = s.hook("PreToolUse", tool_use_id="toolu_never")
    assert res.returncode == 0 and res.stdout == b""
    assert time.monotonic() - t0 < 1.5


def test_a_stale_card_does_not_open_the_gate(s):
    """The status line's first render notes the window and so invalidates the card SessionStart
    built; the first tool of a crossing response must still be denied (seen on the real binary)."""
    from cc_continuity import card

    with open(s.sdir + "/statusline.json", "w") as f:
        f.write('{"window": 200000}')
    assert card.load(s.sid) is None  # stale now
    s.t.assistant(HARD, content=[{"type": "tool_use", "id": "toolu_c1", "name": "Bash", "input": {}}])
    s.append_later(0.0).join()
    res = s.hook("PreToolUse", tool_use_id="toolu_c1")
    assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert card.load(s.sid) is not None  # and the card was rebuilt on the way
