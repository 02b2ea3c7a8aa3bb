"""Issue 13, P9: the meter's cost is linear in what it reads, and a huge last line is bounded.

Before, every chunk read was prepended to everything read so far and searched again, so a
64 MB last line cost seconds (quadratic) and then the reading was lost anyway.  Now a line
longer than ``meter.LINE_MAX`` is not read to its start: *unknown*, in milliseconds, and
the next line brings the reading back.  Below that bound the results are exactly those of
the previous implementation (kept in ``helpers/meter_before.py``): on generated transcripts
with lines spanning many chunks (Hypothesis), for all four readers.  The existing fixture
suites (test_meter.py, test_meter_catchup.py) run unchanged.
"""

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from cc_continuity import meter
from helpers import meter_before as before

USAGE = {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000}


def row(kind, i, pad=0, tool=False, text="done"):
    if kind == "assistant":
        content = [{"type": "tool_use", "id": "toolu_%d" % i, "name": "Bash", "input": {"p": "x" * pad}}] if tool \
            else [{"type": "text", "text": text + "y" * pad}]
        obj = {"type": "assistant", "message": {"id": "m%d" % i, "model": "claude-sonnet-4-5",
                                                "usage": dict(USAGE, cache_read_input_tokens=1000 + i),
                                                "content": content}}
    elif kind == "user":
        obj = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_%d" % i,
                                                        "content": "r" * pad}]}}
    elif kind == "boundary":
        obj = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"postTokens": 500 + i}}
    else:
        obj = {"type": "attachment", "attachment": {"content": "a" * pad}}
    return json.dumps(obj, separators=(",", ":"))


LINES = st.lists(st.tuples(st.sampled_from(["assistant", "user", "boundary", "other"]),
                           st.integers(0, 3000), st.booleans()), min_size=0, max_size=25)


def _new(reading):
    """A reading without what only the newer meter reports (the row's Claude Code version, for stop_wire)."""
    if isinstance(reading, dict):
        reading = dict(reading)
        assert reading.pop("cc_version", None) is None  # these rows carry no version
    return reading


@settings(max_examples=80, deadline=None)
@given(LINES, st.sampled_from([64, 100, 256, 1024, 4096]), st.booleans(), st.sampled_from(["done", ""]))
def test_results_are_those_of_the_previous_meter(tmp_path_factory, lines, chunk, trailing_newline, last):
    path = str(tmp_path_factory.mktemp("t") / "t.jsonl")
    body = "\n".join(row(kind, i, pad, tool) for i, (kind, pad, tool) in enumerate(lines))
    with open(path, "w") as f:
        f.write(body + ("\n" if trailing_newline and body else ""))
    assert _new(meter.read_transcript(path, chunk=chunk)) == before.read_transcript(path, chunk=chunk)
    assert list(meter.lines_backwards(path, chunk=chunk)) == list(before.lines_backwards(path, chunk=chunk))
    for i in range(len(lines)):
        assert _new(meter.tool_reading(path, "toolu_%d" % i, chunk=chunk)) == before.tool_reading(path, "toolu_%d" % i,
                                                                                          chunk=chunk)
    found, got = meter.reply_reading(path, last)
    assert (found, _new(got)) == before.reply_reading(path, last)


def test_a_64_mb_last_line_is_unknown_at_once_and_the_next_line_recovers(tmp_path):
    path = str(tmp_path / "t.jsonl")
    with open(path, "w") as f:
        f.write(row("assistant", 1, tool=True) + "\n")
        f.write(row("user", 1, pad=64 << 20) + "\n")
    t0 = time.perf_counter()
    got = meter.read_transcript(path)
    elapsed = time.perf_counter() - t0
    assert got["tokens"] is None and got["long_line"] is True
    assert got["scanned"] <= meter.LINE_MAX + meter.CHUNK  # bounded: not the whole line
    assert elapsed < 1.0, elapsed  # ~15 ms here; the old reader took ~9 s
    assert meter.tool_reading(path, "toolu_1") is None
    assert meter.reply_reading(path, "") == (False, None)
    with open(path, "a") as f:
        f.write(row("assistant", 2, text="next reply") + "\n")
    assert meter.read_transcript(path)["tokens"] == 1015
    ok, got = meter.reply_reading(path, "next reply")
    assert ok and got["tokens"] == 1015
    # A line just under the bound is still read to its start, at a cost linear in its size.
    with open(path, "w") as f:
        f.write(row("assistant", 3, tool=True) + "\n")
        f.write(row("user", 3, pad=4 << 20) + "\n")
    t0 = time.perf_counter()
    assert meter.read_transcript(path)["tokens"] == 1016
    assert meter.tool_reading(path, "toolu_3")["tokens"] == 1016
    assert time.perf_counter() - t0 < 1.0
