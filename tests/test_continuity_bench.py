"""The continuity benchmark (rehearse/continuity.py, `cc-continuity bench`): real hooks, a counting local server."""

import json
import subprocess
import sys

from cc_continuity.rehearse import continuity
from helpers.hookdriver import REPO


def test_no_side_effect_is_executed_twice_and_nothing_ordinary_is_held():
    rows = {r["scenario"]: r for r in continuity.run()}
    assert list(rows) == [name for name, _ in continuity.SCENARIOS]
    for name, r in rows.items():
        assert r["executed_again"] == 0, r
        if name != "ordinary session (replay)":
            assert r["held"] >= 1, r
    assert rows["ordinary session (replay)"]["held"] == 0
    assert rows["process crash"]["held"] == 1  # the POST; the push of a commit the remote has runs
    assert rows["partly completed task"]["held"] == 2  # a and b; c was never done
    assert (rows["environment changed"]["claims_confirmed"], rows["environment changed"]["claims_contradicted"]) == (0, 1)
    assert rows["process crash"]["claims_contradicted"] == 0


def test_the_control_shows_what_the_hold_prevents():
    rows = {r["scenario"]: r for r in continuity.run(hold=False)}
    assert rows["process crash"]["executed_again"] == 1 and rows["process crash"]["held"] == 0
    assert rows["partly completed task"]["executed_again"] == 2


def test_the_verb_prints_the_table_and_exits_by_the_result():
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "bench", "--json"], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert [r["executed_again"] for r in json.loads(res.stdout)] == [0] * len(continuity.SCENARIOS)
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "bench", "--control"], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 1 and "| process crash | 2 | 1 | 0 |" in res.stdout, res.stdout
