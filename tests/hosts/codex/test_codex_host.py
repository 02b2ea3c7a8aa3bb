"""The Codex CLI readers (cc_continuity/hosts/codex/) against what the real 0.171.0 binary wrote.

The fixtures in tests/data/codex/ were recorded from the binary (tests/data/codex/record.py);
tests/e2e/test_codex_e2e.py checks the same readers against live runs.
"""

import json
import os

import pytest

from cc_continuity.hosts.codex import rollout, wire
from helpers import TESTS

DATA = os.path.join(TESTS, "data", "codex")
TOOL_TURN = os.path.join(DATA, "rollout-tool-turn.jsonl")
COMPACTED = os.path.join(DATA, "rollout-compacted.jsonl")


def rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def naive_tokens(path):
    """The oracle: parse every line forwards; the last token_count's total, None after a compaction."""
    tokens = None
    for r in rows(path):
        if r["type"] == "compacted":
            tokens = None
        elif r["type"] == "event_msg" and r["payload"].get("type") == "token_count" and r["payload"].get("info"):
            tokens = r["payload"]["info"]["last_token_usage"]["total_tokens"]
        elif r["type"] == "token_usage_record":
            tokens = r["payload"]["usage"]["total_tokens"]
    return tokens


def cut(src, dst, keep):
    """The first ``keep`` lines of ``src`` (a rollout as it was while being written)."""
    with open(src, encoding="utf-8") as f:
        lines = f.readlines()[:keep]
    dst.write_text("".join(lines))
    return str(dst)


def index_of(path, pred):
    return next(i for i, r in enumerate(rows(path)) if pred(r))


# -- the rollout reader ---------------------------------------------------------


def test_a_tool_turn_reads_as_its_last_request():
    got = rollout.read_rollout(TOOL_TURN)
    counts = [r for r in rows(TOOL_TURN) if r["payload"].get("type") == "token_count"]
    assert len(counts) == 2, "one per model request: the tool call and its follow-up"
    assert got["tokens"] == naive_tokens(TOOL_TURN) == counts[-1]["payload"]["info"]["last_token_usage"]["total_tokens"]
    assert got["tokens"] != counts[0]["payload"]["info"]["last_token_usage"]["total_tokens"]
    assert got["window"] == 19000 == rollout.effective_window(20000), "configured 20000, reported 95 %"
    assert got["source"] == "rollout"
    small = rollout.read_rollout(TOOL_TURN, chunk=4096)
    assert small["tokens"] == got["tokens"] and small["scanned"] <= 3 * 4096, "the tail, not the 22 KB meta line"


def test_while_its_tool_runs_a_request_reads_as_itself_not_as_the_one_before(tmp_path):
    """A PreToolUse sees the request's token_usage_record; its token_count comes after the tool ran."""
    at = index_of(TOOL_TURN, lambda r: r["type"] == "token_usage_record")
    lines = rows(TOOL_TURN)
    assert not any(r["payload"].get("type") == "token_count" for r in lines[:at + 1])
    assert lines[at + 1:][0]["payload"].get("type") != "token_count", "the tool ran in between"
    got = rollout.read_rollout(cut(TOOL_TURN, tmp_path / "pre-tool.jsonl", at + 1))
    assert got["tokens"] == lines[at]["payload"]["usage"]["total_tokens"] and got["window"] == 19000
    second = index_of(TOOL_TURN, lambda r: r["type"] == "token_usage_record" and r["ordinal"] > lines[at]["ordinal"])
    got = rollout.read_rollout(cut(TOOL_TURN, tmp_path / "second.jsonl", second + 1))
    assert got["tokens"] == lines[second]["payload"]["usage"]["total_tokens"] != lines[at]["payload"]["usage"]["total_tokens"]


def test_after_an_automatic_compaction_it_is_the_estimate_codex_wrote(tmp_path):
    got = rollout.read_rollout(COMPACTED)
    assert got["tokens"] == naive_tokens(COMPACTED) and got["window"] == 19000
    # Between the compacted line and the next count, the context size is unknown (not the old one,
    # not the compaction request's).
    at = index_of(COMPACTED, lambda r: r["type"] == "compacted")
    mid = rollout.read_rollout(cut(COMPACTED, tmp_path / "mid.jsonl", at + 1))
    assert mid == {"tokens": None, "window": 19000, "source": "compacted", "scanned": mid["scanned"]}
    after = index_of(COMPACTED, lambda r: r["type"] == "event_msg" and r["ordinal"] > rows(COMPACTED)[at]["ordinal"]
                     and r["payload"].get("type") == "token_count")
    estimate = rows(COMPACTED)[after]["payload"]["info"]["last_token_usage"]
    assert estimate["input_tokens"] == 0 and estimate["total_tokens"] > 0, "what this version writes after compacting"
    got = rollout.read_rollout(cut(COMPACTED, tmp_path / "after.jsonl", after + 1))
    assert got["tokens"] == estimate["total_tokens"] and got["source"] == "rollout"
    before = rollout.read_rollout(cut(COMPACTED, tmp_path / "before.jsonl", at))
    assert before["tokens"] is not None and before["tokens"] != got["tokens"]


