"""StopFailure and the usage-limit Notifications, run exactly as installed, with Claude Code-shaped stdin.

What must hold: the failed turn is recorded with its error kind (and nothing of
the prompt), on the per-tool-call path's budget and imports; the hooks fail
open like every other; the usage-limit notifications are recorded, anything
else Notification brings is not.
"""

import ast
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from cc_continuity.hosts.claude.hooks import BUDGET, stop_failure
from helpers.transcripts import REPO, run_hook
from test_hooks import Claude, hook_log

KINDS = ["rate_limit", "overloaded", "invalid_request", "model_not_found", "server_error", "unknown",
         "max_output_tokens", "authentication_failed", "billing_error"]


@pytest.fixture
def claude(git_repo, isolated_home):
    return Claude(git_repo, isolated_home)


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_turn_is_recorded_with_its_error_kind(claude, kind):
    claude.hook("SessionStart", source="startup")
    claude.hook("UserPromptSubmit", prompt="the secret plan for the exporter")
    res = claude.hook("StopFailure", error=kind, error_details="API Error: 500 boom",
                      last_assistant_message="half a reply")
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    rec = claude.ledger(ev="stop_failure")
    assert [(r["error"], r["details"]) for r in rec] == [(kind, "API Error: 500 boom")]
    assert "secret plan" not in json.dumps(rec) and "half a reply" not in json.dumps(rec)
    assert "StopFailure" in hook_log()[-1] and "turn failed: %s" % kind in hook_log()[-1]


def test_a_failure_before_any_card_registers_the_session_once(claude):
    """No SessionStart seen (a hook added mid-session): the slow path registers, then records."""
    claude.hook("StopFailure", error="server_error")
    assert claude.state()["state"] == "ACTIVE"
    assert [r["error"] for r in claude.ledger(ev="stop_failure")] == ["server_error"]
    claude.hook("StopFailure", error="overloaded")
    assert [r["error"] for r in claude.ledger(ev="stop_failure")] == ["server_error", "overloaded"]
    assert claude.proj.numbers() == [1]


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(error=st.one_of(st.none(), st.integers(), st.text(max_size=80), st.lists(st.text(max_size=3), max_size=2)),
       details=st.one_of(st.none(), st.integers(), st.text(max_size=400)))
def test_any_error_field_becomes_a_known_shape(error, details):
    class Call:
        payload = {"error": error, "error_details": details}

    rec = stop_failure.record(Call)
    kind = rec["error"]
    assert kind == error if isinstance(error, str) and kind != "unknown" else kind == "unknown"
    assert 0 < len(kind) <= 40 and all(c.islower() or c.isdigit() or c == "_" for c in kind)
    assert rec["details"] is None or (isinstance(details, str) and rec["details"] == details[:200])


def test_stop_failure_fails_open_on_a_corrupt_state_and_garbage(claude):
    claude.hook("SessionStart", source="startup")
    with open(os.path.join(claude.sdir(), "state.json"), "wb") as f:
        f.write(b'{"number":1,"state":"ACT')
    for raw in (claude.payload("StopFailure", error="server_error"), b"\xff{not json", {"error": "x"}):
        res = run_hook("StopFailure", raw, claude.env)
        assert (res.returncode, res.stdout) == (0, b"")


def test_stop_failure_stays_on_the_fast_path(claude):
    """A card hit imports nothing beyond the per-tool-call path's builtins (no os, no config)."""
    claude.hook("SessionStart", source="startup")
    code = ("import sys, posix\n"
            "sys.path.insert(0, %r)\n"
            "before = set(sys.modules)\n"
            "import cc_continuity.hosts.claude.hooks as h\n"
            "out = h.dispatch('StopFailure', posix.read(0, 1 << 20))\n"
            "sys.stdout.write(repr((out[1], sorted(set(sys.modules) - before))))\n"
            % REPO)
    res = subprocess.run([sys.executable, "-S", "-c", code],
                         input=json.dumps(claude.payload("StopFailure", error="overloaded")).encode(),
                         env=claude.env, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    outcome, new = ast.literal_eval(res.stdout.decode())
    assert outcome == "turn failed: overloaded"
    outside = {m for m in new if m != "cc_continuity" and not m.startswith("cc_continuity.")}
    # fcntl: a failed turn has no id of its own, so the twin check counts its digest under a lock
    assert outside <= {"posix", "_json", "_sha256", "_sha2", "time", "_signal", "fcntl"}, outside
    assert set(new) - outside <= {"cc_continuity", "cc_continuity.hosts", "cc_continuity.hosts.claude",
                                  "cc_continuity.hosts.claude.hooks",
                                  "cc_continuity.hosts.claude.hooks.stop_failure",
                                  "cc_continuity.fastjson", "cc_continuity.card", "cc_continuity.ledger",
                                  "cc_continuity.paths",
                                  "cc_continuity.digest"}, new
    assert BUDGET["StopFailure"] <= BUDGET["PostToolUse"]


@pytest.mark.parametrize("kind", ["quota_auto_resume_fired", "quota_auto_resume_stale", "quota_auto_resume_disabled"])
def test_usage_limit_notifications_are_recorded(claude, kind):
    claude.hook("SessionStart", source="startup")
    res = claude.hook("Notification", notification_type=kind, message="Usage limit reset — press enter to continue")
    assert (res.returncode, res.stdout) == (0, b"")
    assert [(r["type"], r["message"]) for r in claude.ledger(ev="notification")] == \
        [(kind, "Usage limit reset — press enter to continue")]


@pytest.mark.parametrize("kind", ["idle_prompt", "permission_prompt", None, 7])
def test_other_notifications_are_not(claude, kind):
    claude.hook("SessionStart", source="startup")
    res = claude.hook("Notification", notification_type=kind, message="Claude is waiting for your input")
    assert (res.returncode, res.stdout) == (0, b"")
    assert claude.ledger(ev="notification") == []
    assert "ignored" in hook_log()[-1]
