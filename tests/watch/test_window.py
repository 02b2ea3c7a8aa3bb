"""The watchdog and the probed server's window (watch/window.py): asked when the server is up at the watchdog's
start and after each outage; a context size other than cc-continuity's window said once, across restarts."""

import os

from cc_continuity import config
from cc_continuity.watch import Settings, state_dir, window
from cc_continuity.watch.daemon import Daemon
from helpers.standin import ok, stand_in  # noqa: F401  (a fixture)


def props(n):
    return ok({"default_generation_settings": {"n_ctx": n}})


def test_another_context_size_is_said_once_even_across_watchdog_restarts(stand_in):
    s = stand_in({"GET /health": ok({}), "GET /props": props(32768)})
    settings = Settings(health_url=s.url + "/health", probe_timeout=0.5)
    config.update_global({"window": 32768})
    assert window.check(settings) is None  # the same: nothing to say
    s.routes["GET /props"] = props(16384)  # restarted with another --ctx-size
    said = window.check(settings)
    assert said and "now runs a 16384-token window (llama-server /props), cc-continuity's is 32768" in said
    assert "`cc-continuity configure --window auto`" in said
    assert window.check(settings) is None  # said once
    assert os.stat(os.path.join(state_dir(), window.SEEN_FILE)).st_mode & 0o777 == 0o600
    s.routes["GET /props"] = props(8192)
    assert "8192" in window.check(settings)


def test_no_probe_url_or_no_answer_says_nothing(stand_in):
    assert window.check(Settings()) is None
    s = stand_in({"GET /health": ok({})})  # no window in any shape
    assert window.check(Settings(health_url=s.url + "/health")) is None


def test_the_daemon_asks_when_the_server_is_up_and_again_after_an_outage(stand_in):
    s = stand_in({"GET /health": ok({}), "GET /props": props(65536)})
    config.update_global({"window": 65536})
    pushes = []
    d = Daemon(Settings(health_url=s.url + "/health", probe_timeout=0.5, fail_threshold=1, interval=1),
               push_fn=lambda *a, **k: pushes.append((a, k)) or True, watch_transcripts=False)
    d.cycle()
    asked = lambda: sum(1 for m, p, _, _ in s.seen if p == "/props")  # noqa: E731
    assert asked() == 1 and pushes == []
    d.cycle()
    assert asked() == 1  # not while it stays up
    s.routes["GET /health"] = (503, {}, None, 0)
    d.cycle()
    s.routes["GET /health"], s.routes["GET /props"] = ok({}), props(32768)  # back, with another size
    d.cycle()
    assert asked() == 2
    assert [a for a, k in pushes if a[0] == "server-window"] == [("server-window",)]
    assert "32768-token window" in [k["text"] for a, k in pushes if a[0] == "server-window"][0]
