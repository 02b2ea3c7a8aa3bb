"""Gemini CLI's session file as the meter reads it (hosts/gemini/chats.py, host.py): the shapes written here are
0.61's (../shared/reference/gemini-cli-0.61.md §3): a header, ``$set`` updates, one record a message, and a
second header in the same file after a hook's clear."""

import json
import os

import pytest

from cc_continuity import safefile
from cc_continuity.hosts.gemini import chats, host

SID = "7d1c5e2a-0000-4000-8000-0000000000aa"


class Session:
    """A session file as Gemini CLI 0.61 appends it (compact JSON, one object a line)."""

    def __init__(self, path):
        self.path = str(path)
        self.n = 0

    def _put(self, obj):
        with open(self.path, "a") as f:
            f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        return self

    def header(self, start="2026-12-07T12:00:00.000Z"):
        self._put({"sessionId": SID, "projectHash": "ab" * 32, "startTime": start, "lastUpdated": start,
                   "kind": "main"})
        return self._put({"$set": {"messages": [{"type": "user", "content": "<session_context>…"}]}})

    def user(self, text):
        self.n += 1
        return self._put({"id": "m%d" % self.n, "timestamp": "t", "type": "user", "content": text})

    def gemini(self, tokens, text="Working on it.", model="gemini-2.5-flash", tool_calls=None):
        self.n += 1
        row = {"id": "m%d" % self.n, "timestamp": "t", "type": "gemini", "content": text, "thoughts": [],
               "tokens": {"input": tokens, "output": 40, "cached": 0, "thoughts": 0, "tool": 0,
                          "total": tokens + 40},
               "model": model}
        if tool_calls:
            row["toolCalls"] = tool_calls
        self._put(row)
        return self._put({"$set": {"lastUpdated": "2026-12-07T12:00:05.000Z"}})


@pytest.fixture
def sess(tmp_path):
    return Session(tmp_path / "session-2026-12-07T12-00-7d1c5e2a.jsonl")


def test_the_reading_is_the_newest_model_record_of_the_newest_generation(sess):
    sess.header().user("build the parser").gemini(13_349).user("go on").gemini(21_000, model="gemini-2.5-pro")
    got = chats.read_session(sess.path)
    assert (got["tokens"], got["model"], got["source"]) == (21_000, "gemini-2.5-pro", "session")
    assert (got["generation"], got["session_id"]) == ("2026-12-07T12:00:00.000Z", SID)
    assert host.GEMINI.reply_reading(sess.path, None) == (True, {
        "tokens": 21_000, "model": "gemini-2.5-pro", "source": "session", "generation": "2026-12-07T12:00:00.000Z"})


def test_a_hooks_clear_starts_a_generation_whose_reading_is_its_own(sess):
    sess.header().user("build the parser").gemini(130_000, "Handoff written.")
    sess.header(start="2026-12-07T12:00:41.500Z")  # clearContext: the same id, the same file, a new header
    got = chats.read_session(sess.path)
    assert got["tokens"] is None and got["source"] == "none"  # the old generation's 130k is not this one's
    assert got["generation"] == "2026-12-07T12:00:41.500Z"
    assert host.GEMINI.reply_reading(sess.path, None)[0] is False
    assert host.GEMINI.last_reply(sess.path) is None and host.GEMINI.first_request_tokens(sess.path) is None
    sess.user("CONTINUITY: carry on from cp-001").gemini(9_800, "Picked up the handoff.").gemini(12_000, "More.")
    assert chats.read_session(sess.path)["tokens"] == 12_000
    assert host.GEMINI.first_request_tokens(sess.path) == 9_800  # the successor's fresh size (the loop guard)
    assert host.GEMINI.last_reply(sess.path) == "More."


def test_before_the_first_reply_nothing_is_known_and_a_torn_last_line_is_not_read(sess):
    sess.header().user("hello")
    assert chats.read_session(sess.path)["tokens"] is None
    sess.gemini(5_000)
    with open(sess.path, "a") as f:
        f.write('{"id":"m9","type":"gemini","tokens":{"input":99')  # being written: not a line yet
    assert chats.read_session(sess.path)["tokens"] == 5_000


