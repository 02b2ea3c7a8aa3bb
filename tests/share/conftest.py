"""The share tests' fixtures: ``git daemon`` on 127.0.0.1, and short publish timings for every test here."""

import pytest

from cc_continuity.rotation import turn
from cc_continuity.share import publish
from helpers.share import git_daemon


@pytest.fixture
def daemon(tmp_path):
    """``git daemon`` on 127.0.0.1 serving tmp_path (receive-pack on); yields its base URL."""
    with git_daemon(tmp_path) as url:
        yield url


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.3)
    monkeypatch.setattr(publish, "LOCAL_CLAIM_WAIT_S", 3)
    monkeypatch.setattr(publish, "RETRY_DELAYS_S", (1, 1))
