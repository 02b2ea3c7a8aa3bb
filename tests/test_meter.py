"""meter: the context reading from transcripts shaped like Claude Code's, windows, levels."""

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cc_continuity import config, meter
from helpers.transcripts import Transcript, dumps

CFG = dict(config.DEFAULTS)


def reading(t, tmp_path, name="t.jsonl", **kw):
    path = t.write(str(tmp_path / name), **kw)
    return meter.read_transcript(path)


def reference(data):
    """What the meter must return, computed the slow obvious way (forward, every line parsed)."""
    got = {"tokens": None, "model": None, "source": "transcript"}
    found = False
    for line in data.split(b"\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or row.get("isSidechain"):
            continue
        if row.get("type") == "system" and row.get("subtype") == "compact_boundary":
            post = (row.get("compactMetadata") or {}).get("postTokens")
            got = {"tokens": post if isinstance(post, int) else None, "model": None, "source": "compact_boundary"}
            found = True
        elif row.get("type") == "assistant" and not row.get("isApiErrorMessage"):
            msg = row.get("message") or {}
            if msg.get("model") == "<synthetic>" or not isinstance(msg.get("usage"), dict):
                continue
            u = msg["usage"]
            got = {"tokens": u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
                   + u.get("cache_read_input_tokens", 0), "model": msg.get("model"), "source": "transcript"}
            found = True
    return got if found else {"tokens": None, "model": None, "source": "transcript"}


def strip(r):
    return {k: r[k] for k in ("tokens", "model", "source")}


# -- transcripts ---------------------------------------------------------------------
def test_multi_row_response_counts_once(tmp_path):
    t = Transcript()
    t.user("hi")
    rows = t.assistant(123_456, blocks=4)
    assert len({r["message"]["id"] for r in rows}) == 1 and len(rows) == 4
    r = reading(t, tmp_path)
    assert (r["tokens"], r["model"], r["source"]) == (123_456, "claude-sonnet-4-5", "transcript")


def test_latest_response_wins_through_large_noise(tmp_path):
    t = Transcript()
    for tokens in (20_000, 40_000, 61_000, 87_654):
        t.turn(tokens, blocks=3, kb=64)
    data = t.data()
    assert len(data) > 4 * 100_000
    r = reading(t, tmp_path)
    assert r["tokens"] == 87_654
    assert r["scanned"] <= 2 * meter.CHUNK


def test_noise_longer_than_several_chunks(tmp_path):
    t = Transcript()
    t.turn(50_000)
    t.assistant(77_000, blocks=2)
    for _ in range(8):
        t.noise(kb=64)
    assert len(t.data()) > 3 * meter.CHUNK
    r = reading(t, tmp_path)
    assert r["tokens"] == 77_000
    assert r["scanned"] > meter.CHUNK


def test_cost_does_not_grow_with_history(tmp_path):
    t = Transcript()
    for i in range(45):
        t.turn(1000 * (i + 1), kb=8)
    t.turn(99_999, kb=8)
    assert len(t.data()) > 8 * meter.CHUNK
    r = reading(t, tmp_path)
    assert r["tokens"] == 99_999
    assert r["scanned"] <= meter.CHUNK


def test_sidechain_rows_are_skipped_even_when_newer(tmp_path):
    t = Transcript()
    t.turn(40_000)
    t.assistant(190_000, blocks=2, sidechain=True)
    t.noise(kb=8)
    assert reading(t, tmp_path)["tokens"] == 40_000


def test_synthetic_rows_are_skipped(tmp_path):
    t = Transcript()
    t.turn(40_000)
    t.assistant(0, blocks=1, synthetic=True, content=[{"type": "text", "text": "No response requested."}])
    assert reading(t, tmp_path)["tokens"] == 40_000


def test_api_error_rows_are_skipped(tmp_path):
    t = Transcript()
    t.turn(40_000)
    t.assistant(0, blocks=1, api_error=True, content=[{"type": "text", "text": "API Error: 529 overloaded"}])
    assert reading(t, tmp_path)["tokens"] == 40_000


def test_compact_boundary_newer_than_assistant_gives_post_tokens(tmp_path):
    t = Transcript()
    t.turn(180_000)
    t.compact_boundary(180_000, post_tokens=2830)
    t.noise(kb=16)
    r = reading(t, tmp_path)
    assert (r["tokens"], r["source"]) == (2830, "compact_boundary")


def test_compact_boundary_without_post_tokens_is_unknown(tmp_path):
    t = Transcript()
    t.turn(180_000)
    t.compact_boundary(180_000)
    r = reading(t, tmp_path)
    assert r["tokens"] is None and r["source"] == "compact_boundary"


def test_assistant_after_boundary_wins(tmp_path):
    t = Transcript()
    t.turn(180_000)
    t.compact_boundary(180_000, post_tokens=2830)
    t.turn(9_000)
    assert reading(t, tmp_path)["tokens"] == 9_000


def test_assistant_line_longer_than_chunk(tmp_path):
    t = Transcript()
    t.turn(10_000)
    big = "x" * (meter.CHUNK * 2 + 12345)
    t.assistant(150_000, blocks=1, content=[{"type": "text", "text": big}])
    t.noise(kb=64)
    r = reading(t, tmp_path)
    assert r["tokens"] == 150_000


def test_noise_line_longer_than_chunk_after_assistant(tmp_path):
    t = Transcript()
    t.turn(150_000)
    t.snapshot(meter.CHUNK * 3)
    assert reading(t, tmp_path)["tokens"] == 150_000


@pytest.mark.parametrize("shift", [-2, -1, 0, 1, 2, 100])
def test_chunk_boundary_around_the_newline(tmp_path, shift):
    """The newline before the newest assistant line falls exactly on (or next to) a chunk boundary."""
    head = Transcript()
    head.turn(10_000)
    t = Transcript()
    t.assistant(150_000, blocks=1)
    tail_line = t.lines()[0] + b"\n"
    pad = meter.CHUNK - len(tail_line) + shift  # filler line so the assistant line starts at size - CHUNK - shift
    filler = dumps({"type": "attachment", "attachment": {"type": "prompt_snapshot", "content": ""}}).encode()
    filler = filler[:-3] + b"z" * max(0, pad - len(filler) - 1) + filler[-3:]
    data = head.data() + tail_line + filler + b"\n"
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert meter.read_transcript(str(path))["tokens"] == 150_000


def test_no_trailing_newline(tmp_path):
    t = Transcript()
    t.turn(10_000)
    t.assistant(33_333, blocks=2)
    assert reading(t, tmp_path, trailing_newline=False)["tokens"] == 33_333


def test_torn_last_line_is_ignored(tmp_path):
    t = Transcript()
    t.turn(10_000)
    data = t.data()
    newer = Transcript()
    newer.assistant(99_000, blocks=1)
    path = tmp_path / "t.jsonl"
    path.write_bytes(data + newer.lines()[0][:-40])
    assert meter.read_transcript(str(path))["tokens"] == 10_000


def test_empty_file_and_no_assistant(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    r = meter.read_transcript(str(empty))
    assert r["tokens"] is None and r["scanned"] == 0
    t = Transcript()
    t.user("hello")
    t.noise(kb=8)
    assert reading(t, tmp_path)["tokens"] is None


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        meter.read_transcript(str(tmp_path / "nope.jsonl"))


def test_assistant_json_inside_tool_result_is_not_mistaken(tmp_path):
    """The agent `cat`s a transcript: its tool result quotes assistant rows with huge usage."""
    t = Transcript()
    t.turn(30_000)
    quoted = Transcript()
    quoted.assistant(950_000, blocks=1)
    quoted_line = quoted.lines()[0].decode()
    t.tool_result(quoted_line + "\n" + quoted_line)
    # and a structured toolUseResult that contains an unescaped assistant-looking object
    row = t.tool_result("see structured")
    row["toolUseResult"] = json.loads(quoted_line)
    t.noise(kb=8)
    assert b'"type":"assistant"' in t.lines()[-5]  # the quick filter does see the structured copy
    assert reading(t, tmp_path)["tokens"] == 30_000


def test_partial_usage_fields(tmp_path):
    t = Transcript()
    rows = t.assistant(1, blocks=1)
    rows[0]["message"]["usage"] = {"input_tokens": 500, "output_tokens": 7}
    assert reading(t, tmp_path)["tokens"] == 500


def test_max_scan_gives_unknown(tmp_path):
    t = Transcript()
    t.turn(10_000)
    for _ in range(4):
        t.noise(kb=64)
    path = t.write(str(tmp_path / "t.jsonl"))
    r = meter.read_transcript(path, max_scan=meter.CHUNK)
    assert r["tokens"] is None
    assert meter.read_transcript(path)["tokens"] == 10_000


def test_real_response_mentioning_synthetic_counts(tmp_path):
    t = Transcript()
    t.turn(10_000)
    t.assistant(120_000, blocks=1, content=[{"type": "tool_use", "id": "toolu_1", "name": "Grep",
                                             "input": {"pattern": "<synthetic>"}}])
    assert reading(t, tmp_path)["tokens"] == 120_000


def test_real_response_mentioning_compact_boundary_counts(tmp_path):
    t = Transcript()
    t.turn(10_000)
    t.assistant(120_000, blocks=1, content=[{"type": "tool_use", "id": "toolu_1", "name": "Grep",
                                             "input": {"pattern": "compact_boundary"}}])
    assert reading(t, tmp_path)["tokens"] == 120_000


# -- a property: any chunk size, any mix of rows, same answer as the slow reference --------
ROW = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 2_000_000), st.integers(1, 4)),
    st.tuples(st.just("assistant"), st.integers(0, 2_000_000), st.integers(1, 3)),
    st.tuples(st.just("sidechain"), st.integers(0, 2_000_000), st.integers(1, 2)),
    st.tuples(st.just("synthetic"), st.just(0), st.just(1)),
    st.tuples(st.just("api_error"), st.just(0), st.just(1)),
    st.tuples(st.just("boundary"), st.integers(0, 2_000_000), st.booleans()),
    st.tuples(st.just("snapshot"), st.integers(0, 3000), st.just(0)),
    st.tuples(st.just("tool_result"), st.integers(0, 2_000_000), st.just(0)),
)


