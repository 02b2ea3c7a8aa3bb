"""meter: readings that wait for the transcript to hold the row they are about.

Claude Code appends transcript rows asynchronously; PreToolUse may run before
the row of its own tool call is written, and Stop before the turn's last reply
is.  These readings must wait for that row (bounded) and never return an older
row as if it were the one asked for.
"""

import os
import threading
import time

from cc_continuity import meter, session
from helpers.transcripts import Transcript


def write_later(path, rows, delay, after_read=False):
    """Append ``rows`` (already serialised lines) to ``path`` after ``delay`` seconds, like Claude Code.

    ``after_read``: the delay counts from the first read of ``path`` from now on (its access time moves:
    a read updates it when it is older than the file's last change), not from now, so the rows come
    while the reader waits however late the machine lets it start.
    """
    if after_read:
        os.utime(path, (0, os.stat(path).st_mtime))

    def run():
        deadline = time.monotonic() + 30
        while after_read and os.stat(path).st_atime == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay)
        with open(path, "ab") as f:
            for line in rows:
                f.write(line + b"\n")
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def turn_until_tool(tokens_before):
    t = Transcript()
    t.user("please run the tools")
    t.assistant(tokens_before, content=[{"type": "text", "text": "Looking."},
                                        {"type": "tool_use", "id": "toolu_old", "name": "Bash", "input": {}}])
    t.tool_result("ok", tool_use_id="toolu_old")
    t.noise(kb=20)
    return t


def test_tool_reading_is_the_row_holding_that_tool_use_id(tmp_path):
    t = turn_until_tool(40_000)
    t.assistant(150_000, content=[{"type": "tool_use", "id": "toolu_b1", "name": "Bash", "input": {}},
                                  {"type": "tool_use", "id": "toolu_b2", "name": "Write", "input": {}}])
    t.noise(kb=30)
    path = t.write(str(tmp_path / "t.jsonl"))
    assert meter.tool_reading(path, "toolu_b1")["tokens"] == 150_000
    assert meter.tool_reading(path, "toolu_b2")["tokens"] == 150_000
    assert meter.tool_reading(path, "toolu_old")["tokens"] == 40_000
    assert meter.tool_reading(path, "toolu_missing") is None


def test_a_tool_result_row_naming_the_id_is_not_the_row(tmp_path):
    t = turn_until_tool(40_000)  # toolu_old appears in a tool_result row too; only the assistant row counts
    t.rows = [r for r in t.rows if not (isinstance(r, dict) and r.get("type") == "assistant")]
    path = t.write(str(tmp_path / "t.jsonl"))
    assert meter.tool_reading(path, "toolu_old") is None


def test_sidechain_rows_do_not_count(tmp_path):
    t = turn_until_tool(40_000)
    t.assistant(190_000, sidechain=True, content=[{"type": "tool_use", "id": "toolu_sub", "name": "Bash",
                                                   "input": {}}])
    path = t.write(str(tmp_path / "t.jsonl"))
    assert meter.tool_reading(path, "toolu_sub") is None


def test_await_tool_reading_waits_for_the_row_written_late(tmp_path):
    t = turn_until_tool(40_000)
    path = t.write(str(tmp_path / "t.jsonl"))
    n = len(t.rows)
    t.assistant(150_000, content=[{"type": "tool_use", "id": "toolu_new", "name": "Bash", "input": {}}])
    writer = write_later(path, t.lines()[n:], delay=0.15, after_read=True)
    t0 = time.monotonic()
    got, waited = meter.await_tool_reading(path, "toolu_new", bound_s=2.0)
    writer.join()
    assert got["tokens"] == 150_000  # not the 40 000 of the row before it
    assert 100 <= waited <= 1500 and time.monotonic() - t0 < 2.0


