"""The watchdog daemon end to end: a real model-server stand-in, real tmux panes with a stand-in claude,
real hooks registering the sessions, the daemon as its own process; time compressed through the config."""

import email.header
import http.server
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from cc_continuity import config, ledger, paths, session
from cc_continuity.lock import is_held
from cc_continuity.watch import Settings, ledger_path, pid_path, state_path
from cc_continuity.watch.planner import nudge_text
from cc_continuity.watch.daemon import Daemon, load_state, rotate_ledger
from test_plan_and_act import start_claude_pane
from test_liveness import Session, reap, spawn_claude, wait_for
from test_probe import ModelServer

HAS_TMUX = __import__("shutil").which("tmux") is not None
needs_tmux = pytest.mark.skipif(not HAS_TMUX, reason="needs tmux")
NUDGE_RE = re.compile(r"^\[cc-continuity watchdog\] Your last turn stopped because the model server was down from "
                      r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d to \d\d:\d\d:\d\d UTC \(\d+s\)\. It is back up now, so please "
                      r"continue where you left off\. Server log: ")


def _decode(header):
    """ntfy titles travel RFC 2047-encoded when they are not ASCII."""
    return str(email.header.make_header(email.header.decode_header(header or "")))


class Ntfy:
    """Records the pushes the daemon's flushers deliver."""

    def __init__(self):
        got = self.got = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                got.append({"title": _decode(self.headers.get("Title")), "priority": self.headers.get("Priority"),
                            "body": body})
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = "http://127.0.0.1:%d/cc-watchdog-test" % self.httpd.server_address[1]

    def titles(self):
        return [g["title"] for g in self.got]

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def ntfy():
    n = Ntfy()
    yield n
    # Let the detached flushers deliver what is queued, so none lingers retrying after the test.
    wait_for(lambda: not [f for f in (os.listdir(paths.spool_dir()) if os.path.isdir(paths.spool_dir()) else [])
                          if f.endswith(".json")], timeout=10)
    n.stop()


@pytest.fixture
def model_server():
    srv = ModelServer()
    yield srv
    srv.stop()