def use_chunk(monkeypatch, chunk):
    """Make the backwards reader use ``chunk``-byte reads (module constant and/or parameter default)."""
    import functools
    import inspect

    monkeypatch.setattr(meter, "CHUNK", chunk)
    reader = getattr(meter, "lines_backwards", None)
    if reader is not None and "chunk" in inspect.signature(reader).parameters:
        monkeypatch.setattr(meter, "lines_backwards", functools.partial(reader, chunk=chunk))


def test_matches_reference_for_any_chunk_size(tmp_path, monkeypatch):
    partial_reads = []

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(rows=st.lists(ROW, max_size=14), chunk=st.integers(16, 4096), trailing=st.booleans())
    def prop(rows, chunk, trailing):
        t = Transcript(seed=len(rows))
        for kind, a, b in rows:
            if kind == "turn":
                t.turn(a, blocks=b, kb=0)
            elif kind == "assistant":
                t.assistant(a, blocks=b, model="claude-opus-5-5")
            elif kind == "sidechain":
                t.assistant(a, blocks=b, sidechain=True)
            elif kind == "synthetic":
                t.assistant(0, blocks=1, synthetic=True, content=[{"type": "text", "text": "x"}])
            elif kind == "api_error":
                t.assistant(0, blocks=1, api_error=True, content=[{"type": "text", "text": "err"}])
            elif kind == "boundary":
                t.compact_boundary(a, post_tokens=a // 10 if b else None)
            elif kind == "snapshot":
                t.snapshot(a)
            else:
                quoted = Transcript()
                quoted.assistant(a, blocks=1)
                t.tool_result(quoted.lines()[0].decode())
        data = t.data(trailing_newline=trailing)
        path = tmp_path / "p.jsonl"
        path.write_bytes(data)
        with monkeypatch.context() as m:
            use_chunk(m, chunk)
            got = meter.read_transcript(str(path))
        assert strip(got) == reference(data)
        assert got["scanned"] <= len(data)  # reads grow from chunk/4 up to chunk; never past the start
        if got["scanned"] < len(data):
            partial_reads.append(chunk)

    prop()
    assert partial_reads, "the small chunk sizes never took effect (the test would prove nothing)"


# -- windows ------------------------------------------------------------------------
@pytest.mark.parametrize("args,env,expected", [
    ((300_000, 1_000_000, "claude-sonnet-4-5"), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "5000"}, (300_000, "config")),
    ((None, 1_000_000, "claude-sonnet-4-5"), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "5000"}, (1_000_000, "statusline")),
    ((None, None, "claude-sonnet-4-5"), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "5000"}, (200_000, "model")),
    ((None, None, "claude-opus-5-5"), {}, (1_000_000, "model")),
    ((None, None, "claude-opus-4-8"), {}, (1_000_000, "model")),
    ((None, None, "claude-sonnet-4-5[1m]"), {}, (1_000_000, "model")),
    ((None, None, "opus[1m]"), {}, (1_000_000, "model")),
    ((None, None, "Claude-Sonnet-4-5[1M]"), {}, (1_000_000, "model")),
    ((None, None, "claude-haiku-4-5"), {}, (200_000, "model")),
    ((None, None, "qwen3-coder-30b"), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "131072"}, (131_072, "env")),
    ((None, None, None), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "131072"}, (131_072, "env")),
    ((None, 0, None), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "abc"}, (200_000, "guess")),
    ((None, None, None), {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "0"}, (200_000, "guess")),
    ((None, None, "claude-future-9"), {}, (200_000, "guess")),
])
def test_window_resolution_order(args, env, expected):
    assert meter.resolve_window(*args, env=env) == expected


