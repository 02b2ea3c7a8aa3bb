"""The model server probe: a real HTTP stand-in on 127.0.0.1 that goes down, hangs, lies, and comes back."""

import errno
import http.server
import json
import socket
import threading
import time

import pytest

from cc_continuity import config
from cc_continuity.watch import Settings
from cc_continuity.watch.probe import (DEGRADED, DOWN, UNKNOWN, UP, ProbeResult, Prober, ProgressJudge,
                                       ServerState, parse_metric)


class ModelServer:
    """A vLLM-shaped stand-in: ``/health``, ``/metrics``, ``/v1/completions``.

    Modes: ``up``; ``down`` (the port refuses connections); ``hang`` (accepts,
    never answers); ``zombie`` (``/health`` says 200 but no token is ever
    produced: the metrics counter is frozen and completions hang); ``error``
    (503).  ``busy`` is the ``vllm:num_requests_running`` gauge; while up and
    busy, every metrics scrape shows 7 more tokens.
    """

    def __init__(self):
        self.mode = "up"
        self.busy = 0
        self.tokens = 1000
        self.hits = []
        self.release = threading.Event()
        self.port = 0
        self.httpd = None
        self._listen()

    def _listen(self):
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self, status, body, ctype="text/plain"):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stall(self):
                owner.release.wait(30)
                self.close_connection = True

            def do_GET(self):
                owner.hits.append(("GET", self.path, owner.mode))
                mode = owner.mode
                if mode == "hang":
                    return self._stall()
                if mode == "error":
                    return self._answer(503, "engine unavailable")
                if self.path.startswith("/health"):
                    return self._answer(200, "")
                if self.path.startswith("/metrics"):
                    if mode == "up" and owner.busy:
                        owner.tokens += 7
                    return self._answer(200, owner.metrics())
                return self._answer(404, "no")

            def do_POST(self):
                owner.hits.append(("POST", self.path, owner.mode))
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if owner.mode in ("hang", "zombie"):
                    return self._stall()
                if owner.mode == "error":
                    return self._answer(503, "engine unavailable")
                assert body.get("max_tokens") == 1
                return self._answer(200, json.dumps({"choices": [{"text": "!", "index": 0}]}),
                                    "application/json")

            def log_message(self, *a):
                pass

        deadline = time.monotonic() + 5
        while True:
            try:
                self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
                break
            except OSError as e:  # the old socket of this very port, still closing
                if e.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def _close(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def metrics(self):
        return ("# HELP vllm:iteration_tokens_total Histogram of tokens per engine step.\n"
                "# TYPE vllm:iteration_tokens_total histogram\n"
                'vllm:iteration_tokens_total_bucket{le="1.0",model_name="m"} 3\n'
                'vllm:iteration_tokens_total_count{model_name="m"} %d\n'
                'vllm:iteration_tokens_total_sum{model_name="m"} %d\n'
                'vllm:num_requests_running{model_name="m"} %d\n' % (self.tokens, self.tokens * 3, self.busy))

    def url(self, path="/health"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def set(self, mode):
        """Switch mode; ``down`` really closes the port, leaving it reopens the same port."""
        if self.mode == "hang" or self.mode == "zombie":
            self.release.set()
            self.release = threading.Event()
        if mode == "down":
            self._close()
        elif self.httpd is None:
            self._listen()
        self.mode = mode

    def stop(self):
        self.release.set()
        self._close()


@pytest.fixture
def model_server():
    srv = ModelServer()
    try:
        yield srv
    finally:
        srv.stop()


def settings(server, **kw):
    kw.setdefault("health_url", server.url("/health"))
    kw.setdefault("probe_timeout", 0.3)
    kw.setdefault("grace", 0.4)
    return Settings(**kw)


# -- pure parts ---------------------------------------------------------------


def test_defaults_follow_the_production_policy():
    s = Settings.from_config(config.load(None))
    assert (s.probe_timeout, s.fail_threshold, s.grace) == (10, 3, 120)
    assert s.progress_metric == "vllm:iteration_tokens_total"
    assert not s.probing
    config.update_global({"watchdog_health_url": "http://127.0.0.1:9/health", "watchdog_interval_s": 0.05})
    s = Settings.load()
    assert s.probing and s.interval == 0.05 and s.health_url.endswith("/health")


def test_parse_metric_reads_prometheus_text():
    page = ModelServer.metrics(type("S", (), {"tokens": 41, "busy": 2})())
    assert parse_metric(page, "vllm:iteration_tokens_total") == 41          # falls back to _count
    assert parse_metric(page, "vllm:num_requests_running") == 2
    assert parse_metric(page, "vllm:iteration_tokens_total_sum") == 123
    two = 'c_total{a="1"} 5\nc_total{a="2"} 7.5\nc_totalx 100\n# c_total 9\n'
    assert parse_metric(two, "c_total") == 12.5                              # label sets summed, no prefix clash
    assert parse_metric("c 1e3\n", "c") == 1000
    assert parse_metric("nothing here\n", "c") is None
    assert parse_metric('c{a="}"} 1\n', "c") is None                         # malformed: skipped, not misread


def test_progress_judge_only_fails_a_busy_server_whose_counter_stands_still():
    j = ProgressJudge()
    assert j.judge(10, busy=False, now=0, grace=60)[0]
    assert j.judge(10, busy=False, now=500, grace=60)[0]           # idle all night: fine
    assert j.judge(10, busy=True, now=530, grace=60)[0]            # busy for 30 s: not yet
    ok, why = j.judge(10, busy=True, now=561, grace=60)
    assert not ok and "stuck at 10" in why and "61s" in why
    assert j.judge(17, busy=True, now=562, grace=60) == (True, "+7")
    assert j.judge(None, busy=True, now=563, grace=60) == (False, "metric missing")


def result(at, ok, health="HTTP 200"):
    return ProbeResult(at=at, ok=ok, ms=1, health=health if ok else "refused")


def test_state_machine_counts_consecutive_failures_and_records_the_outage():
    s = ServerState(fail_threshold=3)
    assert s.observe(result(0, True)) == (UNKNOWN, UP)
    assert s.observe(result(10, False)) == (UP, DEGRADED)
    assert s.observe(result(20, True)) == (DEGRADED, UP)             # one blip is not an outage
    assert s.outages == []
    assert s.observe(result(30, False)) == (UP, DEGRADED)
    assert s.observe(result(40, False)) is None
    assert s.observe(result(50, False)) == (DEGRADED, DOWN)
    assert s.open_outage() == [30, None]                               # down *from the first failure*
    assert s.observe(result(60, False)) is None
    assert s.observe(result(95, True)) == (DOWN, UP)
    assert s.last_outage() == [30, 95] and (s.state, s.since) == (UP, 95) and s.failures == 0
    again = ServerState.from_json(json.loads(json.dumps(s.to_json())), 3)
    assert (again.state, again.since, again.outages) == (UP, 95, [[30, 95]])
    assert ServerState.from_json({"state": "bogus", "outages": "x"}).state == UNKNOWN


def test_threshold_one_goes_down_at_once_and_outages_stay_bounded():
    s = ServerState(fail_threshold=1)
    for i in range(40):
        assert s.observe(result(i * 10, False)) == ((UNKNOWN if i == 0 else UP), DOWN)
        assert s.observe(result(i * 10 + 5, True)) == (DOWN, UP)
    assert len(s.outages) == 16 and s.outages[-1] == [390, 395]


# -- against the real stand-in ---------------------------------------------------


def test_health_probe_up_down_hang_and_back(model_server):
    p = Prober(settings(model_server))
    r = p.probe()
    assert r.ok and r.health == "HTTP 200"

    model_server.set("down")
    r = p.probe()
    assert not r.ok and r.health == "refused"

    model_server.set("hang")                      # accepts, never answers: the deadline must hold
    t0 = time.monotonic()
    r = p.probe()
    took = time.monotonic() - t0
    assert not r.ok and r.health == "timeout after 0.3s"
    assert 0.25 < took < 1.5

    model_server.set("error")
    r = p.probe()
    assert not r.ok and r.health == "HTTP 503"

    model_server.set("up")
    assert p.probe().ok


def test_a_200_from_health_is_not_proof_of_life(model_server):
    s = settings(model_server, progress_url=model_server.url("/metrics"))
    p = Prober(s)
    model_server.busy = 1
    assert p.probe(now=100.0).ok                      # first reading
    r = p.probe(now=100.2)
    assert r.ok and r.progress == "+7"
    model_server.set("zombie")                        # health still 200, but no tokens any more
    r = p.probe(now=100.3)
    assert r.ok and r.health == "HTTP 200"           # within the grace
    r = p.probe(now=100.7)
    assert not r.ok and r.health == "HTTP 200" and r.progress.startswith("stuck at")
    model_server.busy = 0                              # nothing to do: a still counter is fine
    assert p.probe(now=101.0).ok
    model_server.set("up")
    model_server.busy = 1
    assert p.probe(now=101.1).ok


def test_without_the_busy_gauge_open_turns_mean_work(model_server, monkeypatch):
    monkeypatch.setattr(ModelServer, "metrics", lambda self: "vllm:iteration_tokens_total_count %d\n" % self.tokens)
    p = Prober(settings(model_server, progress_url=model_server.url("/metrics")))
    model_server.set("zombie")
    assert p.probe(now=0.0, work_expected=True).ok
    assert p.probe(now=5.0, work_expected=False).ok   # no session waits for the model
    assert p.probe(now=5.2, work_expected=True).ok
    assert not p.probe(now=5.6, work_expected=True).ok


def test_one_token_completion_probe(model_server):
    s = settings(model_server, health_url=None, progress_url=model_server.url("/v1/completions"),
                 progress_model="stand-in")
    p = Prober(s)
    r = p.probe()
    assert r.ok and r.progress == "1 token" and r.health is None
    assert model_server.hits[-1] == ("POST", "/v1/completions", "up")
    model_server.set("zombie")
    t0 = time.monotonic()
    r = p.probe()
    assert not r.ok and r.progress == "timeout after 0.3s" and time.monotonic() - t0 < 1.5


def test_probe_results_drive_the_state_machine_end_to_end(model_server):
    p = Prober(settings(model_server))
    s = ServerState(fail_threshold=2)
    seen = []
    for mode in ("up", "down", "down", "down", "hang", "up", "up"):
        model_server.set(mode)
        change = s.observe(p.probe())
        seen.append(s.state)
        assert change is None or change[1] == s.state
    assert seen == [UP, DEGRADED, DOWN, DOWN, DOWN, UP, UP]
    start, end = s.last_outage()
    assert 0 < end - start < 5


def test_unreachable_host_is_a_failure_not_a_crash():
    with socket.socket() as sock:       # a port that is bound but never listens: refused
        sock.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d/health" % sock.getsockname()[1]
        r = Prober(Settings(health_url=url, probe_timeout=0.3)).probe()
    assert not r.ok and r.health == "refused" and r.detail == "health refused"
