"""The watchdog brings a real Claude Code session back: the real binary, the real daemon, real servers.

Each test runs Claude Code (``CLAUDE_CODE_MAX_RETRIES=1``: it gives up on a dead
server in about 1.5 s) in the sandbox's tmux, against the scripted model as a
process of its own on 127.0.0.1 (so it can be SIGKILLed and restarted on the
same port, or restarted by the watchdog's power-cycle command), with
cc-continuity installed by its own installer and ``cc-continuity watchdog
run`` as a child process.  The intervals are the defaults divided by 60
(``SCALED``), except the probe deadline (1 s, not 0.17 s: this machine has 2
shared cores) and the quiet time before typing (a person's, 1 s).  Pushes go
to a recorder standing in for the phone.

What the issue saw before the fixes, and what each test proves now:

1. server killed mid-turn, restarted on the same port: the nudge was never
   typed (the dim ``Resend your message to try again`` placeholder read as
   user text).  Now the failed turn is recorded (StopFailure), the nudge reaches
   the model as a prompt once the server is back, exactly once, and the next
   turn runs;
2. a server that accepts and never answers, ``/health`` only: Escape abandoned
   the hung request, the prompt came back into the box, nothing was sent and
   Escape was pressed again later on the idle pane.  Now the prompt that
   Escape put back is resubmitted, once, and the idle session is left alone;
3. the same hang with the progress probe: DOWN by a frozen metrics counter,
   the power-cycle command (a real restart of the server) runs exactly once,
   and the session carries on (Claude Code's retry, or the nudge);
4. the user's text in the box during the outage: kept, the nudge deferred,
   delivered once the box is empty.

``CC_E2E_REPEAT=10`` repeats each test; ``CC_E2E_METRICS=<file>`` collects the
timings (UP -> the nudge's model request).
"""

import email.header
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cc_continuity import ledger
from cc_continuity.rehearse import MODEL
from cc_continuity.rehearse.scripted_model import Request
from cc_continuity.tmux import Pane
from cc_continuity.watch.planner import PREFIX

from .common import Continuity, prompt, report_metrics
from .harness import REPO_ROOT

pytestmark = pytest.mark.e2e

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from helpers.ntfy import Ntfy  # noqa: E402

SCALE = 60
SCALED = {                                  # the defaults / 60
    "watchdog_interval_s": 15 / SCALE,
    "watchdog_grace_s": 120 / SCALE,
    "watchdog_stall_s": 600 / SCALE,
    "watchdog_backoff_s": 300 / SCALE,
    "watchdog_exit_hang_s": 30 / SCALE,
    "watchdog_power_cycle_after_s": 900 / SCALE,
    "watchdog_rotation_stuck_s": 900 / SCALE,
    "watchdog_fail_threshold": 3,
    "watchdog_max_actions": 3,
    "watchdog_probe_timeout_s": 1.0,
    "watchdog_quiet_s": 1.0,
}
SECRET = "hf_" + "Qx7Lm2Np9Rs4" * 3
DIGEST = "echo 'INFO engine restarted after OOM'; echo 'HF_TOKEN=%s'" % SECRET
PLACEHOLDER = "Resend your message to try again"
MAX_RETRIES_1 = {"CLAUDE_CODE_MAX_RETRIES": "1"}


# -- the pieces: the model server as a process, the daemon, the pushes ---------------------------------


