"""doctor's server-window row (hosts/servers.py): each host's own model server asked (stand-ins on 127.0.0.1),
against cc-continuity's window and the host's own, and the one command named for what disagrees."""

import json
import os

import pytest

from cc_continuity import config
from cc_continuity.hosts import checkup, servers
from helpers.standin import ok, stand_in  # noqa: F401  (a fixture)

PROPS = {"default_generation_settings": {"n_ctx": 32768}}


@pytest.fixture
def claude_settings():
    def write(env):
        d = os.path.join(os.environ["HOME"], ".claude")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "settings.json"), "w") as f:
            json.dump({"env": env}, f)
    return write


def row(repo):
    return servers.check_server_window(checkup.Context(cwd=str(repo)))


def test_no_server_of_your_own_is_green(git_repo):
    r = row(git_repo)
    assert r.ok and "no model server of your own" in r.detail


@pytest.mark.parametrize("ours, own, ok_, fix", [
    (32768, "32768", True, None),
    (200000, "32768", False, "cc-continuity configure --window auto"),
    (32768, None, False, "export CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768"),
    (None, "1000000", False, "cc-continuity configure --window auto and export CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768"),
])
def test_the_servers_window_against_ours_and_claude_codes(git_repo, stand_in, claude_settings, ours, own, ok_, fix):
    s = stand_in({"GET /props": ok(PROPS)})
    claude_settings(dict({"ANTHROPIC_BASE_URL": s.url}, **({"CLAUDE_CODE_MAX_CONTEXT_TOKENS": own} if own else {})))
    if ours:
        config.update_global({"window": ours})
    r = row(git_repo)
    assert r.ok is ok_, r
    assert "Claude Code's server (llama-server) runs 32768" in r.detail
    if fix:
        assert r.fix.startswith(fix), r.fix


def test_gemini_assumes_a_million_so_the_rotation_is_the_guard(git_repo, stand_in, monkeypatch):
    s = stand_in({"GET /api/ps": ok({"models": [{"name": "qwen3:latest", "context_length": 8192}]})})
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", s.url)
    monkeypatch.setenv("GEMINI_MODEL", "qwen3")
    config.update_global({"window": 8192})
    r = row(git_repo)
    assert r.ok and "Gemini CLI assumes 1048576 for every model" in r.detail, r
    config.update_global({"window": 1048576})
    r = row(git_repo)
    assert not r.ok and r.fix == "cc-continuity configure --window auto", r


def test_a_server_that_says_nothing_names_the_window_by_hand_unless_one_is_set(git_repo, stand_in, claude_settings):
    s = stand_in({})
    claude_settings({"ANTHROPIC_BASE_URL": s.url, "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "32768"})
    r = row(git_repo)
    assert not r.ok and "said no window" in r.detail and r.fix.startswith("cc-continuity configure --window N")
    config.update_global({"window": 32768})
    r = row(git_repo)
    assert r.ok and "said no window" in r.detail and "yours is not confirmed" in r.detail, r
