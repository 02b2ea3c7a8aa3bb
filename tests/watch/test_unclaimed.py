"""The watchdog's push for a checkpoint published from here that waits unclaimed (watch/unclaimed.py).

Real publishes (helpers/share.py's in-process rotation) to a bare repository over file://, real git;
the daemon's cycle is called directly with its clock moved past the limit.
"""

import socket
import time

import pytest

from cc_continuity.rotation import turn
from cc_continuity.share import publish, transport
from cc_continuity.watch import Settings
from cc_continuity.watch.daemon import Daemon, load_state
from helpers.share import claim_cli, machine, published

LIMIT_S = 30 * 60  # share_unclaimed_alert_min's default


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.3)
    monkeypatch.setattr(publish, "LOCAL_CLAIM_WAIT_S", 0.5)
    monkeypatch.setattr(publish, "RETRY_DELAYS_S", (1, 1))


def watchdog():
    pushes = []
    d = Daemon(Settings(), push_fn=lambda event, **kw: pushes.append((event, kw)) or True, watch_transcripts=False)
    return d, pushes


def two_cycles(d, now):
    """A cycle that starts the look, its end, a cycle that takes its answer; the first cycle's seconds."""
    t0 = time.monotonic()
    d.cycle(now)
    took = time.monotonic() - t0
    assert d.unclaimed.wait(90)
    d.cycle(now + 1)
    return took


def test_unclaimed_past_the_limit_is_pushed_once_and_never_again(tmp_path):
    remote, drv, spec = published(tmp_path)
    at = transport.read_status(drv.sdir("a1a1a1a1-0000-4000-8000-0000000000a1"))["published_at"]
    d, pushes = watchdog()
    two_cycles(d, at + LIMIT_S + 60)
    assert [e for e, _ in pushes] == ["checkpoint-unclaimed"]
    text = pushes[0][1]["text"]
    assert "cp-001" in text and "31 min" in text and "claim --from origin %s" % spec in text
    d.unclaimed.next_look = 0
    two_cycles(d, at + LIMIT_S + 3600)
    assert len(pushes) == 1
    # a restarted daemon remembers it (state.json)
    assert list(load_state()["unclaimed"]["settled"].values()) == ["pushed"]
    d2, pushes2 = watchdog()
    two_cycles(d2, at + LIMIT_S + 7200)
    assert pushes2 == [] and d2.unclaimed._thread is None


def test_under_the_limit_nothing_is_looked_at_or_pushed(tmp_path):
    remote, drv, spec = published(tmp_path)
    at = transport.read_status(drv.sdir("a1a1a1a1-0000-4000-8000-0000000000a1"))["published_at"]
    d, pushes = watchdog()
    d.cycle(at + LIMIT_S - 60)
    assert d.unclaimed._thread is None and pushes == []


def test_claimed_on_another_machine_is_not_pushed(tmp_path):
    remote, drv, spec = published(tmp_path)
    at = transport.read_status(drv.sdir("a1a1a1a1-0000-4000-8000-0000000000a1"))["published_at"]
    env, clone = machine(tmp_path, "b", "file://" + remote)
    got = claim_cli(env, clone, "--from", "file://" + remote, spec, "--print")
    assert got.returncode == 0, got.stderr
    d, pushes = watchdog()
    two_cycles(d, at + LIMIT_S + 60)
    assert pushes == []
    assert list(d.unclaimed.settled.values()) == ["claimed"]


def test_off_at_zero(tmp_path):
    remote, drv, spec = published(tmp_path)
    drv.config(share_remote="origin", share_unclaimed_alert_min=0)
    d, pushes = watchdog()
    d.cycle(time.time() + 10 * LIMIT_S)
    assert d.unclaimed._thread is None and pushes == []


def test_a_remote_that_never_answers_neither_blocks_the_cycle_nor_pushes(tmp_path):
    remote, drv, spec = published(tmp_path)
    at = transport.read_status(drv.sdir("a1a1a1a1-0000-4000-8000-0000000000a1"))["published_at"]
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)  # accepts (the kernel does) and never says a word
    drv.git("remote", "set-url", "origin", "git://127.0.0.1:%d/remote.git" % mute.getsockname()[1])
    d, pushes = watchdog()
    t0 = time.monotonic()
    d.cycle(at + LIMIT_S + 60)
    assert time.monotonic() - t0 < 5
    assert d.unclaimed._thread is not None and d.unclaimed._thread.is_alive()
    d.cycle(at + LIMIT_S + 61)  # the look still hangs: the next cycle neither waits nor starts a second one
    assert time.monotonic() - t0 < 10
    mute.close()  # the remote goes down for good
    assert d.unclaimed.wait(90)
    d.cycle(at + LIMIT_S + 62)
    assert pushes == [] and d.unclaimed.settled == {}
