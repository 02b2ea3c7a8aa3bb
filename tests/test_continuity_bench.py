"""The continuity benchmark (bench/continuity.py, once `cc-continuity bench`): real hooks, a counting local server.

Each run of the bench is ~15 s of real hooks, git and HTTP, so the script is run once each way and its
output carries every check: with the hold (``--json``, exit 0) and the control (``--control``, its
table, exit 1).
"""

import json
import subprocess
import sys

from helpers import benchscript
from helpers.hookdriver import REPO

continuity = benchscript.load("continuity")


def bench(*args):
    return subprocess.run([sys.executable, benchscript.path("continuity"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_no_side_effect_is_executed_twice_and_nothing_ordinary_is_held():
    res = bench("--json")
    assert res.returncode == 0, res.stderr  # the script exits by the result
    rows = {r["scenario"]: r for r in json.loads(res.stdout)}
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


def test_the_control_shows_what_the_hold_prevents_in_the_scripts_table():
    res = bench("--control")
    assert res.returncode == 1, res.stdout + res.stderr  # something was executed twice
    lines = res.stdout.splitlines()
    assert lines[0] == "| scenario | attempted again | executed again | held | claims confirmed / contradicted |"
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}
    assert list(rows) == [name for name, _ in continuity.SCENARIOS]
    assert rows["process crash"][:3] == ["2", "1", "0"], res.stdout  # attempted, executed again, held
    assert rows["partly completed task"][1:3] == ["2", "0"], res.stdout