def test_await_tool_reading_is_bounded(tmp_path):
    path = turn_until_tool(40_000).write(str(tmp_path / "t.jsonl"))
    t0 = time.monotonic()
    got, waited = meter.await_tool_reading(path, "toolu_never", bound_s=2.0, quiet_s=0.3)
    assert got is None
    assert 0.25 <= time.monotonic() - t0 < 0.8  # gave up once the file stopped growing
    # A transcript that keeps growing is waited on up to the bound, not longer.
    stop = threading.Event()

    def grow():
        while not stop.is_set():
            with open(path, "ab") as f:
                f.write(b'{"type":"attachment"}\n')
            time.sleep(0.05)
    threading.Thread(target=grow, daemon=True).start()
    t0 = time.monotonic()
    got, _ = meter.await_tool_reading(path, "toolu_never", bound_s=1.0, quiet_s=0.3)
    stop.set()
    assert got is None and 0.95 <= time.monotonic() - t0 < 1.5


def final_turn(tokens_tool, tokens_final, text="All done with the final answer."):
    t = turn_until_tool(tokens_tool)
    t.assistant(tokens_final, content=[{"type": "text", "text": text}])
    t.system("turn_duration", durationMs=1200)
    return t


def test_reply_reading_is_caught_up_when_the_final_reply_is_there(tmp_path):
    path = final_turn(40_000, 126_000).write(str(tmp_path / "t.jsonl"))
    ok, got = meter.reply_reading(path, "All done with the final answer.")
    assert ok and got["tokens"] == 126_000


def test_reply_reading_is_behind_while_a_tool_result_is_the_newest_row(tmp_path):
    path = turn_until_tool(40_000).write(str(tmp_path / "t.jsonl"))
    ok, got = meter.reply_reading(path, "All done with the final answer.")
    assert not ok and got["tokens"] == 40_000  # the stale reading, flagged as such


def test_reply_reading_is_behind_while_the_newest_assistant_row_calls_a_tool(tmp_path):
    t = Transcript()
    t.user("go")
    t.assistant(40_000, content=[{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}])
    ok, _ = meter.reply_reading(t.write(str(tmp_path / "t.jsonl")), "Done.")
    assert not ok


def test_the_same_words_in_the_previous_turn_are_not_this_turns_reply(tmp_path):
    t = final_turn(20_000, 30_000, text="Done.")
    t.user("and now the big one")  # this turn's prompt; its reply is not written yet
    ok, got = meter.reply_reading(t.write(str(tmp_path / "t.jsonl")), "Done.")
    assert not ok and got["tokens"] == 30_000


def test_reply_reading_matches_a_reply_split_over_text_rows(tmp_path):
    t = turn_until_tool(40_000)
    t.assistant(130_000, content=[{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}])
    path = t.write(str(tmp_path / "t.jsonl"))
    assert meter.reply_reading(path, "First part.\n\nSecond part.")[0]
    assert meter.reply_reading(path, "Second part.")[0]
    t.rows = t.rows[:-1]  # only the first block written so far
    assert not meter.reply_reading(t.write(str(tmp_path / "t2.jsonl")), "First part.\n\nSecond part.")[0]


def test_status_reading_is_kept_per_session_and_written_only_on_change(tmp_path):
    sdir = str(tmp_path)
    assert meter.load_status_reading(sdir) is None
    assert meter.save_status_reading(sdir, "sid-1", 126_000, 200_000, now=100.0) is True
    assert meter.save_status_reading(sdir, "sid-1", 126_000, 200_000, now=101.0) is False
    got = meter.load_status_reading(sdir)
    assert got == {"session_id": "sid-1", "tokens": 126_000, "window": 200_000, "at": 100.0}
    assert meter.save_status_reading(sdir, "sid-2", 126_000, 200_000, now=102.0) is True
    assert oct((tmp_path / session.STATUS_READING).stat().st_mode & 0o777) == "0o600"


def test_a_row_there_at_the_first_read_is_no_wait_however_slow_the_read(tmp_path, monkeypatch):
    """On a loaded machine the first read alone can take 10 ms: that is not waiting for the transcript
    (PreToolUse's outcome said "waited 11 ms for the transcript" for a row written before it ran)."""
    t = turn_until_tool(40_000)
    path = t.write(str(tmp_path / "t.jsonl"))
    real = meter.tool_reading

    def slow(*a):
        time.sleep(0.03)
        return real(*a)
    monkeypatch.setattr(meter, "tool_reading", slow)
    got, waited = meter.await_tool_reading(path, "toolu_old", bound_s=2.0)
    assert got["tokens"] == 40_000 and waited == 0
