"""``cc-continuity status --all-projects``: the fleet view across projects, built from the records.

Real sessions registered by the hook handlers (run in-process, as HookDriver.inproc does: the
same code as the hook command, minus a Python start per call) in real git repositories; the
live ones are a process named ``claude`` in a pane of a real private tmux server, detached
(no client) until a client attaches to it.  The view itself is asked through the real CLI.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from cc_continuity import session
from cc_continuity.watch import fleet, planner
from helpers.hookdriver import HookDriver, tokens_at

A1 = "a1a1a1a1-0000-4000-8000-0000000fa001"
A2 = "a2a2a2a2-0000-4000-8000-0000000fa002"
B1 = "b1b1b1b1-0000-4000-8000-0000000fb001"
B2 = "b2b2b2b2-0000-4000-8000-0000000fb002"
B3 = "b3b3b3b3-0000-4000-8000-0000000fb003"


def stand_in(server, tmp_path, name):
    """A process named ``claude`` in its own (detached) tmux session: (pane id, pid)."""
    d = tmp_path / ("bin-" + name)
    d.mkdir()
    script = d / "claude"
    script.write_text("#!/bin/sh\nsleep 300\necho over\n")
    script.chmod(0o755)
    pane, pid = server.tmux("new-session", "-d", "-s", name, "-P", "-F", "#{pane_id} #{pane_pid}", str(script)).split()
    return pane, int(pid)


def fleet_cli(*args):
    return subprocess.run([sys.executable, "-m", "cc_continuity", "status", "--all-projects", *args],
                          capture_output=True, text=True, timeout=60, cwd="/")


@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
def test_every_live_and_recent_session_across_projects_blocked_first(tmp_path, server):
    pane_a, pid_a = stand_in(server, tmp_path, "alpha")
    pane_b, pid_b = stand_in(server, tmp_path, "beta")
    tmux_env = lambda pane: dict(tmux="%s,%d,0" % (server.socket, os.getpid()), tmux_pane=pane)
    alpha = HookDriver(tmp_path / "alpha", claude_pid=pid_a, **tmux_env(pane_a))
    beta = HookDriver(tmp_path / "beta", claude_pid=pid_b, **tmux_env(pane_b))
    # alpha-001: asked for a human; alpha-002 (the same process, later): a turn in flight at 40 %.
    alpha.transcript(A2).assistant(tokens_at(20))
    alpha.inproc("SessionStart", A2, source="startup")
    alpha.inproc("UserPromptSubmit", A2, prompt="pick a database")
    alpha.inproc("Stop", A2)
    alpha.cli("signal", "needs-human", "which database?", session_id=A2)
    alpha.transcript(A1).assistant(tokens_at(40))
    alpha.inproc("SessionStart", A1, source="startup")
    alpha.inproc("UserPromptSubmit", A1, prompt="port the exporter")
    alpha.inproc("PostToolUse", A1)
    # beta-001: its process gone, ended long ago (not recent); beta-002 ended just now (recent);
    # beta-003: a handoff that never came (degraded) and no tmux for the rotator: AWAITING_MANUAL_CLEAR.
    beta.claude_pid, beta.tmux, beta.tmux_pane = 999999, None, None
    for sid in (B1, B2):
        beta.transcript(sid).assistant(tokens_at(10))
        beta.inproc("SessionStart", sid, source="startup")
        beta.inproc("SessionEnd", sid, reason="prompt_input_exit")
    old = time.time() - 3 * 86400
    os.utime(session.state_path(beta.sdir(number=1)), (old, old))
    beta.claude_pid, beta.tmux, beta.tmux_pane = pid_b, None, None
    beta.transcript(B3).assistant(tokens_at(10))
    beta.inproc("SessionStart", B3, source="startup")
    beta.inproc("UserPromptSubmit", B3, prompt="rename the tables")
    beta.transcript(B3).assistant(tokens_at(66), "Step finished.")
    assert beta.inproc("Stop", B3)["decision"] == "block"
    for _ in range(3):
        beta.inproc("Stop", B3, stop_hook_active=True)
    assert beta.state(B3)["state"] == session.AWAITING_MANUAL_CLEAR

    res = fleet_cli("--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = doc["sessions"]
    assert [r["name"] for r in rows] == ["alpha-001", "beta-003", "alpha-002", "beta-002"], rows
    by = {r["name"]: r for r in rows}
    assert by["alpha-001"]["flags"] == ["needs_human"] and fleet.rank(by["alpha-001"]) == 0
    assert by["beta-003"]["state"] == session.AWAITING_MANUAL_CLEAR and fleet.rank(by["beta-003"]) == 0
    a1 = by["alpha-002"]
    assert (a1["class"], a1["state"], a1["percent"], a1["driver"], a1["pid"]) == ("active", "ACTIVE", 40.0, "tmux",
                                                                                  pid_a)
    assert a1["pane"] == [server.socket, pane_a]
    assert a1["tmux"] == {"session": "alpha", "attached": 0, "state": "detached"}
    assert by["beta-002"]["class"] == "done" and "tmux" not in by["beta-002"]
    assert doc["recent_s"] == fleet.RECENT_S

    text = fleet_cli().stdout
    assert text.startswith("sessions on this machine: 3 open (2 blocked), 1 ended in the last 24h"), text
    line = next(l for l in text.splitlines() if l.lstrip().startswith("alpha-002"))
    assert re.search(r"alpha-002\s+claude\s+active\s+ACTIVE\s+40%%\s+tmux\s+\d+s\s+%d\s+tmux -S %s attach -t %s "
                     r"\(detached: no terminal shows it\)$" % (pid_a, re.escape(server.socket), pane_a), line), line
    assert "[NEEDS-HUMAN]" in next(l for l in text.splitlines() if "alpha-001" in l)
    assert "beta-001" not in text   # ended three days ago: not recent

    # This project's own status says so too.
    mine = alpha.cli("status").stdout
    row = next(l for l in mine.splitlines() if "alpha-002" in l)
    assert "alive detached (no terminal shows it: tmux -S %s attach -t %s)" % (server.socket, pane_a) in row, mine
    assert json.loads(alpha.cli("status", "--json").stdout)["sessions"][-1]["tmux"]["state"] == "detached"

    # A client attaches (a terminal shows it): no longer detached.  A killed pane: gone.
    if sys.platform.startswith("linux") and shutil.which("script"):   # util-linux script(1) gives it a tty
        attached_client_is_seen(server, alpha)
    server.tmux("kill-server")
    rows = {r["name"]: r for r in planner.collect_fleet()}
    assert rows["alpha-002"]["tmux"]["state"] == "gone"


def attached_client_is_seen(server, alpha):
    client = subprocess.Popen(["script", "-qfc", "%s -S %s attach -t alpha" % (server.tmux_bin, server.socket),
                               "/dev/null"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not server.tmux("list-clients", "-t", "alpha").strip():
            time.sleep(0.05)
        rows = {r["name"]: r for r in planner.collect_fleet()}
        assert rows["alpha-002"]["tmux"]["state"] == "attached" and rows["alpha-002"]["tmux"]["attached"] == 1
        assert "detached" not in alpha.cli("status").stdout
    finally:
        client.kill()
        client.wait()


def test_tmux_that_does_not_answer_is_unknown_not_an_error(tmp_path, monkeypatch):
    hang = tmp_path / "tmux"
    hang.write_text("#!/bin/sh\nexec sleep 30\n")  # one process, as tmux is: the timeout kills it
    hang.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    rows = [{"name": "x-001", "class": "active", "pane": ["/tmp/none.sock", "%1"]},
            {"name": "x-002", "class": "active", "pane": ["/tmp/none.sock", "%2"]}]
    t0 = time.monotonic()
    fleet.pane_states(rows, timeout=0.3)
    assert time.monotonic() - t0 < 2.0              # one bounded call per server, not per pane
    assert [r["tmux"]["state"] for r in rows] == ["unknown", "unknown"]


def test_rank_blocked_limited_rotating_active_waiting_done():
    rows = [{"name": "done", "class": "done", "state": "ENDED"},
            {"name": "wait", "class": "waiting", "state": "ACTIVE"},
            {"name": "act", "class": "active", "state": "ACTIVE"},
            {"name": "rot", "class": "waiting", "state": "ROTATING"},
            {"name": "lim", "class": "limited", "state": "ACTIVE"},
            {"name": "human", "class": "waiting", "state": "ACTIVE", "flags": ["needs_human"]},
            {"name": "manual", "class": "waiting", "state": "AWAITING_MANUAL_CLEAR"},
            {"name": "dead", "class": "dead", "state": "ACTIVE"}]
    assert [r["name"] for r in sorted(rows, key=fleet.sort_key)] == ["dead", "human", "manual", "lim", "rot", "act",
                                                                     "wait", "done"]


def test_columns_stay_aligned_when_a_state_is_longer_than_its_column():
    rows = [{"name": "proj-001", "class": "blocked", "state": session.AWAITING_MANUAL_CLEAR,
             "flags": {"needs_human": 1}, "percent": 64.2, "driver": "tmux", "pid": 4242},
            {"name": "a-much-longer-project-name-042", "class": "active", "state": session.ACTIVE, "percent": 7,
             "driver": "headless", "pid": 17, "host": "codex"}]
    out = []
    fleet.render(rows, time.time(), out.append)
    lines = [line.rstrip("\n") for line in out]
    assert "AWAITING_MANUAL_CLEAR [NEEDS-HUMAN]" in lines[1]
    assert " claude " in lines[1] and " codex " in lines[2]  # both agents' sessions, each named
    for column in ("AGENT", "CLASS", "STATE", "CTX", "DRIVER", "MOVED", "PID"):
        at = lines[0].index(column)
        for line, row in zip(lines[1:], rows):
            # every row's cell starts (CTX: ends) where its header does
            if column == "CTX":
                end = at + len("CTX")
                assert line[end - 1] == "%", (column, lines)
            else:
                assert line[at - 1] == " " and line[at] != " ", (column, lines)
