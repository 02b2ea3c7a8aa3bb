"""ntfy pushes against a real HTTP server on 127.0.0.1: delivery, spooling, retries, redaction."""

import email.header
import json
import os
import stat
import subprocess
import sys
import time

import psutil
import pytest

from cc_continuity import cli, config, notify, paths
from helpers.ntfy import Ntfy

GH_TOKEN = "ghp_" + "Fake0Token1" * 3 + "abc"          # 36 chars after the prefix
AWS_KEY = "AKIA" + "FAKE0EXAMPLE1234"
NTFY_TOKEN = "tk_" + "fake0token1fake2token3fake4xx"


@pytest.fixture
def ntfy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = Ntfy()
    yield server
    server.stop()


def our_flushers():
    """Flusher processes of this test: right command line and this test's private state dir."""
    home = paths.home()
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "cc_continuity.notify" in " ".join(proc.info["cmdline"] or ()) \
                    and proc.environ().get("CC_CONTINUITY_HOME") == home:
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


@pytest.fixture(autouse=True)
def reap_flushers():
    """Kill, by pid, any flusher a test left behind (a keeper waits minutes to retry)."""
    yield
    procs = our_flushers()
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass

    def gone(proc):
        try:
            return proc.status() == psutil.STATUS_ZOMBIE  # dead; reaping is its parent's job
        except psutil.Error:
            return True

    assert wait_until(lambda: all(gone(p) for p in procs), timeout=5)


@pytest.fixture(params=["requests", "stdlib"])
def transport(request, monkeypatch):
    """Each delivery test twice: with requests, and where the flusher's Python has none (urllib)."""
    if request.param == "stdlib":
        monkeypatch.setitem(sys.modules, "requests", None)  # `import requests` raises ImportError
    return request.param


def configure(url, token=None, events=None):
    changes = {"ntfy_url": url, "ntfy_token": token}
    if events is not None:
        changes["notify_events"] = events
    config.update_global(changes)


def title_of(req):
    return str(email.header.make_header(email.header.decode_header(req["headers"]["Title"])))


def spool_files():
    return notify.spooled()


def read_spool(path):
    with open(path) as f:
        return json.load(f)


