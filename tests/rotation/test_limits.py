"""rotation/limits.py and the run loop's end on one: each host's reading of what its model server said (the
records the real binaries wrote in issue 40's lab, trimmed: tests/data/limits/), the words, the exit status."""

import os
import subprocess
import sys

import pytest

from cc_continuity.hosts.claude.host import api_stop as claude_stop
from cc_continuity.hosts.codex.rollout import api_stop as codex_stop
from cc_continuity.hosts.gemini.headless import BACKEND as GEMINI
from cc_continuity.rotation import limits, run
from helpers import TESTS

DATA = os.path.join(TESTS, "data", "limits")


def data(name):
    return os.path.join(DATA, name)


@pytest.mark.parametrize("case,kind,status,reset", [
    ("c1", limits.LIMIT, 429, None),              # a bare 429, after Claude Code's retries
    ("c3b", limits.LIMIT, 429, 1796684545.0),     # a subscription's 5-hour limit: its reset in the transcript
    ("c6", limits.SERVER, None, None),            # the server refused the connection
])
def test_claude_codes_transcript_says_what_stopped_it(case, kind, status, reset):
    got = claude_stop(data("claude-%s.jsonl" % case))
    assert (got["kind"], got["status"], got["resets_at"]) == (kind, status, reset), got
    assert got["message"].startswith("API Error:")


def test_a_turn_that_got_its_answer_after_a_retry_is_no_stop():
    assert claude_stop(data("claude-c4.jsonl")) is None  # a transient 429: Claude Code's own retry cleared it
    assert claude_stop(data("missing.jsonl")) is None


@pytest.mark.parametrize("case,kind,status,reset", [
    ("c1", limits.LIMIT, 429, None),
    ("c3b", limits.LIMIT, None, 1796685384.0),    # usage_limit_exceeded: the window at 100 % gives the reset
    ("c5a", limits.SERVER, None, None),
])
def test_codexs_rollout_says_what_stopped_it(case, kind, status, reset):
    got = codex_stop(data("codex-%s.jsonl" % case))
    assert (got["kind"], got["status"], got["resets_at"]) == (kind, status, reset), got


def test_a_codex_turn_that_completed_is_no_stop():
    assert codex_stop(data("codex-ok.jsonl")) is None


@pytest.mark.parametrize("case,kind,status,reset_in", [
    ("c1", limits.LIMIT, 429, None),
    ("c3b", limits.LIMIT, 429, 36000),            # "Please retry in 36000s": from when it was read
    ("c5a", limits.SERVER, 500, None),
    ("c6", limits.SERVER, None, None),
])
def test_gemini_clis_stderr_says_what_stopped_it(case, kind, status, reset_in):
    with open(data("gemini-%s.txt" % case)) as f:
        got = GEMINI.api_stop([], f.read())
    assert (got["kind"], got["status"]) == (kind, status), got
    if reset_in is None:
        assert got["resets_at"] is None
    else:
        assert abs(got["resets_at"] - (__import__("time").time() + reset_in)) < 60
    assert GEMINI.api_stop([], "some other failure\n") is None


def test_the_words_say_the_kind_the_message_and_the_reset():
    got = limits.stop(limits.LIMIT, "Usage  limit\nreached", 429, 1000.0 + 2 * 3600 + 5 * 60)
    assert limits.said(got, now=1000.0).startswith("a rate or usage limit (HTTP 429): Usage limit reached; it "
                                                   "resets at ") and limits.said(got, now=1000.0).endswith("(in 2h05m)")
    assert limits.said(limits.stop("bogus", None)).endswith("no message; no reset time recorded")
    assert limits.stop(limits.LIMIT, "x" * 999)["message"] == "x" * limits.MESSAGE_KEEP
    assert limits.stop(limits.LIMIT, "x", resets_at=True)["resets_at"] is None


class _Backend(run.Backend):
    name = "fake"

    def __init__(self, got):
        self.got = got

    def api_stop(self, chain, stderr):
        return self.got


@pytest.mark.parametrize("got,why", [
    (limits.stop(limits.LIMIT, "Too Many Requests", 429), "limit"),
    (limits.stop(limits.SERVER, "ECONNREFUSED"), "model server"),
    (None, None),
])
def test_a_process_that_failed_on_its_server_ends_the_run_with_its_own_status(got, why):
    facts, said = {"agent_exit": 1, "stopped": None}, []
    chain = [(1, {"name": "proj-001", "state": "ENDED"})]
    assert run._stopped(_Backend(got), chain, facts, said.append, "") == why
    if why:
        assert run.EXIT[why] not in (0, 2, 3, 4, 5) and facts["stopped"]["kind"] == got["kind"]
        assert said[0].startswith("cc-continuity: proj-001 stopped on ")
    assert run._stopped(_Backend(got), chain, {"agent_exit": 0}, said.append, "") is None  # it exited 0: no stop
    assert len(set(run.EXIT.values())) == len(run.EXIT)


def test_the_agents_stderr_is_passed_on_and_its_tail_kept():
    code = "import sys; sys.stderr.write('x' * 200000 + '\\nthe last line\\n')"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    tail = run._Tail(proc.stderr)
    proc.wait(30)
    text = tail.text()
    assert text.endswith("the last line\n") and len(text.encode()) == run.STDERR_KEEP