class ModelProcess:
    """``python -m cc_continuity.rehearse.scripted_model`` as its own process: killed for real, restarted on its port.

    Its request log (JSONL) is the record; several lives of the server append to the same file.
    ``power_cycle_command()`` is a shell command that does what a power cycle does to a server
    that hangs: SIGKILL it and start it again on the same port (with the scenario ``after``).
    """

    def __init__(self, root, scenario, after=None):
        self.root = root
        self.scenario = os.path.join(root, "scenario.json")
        self.after = os.path.join(root, "scenario-after.json")
        for path, doc in ((self.scenario, scenario), (self.after, after or scenario)):
            with open(path, "w") as f:
                json.dump(doc, f)
        self.log = os.path.join(root, "model.jsonl")
        self.pid_file = os.path.join(root, "model.pid")
        self.port = None
        self.lives = []

    def _argv(self, scenario):
        return [sys.executable, "-m", "cc_continuity.rehearse.scripted_model", scenario, "--port", str(self.port or 0),
                "--log", self.log]

    def start(self, scenario=None):
        proc = subprocess.Popen(self._argv(scenario or self.scenario), stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=REPO_ROOT),
                                start_new_session=True)
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        self.port = int(url.rsplit(":", 1)[1])
        with open(self.pid_file, "w") as f:
            f.write(str(proc.pid))
        self.lives.append(proc)
        return self

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def pid(self):
        with open(self.pid_file) as f:
            return int(f.read().strip())

    def kill(self):
        """SIGKILL: every connection drops, nothing more is answered."""
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        for proc in self.lives:
            if proc.pid == pid:
                proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def power_cycle_command(self):
        py, scen = sys.executable, self.after
        return ("kill -9 $(cat %(pid)s) && sleep 0.3 && "
                "(PYTHONPATH=%(repo)s %(py)s -m cc_continuity.rehearse.scripted_model %(scen)s --port %(port)d --log %(log)s "
                ">/dev/null 2>&1 </dev/null & echo $! > %(pid)s)"
                % {"pid": self.pid_file, "repo": REPO_ROOT, "py": py, "scen": scen, "port": self.port,
                   "log": self.log})

    def stop(self):
        try:
            os.kill(self.pid(), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        for proc in self.lives:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)

    def requests(self, kind="main"):
        out = []
        try:
            with open(self.log, encoding="utf-8") as f:
                for line in f:
                    if line.endswith("\n"):
                        d = json.loads(line)
                        out.append(Request(**{k: d.get(k) for k in ("seq", "time", "method", "path", "headers",
                                                                     "body", "kind", "session_id", "rule", "reply",
                                                                     "usage", "status")}))
        except FileNotFoundError:
            pass
        return [r for r in out if kind is None or r.kind == kind]

    def wait_for(self, predicate, timeout, what="a request"):
        deadline = time.monotonic() + timeout
        while True:
            hit = next((r for r in self.requests() if predicate(r)), None)
            if hit is not None:
                return hit
            if time.monotonic() > deadline:
                raise TimeoutError("no %s within %ss; seen: %s" % (
                    what, timeout, [(r.rule, r.status, r.latest_text[:60]) for r in self.requests()[-6:]]))
            time.sleep(0.05)