def test_text_in_a_message_that_looks_like_a_header_is_not_one(sess):
    sess.header().user('{"sessionId":"x","startTime":"y"} pasted by the user').gemini(7_000)
    sess.user('"sessionId" "startTime"')
    got = chats.read_session(sess.path)
    assert got["tokens"] == 7_000 and got["generation"] == "2026-12-07T12:00:00.000Z"


def test_a_file_of_no_header_still_reads_and_a_huge_reply_is_stepped_over(sess):
    sess.gemini(3_000)
    sess.gemini(4_000, text="x" * (3 << 20))  # a 3 MB reply, read across chunks
    got = chats.read_session(sess.path, chunk=64 * 1024)
    assert (got["tokens"], got["generation"]) == (4_000, None)
    assert host.GEMINI.last_reply(sess.path).endswith("…") and len(host.GEMINI.last_reply(sess.path)) == 1501


def test_what_is_not_a_session_file(tmp_path):
    with pytest.raises(OSError):
        chats.read_session(str(tmp_path / "missing.jsonl"))
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(safefile.NotRegular):
        chats.read_session(fifo)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff not json\n[1,2]\n\"gemini\"\n")
    assert chats.read_session(str(garbage))["tokens"] is None
    assert host.GEMINI.first_request_tokens(str(tmp_path / "missing.jsonl")) is None


def test_the_tools_a_snapshot_lets_through_and_the_handoffs_own_write():
    g = host.GEMINI
    assert g.read_only("read_file") and g.read_only("grep_search") and not g.read_only("run_shell_command")
    assert not g.read_only("write_file") and not g.read_only("replace")
    path = "/p/.gemini-tmp/handoff.md"
    assert g.writes("write_file", {"file_path": path, "content": "# Handoff"}, "", path)
    assert g.writes("replace", {"file_path": path, "old_string": "a", "new_string": "b"}, "", path)
    assert not g.writes("write_file", {"file_path": path + ".bak"}, "", path)
    assert not g.writes("run_shell_command", {"command": "cat > %s" % path}, "cat > %s" % path, path)
    assert g.can_ask is False and g.name == "gemini"


def test_the_agent_process_is_the_node_that_runs_gemini(tmp_path):
    import subprocess
    import sys
    import time

    # A stand-in for the CLI's relaunched node (``node --max-old-space-size=N …/bundle/gemini.js``): a process
    # whose argv[0] is "node" and whose script is a gemini.js (here a Python one that sleeps).
    script = tmp_path / "bundle" / "gemini.js"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(30)\n")
    child = subprocess.Popen(["bash", "-c", 'exec -a node "$0" "$1"', sys.executable, str(script)])
    try:
        deadline = time.monotonic() + 10
        while host.agent_process(child.pid) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert host.agent_process(child.pid) == child.pid
        assert host.agent_process(os.getpid()) is None  # pytest and its parents run no gemini
    finally:
        child.kill()
        child.wait()


def test_a_session_files_tokens_are_every_replys_total_across_its_generations(sess):
    sess.header().user("task").gemini(21_000).gemini(30_000)
    sess.header("2026-12-07T13:00:00.000Z").user("continue").gemini(12_000)  # in-process rotation: same file
    with open(sess.path, "a") as f:  # a reply recorded again (its id): counted once, as last written
        f.write(json.dumps({"id": "m5", "type": "gemini", "tokens": {"input": 12_000, "output": 60, "total": 12_100}})
                + "\n")
    assert chats.tokens_spent(sess.path) == 21_040 + 30_040 + 12_100
    assert host.GEMINI.tokens_spent(sess.path) == 21_040 + 30_040 + 12_100
    assert host.GEMINI.tokens_spent(sess.path + ".missing") is None