def test_before_the_first_request_the_window_is_known_and_the_tokens_are_not(tmp_path):
    started = index_of(TOOL_TURN, lambda r: r["payload"].get("type") == "task_started")
    got = rollout.read_rollout(cut(TOOL_TURN, tmp_path / "r.jsonl", started + 1))
    assert (got["tokens"], got["window"], got["source"]) == (None, 19000, "rollout")
    assert rollout.read_rollout(cut(TOOL_TURN, tmp_path / "meta.jsonl", 1))["window"] is None


def test_a_line_being_written_and_mentions_in_text_do_not_count(tmp_path):
    data = open(TOOL_TURN, encoding="utf-8").read()
    last = naive_tokens(TOOL_TURN)
    talk = {"timestamp": "t", "ordinal": 99, "type": "response_item",
            "payload": {"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": '"token_count" "compacted" 999999'}]}}
    partial = '{"timestamp":"t","ordinal":100,"type":"event_msg","payload":{"type":"token_count","info":{"last_tok'
    p = tmp_path / "r.jsonl"
    p.write_text(data + json.dumps(talk) + "\n" + partial)
    got = rollout.read_rollout(str(p))
    assert got["tokens"] == last and got["source"] == "rollout"
    # A token_count with info null (rate limits only) is skipped too.
    p.write_text(data + json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": None}}) + "\n")
    assert rollout.read_rollout(str(p))["tokens"] == last


def test_reads_are_bounded(tmp_path):
    data = open(TOOL_TURN, "rb").read()
    filler = (json.dumps({"type": "response_item", "payload": {"type": "function_call_output",
                                                               "output": "x" * 1000}}) + "\n").encode()
    # History before the reading costs nothing: 8 MB of it, the reading at the end.
    p = tmp_path / "long-history.jsonl"
    p.write_bytes(filler * 8000 + data)
    got = rollout.read_rollout(str(p))
    assert got["tokens"] == naive_tokens(TOOL_TURN) and got["scanned"] <= 2 * rollout.CHUNK
    # Past max_scan with no reading: unknown, after reading about max_scan and no more.
    p = tmp_path / "long-tail.jsonl"
    p.write_bytes(data + filler * 3000)
    got = rollout.read_rollout(str(p), max_scan=1 << 20)
    assert got["tokens"] is None and got["window"] is None and got["scanned"] <= (1 << 20) + rollout.CHUNK
    assert rollout.read_rollout(str(p))["tokens"] == naive_tokens(TOOL_TURN), "the default scan reaches it"


def test_a_missing_rollout_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        rollout.read_rollout(str(tmp_path / "none.jsonl"))


def test_usage_tokens_and_the_window_arithmetic():
    assert rollout.usage_tokens({"input_tokens": 10083, "output_tokens": 17, "total_tokens": 10100}) == 10100
    assert rollout.usage_tokens({"input_tokens": 10, "output_tokens": 5}) == 15
    assert rollout.usage_tokens({"input_tokens": True, "output_tokens": 5}) is None
    assert rollout.usage_tokens(None) is None
    assert rollout.effective_window(20000) == 19000 and rollout.effective_window(272000) == 258400
    assert rollout.auto_compact_limit(20000) == 18000 and rollout.auto_compact_limit(20000, 12000) == 12000
    assert rollout.percent_left(12000, 19000) == 100 and rollout.percent_left(5000, 19000) == 100
    assert rollout.percent_left(15500, 19000) == 50 and rollout.percent_left(19000, 19000) == 0
    assert rollout.percent_left(30000, 19000) == 0 and rollout.percent_left(100, 12000) == 0


# -- the hook wire --------------------------------------------------------------


def recorded():
    with open(os.path.join(DATA, "hook-payloads.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_every_payload_the_binary_sent_parses():
    calls = recorded()
    assert {c["event"] for c in calls} == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                                           "PreCompact", "PostCompact", "Stop", "SessionEnd"}
    for c in calls:
        got = wire.parse(json.dumps(c["payload"]).encode(), expect=c["event"])
        assert got["event"] == c["event"] and got["session_id"] == c["payload"]["session_id"]
        assert got["transcript_path"].startswith("/SANDBOX/codex-home/sessions/") and got["cwd"] == "/SANDBOX/work"
    by = {}
    for c in calls:
        by.setdefault(c["event"], []).append(wire.parse(json.dumps(c["payload"])))
    assert [s["source"] for s in by["SessionStart"]] == ["startup", "startup", "compact"]
    assert by["UserPromptSubmit"][0]["prompt"] == "please run a tool"
    pre = by["PreToolUse"][0]
    assert (pre["tool_name"], pre["command"]) == ("Bash", "echo hello-from-tool && pwd") and pre["tool_use_id"]
    assert by["PostToolUse"][0]["tool_response"].startswith("hello-from-tool\n")
    assert [s["stop_hook_active"] for s in by["Stop"]] == [False, False]
    assert by["Stop"][0]["last_assistant_message"] == "Tool done."
    assert [c["trigger"] for c in by["PreCompact"] + by["PostCompact"]] == ["auto", "auto"]
    assert by["SessionEnd"][0]["reason"] == "other" and by["SessionEnd"][0]["turn_id"] is None
    assert all(p["turn_id"] for p in by["Stop"] + by["PreToolUse"])


def _payload(event, **kw):
    base = {"session_id": "01a23442-a4bc-7200-90b4-88b9d98a93b0", "cwd": "/w", "hook_event_name": event,
            "transcript_path": "/c/sessions/r.jsonl", "model": "m"}
    base.update(kw)
    return json.dumps(base)


@pytest.mark.parametrize("raw, expect, where", [
    (b"{not json", None, "not JSON"),
    (b"[]", None, "expected a JSON object"),
    (_payload("Stop"), None, "stop_hook_active"),
    (_payload("Stop", stop_hook_active="yes"), None, "stop_hook_active"),
    (_payload("SessionStart", source="boot"), None, "source: 'boot'"),
    (_payload("SessionStart"), None, "source"),
    (_payload("PreToolUse", tool_name="Bash", tool_input="ls"), None, "tool_input"),
    (_payload("PreToolUse", tool_input={}), None, "tool_name"),
    (_payload("PreCompact", trigger="often"), None, "trigger"),
    (_payload("UserPromptSubmit"), None, "prompt"),
    (_payload("Stop", session_id="", stop_hook_active=False), None, "session_id"),
    (_payload("Stop", stop_hook_active=False, cwd=None), None, "cwd"),
    (_payload("Stop", stop_hook_active=False, transcript_path=5), None, "transcript_path"),
    (_payload("Stop", stop_hook_active=False), "SessionStart", "this hook is for SessionStart"),
    (b" " * (wire.MAX_PAYLOAD + 1), None, "payload over"),
])
def test_a_payload_codex_would_not_send_names_the_field(raw, expect, where):
    with pytest.raises(wire.PayloadError) as e:
        wire.parse(raw, expect=expect)
    assert where in str(e.value)


def test_optional_fields_may_be_null_and_other_tools_have_no_command():
    got = wire.parse(_payload("Stop", stop_hook_active=True, transcript_path=None, last_assistant_message=None))
    assert got["transcript_path"] is None and got["last_assistant_message"] is None and got["stop_hook_active"]
    got = wire.parse(_payload("PreToolUse", tool_name="view_image", tool_input={"command": "x"}))
    assert got["command"] is None


def test_the_answers_are_the_shapes_codex_reads():
    assert json.loads(wire.block_stop("write the handoff")) == {"decision": "block", "reason": "write the handoff"}
    with pytest.raises(ValueError):
        wire.block_stop("  ")
    assert json.loads(wire.deny_tool("past the ceiling")) == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "past the ceiling"}}
    for event in ("SessionStart", "UserPromptSubmit"):
        assert json.loads(wire.add_context(event, "ctx ü")) == {
            "hookSpecificOutput": {"hookEventName": event, "additionalContext": "ctx ü"}}
    with pytest.raises(ValueError):
        wire.add_context("Stop", "x")
    assert json.loads(wire.block_prompt("no")) == {"decision": "block", "reason": "no"}
    assert json.loads(wire.veto_compaction("rotating")) == {"continue": False, "stopReason": "rotating"}
    assert "\n" not in wire.add_context("SessionStart", "a\nb"), "one line on stdout"


def test_the_injection_estimate_is_bytes_over_four():
    assert wire.approx_tokens("x" * 39156) == 9789, "the truncation warning's 'original token count' for 39 156 bytes"
    assert wire.approx_tokens("ü") == 1 and wire.approx_tokens("") == 0
    assert wire.fits_injection("x" * 10000) and not wire.fits_injection("x" * 10001)
    assert wire.fits_injection("x" * 20000, limit_tokens=5000)


def test_a_threads_tokens_are_its_newest_running_total():
    counts = [r["payload"]["info"] for r in rows(TOOL_TURN)
              if r["payload"].get("type") == "token_count" and r["payload"].get("info")]
    want = counts[-1]["total_token_usage"]["total_tokens"]
    assert want == sum(c["last_token_usage"]["total_tokens"] for c in counts)  # (Codex sums every request)
    assert rollout.tokens_spent(TOOL_TURN) == want > 0


def test_a_thread_with_no_count_is_unknown(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"type": "session_meta", "payload": {"id": "x"}}) + "\n")
    assert rollout.tokens_spent(str(path)) is None
