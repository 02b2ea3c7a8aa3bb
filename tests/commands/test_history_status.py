"""``history`` draws each session's context curve; ``status --all`` shows the whole project.

A real chain against a real git repository, climbed in-process on the ladder (tests/helpers/ladder.py:
the protocol's steps, the tool calls by the real adapter in-process): a session climbs to the rotate
level, its handoff fails validation three times (a degraded, machine-written handoff), the user types
/clear, the successor claims and works on.  ``history`` and ``status`` run as the CLI.
"""

import json
import re

import pytest

from cc_continuity import session
from cc_continuity.commands import history
from helpers.hookdriver import tokens_at
from helpers.ladder import S1, S2


def tools_at(lad, sid, percents):
    """One tool call a reply: each reply at its percent, its PostToolUse recorded (the real adapter, in-process)."""
    for pct in percents:
        lad.said(sid, tokens_at(pct))
        lad.drv.inproc("PostToolUse", sid)


@pytest.fixture
def chain(make_project):
    lad = make_project(files={"README.md": "hello\n"})
    drv = lad.drv
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    lad.prompt(S1, "port the exporter")
    tools_at(lad, S1, (20, 40, 55))
    lad.said(S1, tokens_at(65), "Step finished.")
    assert lad.request_handoff(S1).request["decision"] == "block"
    for attempt in range(3):  # no handoff written: the third check writes the machine handoff
        lad.stop(S1, stop_hook_active=True)
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    lad.clear(S1, S2, tokens=None)  # S2's SessionStart before any reply of its own
    lad.said(S2, tokens_at(12))
    lad.claim(S2, "carry on")
    tools_at(lad, S2, (15, 30))
    return drv


def test_history_draws_each_curve_and_status_all_shows_the_whole_chain(chain):
    out = chain.cli("history").stdout
    line1 = next(l for l in out.splitlines() if l.lstrip().startswith("proj-001"))
    assert "degraded DEGRADED" not in out and line1.count("DEGRADED") == 1, out
    assert "DEGRADED (machine handoff)" in line1
    curves = [l.strip() for l in out.splitlines() if set(l.strip().split("  ")[0]) <= set(history.BLOCKS + "↻")
              and l.strip()]
    assert len(curves) == 2, out
    # 20 % -> ▂, 40 % -> ▄, 55 % -> ▅, the Stop at 65 % -> ▆, then the rotation point.
    assert re.match(r"^▂▄▅▆+↻", curves[0]), curves
    assert curves[1] == "▂▃  peak 30%", curves   # 15 %, 30 %: no rotation yet
    assert curves[0].endswith("peak 65%")
    doc = json.loads(chain.cli("history", "--json").stdout)
    first, second = doc["sessions"]
    assert first["curve"][:4] == [20.0, 40.0, 55.0, 65.0] and first["curve_rotation_at"] is not None
    assert first["curve"][first["curve_rotation_at"] - 1] == 65.0 and first["peak_percent"] == 65.0
    assert second["curve_rotation_at"] is None and second["curve"][-2:] == [15.0, 30.0]

    # status --all: the whole history, and how each one ended (not "alive": the same process cleared it)
    plain = chain.cli("status").stdout
    assert "proj-001" not in plain and "proj-002" in plain
    out = chain.cli("status", "--all").stdout
    assert "all 2 sessions: 1 open, 1 ended or rotated" in out, out
    row = next(l for l in out.splitlines() if "proj-001" in l)
    assert "ROTATED" in row and "-> proj-002" in row and "alive" not in row and "gone" not in row, row


def test_sparkline_scale_resampling_and_the_mark():
    assert history.sparkline([0, 12.5, 50, 99.9, 140]) == "▁▂▅██"
    assert history.sparkline([10, 70], 1) == "▁↻▆"
    pts, at = history.resample(list(range(100)), 50, width=10)
    assert len(pts) == 10 and pts[0] == 9 and pts[-1] == 99 and at == 5
    assert history.resample([1, 2, 3], 3) == ([1, 2, 3], 3)
    assert history.resample(list(range(64)), 64, width=8)[1] == 8
