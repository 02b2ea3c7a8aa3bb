"""``cc-continuity run --agent gemini`` against the real Gemini CLI 0.61 (issue 37's first part).

One ``gemini -p`` rotates in-process, so the run's caps must hold inside it: with ``--max-rotations 2`` on a
task that takes three, the second verifying AfterAgent still clears and continues, the third hands over
``headless`` instead (the turn ends, ``gemini -p`` exits, cp-003 waits) and the run exits 3; ``run
--resume`` claims cp-003 and finishes (exit 0).  Without a cap the whole chain is one process and the run
exits 0.  Installed as a user installs it; the work's writes are the test user's own rule.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from cc_continuity.rehearse import WINDOW, rotation_scenario
from helpers import REPO

from .common import progressing, session_records
from .test_gemini_rotation_e2e import TASK, USER_RULE, _gemini_tools

pytestmark = pytest.mark.gemini


def _box(gemini_box):
    box = gemini_box()
    box.model.set_scenario(progressing(_gemini_tools(rotation_scenario(box.project, rotations=3, task=TASK))))
    cc_home = os.path.join(box.root, "cchome")
    box.install_ours(cc_home, config={"window": WINDOW})
    with open(os.path.join(box.gemini_dir, "policies", "user-work.toml"), "w") as f:
        f.write(USER_RULE % re.escape(box.project))
    return box, cc_home


def _run(box, cc_home, *args, task=TASK):
    env = dict(box.env(), CC_CONTINUITY_HOME=cc_home, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "cc_continuity", "run", "--agent", "gemini", "--gemini", box.bin,
                           *args] + ([task] if task else []), cwd=box.project, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_run_is_one_gemini_p_rotating_three_times(gemini_box):
    box, cc_home = _box(gemini_box)
    res = _run(box, cc_home)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert "run done: 1 session, 3 rotations" in res.stderr, res.stderr[-1000:]
    recs = session_records(cc_home)
    assert [(r["state"], r.get("driver")) for r in recs] == [("ROTATED", "native")] * 3 + [("ENDED", None)]
    assert all(r.get("unattended") for r in recs), "a run's sessions are unattended"


def test_max_rotations_holds_inside_one_process_and_a_second_run_goes_on(gemini_box):
    box, cc_home = _box(gemini_box)
    res = _run(box, cc_home, "--max-rotations", "2")
    assert res.returncode == 3, (res.returncode, res.stderr[-2000:])
    assert "cp-003 waits for a successor: the run reached --max-rotations 2" in res.stderr, res.stderr[-1000:]
    recs = session_records(cc_home)
    assert [(r["state"], r.get("driver")) for r in recs] == [("ROTATED", "native")] * 2 + [("ROTATING", "headless")]
    again = _run(box, cc_home, "--resume", "--json", task=None)
    assert again.returncode == 0, (again.returncode, again.stderr[-2000:])
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert (summary["why"], summary["exit"], summary["sessions"], summary["rotations"]) == ("done", 0, 1, 0), summary
    assert "resuming from cp-003" in again.stderr
    recs = session_records(cc_home)
    assert [r["state"] for r in recs] == ["ROTATED"] * 3 + ["ENDED"]
    assert recs[3].get("checkpoint_from") == "cp-003" and recs[2].get("successor") == 4


def test_a_quota_gemini_gave_up_on_ends_the_run_with_its_own_status_and_the_reset(gemini_box):
    """Issue 40's lab replayed: after the first rotation the successor's request is answered with a daily quota
    ("Please retry in 36000s": Gemini does not retry it).  Gemini records it on stderr only; the run passes
    that stderr on, reads the stop from it, and exits 6 with the reset ten hours ahead."""
    import time

    from cc_continuity.rehearse import CONTINUATION

    box, cc_home = _box(gemini_box)
    limited = progressing(_gemini_tools(rotation_scenario(box.project, rotations=3, task=TASK)))
    limited["rules"].insert(0, {"name": "quota", "when": {"last_user_contains": CONTINUATION},
                                "error": {"status": 429, "type": "RESOURCE_EXHAUSTED",
                                          "message": "You exceeded your current quota. Please retry in 36000s."}})
    box.model.set_scenario(limited)
    t0 = time.time()
    res = _run(box, cc_home, "--json")
    assert res.returncode == 6, (res.returncode, res.stderr[-3000:])
    # (the summary line follows Gemini's own stdout, which may end without a newline)
    summary, _ = json.JSONDecoder().raw_decode(res.stdout[res.stdout.rindex('{"agent"'):])
    stopped = summary["stopped"]
    assert (stopped["kind"], stopped["status"]) == ("limit", 429), stopped
    assert 36000 - 60 < stopped["resets_at"] - t0 < 36000 + 600, stopped
    assert "Error when talking to Gemini API" in res.stderr, "the agent's own stderr is passed on"
    assert "stopped on a rate or usage limit (HTTP 429)" in res.stderr and "it resets at" in res.stderr