def test_unknown_non_claude_model_guess_is_1m():
    w, src = meter.resolve_window(None, None, "qwen3-coder-30b", env={})
    assert w == 1_000_000 and src.startswith("guess")


# -- levels ------------------------------------------------------------------------
@pytest.mark.parametrize("tokens,expected", [
    (None, "ok"), (0, "ok"), (109_999, "ok"), (110_000, "warn"), (123_999, "warn"), (124_000, "rotate"),
    (143_999, "rotate"), (144_000, "hard"), (250_000, "hard"),
])
def test_levels_at_default_boundaries(tokens, expected):
    assert meter.level(tokens, 200_000, CFG) == expected


def test_levels_follow_config():
    cfg = dict(CFG, warn=40, rotate=50, hard=60)
    assert [meter.level(t, 1000, cfg) for t in (399, 400, 500, 600)] == ["ok", "warn", "rotate", "hard"]
    assert meter.level(10, 0, cfg) == "ok" and meter.level(10, None, cfg) == "ok"


@pytest.mark.parametrize("tokens,expected", [
    (88_709, "ok"), (88_710, "warn"), (99_999, "warn"), (100_000, "rotate"), (116_129, "rotate"),
    (116_130, "hard"),
])
def test_rotate_tokens_cap_on_a_big_window(tokens, expected):
    """On a 1M window, rotate_tokens=100k scales warn/hard proportionally (55/62, 72/62)."""
    cfg = dict(CFG, rotate_tokens=100_000)
    assert meter.level(tokens, 1_000_000, cfg) == expected