def notify_log():
    try:
        with open(os.path.join(paths.logs_dir(), "notify.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_until(cond, timeout=15.0):
    deadline = time.time() + timeout
    while not cond() and time.time() < deadline:
        time.sleep(0.02)
    return cond()


# --- message shape -------------------------------------------------------------

def test_message_carries_slug_session_ratio_reason_and_host():
    m = notify.format_message("rotation-pending", slug="demo", session=3, ratio=0.634,
                              text="handoff requested at turn end", host="mbp")
    assert m == {
        "event": "rotation-pending",
        "title": "cc-continuity · demo-003 · rotation pending",
        "body": "handoff requested at turn end\ndemo-003 · ctx 63% · mbp",
        "priority": 3,
        "tags": ["hourglass"],
    }


def test_a_session_of_another_agent_cli_is_named_in_the_body():
    m = notify.format_message("rotation-complete", slug="demo", session=3, ratio=0.1, text="cp-003 claimed",
                              host="mbp", agent="Gemini CLI")
    assert m["body"] == "cp-003 claimed\ndemo-003 · ctx 10% · Gemini CLI · mbp"


def test_ratio_may_be_given_as_a_fraction_or_a_percentage():
    for ratio in (0.634, 63.4):
        assert "ctx 63%" in notify.format_message("context-warning", slug="p", ratio=ratio, host="h")["body"]
    assert "ctx" not in notify.format_message("context-warning", slug="p", host="h")["body"]


def test_urgent_events_get_priority_five_and_others_less():
    urgent = {e for e in notify.EVENTS if notify.format_message(e, slug="p")["priority"] == 5}
    assert urgent == {"blocked", "lifecycle-failed", "session-dead", "server-down", "session-escalated",
                      "session-stuck"}
    # Callers may write names with underscores.
    assert notify.format_message("rotation_complete", slug="p")["event"] == "rotation-complete"
    with pytest.raises(ValueError, match="unknown notification event"):
        notify.format_message("bogus", slug="p")


def test_body_is_capped_at_200_and_only_the_first_line_of_a_reason_is_used():
    reason = "y" * 500 + "\nSECOND LINE must never be pushed"
    m = notify.format_message("done", slug="a-rather-long-project-slug", session=12, ratio=0.5, text=reason,
                              host="host")
    assert len(m["body"]) == 200
    assert "SECOND LINE" not in m["body"]
    assert m["body"].endswith("…\na-rather-long-project-slug-012 · ctx 50% · host")
    assert len(notify.format_message("done", slug="s" * 400, text="r" * 400)["body"]) <= 200
    assert len(notify.format_message("done", slug="s" * 400)["title"]) <= notify.TITLE_MAX


def test_api_has_no_way_to_pass_a_prompt():
    with pytest.raises(TypeError):
        notify.emit("done", slug="p", prompt="please refactor everything")
    with pytest.raises(TypeError):
        notify.format_message("done", slug="p", prompt="x")


def test_secrets_are_redacted_before_cutting():
    m = notify.format_message("blocked", slug="demo", session=1, text="push failed with %s and %s" % (GH_TOKEN, AWS_KEY))
    assert GH_TOKEN not in json.dumps(m) and AWS_KEY not in json.dumps(m)
    assert "[REDACTED:github-pat]" in m["body"] and "[REDACTED:aws-access-key-id]" in m["body"]
    # A secret straddling the 200-char cut must not leave a visible prefix behind.
    m = notify.format_message("blocked", slug="demo", text="z" * 150 + " " + GH_TOKEN)
    assert "ghp_" not in m["body"]


# --- emit: caller side ------------------------------------------------------------

def test_emit_without_a_configured_url_does_nothing():
    assert notify.emit("blocked", slug="demo", session=1, text="x") is False
    assert not os.path.exists(paths.spool_dir())
    assert our_flushers() == []


def test_emit_respects_the_event_selection(ntfy):
    ntfy.start()
    configure(ntfy.url, events=["urgent", "done"])
    assert notify.emit("rotation_complete", slug="demo", session=2) is False
    assert notify.emit("done", slug="demo", session=2, text="shipped") is True
    assert notify.emit("server_down", slug="demo", text="refused") is True
    reqs = ntfy.wait_for(2)
    assert sorted(title_of(r) for r in reqs) == ["cc-continuity · demo · model server down",
                                                 "cc-continuity · demo-002 · task done"]


def test_emit_delivers_through_the_detached_flusher_with_exact_headers(ntfy):
    ntfy.start()
    configure(ntfy.url, token=NTFY_TOKEN)
    assert notify.emit("blocked", slug="demo", session=7, ratio=0.58, text="which DB should I migrate?",
                       host="devbox") is True
    reqs = ntfy.wait_for(1)
    assert len(reqs) == 1
    req = reqs[0]
    assert req["method"] == "POST" and req["path"] == "/cc-demo-topic"
    assert title_of(req) == "cc-continuity · demo-007 · BLOCKED, needs you"
    assert req["headers"]["Priority"] == "5"
    assert req["headers"]["Tags"] == "rotating_light"
    assert req["headers"]["Authorization"] == "Bearer " + NTFY_TOKEN
    assert req["body"] == "which DB should I migrate?\ndemo-007 · ctx 58% · devbox"
    assert wait_until(lambda: not spool_files())
    assert stat.S_IMODE(os.stat(paths.spool_dir()).st_mode) == 0o700
    assert wait_until(lambda: "sent event=blocked server=127.0.0.1:%d attempts=1" % ntfy.port in notify_log())


def test_emit_returns_fast_without_network_even_when_the_server_is_down(ntfy, tmp_path):
    configure(ntfy.url)  # bound, not listening: connection refused
    # The property, asserted directly: no socket is connected while emit runs (a wall-clock bound alone
    # failed once at 0.83 s for a first call on a loaded CI machine, with no network involved).
    script = (
        "import json, socket, sys, time\n"
        "from cc_continuity import notify\n"
        "connects = []\n"
        "real = socket.socket.connect\n"
        "socket.socket.connect = lambda self, addr: (connects.append(repr(addr)), real(self, addr))[1]\n"
        "times = []\n"
        "for i in range(3):\n"
        "    t = time.perf_counter(); ok = notify.emit('lifecycle-failed', slug='demo', session=i, text='snapshot failed')\n"
        "    times.append(time.perf_counter() - t)\n"
        "print(json.dumps({'ok': ok, 'times': times, 'requests': 'requests' in sys.modules, 'connects': connects}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    res = json.loads(out.stdout)
    assert res["ok"] is True
    assert res["requests"] is False, "the caller must not even import requests"
    assert res["connects"] == [], "emit connected a socket: %s" % res["connects"]
    # Milliseconds once warm; the first call (its imports, the flusher's fork) well below any network timeout.
    assert min(res["times"]) < 0.05 and max(res["times"]) < 1.5, res["times"]
    assert ntfy.requests == []
    # Spooled, not lost: every message is still there (or being retried) and none was raised.
    assert len(spool_files()) == 3
    for path in spool_files():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_emit_never_puts_secrets_on_the_wire_or_in_the_spool(ntfy):
    configure(ntfy.url)  # down at first: the message waits in the spool
    notify.emit("lifecycle_failed", slug="demo", session=1, text="git push: bad credentials %s / %s" % (GH_TOKEN, AWS_KEY))
    assert wait_until(lambda: [read_spool(p)["attempts"] for p in spool_files()] == [1])
    raw = open(spool_files()[0]).read()
    assert GH_TOKEN not in raw and AWS_KEY not in raw
    ntfy.start()
    for _ in range(200):  # the emitted flusher may still be releasing its lock
        stats = notify.flush(now=time.time() + notify.BACKOFF_BASE + 1)
        if not stats["busy"]:
            break
        time.sleep(0.02)
    assert stats["sent"] == 1
    wire = json.dumps(ntfy.requests)
    assert GH_TOKEN not in wire and AWS_KEY not in wire
    assert "[REDACTED:github-pat]" in ntfy.requests[0]["body"]
    assert "[REDACTED:aws-access-key-id]" in ntfy.requests[0]["body"]
    assert GH_TOKEN not in notify_log() and AWS_KEY not in notify_log()


# --- flush: delivery side ------------------------------------------------------------

def spool_one(ntfy, event="done", token=None, now=None, text="all green"):
    msg = notify.format_message(event, slug="demo", session=4, ratio=0.61, text=text, host="box")
    return notify.spool(msg, ntfy.url, token, now=now)


def test_server_down_keeps_the_message_and_delivers_when_it_is_back(ntfy, transport):
    t0 = time.time()
    path = spool_one(ntfy, now=t0)
    stats = notify.flush(now=t0)
    assert stats["retry"] == 1 and stats["sent"] == 0
    rec = read_spool(path)
    assert rec["attempts"] == 1 and rec["next_at"] == pytest.approx(t0 + notify.BACKOFF_BASE)
    assert rec["last_error"] == "cannot connect"
    assert notify.flush(now=t0 + 5)["waiting"] == 1  # not due yet: no request at all
    ntfy.start()
    assert notify.flush(now=t0 + 5)["sent"] == 0 and ntfy.requests == []
    stats = notify.flush(now=t0 + notify.BACKOFF_BASE + 1)
    assert stats["sent"] == 1
    assert [r["body"] for r in ntfy.requests] == ["all green\ndemo-004 · ctx 61% · box"]
    assert spool_files() == []


def test_slow_server_costs_one_timeout_and_the_messages_stay_spooled(ntfy, transport):
    ntfy.delay = 30
    ntfy.start()
    t0 = time.time()
    first = spool_one(ntfy, now=t0)
    second = spool_one(ntfy, now=t0 + 0.001, text="second")
    started = time.monotonic()
    stats = notify.flush(now=t0 + 1, timeout=1.0)
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, "one timeout, not one per message"
    assert stats == {"sent": 0, "retry": 1, "dropped": 0, "deferred": 1, "waiting": 0, "busy": False}
    assert len(ntfy.requests) == 1
    assert read_spool(first)["last_error"] == "no answer within 1s"
    assert read_spool(first)["attempts"] == 1
    assert read_spool(second)["attempts"] == 0  # deferred, not counted as a failure
    assert read_spool(second)["next_at"] == read_spool(first)["next_at"]


def test_500_is_retried_with_bounded_backoff_then_dropped_and_logged(ntfy, transport):
    ntfy.status = 500
    ntfy.start()
    t0 = time.time()
    path = spool_one(ntfy, token=NTFY_TOKEN, now=t0, text="secret-free reason")
    now, gaps = t0, []
    for attempt in range(1, notify.MAX_ATTEMPTS + 1):
        stats = notify.flush(now=now)
        assert len(ntfy.requests) == attempt
        if attempt < notify.MAX_ATTEMPTS:
            assert stats["retry"] == 1
            nxt = read_spool(path)["next_at"]
            gaps.append(round(nxt - now))
            now = nxt
    assert gaps == [10, 20, 40, 80, 160, 320, 600]  # doubling, capped at BACKOFF_CAP
    assert stats["dropped"] == 1 and spool_files() == []
    logged = notify_log()
    assert "gave up after %d attempts, last: HTTP 500" % notify.MAX_ATTEMPTS in logged
    for leak in (NTFY_TOKEN, "cc-demo-topic", "secret-free reason", "demo-004"):
        assert leak not in logged
    assert notify.flush(now=now + 10000)["sent"] == 0 and len(ntfy.requests) == notify.MAX_ATTEMPTS


def test_4xx_is_dropped_at_once_but_429_waits_for_retry_after(ntfy, transport):
    ntfy.status = 403
    ntfy.start()
    t0 = time.time()
    spool_one(ntfy, now=t0)
    assert notify.flush(now=t0)["dropped"] == 1
    assert spool_files() == [] and "HTTP 403" in notify_log()
    ntfy.status = 429
    ntfy.headers = {"Retry-After": "120"}
    path = spool_one(ntfy, now=t0)
    assert notify.flush(now=t0)["retry"] == 1
    assert read_spool(path)["next_at"] == pytest.approx(t0 + 120)


def test_stale_and_corrupt_messages_are_dropped_without_a_request(ntfy):
    ntfy.start()
    t0 = time.time()
    spool_one(ntfy, now=t0 - notify.MAX_AGE - 1)
    bad = os.path.join(paths.spool_dir(), "00000000000000000001-1-abcdef.json")
    with open(bad, "w") as f:
        f.write("{not json")
    with open(bad.replace("-1-", "-2-"), "w") as f:
        f.write('{"url": 1, "title": "t", "body": "b", "created": "yesterday", "next_at": 0, "attempts": 0}')
    stats = notify.flush(now=t0)
    assert stats["dropped"] == 3 and ntfy.requests == [] and spool_files() == []
    assert "expired" in notify_log() and "unreadable spool file" in notify_log()


def test_a_second_flusher_returns_at_once(ntfy):
    from cc_continuity.lock import Lock

    ntfy.start()
    spool_one(ntfy)
    with Lock(os.path.join(paths.spool_dir(), "flush.lock")):
        t = time.monotonic()
        assert notify.flush()["busy"] is True
        assert time.monotonic() - t < 0.5
    assert ntfy.requests == [] and len(spool_files()) == 1


def test_oldest_message_goes_first(ntfy):
    ntfy.start()
    t0 = time.time()
    for i in range(3):
        spool_one(ntfy, now=t0 + i, text="message %d" % i)
    assert notify.flush(now=t0 + 5)["sent"] == 3
    assert [r["body"].split("\n")[0] for r in ntfy.requests] == ["message 0", "message 1", "message 2"]


def test_notify_flush_verb_delivers_the_spool(ntfy, capsys):
    ntfy.start()
    spool_one(ntfy)
    assert cli.main(["notify-flush"]) == 0
    assert "sent 1" in capsys.readouterr().out
    assert len(ntfy.requests) == 1 and spool_files() == []


def test_a_redirect_is_dropped_and_never_followed_with_the_token(ntfy, transport):
    ntfy.status = 302
    ntfy.headers = {"Location": "http://127.0.0.1:%d/elsewhere" % ntfy.port}
    ntfy.start()
    t0 = time.time()
    spool_one(ntfy, token=NTFY_TOKEN, now=t0)
    assert notify.flush(now=t0)["dropped"] == 1
    assert [r["path"] for r in ntfy.requests] == ["/cc-demo-topic"] and "HTTP 302" in notify_log()


SYSTEM_PYTHON = "/usr/bin/python3"


def test_the_flusher_delivers_on_a_system_python_without_requests(ntfy, tmp_path):
    """A plugin's hooks may run the distribution's Python (PEP 668, no requests): emit there starts the
    flusher on that same Python, which pushes with urllib, headers exact."""
    has = lambda mod: subprocess.run([SYSTEM_PYTHON, "-S", "-c", "import " + mod], capture_output=True).returncode == 0
    if not os.path.exists(SYSTEM_PYTHON) or has("requests"):
        if os.environ.get("CI") == "true":
            pytest.fail("CI's machine must have a system python3 without requests (issue 32)")
        pytest.skip("needs a /usr/bin/python3 without requests")
    ntfy.start()
    configure(ntfy.url, token=NTFY_TOKEN)
    code = ("from cc_continuity import notify; "
            "notify.emit('blocked', slug='demo', session=7, ratio=0.58, text='which DB?', host='devbox')")
    subprocess.run([SYSTEM_PYTHON, "-S", "-c", code], check=True, timeout=30, stdin=subprocess.DEVNULL)
    (req,) = ntfy.wait_for(1)
    assert req["headers"]["Authorization"] == "Bearer " + NTFY_TOKEN and req["headers"]["Priority"] == "5"
    assert title_of(req) == "cc-continuity · demo-007 · BLOCKED, needs you"
    assert req["body"] == "which DB?\ndemo-007 · ctx 58% · devbox"
    assert wait_until(lambda: not spool_files())


# --- send_test: doctor --notify-test ----------------------------------------------------

def test_send_test_reports_success_and_failure(ntfy, transport):
    assert notify.send_test() == (False, "no ntfy URL configured (cc-continuity configure --ntfy URL)")
    configure(ntfy.url, token=NTFY_TOKEN)
    ok, detail = notify.send_test()
    assert (ok, detail) == (False, "127.0.0.1:%d: cannot connect" % ntfy.port)
    ntfy.start()
    ok, detail = notify.send_test()
    assert (ok, detail) == (True, "delivered to 127.0.0.1:%d (HTTP 200)" % ntfy.port)
    req = ntfy.requests[0]
    assert title_of(req) == "cc-continuity · test notification"
    assert req["headers"]["Authorization"] == "Bearer " + NTFY_TOKEN
    ntfy.status = 401
    assert notify.send_test() == (False, "127.0.0.1:%d: HTTP 401" % ntfy.port)
    assert spool_files() == []  # synchronous: nothing queued


# --- the detached flusher process ------------------------------------------------------

def run_flusher(timeout=20):
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "cc_continuity.notify"], timeout=timeout, check=True,
                   stdin=subprocess.DEVNULL, capture_output=True)
    return time.monotonic() - t


def test_keeper_waits_for_the_retry_time_then_delivers_and_exits(ntfy):
    ntfy.start()
    path = spool_one(ntfy)
    rec = read_spool(path)
    rec.update(attempts=1, next_at=time.time() + 1.5)  # as if the first try had failed
    with open(path, "w") as f:
        json.dump(rec, f)
    elapsed = run_flusher()
    assert 1.0 < elapsed < 10
    assert len(ntfy.requests) == 1 and spool_files() == []
    assert "attempts=2" in notify_log()


def test_only_one_flusher_lingers_for_retries(ntfy):
    from cc_continuity.lock import Lock

    ntfy.start()
    path = spool_one(ntfy)
    rec = read_spool(path)
    rec["next_at"] = time.time() + 300
    with open(path, "w") as f:
        json.dump(rec, f)
    with Lock(os.path.join(paths.spool_dir(), "keeper.lock")):
        assert run_flusher() < 5  # someone else keeps watch: one pass, then exit
    assert ntfy.requests == [] and len(spool_files()) == 1


def test_a_broken_config_means_no_push_and_no_crash(ntfy):
    os.makedirs(paths.home(), exist_ok=True)
    with open(paths.config_file(), "w") as f:
        f.write("{broken")
    assert notify.emit("blocked", slug="demo", text="x") is False
    assert "config unreadable" in notify_log()
    assert notify.send_test()[0] is False


def test_flusher_process_drops_a_corrupt_file_and_still_delivers_the_rest(ntfy):
    ntfy.start()
    spool_one(ntfy, text="the good one")
    with open(os.path.join(paths.spool_dir(), "00000000000000000001-1-abcdef.json"), "w") as f:
        f.write("{not json")
    assert run_flusher() < 10
    assert [r["body"].split("\n")[0] for r in ntfy.requests] == ["the good one"]
    assert spool_files() == [] and "unreadable spool file" in notify_log()
    assert "error" not in notify_log()