class Watchdog:
    """``cc-continuity watchdog run`` as its own process."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "cc_continuity", "watchdog", "run"], cwd="/",
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        assert wait_for(lambda: ((load_state() or {}).get("daemon") or {}).get("pid") == self.proc.pid
                        or self.proc.poll() is not None, timeout=15)
        assert self.proc.poll() is None, self.proc.stderr.read()

    def status(self):
        return load_state()["status"]

    def session(self, name):
        return next(r for r in self.status()["sessions"] if r["name"] == name)

    def wait(self, cond, timeout=10.0):
        got = wait_for(lambda: self.proc.poll() is None and cond(), timeout=timeout, step=0.03)
        assert got, "condition not met; watchdog stderr: %s" % (self.proc.stderr.read() if self.proc.poll() is not None
                                                                 else "(running)")
        return got

    def terminate(self, timeout=5):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return code, self.proc.stderr.read()


def configure(**kw):
    base = {"watchdog_interval_s": 0.05, "watchdog_probe_timeout_s": 0.3, "watchdog_fail_threshold": 2,
            "watchdog_grace_s": 0.4, "watchdog_stall_s": 60, "watchdog_exit_hang_s": 0.3,
            "watchdog_max_actions": 2, "watchdog_backoff_s": 0.5}
    base.update(kw)
    config.update_global(base)


def records(ev=None):
    return [r for r in ledger.read(ledger_path()) if ev is None or r.get("ev") == ev]


def wait_pushes(ntfy, want, timeout=10):
    """Wait until the recorder holds a push whose title contains each of ``want`` (in any order)."""
    return wait_for(lambda: all(any(w in t for t in ntfy.titles()) for w in want), timeout=timeout)


# -- the outage scenario ----------------------------------------------------------------


@needs_tmux
@pytest.mark.parametrize("failure", ["down", "hang", "zombie"])
def test_a_turn_frozen_by_an_outage_is_nudged_with_why_once_the_server_is_back(
        failure, git_repo, isolated_home, tmp_path, model_server, server, ntfy):
    run, pid = start_claude_pane(server, str(tmp_path / "pane"))
    s = Session(git_repo, isolated_home, pid, tmux=(server.socket, run.pane_id))
    s.prompt()                                            # mid-turn: the prompt is in, no Stop yet
    log = tmp_path / "vllm.log"
    log.write_text("INFO ok\nERROR EngineCore died: CUDA error; HF_TOKEN=hf_" + "Ab3dEf6hIj" * 4 + "\n")
    extra = {}
    if failure == "zombie":                              # /health says 200 while no token is produced
        model_server.busy = 1
        extra = {"watchdog_progress_url": model_server.url("/metrics")}
    configure(watchdog_health_url=model_server.url("/health"), watchdog_digest_file=str(log),
              ntfy_url=ntfy.url, **extra)
    wd = Watchdog()
    try:
        wd.wait(lambda: wd.status()["server"]["state"] == "UP" and wd.session(s.name)["class"] == "active")
        down_at = time.time()
        model_server.set(failure)
        wd.wait(lambda: wd.status()["server"]["state"] == "DOWN")
        assert run.submitted() == []                                       # never while the server is down
        time.sleep(0.3)
        model_server.set("up")
        up_at = time.time()
        first = run.wait_events(1, timeout=10)
        assert first, "no nudge arrived"
        assert first[0]["t"] >= up_at + 0.4 - 0.05                       # only after the grace
        start, end = wd.status()["server"]["outages"][-1]
        assert down_at - 0.1 <= start <= end <= up_at + 0.5
        line = first[0]["line"]
        assert NUDGE_RE.match(line), line
        assert line.startswith(nudge_text(start, end))
        assert line.endswith("Server log: INFO ok | ERROR EngineCore died: CUDA error; "
                             "HF_TOKEN=[REDACTED:huggingface-token]")
        # Nothing makes the turn resume (the stand-in fires no hooks), yet that outage had its nudge:
        # none follows after the backoff (0.5 s) nor later.
        time.sleep(2.0)
        assert len(run.submitted()) == 1
        row = wd.session(s.name)
        assert row["class"] == "stalled" and row["counts"] == {"nudge": 1}
        assert row["last_action"]["kind"] == "nudge" and row["last_action"]["outcome"] == "done"
        assert wait_pushes(ntfy, ["model server down", "model server up", "session nudged"]), ntfy.titles()

        second = subprocess.run([sys.executable, "-m", "cc_continuity", "watchdog", "run"], capture_output=True,
                                text=True, timeout=20, cwd="/")
        assert second.returncode == 0
        assert "already running (pid %d)" % wd.proc.pid in second.stderr
    finally:
        code, err = wd.terminate()
    assert code == 0, err
    assert not is_held(pid_path())
    ok, bad, why = ledger.verify(ledger_path())
    assert ok, why
    evs = [r["ev"] for r in records()]
    assert evs[0] == "start" and evs[-1] == "stop" and "probe" in evs
    assert [(r["from"], r["to"]) for r in records("server")][:3] == [("UNKNOWN", "UP"), ("UP", "DEGRADED"),
                                                                     ("DEGRADED", "DOWN")]
    nudges = [r for r in records("action") if r["kind"] == "nudge" and r["outcome"] == "done"]
    assert len(nudges) == 1 and all(r["pid"] == pid for r in nudges)
    probes = records("probe")
    assert any(not r["ok"] for r in probes) and probes[-1]["ok"]
    if failure == "zombie":
        assert any(r["health"] == "HTTP 200" and not r["ok"] and "stuck" in r["progress"] for r in probes)
    if failure == "hang":
        assert any(r["health"] == "timeout after 0.3s" for r in probes)


# -- kills hit only the right pid ----------------------------------------------------------------


IGNORES_SIGTERM = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)\n"


def test_a_process_hung_on_exit_is_killed_and_nothing_else_is(git_repo, isolated_home, tmp_path, ntfy):
    hung_proc = spawn_claude(tmp_path, IGNORES_SIGTERM)
    live_proc = spawn_claude(tmp_path)
    cleared_proc = spawn_claude(tmp_path)
    crashed_proc = spawn_claude(tmp_path)
    doomed = spawn_claude(tmp_path)
    sleeper = subprocess.Popen(["sleep", "120"])
    recycled = None
    try:
        hung = Session(git_repo, isolated_home, hung_proc.pid)
        hung.prompt()
        hung.stop()
        hung.end()                                    # SessionEnd seen, but the process never exits
        live = Session(git_repo, isolated_home, live_proc.pid)
        live.prompt()
        cleared = Session(git_repo, isolated_home, cleared_proc.pid)
        successor = cleared.clear()                   # same process carries on as the successor
        not_claude = Session(git_repo, isolated_home, sleeper.pid)
        not_claude.end()                              # its pid is a `sleep`, not Claude
        reused = Session(git_repo, isolated_home, doomed.pid)
        reused.end()
        reap(doomed)                                   # its pid goes to a newer claude process:
        time.sleep(0.8)
        recycled = spawn_claude(tmp_path)
        rec = reused.record()
        rec["pid"] = recycled.pid
        session.save(reused.sdir, rec)
        crashed = Session(git_repo, isolated_home, crashed_proc.pid)
        crashed.prompt()
        reap(crashed_proc)                            # dead mid-turn

        configure(ntfy_url=ntfy.url)
        wd = Watchdog()
        try:
            assert hung_proc.wait(timeout=10) == -signal.SIGKILL      # SIGTERM ignored, then SIGKILL
            wd.wait(lambda: wd.session(crashed.name)["counts"] == {"push_dead": 1})
            time.sleep(1.0)                                            # plenty of cycles for any mistake
        finally:
            code, err = wd.terminate()
        assert code == 0, err
        for p in (live_proc, cleared_proc, sleeper, recycled):
            assert p.poll() is None, [(r["kind"], r["pid"], r["name"]) for r in records("action")]
        acts = [r for r in records("action") if r["kind"] in ("terminate", "kill")]
        assert [(r["kind"], r["pid"], r["outcome"]) for r in acts] == [
            ("terminate", hung_proc.pid, "done"), ("kill", hung_proc.pid, "done")]
        classes = {r["name"]: r["class"] for r in load_state()["status"]["sessions"]}
        assert classes == {hung.name: "done", live.name: "active", cleared.name: "done", successor.name: "waiting",
                           not_claude.name: "done", reused.name: "done", crashed.name: "dead"}
        assert wait_pushes(ntfy, ["session killed", "session dead"])
        assert sorted(t for t in ntfy.titles() if "killed" in t or "dead" in t) == sorted(
            ["cc-continuity · %s · session killed" % hung.name] * 2 + ["cc-continuity · %s · session dead" % crashed.name])

        # A restart (what a service manager does) repeats nothing: the counters were saved.
        before = len(records("action"))
        wd = Watchdog()
        try:
            wd.wait(lambda: load_state()["daemon"]["cycles"] >= 10)
        finally:
            code, _ = wd.terminate()
        assert code == 0 and len(records("action")) == before
    finally:
        reap(hung_proc, live_proc, cleared_proc, crashed_proc, doomed, sleeper, *([recycled] if recycled else []))


# -- escalation and the status verb --------------------------------------------------------------


@needs_tmux
def test_a_turn_frozen_with_the_server_up_is_interrupted_and_pushed_urgently(
        git_repo, isolated_home, tmp_path, model_server, server, ntfy):
    prompt = "Frozen task: rename the exporter"
    run, pid = start_claude_pane(server, str(tmp_path / "pane"), "--busy-start", "600",
                                 escape="restore:" + prompt)                 # hung before anything streamed
    s = Session(git_repo, isolated_home, pid, tmux=(server.socket, run.pane_id))
    s.hook("UserPromptSubmit", prompt=prompt)
    configure(watchdog_health_url=model_server.url("/health"), watchdog_stall_s=0.8, watchdog_max_actions=1,
              ntfy_url=ntfy.url)
    wd = Watchdog()
    try:
        got = run.wait_events(1, timeout=10)
        assert [e["ev"] for e in run.events()] == ["escape", "submit"]
        assert got[0]["line"] == prompt                                   # the interrupted turn, resubmitted
        time.sleep(1.0)
        assert len(run.submitted()) == 1 and run.raw_bytes().count(b"\x1b") == 1
        out = subprocess.run([sys.executable, "-m", "cc_continuity", "watchdog", "status"], capture_output=True,
                             text=True, timeout=20, cwd="/")
        assert out.returncode == 0
        assert "watchdog: running (pid %d" % wd.proc.pid in out.stdout
        assert re.search(r"model server: UP since \d+s ago", out.stdout)
        row = re.search(r"^  %s\s+claude\s+stalled\s+ACTIVE\s+-\s+tmux\s+\d+[smh]\s+%d\s+tmux -S %s attach -t %s"
                        r" \(detached: no terminal shows it\)\n"
                        r"\s+last: escalate done [^;]*; next: (.*)$" % (s.name, pid, re.escape(server.socket),
                                                                       run.pane_id), out.stdout, re.M)
        assert row, out.stdout
        assert "escalate cap reached" in row.group(1)
        js = json.loads(subprocess.run([sys.executable, "-m", "cc_continuity", "watchdog", "status", "--json"],
                                       capture_output=True, text=True, timeout=20, cwd="/").stdout)
        assert js["daemon"]["running"] and js["server"]["state"] == "UP"
        row = js["sessions"][0]
        assert row["class"] == "stalled" and row["next"]["escalate"] is None          # capped
        assert row["next"]["nudge"] <= js["at"] + 1                                   # unused: allowed now
    finally:
        code, _ = wd.terminate()
    assert code == 0
    assert wait_pushes(ntfy, ["session frozen, escalated"]), ntfy.titles()
    urgent = [g for g in ntfy.got if "escalated" in g["title"]]
    assert urgent[0]["priority"] == "5" and "frozen turn" in urgent[0]["body"]
    after = subprocess.run([sys.executable, "-m", "cc_continuity", "watchdog", "status"], capture_output=True,
                           text=True, timeout=20, cwd="/")
    assert "watchdog: NOT running (last state saved" in after.stdout


# -- in-process pieces --------------------------------------------------------------------------


def test_one_instance_at_a_time_and_sigterm_is_clean(isolated_home):
    configure()
    first = Daemon(Settings.load(), watch_transcripts=False)
    t = threading.Thread(target=first.run, kwargs={"out": io.StringIO()})
    t.start()
    try:
        assert wait_for(lambda: first.cycles >= 3)
        out = io.StringIO()
        assert Daemon(Settings.load(), watch_transcripts=False).run(out=out) == 0
        assert "already running (pid %d)" % os.getpid() in out.getvalue()
    finally:
        first.stop()
        t.join(5)
    assert not t.is_alive() and not is_held(pid_path())
    assert [r["ev"] for r in records()][-1] == "stop"
    assert oct(os.stat(state_path()).st_mode & 0o777) == "0o600"
    assert oct(os.stat(os.path.dirname(state_path())).st_mode & 0o777) == "0o700"


def test_run_once_from_the_cli(isolated_home, capsys):
    from cc_continuity import cli

    configure()
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["watchdog", "run", "--once"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before                # handlers restored
    err = capsys.readouterr().err
    assert "one cycle as pid %d" % os.getpid() in err and "every" not in err, err  # it does not go on
    assert [r["ev"] for r in records()] == ["start", "stop"]
    assert load_state()["daemon"]["cycles"] == 1 and not is_held(pid_path())


def test_sigterm_while_a_probe_hangs_still_stops_within_the_probe_timeout(isolated_home, model_server):
    model_server.set("hang")
    configure(watchdog_health_url=model_server.url("/health"), watchdog_probe_timeout_s=1.0)
    wd = Watchdog()
    wd.wait(lambda: any(not r["ok"] for r in records("probe")))
    t0 = time.monotonic()
    code, _ = wd.terminate(timeout=10)
    assert code == 0 and time.monotonic() - t0 < 3


def test_config_changes_are_picked_up_and_a_broken_edit_is_survived(isolated_home, model_server):
    configure()
    d = Daemon(reload=True, watch_transcripts=False)
    d.cycle()
    assert records("probe") == []                                   # no URL yet: no probing
    config.update_global({"watchdog_health_url": model_server.url("/health")})
    d.cycle()
    assert records("probe")[-1]["ok"] and d.brain.server.state == "UP"
    with open(paths.config_file(), "w") as f:
        f.write('{"watchdog_interval_s": "soon"')                    # half-written / broken
    d.cycle()
    assert d.settings.health_url == model_server.url("/health")      # kept the last good settings
    assert records("config_error")


def test_a_failing_cycle_is_logged_once_and_the_loop_goes_on(isolated_home):
    configure()
    d = Daemon(Settings.load(), watch_transcripts=False)
    real = d.scanner.scan
    calls = {"n": 0}

    def flaky(now=None):
        calls["n"] += 1
        if calls["n"] <= 3:
            raise PermissionError(13, "Permission denied", "/somewhere/projects")
        return real(now)

    d.scanner.scan = flaky
    assert d.run(max_cycles=6, out=io.StringIO()) == 0
    errors = records("cycle_error")
    assert len(errors) == 1 and "Permission denied" in errors[0]["error"]
    assert calls["n"] == 6 and [r["ev"] for r in records()][-1] == "stop"


def test_ledger_rotates_and_every_generation_verifies(isolated_home, tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    rotated = []
    for i in range(60):
        ledger.append(path, {"ev": "probe", "i": i, "pad": "x" * 200})
        new = rotate_ledger(path, max_bytes=2000, keep=2)
        if new:
            rotated.append(new)
    assert rotated
    left = sorted(f for f in os.listdir(tmp_path) if f.endswith(".jsonl"))
    assert len(left) == 3 and "ledger.jsonl" in left             # the live one plus two generations
    for name in left:
        ok, _, why = ledger.verify(str(tmp_path / name))
        assert ok, (name, why)


def test_deterministic_cycle_with_an_injected_clock(git_repo, isolated_home, tmp_path, model_server):
    claude = spawn_claude(tmp_path)
    try:
        s = Session(git_repo, isolated_home, claude.pid)
        s.prompt()
        now = {"t": time.time()}
        settings = Settings(health_url=model_server.url("/health"), probe_timeout=0.3, fail_threshold=1,
                            grace=5, stall=100, interval=1)
        pushes = []
        d = Daemon(settings, clock=lambda: now["t"], push_fn=lambda *a, **k: pushes.append(a) or True,
                   watch_transcripts=False)
        assert d.cycle() == []
        assert d.brain.sessions[next(iter(d.brain.sessions))]["class"] == "active"
        model_server.set("down")
        now["t"] += 1
        done = d.cycle()
        assert [(a.kind, a.event, o) for a, o, _ in done] == [("push_server", "server-down", "done")]
        model_server.set("up")
        now["t"] += 1
        d.cycle()
        now["t"] += 5                                 # the grace: no pane recorded, so the nudge fails, once
        done = d.cycle()
        assert [(a.kind, o, det) for a, o, det in done] == [("nudge", "failed", "no tmux pane recorded")]
        now["t"] += 0.5
        assert d.cycle() == []                        # backoff
        assert [p[0] for p in pushes] == ["server-down", "server-up"]
    finally:
        reap(claude)


# -- a rotation that stopped: ROTATING / AWAITING_MANUAL_CLEAR past the threshold --------------------


@needs_tmux
@pytest.mark.parametrize("state", ["ROTATING", "AWAITING_MANUAL_CLEAR"])
def test_a_stuck_rotation_is_pushed_urgently_and_retried_once_from_its_saved_plan(
        state, git_repo, isolated_home, tmp_path, server, ntfy):
    from cc_continuity.rotation import handover
    from cc_continuity.project import Project

    wd_dir = tmp_path / "pane"

    def wired(sdir):   # the stand-in writes the markers the successor's hooks would
        return ["--started-marker", handover.started_marker(sdir), "--delivered-marker",
                handover.delivered_marker(sdir)]

    # Register first (the session dir decides the marker paths), then start the wired stand-in.
    probe, ppid = start_claude_pane(server, str(tmp_path / "probe"), session="probe")
    s = Session(git_repo, isolated_home, ppid, tmux=(server.socket, probe.pane_id))
    sdir = s.sdir
    # The work session comes up before the probe goes: a server left with no session exits, and a
    # new-session reaching it while it does fails with "server exited unexpectedly".
    run, pid = start_claude_pane(server, str(wd_dir), *wired(sdir), session="work")
    server.tmux("kill-session", "-t", "probe")
    rec = session.load(sdir)
    rec.update(pid=pid, tmux_pane=run.pane_id)
    session.save(sdir, rec)
    s.hook("UserPromptSubmit", prompt="Rotation task: keep a work log")
    time.sleep(0.01)
    s.stop()
    rec = session.load(sdir)
    for dst in ("HANDOFF_REQUESTED", "CHECKPOINT_VERIFIED", "ROTATING"):
        session.transition(sdir, rec, dst, "test", checkpoint={"id": "cp-001"})
    plan = handover.plan(rec, sdir, config.load(None), "repo-002", Project.discover(str(git_repo)).lock_path)
    assert plan["claude_pid"] == pid and plan["pane"] == run.pane_id
    plan["timeouts"].update(quiet_s=0, idle_s=10, marker_s=5, delivery_s=5)
    os.makedirs(os.path.join(sdir, "checkpoint"), exist_ok=True)
    with open(os.path.join(sdir, "checkpoint", "rotator-plan.json"), "w") as f:
        json.dump(plan, f)
    dead = subprocess.Popen(["true"])
    dead.wait()
    rec["rotator_pid"] = dead.pid                     # the rotator that was spawned is gone
    session.save(sdir, rec)
    if state == "AWAITING_MANUAL_CLEAR":
        session.transition(sdir, rec, state, "rotator failed: the user kept typing for 120s")

    configure(watchdog_rotation_stuck_s=0.6, watchdog_quiet_s=0, ntfy_url=ntfy.url)
    wd = Watchdog()
    try:
        got = run.wait_events(2, timeout=30)
        assert [e["line"] for e in got] == ["/clear", plan["continuation"]]
        time.sleep(2.0)                               # still ROTATING (no real successor): not retried again
        assert len(run.submitted()) == 2
        retries = [r for r in records("action") if r["kind"] == "rotation_stuck"]
        assert [(r["outcome"], r["state"]) for r in retries][:1] == [("done", state)]
        # Our retry made a new stay in ROTATING (the stand-in has no successor to end it): pushed, never
        # retried a second time.
        assert all(r["outcome"] == "skipped" and re.match(
            r"not retried: (already retried once|its rotator \(pid \d+\) is still running)$", r["detail"])
            for r in retries[1:]), retries
        assert len(retries) == (2 if state == "AWAITING_MANUAL_CLEAR" else 1)
        assert re.match(r"rotation retried \(rotator pid \d+\)$", retries[0]["detail"])
        assert session.load(sdir)["state"] == "ROTATING"
        assert session.load(sdir)["rotator_pid"] == int(re.search(r"pid (\d+)", retries[0]["detail"]).group(1))
        steps = [r["step"] for r in ledger.read(session.ledger_path(sdir)) if r.get("ev") == "rotator"]
        assert steps[0] == "begin" and "clear_sent" in steps and "continuation_sent" in steps
        assert [r["from"] for r in ledger.read(session.ledger_path(sdir))
                if r.get("ev") == "watchdog_retry_rotation"] == [state]
    finally:
        code, err = wd.terminate()
    assert code == 0, err
    assert wait_pushes(ntfy, ["rotation stuck"]), ntfy.titles()
    push = next(g for g in ntfy.got if "rotation stuck" in g["title"])
    assert push["priority"] == "5" and ("stuck in %s for" % state) in push["body"] and len(push["body"]) <= 200
    assert "Rotation task" not in json.dumps(ntfy.got)


@needs_tmux
def test_a_stuck_rotation_is_not_retried_when_the_session_was_used_since(git_repo, isolated_home, tmp_path,
                                                                        server, ntfy):
    from cc_continuity.rotation import handover
    from cc_continuity.project import Project

    run, pid = start_claude_pane(server, str(tmp_path / "pane"))
    s = Session(git_repo, isolated_home, pid, tmux=(server.socket, run.pane_id))
    s.hook("UserPromptSubmit", prompt="Rotation task")
    time.sleep(0.01)
    s.stop()
    sdir = s.sdir
    rec = session.load(sdir)
    for dst in ("HANDOFF_REQUESTED", "CHECKPOINT_VERIFIED", "ROTATING", "AWAITING_MANUAL_CLEAR"):
        session.transition(sdir, rec, dst, "test", checkpoint={"id": "cp-001"})
    plan = handover.plan(rec, sdir, config.load(None), "repo-002", Project.discover(str(git_repo)).lock_path)
    os.makedirs(os.path.join(sdir, "checkpoint"), exist_ok=True)
    with open(os.path.join(sdir, "checkpoint", "rotator-plan.json"), "w") as f:
        json.dump(plan, f)
    time.sleep(0.01)
    s.hook("UserPromptSubmit", prompt="the user carried on in this session")
    s.stop()
    configure(watchdog_rotation_stuck_s=0.3, watchdog_quiet_s=0, ntfy_url=ntfy.url)
    wd = Watchdog()
    try:
        wd.wait(lambda: any(r["kind"] == "rotation_stuck" for r in records("action")))
        time.sleep(1.0)
    finally:
        code, err = wd.terminate()
    assert code == 0, err
    acts = [(r["outcome"], r["detail"]) for r in records("action") if r["kind"] == "rotation_stuck"]
    assert acts == [("skipped", "not retried: the session was used after the rotation stopped")]
    assert run.submitted() == [] and session.load(sdir)["state"] == "AWAITING_MANUAL_CLEAR"
    assert wait_pushes(ntfy, ["rotation stuck"]), ntfy.titles()
    body = next(g for g in ntfy.got if "rotation stuck" in g["title"])["body"]
    assert "type /clear in the session" in body
