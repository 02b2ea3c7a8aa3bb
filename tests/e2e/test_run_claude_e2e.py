"""``cc-continuity run --agent claude`` against the real Claude Code (issue 37): each session one ``claude -p``.

cc-continuity installed by its own installer (settings.json), the rehearsal's three-rotation script; the test
user lets the work's writes through (``--allowedTools Write`` after ``--``), the handoff's write is allowed by
our PreToolUse.  Each verifying Stop hands over ``headless``: the turn ends, ``claude -p`` exits, the loop starts
the next with the continuation, and its SessionStart claims the checkpoint and puts the bootstrap in.  No tmux,
no mod.  ``--max-rotations 2`` stops after two with exit 3 and cp-003 waiting, and ``run --resume`` goes on.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from cc_continuity.rehearse import CONTINUATION, ROTATE_AT, rotation_scenario, usage_at

from .common import installed_sandbox, progressing, session_records
from .harness import REPO_ROOT

pytestmark = pytest.mark.e2e

TASK = "Headless chain task: keep a work log"


def _run(sb, *args, task=TASK):
    return sb.run([sys.executable, "-m", "cc_continuity", "run", "--agent", "claude", "--claude", sb.claude_bin,
                   *args] + ([task] if task else []) + ["--", "--allowedTools", "Write,Bash"], timeout=300,
                  env={"PYTHONPATH": REPO_ROOT})


def test_three_rotations_each_a_claude_p_each_claimed_once(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: progressing(rotation_scenario(p, rotations=3, task=TASK)))
    res = _run(sb, "--json")
    assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
    assert res.stderr.count("handed over cp-") == 3 and "run done: 4 sessions, 3 rotations" in res.stderr, res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert (summary["sessions"], summary["rotations"], summary["checkpoints"]) == (4, 3, ["cp-001", "cp-002", "cp-003"])
    print("runner's own time between sessions (ms): %s" % summary["gaps_ms"])
    recs = session_records(sb.cc_home)
    assert [(r["state"], r.get("driver")) for r in recs[:3]] == [("ROTATED", "headless")] * 3, \
        [(r["state"], r.get("driver")) for r in recs]
    assert [r.get("successor") for r in recs[:3]] == [2, 3, 4]
    assert [r.get("checkpoint_from") for r in recs[1:]] == ["cp-001", "cp-002", "cp-003"]
    assert all(r.get("unattended") for r in recs)
    firsts = [r for r in sb.model.requests() if getattr(r, "kind", "main") == "main" and CONTINUATION in r.latest_text
              and len(r.messages) == 1]
    assert len(firsts) == 3, [len(r.messages) for r in sb.model.requests()]
    for k, req in enumerate(firsts, start=1):
        assert "cp-%03d" % k in req.text and "## Next steps" in req.text  # the bootstrap, whole, in a fresh context
    mains = [r for r in sb.model.requests() if getattr(r, "kind", "main") == "main"]
    p4 = [first.time - max(r.time for r in mains if r.seq < first.seq) for first in firsts]
    print("P4 headless claude -p (ms): %s" % ", ".join("%.0f" % (x * 1000) for x in p4))


def test_max_rotations_stops_with_its_status_and_the_next_run_goes_on(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: progressing(rotation_scenario(p, rotations=3, task=TASK)))
    res = _run(sb, "--max-rotations", "2")
    assert res.returncode == 3, (res.returncode, res.stderr[-3000:])
    assert "cp-003 waits for a successor: the run reached --max-rotations 2" in res.stderr, res.stderr
    again = _run(sb, "--resume", task=None)
    assert again.returncode == 0, (again.returncode, again.stderr[-3000:])
    recs = session_records(sb.cc_home)
    assert [r["state"] for r in recs] == ["ROTATED"] * 3 + ["ENDED"], [r["state"] for r in recs]
    assert recs[3].get("checkpoint_from") == "cp-003"


def test_the_same_handoff_twice_stops_the_run_between_two_sessions(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, rotations=3, task=TASK))  # one handoff
    res = _run(sb, "--json")
    assert res.returncode == 4, (res.returncode, res.stderr[-3000:])
    assert "cp-002's handoff is cp-001's again, section for section (the task goes round)" in res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert (summary["why"], summary["checkpoints"], summary["rotations"]) == ("needs a person", ["cp-001", "cp-002"], 1)
    recs = session_records(sb.cc_home)
    assert [r["state"] for r in recs] == ["ROTATED", "ROTATING"], [r["state"] for r in recs]  # cp-002 waits


def test_the_runner_killed_mid_chain_then_resume_goes_on_and_a_post_is_not_repeated(sandbox_factory):
    """The runner dies while its first ``claude -p`` works (after a POST); that session still hands over by
    itself (its checkpoint waits: no one starts the next); ``run --resume`` claims it, and the successor's
    POST of the same release is held: the run ends needing a person (4) and the server counted one."""
    from helpers import benchscript, leftovers

    server = benchscript.load("continuity").Counter()
    try:
        cmd = "curl -s -X POST -d 'release v1 is out' %s/notify" % server.url
        hi, lo = usage_at(ROTATE_AT), usage_at(20)

        def scenario(project):
            post = {"type": "tool_use", "name": "Bash", "input": {"command": cmd, "description": "announce"}}
            rot = progressing(rotation_scenario(project, rotations=1, task=TASK))
            rot["rules"] = [
                {"name": "again", "when": {"last_user_contains": CONTINUATION}, "times": 1,
                 "reply": [{"type": "text", "text": "Announcing again."}, post], "usage": lo,
                 "then": [{"reply": "The announcement was held; stopping here.", "usage": lo}]},
                {"name": "post", "when": {"last_user_contains": TASK}, "times": 1,
                 "reply": [{"type": "text", "text": "Announcing."}, post], "usage": hi,
                 "then": [{"reply": "Announced; ending the turn.", "usage": hi}]},
            ] + [r for r in rot["rules"] if r["name"] == "handoff"]
            return rot

        sb = installed_sandbox(sandbox_factory, scenario)
        cfg = sb.run([sys.executable, "-c", "import sys; from cc_continuity import config; "
                      "config.update_global({'effects_local_exempt': False})"], env={"PYTHONPATH": REPO_ROOT})
        assert cfg.returncode == 0, cfg.stderr
        runner = subprocess.Popen([sys.executable, "-m", "cc_continuity", "run", "--agent", "claude", "--claude",
                                   sb.claude_bin, TASK, "--", "--allowedTools", "Write,Bash"], cwd=sb.project,
                                  env=dict(sb.env(), PYTHONPATH=REPO_ROOT), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        sb.wait_for(lambda: sum(server.counts.values()) == 1, 60, what="the first session's POST")
        os.kill(runner.pid, signal.SIGKILL)  # the runner dies; its claude -p goes on by itself
        runner.wait(10)
        sb.wait_for(lambda: session_records(sb.cc_home) and session_records(sb.cc_home)[0]["state"] == "ROTATING"
                    and not [p for p in leftovers.find(sb.root) if "claude" in p[1]], 90,
                    what="the orphaned claude -p to hand over and end")
        assert len(session_records(sb.cc_home)) == 1, "no one started the next session"

        res = _run(sb, "--resume", "--json", task=None)
        assert res.returncode == 4, (res.returncode, res.stderr[-3000:])
        summary = json.loads(res.stdout.strip().splitlines()[-1])
        assert summary["why"] == "needs a person" and "already had its effect" in summary["needs"], summary
        assert summary["held"] == 1 and "1 side effect held" in res.stderr, (summary, res.stderr[-2000:])
        assert sum(server.counts.values()) == 1, server.counts
        recs = session_records(sb.cc_home)
        assert recs[0]["state"] == "ROTATED" and recs[1]["checkpoint_from"] == "cp-001"
        assert "needs_human" in recs[1].get("flags", {})
    finally:
        server.close()


def _kill_claude_when(sb, runner, ready, what):
    """SIGKILL the runner's ``claude -p`` once ``ready()`` holds (its reply held by the scripted server): no Stop,
    no SessionEnd of that process runs."""
    import psutil

    sb.wait_for(ready, 90, what=what)
    (agent,) = [p for p in psutil.Process(runner.pid).children(recursive=True) if "-p" in p.cmdline()]
    agent.kill()


@pytest.mark.parametrize("written", [True, False], ids=["handoff-written", "no-handoff"])
def test_a_claude_p_killed_before_its_handoff_was_decided_is_decided_by_the_runner(sandbox_factory, written):
    """The ``claude -p`` dies while the handoff is asked for: after the model wrote it (its next reply held) or
    before (the reply to the request held).  Its Stop never decides; the runner does, once the process is over
    (the model's handoff, else a machine one), and the successor claims it: the run ends done."""
    def scenario(project):
        rot = progressing(rotation_scenario(project, rotations=1, task=TASK))
        for rule in rot["rules"]:
            if rule["name"] == "handoff" and written:
                rule["then"][0]["delay"] = 120
            elif rule["name"] == "handoff":
                rule.update(hang=True, times=1)
        return rot

    sb = installed_sandbox(sandbox_factory, scenario)
    runner = subprocess.Popen([sys.executable, "-m", "cc_continuity", "run", "--agent", "claude", "--claude",
                               sb.claude_bin, "--json", TASK, "--", "--allowedTools", "Write,Bash"], cwd=sb.project,
                              env=dict(sb.env(), PYTHONPATH=REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def ready():
            recs = session_records(sb.cc_home) if os.path.isdir(os.path.join(sb.cc_home, "projects")) else []
            if not recs or recs[0]["state"] != "HANDOFF_REQUESTED":
                return False
            main = [r for r in sb.model.requests() if getattr(r, "kind", "main") == "main"]
            if written:  # the request after the handoff's Write (its tool result), held 120 s
                return any("Writing the handoff." in r.text for r in main)
            return any("Handoff file (absolute path)" in r.latest_text for r in main)  # the request, hung
        _kill_claude_when(sb, runner, ready, "the handoff's reply held")
        out, err = runner.communicate(timeout=240)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(10)
    err = err.decode()
    assert runner.returncode == 0, (runner.returncode, err[-3000:])
    assert "ended before its handoff was decided; the run decided it: %s" % (
        "the handoff it wrote" if written else "a machine handoff (degraded)") in err, err
    summary = json.loads(out.decode().strip().splitlines()[-1])
    assert (summary["why"], summary["rotations"], summary["degraded"]) == ("done", 1, [] if written else ["cp-001"])
    recs = session_records(sb.cc_home)
    assert [(r["state"], r.get("driver")) for r in recs] == [("ROTATED", "headless"), ("ENDED", None)], recs
    assert recs[1]["checkpoint_from"] == "cp-001" and bool(recs[0]["checkpoint"].get("degraded")) is not written


def test_a_token_budget_stops_between_two_sessions_and_counts_what_the_server_answered(sandbox_factory):
    """``--max-tokens``: the first ``claude -p`` spends more than the budget; the run stops at its checkpoint
    (exit 3, cp-001 waits) and its summary's tokens are what the scripted server answered, request by request."""
    sb = installed_sandbox(sandbox_factory, lambda p: progressing(rotation_scenario(p, rotations=3, task=TASK)))
    res = _run(sb, "--max-tokens", "100k", "--json")
    assert res.returncode == 3, (res.returncode, res.stderr[-3000:])
    assert "cp-001 waits for a successor: the run reached --max-tokens 100000" in res.stderr, res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    answered = [r.usage for r in sb.model.requests() if getattr(r, "kind", "main") == "main" and r.usage]
    want = sum(sum(u.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                           "output_tokens")) for u in answered)
    assert (summary["why"], summary["rotations"], summary["tokens"]) == ("cap", 0, want) and want > 100_000, summary
    assert "%s tokens" % format(want, ",") in res.stderr
    again = _run(sb, "--resume", task=None)
    assert again.returncode == 0, (again.returncode, again.stderr[-3000:])


def test_on_a_terminal_one_progress_line_says_the_session_its_context_rotations_time_and_last_tool(sandbox_factory):
    """stderr a terminal (a pty): while a session works, one line rewritten in place (``\\r`` + erase) with the
    session, its context, the run's rotations, the time and the last tool; event lines are written over it."""
    import pty
    import re
    import select

    def scenario(project):
        rot = progressing(rotation_scenario(project, rotations=1, task=TASK))
        for rule in rot["rules"]:
            if rule["name"] == "handoff":
                rule["delay"] = 2.5  # the session works a while after its Bash step: the line is drawn
        return rot

    sb = installed_sandbox(sandbox_factory, scenario)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "cc_continuity", "run", "--agent", "claude", "--claude",
                             sb.claude_bin, TASK, "--", "--allowedTools", "Write,Bash"], cwd=sb.project,
                            env=dict(sb.env(), PYTHONPATH=REPO_ROOT), stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the pty's other end closed: the run is over
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(60) == 0, seen[-3000:]
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    text = seen.decode("utf-8", "replace")
    lines = re.findall(r"\r\x1b\[K([^\r\n]*)", text)
    live = [x for x in lines if re.fullmatch(r"\S+-001 · ctx \d+% · 0 rotations · 0m\d\ds · Write \S+work-1.txt", x)]
    assert live, lines
    assert any("handed over cp-001" in x for x in lines) and any("run done: 2 sessions, 1 rotation" in x for x in lines)


def _limited(project, headers):
    """The rehearsal's script, but every request of the second session answered 429 (the server's limit)."""
    scenario = progressing(rotation_scenario(project, rotations=1, task=TASK))
    scenario["rules"].insert(0, {"name": "limit", "when": {"last_user_contains": CONTINUATION},
                                 "error": {"status": 429, "type": "rate_limit_error",
                                           "message": "Usage limit reached for the 5-hour window.",
                                           "headers": headers}})
    return scenario


@pytest.mark.parametrize("reset", [True, False])
def test_a_limit_the_agent_gave_up_on_ends_the_run_with_its_own_status_and_the_reset(sandbox_factory, reset):
    """Issue 40's lab replayed: the successor's requests answered 429 (with Anthropic's subscription headers, a
    reset two hours ahead; or none); Claude Code's own retries (cut to one here) spent, the run ends 6 and says
    the reset where the transcript has one."""
    import time

    at = int(time.time()) + 2 * 3600
    headers = {"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": str(at),
               "anthropic-ratelimit-unified-representative-claim": "five_hour"} if reset else {}
    sb = installed_sandbox(sandbox_factory, lambda p: _limited(p, headers))
    sb.extra_env["CLAUDE_CODE_MAX_RETRIES"] = "1"
    res = _run(sb, "--json")
    assert res.returncode == 6, (res.returncode, res.stderr[-3000:])
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    stopped = summary["stopped"]
    assert (stopped["kind"], stopped["status"]) == ("limit", 429) and "Usage limit reached" in stopped["message"]
    assert "stopped on a rate or usage limit (HTTP 429)" in res.stderr and "run stopped on a limit" in res.stderr
    if reset:
        assert stopped["resets_at"] == at and "it resets at" in res.stderr, (stopped, res.stderr[-2000:])
    else:
        assert stopped["resets_at"] is None and "no reset time recorded" in res.stderr
    limited = [r for r in sb.model.requests() if r.rule == "limit"]
    print("the successor's requests answered 429: %d (Claude Code's retries: 1)" % len(limited))
    assert len(limited) == 2
