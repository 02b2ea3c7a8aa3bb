"""The ports every host's hook context shares (hosts/ports.py): a push goes to the notifier only when pushes
are on, and only then is the notifier loaded (its subprocess and urllib cost a rotation's Stop and the
successor's first prompt ~12 ms: bench/p4.py)."""

import json
import os
import subprocess
import sys
import time

from cc_continuity import config, notify, paths
from helpers import leftovers
from helpers.ntfy import Ntfy

DELIVER = """
import importlib, json, sys
from cc_continuity.hosts.ports import HookPorts
module, name = sys.argv[3].split(":")
ports = HookPorts("Stop", {}, host=getattr(importlib.import_module(module), name)())
ports._cfg = {"ntfy_url": sys.argv[1] or None, "ntfy_token": None, "notify_events": ["all"]}
ports.deliver({"event": "checkpoint-verified", "slug": "demo", "session": 3, "ratio": 0.66, "text": "cp-003 valid",
               "project_root": sys.argv[2]})
print(json.dumps("cc_continuity.notify" in sys.modules))
"""


def deliver(url, root, host="cc_continuity.hosts.claude.host:ClaudeHost"):
    out = subprocess.run([sys.executable, "-c", DELIVER, url, root, host], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "")))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_with_pushes_off_the_notifier_is_not_even_loaded(tmp_path):
    assert deliver("", str(tmp_path)) is False
    assert notify.spooled() == []


def test_with_pushes_on_the_push_goes_out(monkeypatch, tmp_path):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = Ntfy()
    server.start()
    try:
        config.update_global({"ntfy_url": server.url})
        assert deliver(server.url, str(tmp_path)) is True
        [req] = server.wait_for(1)
        assert req["body"].startswith("cp-003 valid\ndemo-003 · ctx 66% · "), req["body"]
        assert "CLI" not in req["body"] and "Claude" not in req["body"]  # Claude Code's pushes name no agent
        for n, (host, label) in enumerate((("gemini.host:GeminiHost", "Gemini CLI"),
                                           ("codex.host:CodexHost", "Codex CLI")), start=2):
            _flushers_gone()  # (one push at a time: a flusher still finishing would leave the next for later)
            assert deliver(server.url, str(tmp_path), "cc_continuity.hosts." + host) is True
            req = server.wait_for(n)[n - 1]
            assert req["body"].startswith("cp-003 valid\ndemo-003 · ctx 66%% · %s · " % label), req["body"]
    finally:
        server.stop()
        _flushers_gone(kill=True)


def _flushers_gone(kill=False):
    """Wait for the flushers these pushes started (by our state dir in their environment) to end; ``kill``: and
    kill what is left."""
    deadline = time.monotonic() + 10
    left = [p for p in leftovers.find(paths.home()) if "cc_continuity.notify" in p[1]]
    while left and (kill or time.monotonic() < deadline):
        if kill:
            leftovers.kill(left)
        time.sleep(0.1)
        left = [p for p in leftovers.find(paths.home()) if "cc_continuity.notify" in p[1]]