class WatchdogProcess:
    """``cc-continuity watchdog run`` of this checkout, as a child process with the sandbox's environment."""

    def __init__(self, sb):
        self.sb = sb
        self.out = open(os.path.join(sb.root, "watchdog.out"), "wb")
        env = dict(sb.env(), PYTHONPATH=REPO_ROOT)
        self.proc = subprocess.Popen([sys.executable, "-m", "cc_continuity", "watchdog", "run"], cwd="/", env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        sb.wait_for(lambda: self.proc.poll() is not None or self.state().get("daemon", {}).get("pid") == self.proc.pid,
                    20, what="the watchdog to start")
        assert self.proc.poll() is None, self.output()

    def output(self):
        with open(os.path.join(self.sb.root, "watchdog.out"), encoding="utf-8", errors="replace") as f:
            return f.read()

    def state(self):
        try:
            with open(os.path.join(self.sb.cc_home, "watchdog", "state.json"), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def records(self, ev=None, **match):
        recs = ledger.read(os.path.join(self.sb.cc_home, "watchdog", "ledger.jsonl"))
        return [r for r in recs if (ev is None or r.get("ev") == ev) and all(r.get(k) == v for k, v in match.items())]

    def actions(self, kind=None, outcome=None):
        return [r for r in self.records("action") if (kind is None or r["kind"] == kind)
                and (outcome is None or r["outcome"] == outcome)]

    def server_change(self, to, after=0.0):
        """The first change of the server to ``to`` recorded after ``after`` (waits for it)."""
        return self.sb.wait_for(lambda: [r for r in self.records("server", to=to) if r["ts"] > after], 60,
                                interval=0.02, what="the watchdog to see the server %s" % to)[0]

    def session_class(self, name):
        rows = ((self.state().get("status") or {}).get("sessions")) or []
        return next((r.get("class") for r in rows if r.get("name") == name), None)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return self.proc.returncode


@pytest.fixture
def ntfy():
    n = Ntfy().start()
    yield n
    n.stop()


@pytest.fixture
def rig(tmp_path, sandbox_factory, ntfy):
    """``make(scenario, after=None, extra=None) -> (sb, model, watchdog)``, all torn down after;
    ``extra(model)`` gives more config once the model server's port is known."""
    made = []

    def make(scenario, after=None, extra=None):
        model = ModelProcess(str(tmp_path), scenario, after).start()
        made.append(model)
        sb = sandbox_factory(model=model, model_name=MODEL, extra_env=MAX_RETRIES_1)
        r = sb.cli("install", "--no-wrapper")
        assert r.returncode == 0, r.stdout + r.stderr
        settings = dict(SCALED, ntfy_url=ntfy.url, watchdog_health_url=model.url + "/health",
                        watchdog_digest_command=DIGEST)
        settings.update(extra(model) if extra else {})
        r = sb.run([sys.executable, "-c", "import json, sys; from cc_continuity import config; "
                                          "config.update_global(json.loads(sys.argv[1]))", json.dumps(settings)],
                   env={"PYTHONPATH": REPO_ROOT})
        assert r.returncode == 0, r.stderr
        sb.start_claude()
        wd = WatchdogProcess(sb)
        made.append(wd)
        return sb, model, wd

    yield make
    for thing in reversed(made):
        code = thing.stop()
        if isinstance(thing, WatchdogProcess):
            assert code == 0, thing.output()    # SIGTERM stops it cleanly


def typed_prompts(model):
    """Main requests whose newest input is a prompt typed by the watchdog."""
    return [r for r in model.requests() if PREFIX in r.latest_text and r.status == 200]


def assert_pushes_clean(ntfy, *forbidden):
    for req in ntfy.requests:
        assert len(req["body"]) <= 200, req
        for text in forbidden + (SECRET,):
            assert text not in req["body"] and text not in json.dumps(req["headers"]), req


def title(req):
    """A push's title (ntfy titles travel RFC 2047-encoded when they are not ASCII)."""
    raw = req["headers"].get("Title", "")
    return str(email.header.make_header(email.header.decode_header(raw)))


def push_titles(ntfy):
    return [title(r) for r in ntfy.requests]


def wait_pushes(sb, ntfy, *labels):
    return sb.wait_for(lambda: all(any(label in t for t in push_titles(ntfy)) for label in labels), 30,
                       what="pushes %s (got %s)" % (labels, push_titles(ntfy)))


def load():
    return round(os.getloadavg()[0], 2)


# -- 1. the server is killed mid-turn and comes back on the same port ------------------------------------

TASK_KILL = "Outage task: write the exporter"


def outage_scenario(task):
    return {"rules": [   # the nudge's request also holds the task (no reply came in between): it goes first
        {"name": "resumed", "when": {"last_user_contains": PREFIX}, "reply": "Carrying on after the outage."},
        {"name": "work", "when": {"last_user_contains": task}, "reply": "Working on it.", "delay": 90},
    ]}


def kill_mid_turn(sb, model, wd, task):
    """Submit ``task``, kill the server while its request is in flight; the failed turn, seen DOWN."""
    cont = Continuity(sb)
    prompt(sb, task)
    model.wait_for(lambda r: r.rule == "work", 30, what="the task's request")
    model.kill()
    cont.killed = time.time()
    failure = cont.wait_event(1, "stop_failure", timeout=30)
    down = wd.server_change("DOWN")
    pane = Pane(sb.socket, sb.pane)
    screen = sb.wait_for(lambda: (lambda s: s if PLACEHOLDER in s else None)(pane.capture()), 20,
                         what="the API error placeholder")
    assert Pane.input_text(screen) == ""                   # the placeholder is not text in the box
    return cont, failure, down, pane


def test_a_turn_killed_with_the_server_gets_one_nudge_once_it_is_back_and_carries_on(rig, ntfy,
                                                                                     claude_bin_version):
    sb, model, wd = rig(outage_scenario(TASK_KILL))
    cont, failure, down, pane = kill_mid_turn(sb, model, wd, TASK_KILL)
    assert failure["error"] == "server_error"
    sb.wait_for(lambda: wd.session_class("project-001") == "failed", 10, what="the session classed failed")
    time.sleep(1.0)
    assert typed_prompts(model) == []                      # nothing typed while the server is down

    model.start()                                          # the same port
    restarted = time.time()
    up = wd.server_change("UP", after=down["ts"])
    nudge = model.wait_for(lambda r: PREFIX in r.latest_text, 30, what="the nudge's model request")
    sb.wait_for(lambda: [s for s in cont.events(1, "stop") if s["ts"] > nudge.time], 30,
                what="the nudged turn to end (Stop)")
    text = nudge.latest_text
    assert "Your last turn stopped because the model server was down from" in text
    assert "Server log: INFO engine restarted after OOM | HF_TOKEN=[REDACTED" in text and SECRET not in text
    assert nudge.rule == "resumed"
    time.sleep(3 * SCALED["watchdog_grace_s"])              # time enough for a second nudge, if there were one
    assert len(typed_prompts(model)) == 1
    assert [p["text"].startswith(PREFIX) for p in cont.events(1, "prompt")] == [False, True]
    assert [(a["outcome"]) for a in wd.actions("nudge")] == ["done"]
    assert [a["outcome"] for a in wd.actions("push_failed")] == ["done"]
    assert wd.session_class("project-001") == "waiting"
    wait_pushes(sb, ntfy, "model server down", "model server up", "turn failed", "session nudged")
    assert_pushes_clean(ntfy, TASK_KILL, "exporter")
    report_metrics("watchdog-kill", {"version": claude_bin_version, "load": load(),
                                     "kill_to_stop_failure_ms": round((failure["ts"] - cont.killed) * 1000),
                                     "kill_to_down_ms": round((down["ts"] - cont.killed) * 1000),
                                     "restart_to_up_ms": round((up["ts"] - restarted) * 1000),
                                     "up_to_nudge_request_ms": round((nudge.time - up["ts"]) * 1000)})


# -- 2. the server accepts and never answers; /health keeps saying 200 -------------------------------------

TASK_HANG = "Hang task: index the archive"


def hang_scenario(task):
    return {"rules": [
        {"name": "stuck", "when": {"last_user_contains": task}, "hang": True, "times": 1},
        {"name": "answered", "when": {"last_user_contains": task}, "reply": "Indexed, after the retry."},
    ]}


def test_a_request_that_never_answers_is_interrupted_and_its_prompt_resubmitted_once(rig, ntfy,
                                                                                    claude_bin_version):
    sb, model, wd = rig(hang_scenario(TASK_HANG))
    cont = Continuity(sb)
    prompt(sb, TASK_HANG)
    hung = model.wait_for(lambda r: r.rule == "stuck", 30, what="the hung request")
    again = model.wait_for(lambda r: r.rule == "answered", 60, what="the resubmitted prompt's request")
    sb.wait_for(lambda: [s for s in cont.events(1, "stop") if s["ts"] > again.time], 30, what="its Stop")
    waited = again.time - hung.time
    assert SCALED["watchdog_stall_s"] <= waited <= SCALED["watchdog_stall_s"] + 10, waited
    assert TASK_HANG in again.latest_text and PREFIX not in again.latest_text     # the turn itself, again
    esc = wd.actions("escalate")
    assert [(a["outcome"], a.get("escaped")) for a in esc] == [("done", True)]
    assert esc[0]["detail"] == "interrupted and resubmitted the turn's prompt (%d chars)" % len(TASK_HANG)
    # Idle now: never escalated again, however long it stays idle.
    time.sleep(SCALED["watchdog_stall_s"] + 2 * SCALED["watchdog_backoff_s"])
    assert len(wd.actions("escalate")) == 1 and wd.actions("nudge") == []
    assert [p["text"] for p in cont.events(1, "prompt")] == [TASK_HANG, TASK_HANG]
    assert len([r for r in model.requests() if TASK_HANG in r.latest_text]) == 2
    assert wd.session_class("project-001") == "waiting"
    assert wd.records("server", to="DOWN") == []            # /health only: it never looked down
    wait_pushes(sb, ntfy, "session frozen, escalated")
    urgent = [r for r in ntfy.requests if "escalated" in title(r)]
    assert urgent[0]["headers"].get("Priority") == "5"
    assert_pushes_clean(ntfy, TASK_HANG, "archive")
    report_metrics("watchdog-hang-health", {"version": claude_bin_version, "load": load(),
                                            "hung_to_resubmit_ms": round(waited * 1000)})


def test_a_hung_engine_behind_a_healthy_health_url_is_power_cycled_once_and_the_session_carries_on(
        rig, ntfy, claude_bin_version):
    healthy = {"rules": [
        {"name": "resumed", "when": {"last_user_contains": PREFIX}, "reply": "Carrying on after the restart."},
        {"name": "answered", "when": {"last_user_contains": TASK_HANG}, "reply": "Indexed, after the restart."},
    ]}
    sb, model, wd = rig(hang_scenario(TASK_HANG), after=healthy, extra=lambda m: {
        "watchdog_progress_url": m.url + "/metrics", "watchdog_power_cycle_command": m.power_cycle_command(),
        "watchdog_power_cycle_after_s": 2.0})
    cont = Continuity(sb)
    prompt(sb, TASK_HANG)
    hung = model.wait_for(lambda r: r.rule == "stuck", 30, what="the hung request")
    down = wd.server_change("DOWN")
    stuck = [p for p in wd.records("probe") if not p["ok"]]
    assert stuck and stuck[0]["health"] == "HTTP 200" and "stuck at" in stuck[0]["progress"]
    sb.wait_for(lambda: wd.records("power_cycle_done"), 30, what="the power cycle to finish")
    up = wd.server_change("UP", after=down["ts"])
    answered = model.wait_for(lambda r: r.time > up["ts"] - 5 and r.rule in ("answered", "resumed"), 60,
                              what="the session's next request after the restart")
    sb.wait_for(lambda: [s for s in cont.events(1, "stop") if s["ts"] > answered.time], 30, what="its Stop")
    time.sleep(3 * SCALED["watchdog_grace_s"])
    assert [a["outcome"] for a in wd.actions("power_cycle")] == ["done"]
    assert len(wd.records("power_cycle_done")) == 1
    assert wd.actions("escalate") == []
    by = "nudge" if answered.rule == "resumed" else "claude code's own retry"
    assert len(typed_prompts(model)) == (1 if by == "nudge" else 0)
    assert [a["outcome"] for a in wd.actions("nudge")] == (["done"] if by == "nudge" else [])
    assert wd.session_class("project-001") == "waiting"
    wait_pushes(sb, ntfy, "model server down", "model server power-cycled", "model server up")
    assert_pushes_clean(ntfy, TASK_HANG, "archive")
    report_metrics("watchdog-hang-progress", {
        "version": claude_bin_version, "load": load(), "resumed_by": by,
        "hung_to_down_ms": round((down["ts"] - hung.time) * 1000),
        "up_to_next_request_ms": round((answered.time - up["ts"]) * 1000)})


# -- 4. the user types in the box while the server is down -------------------------------------------------

USER_TEXT = "check the disk on the gpu box first"


def test_text_typed_during_the_outage_is_kept_and_the_nudge_waits_for_an_empty_box(rig, ntfy,
                                                                                  claude_bin_version):
    sb, model, wd = rig(outage_scenario(TASK_KILL))
    cont, failure, down, pane = kill_mid_turn(sb, model, wd, TASK_KILL)
    kb = sb.keyboard()
    kb.type(USER_TEXT, cps=14)                              # a person, at a person's speed; no Enter
    sb.wait_for(lambda: Pane.input_text(pane.capture()) == USER_TEXT, 10, what="the user's text in the box")
    model.start()
    up = wd.server_change("UP", after=down["ts"])
    deferred = sb.wait_for(lambda: [a for a in wd.actions("nudge", "deferred")
                                    if a["detail"] == "text typed in the prompt box"], 30,
                           what="the nudge deferred")
    time.sleep(4 * SCALED["watchdog_grace_s"])              # many cycles: the text stays, nothing is typed
    assert Pane.input_text(pane.capture()) == USER_TEXT
    assert typed_prompts(model) == [] and wd.actions("nudge", "done") == []
    assert len(wd.actions("nudge", "deferred")) == 1        # logged once, not every cycle

    cleared = time.time()
    kb.press(b"\x15")                                       # the user empties the box (C-u) ...
    sb.wait_for(lambda: Pane.input_text(pane.capture()) == "", 10, what="an empty box")
    nudge = model.wait_for(lambda r: PREFIX in r.latest_text, 30, what="the nudge's model request")
    sb.wait_for(lambda: [s for s in cont.events(1, "stop") if s["ts"] > nudge.time], 30, what="its Stop")
    time.sleep(3 * SCALED["watchdog_grace_s"])
    assert len(typed_prompts(model)) == 1 and [a["outcome"] for a in wd.actions("nudge", "done")] == ["done"]
    for r in model.requests(kind=None):                     # the user's text never went anywhere
        assert USER_TEXT not in json.dumps(r.body or {})
    assert all(USER_TEXT not in p["text"] for p in cont.events(1, "prompt"))
    assert_pushes_clean(ntfy, TASK_KILL, USER_TEXT)
    report_metrics("watchdog-user-text", {"version": claude_bin_version, "load": load(),
                                          "deferred_after_up_ms": round((deferred[0]["ts"] - up["ts"]) * 1000),
                                          "cleared_to_nudge_request_ms": round((nudge.time - cleared) * 1000)})