def test_reading_dict():
    r = meter.reading(124_000, 200_000, "model", CFG, "transcript")
    assert r == {"tokens": 124_000, "window": 200_000, "window_source": "model", "ratio": 0.62,
                 "percent": 62.0, "level": "rotate", "source": "transcript"}
    r = meter.reading(None, 200_000, "model", CFG, "compact_boundary")
    assert r["ratio"] is None and r["percent"] is None and r["level"] == "ok"


# -- the status line's own numbers -----------------------------------------------------
OBSERVED = {
    "session_id": "12426479-0000-4000-8000-000000000000", "transcript_path": "/x/12426479.jsonl",
    "cwd": "/x/myproj", "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
    "context_window": {"total_input_tokens": 37010, "total_output_tokens": 20, "context_window_size": 1000000,
                       "current_usage": {"input_tokens": 10, "output_tokens": 20,
                                         "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 35000},
                       "used_percentage": 4, "remaining_percentage": 96},
    "exceeds_200k_tokens": False,
}


def test_from_statusline_observed_payload():
    assert meter.from_statusline(OBSERVED) == (37010, 1_000_000)


def test_from_statusline_null_usage_after_clear():
    p = json.loads(json.dumps(OBSERVED))
    p["context_window"].update({"total_input_tokens": 0, "current_usage": None, "used_percentage": None,
                                "remaining_percentage": None})
    assert meter.from_statusline(p) == (None, 1_000_000)


def test_from_statusline_falls_back_to_current_usage():
    p = json.loads(json.dumps(OBSERVED))
    del p["context_window"]["total_input_tokens"]
    assert meter.from_statusline(p) == (37010, 1_000_000)


@pytest.mark.parametrize("payload", [None, [], {}, {"context_window": None}, {"context_window": "x"},
                                     {"context_window": {"context_window_size": True, "current_usage": None}}])
def test_from_statusline_garbage(payload):
    tokens, window = meter.from_statusline(payload)
    assert tokens is None and window is None


# -- `cc-continuity meter` -------------------------------------------------------------
def test_cli_meter_json(tmp_path):
    t = Transcript(model="claude-sonnet-4-5")
    t.turn(50_000)
    t.turn(130_000, blocks=3, kb=64)
    path = t.write(str(tmp_path / "s.jsonl"))
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "meter", path, "--json"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["tokens"] == 130_000 and doc["window"] == 200_000 and doc["window_source"] == "model"
    assert doc["percent"] == 65.0 and doc["level"] == "rotate" and doc["source"] == "transcript"
    assert doc["model"] == "claude-sonnet-4-5" and 0 < doc["scanned_bytes"] <= 2 * meter.CHUNK

    res = subprocess.run([sys.executable, "-m", "cc_continuity", "meter", path, "--window", "1000000"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert res.returncode == 0
    assert "130,000" in res.stdout and "1,000,000 (--window)" in res.stdout and "13.0%" in res.stdout


def test_cli_meter_uses_project_config_window(tmp_path, monkeypatch, capsys):
    from cc_continuity import cli

    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".claude" / "continuity.json").write_text('{"window": 400000}')
    t = Transcript()
    t.turn(100_000)
    path = t.write(str(tmp_path / "s.jsonl"))
    monkeypatch.chdir(proj)
    assert cli.main(["meter", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["window"], doc["window_source"], doc["percent"]) == (400_000, "config", 25.0)


def test_levels_are_compared_by_their_named_order():
    assert (meter.OK, meter.WARN, meter.ROTATE, meter.HARD) == tuple(map(meter.level_index, meter.LEVELS))
    assert meter.at_least("hard", "rotate") and meter.at_least("rotate", "rotate") and not meter.at_least("warn", "rotate")
    assert meter.at_least(meter.HARD, "hard") and not meter.at_least(meter.ROTATE, "hard")
    assert not meter.at_least(None, "warn") and not meter.at_least("bogus", "warn")  # an unknown level is ok
    assert meter.notified_through(meter.OK) == [] and meter.notified_through(meter.ROTATE) == ["warn", "rotate"]
