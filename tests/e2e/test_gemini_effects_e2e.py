"""A harmful repeat is held on Gemini CLI 0.61 after a crash: the model POSTs (``run_shell_command``) to a
counting HTTP server on 127.0.0.1 that answers slowly, Gemini is killed (SIGKILL, its whole process group)
while the POST is in flight; a fresh ``gemini -p`` told to do the plan again is scripted to post again, and our
BeforeTool denies it (Gemini cannot ask): the model is told to check first, and the server counted one.

Gemini's payloads carry no call id: the intent is paired by the call itself (hosts/gemini/hooks.call_id).
The test's user runs with ``--yolo`` (their choice, so the shell tool is there in ``-p``; nothing of ours
passes it).  effects_local_exempt is off: 127.0.0.1 stands in for a remote API.
"""

import json
import os
import signal
import threading
import time

import pytest

from helpers import benchscript

pytestmark = pytest.mark.gemini

continuity = benchscript.load("continuity")  # its counting server

TASK = "Post task: announce the release"
AGAIN = "Continue: do the whole plan again"


def _scenario(command):
    rules = [{"name": "post-%d" % i, "when": {"last_user_contains": task},
              "reply": [{"type": "text", "text": "Doing it."},
                        {"type": "tool_use", "name": "run_shell_command",
                         "input": {"command": command, "description": "the plan's step"}}],
              "then": [{"reply": "Step handled."}]} for i, task in enumerate((TASK, AGAIN))]
    return {"rules": rules, "default": {"reply": "Noted."}}


def _effects(cc_home):
    (proj,) = os.listdir(os.path.join(cc_home, "projects"))
    with open(os.path.join(cc_home, "projects", proj, "effects.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_a_post_cut_off_by_a_kill_is_held_in_the_next_gemini_and_the_server_counts_one(gemini_box):
    server = continuity.Counter(delay_s=6.0)
    try:
        command = "curl -s -X POST -d 'release v1 is out' %s/notify" % server.url
        box = gemini_box(_scenario(command))
        cc_home = os.path.join(box.root, "cchome")
        box.install_ours(cc_home, config={"window": 200_000, "effects_local_exempt": False})
        env = {"CC_CONTINUITY_HOME": cc_home}
        first = {}
        runner = threading.Thread(target=lambda: first.update(run=box.run_print(TASK, args=["--yolo"], timeout=120,
                                                                                env=env)))
        runner.start()
        deadline = time.monotonic() + 90
        while sum(server.counts.values()) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sum(server.counts.values()) == 1, "the POST reached the server"
        os.killpg(box._groups[-1], signal.SIGKILL)  # Gemini and its curl, mid-call
        runner.join(30)
        assert not runner.is_alive() and first["run"].returncode == -signal.SIGKILL
        assert [r["ph"] for r in _effects(cc_home)] == ["intent"], "no outcome: cut off"

        since = len(box.model.main_requests())
        again = box.run_print(AGAIN, args=["--yolo"], timeout=120, env=env)
        assert again.returncode == 0, again
        told = [r.text for r in box.model.main_requests()[since:] if "Tool execution blocked" in r.text]
        assert told and "Check whether it took effect" in told[0], [r.text[-400:] for r in box.model.main_requests()]
        assert "repeat %s" % _effects(cc_home)[0]["k"][:8] in told[0]
        time.sleep(0.5)
        assert sum(server.counts.values()) == 1, server.counts
        with open(os.path.join(cc_home, "logs", "hooks.log")) as f:
            held = [line for line in f if " gemini:BeforeTool " in line and "held (uncertain, denied)" in line]
        assert len(held) == 1, held
    finally:
        server.close()
