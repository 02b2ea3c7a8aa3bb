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


def small(repo, *agents):
    return servers.check_small_window(checkup.Context(cwd=str(repo), agents=agents))


@pytest.mark.parametrize("window, agents, ok_, says, fix", [
    (200_000, ("claude",), True, "roomy enough", None),
    (131_072, ("claude",), True, "a fresh Claude Code session ~24800 tokens", None),
    (65_536, ("claude",), False, "Claude Code compacts at 32536 tokens (49%)", "cc-continuity configure --thresholds 32,39,47"),
    (32_768, ("claude",), False, "past rotate (62% of 32768 = 20316)", "a larger context on the server"),
    (32_768, ("codex", "gemini"), True, "a fresh Codex CLI session ~12200", None),
    (16_384, ("codex",), False, "past rotate (62% of 16384 = 10158)", "a larger context on the server"),
])
def test_a_small_window_against_a_fresh_sessions_size(git_repo, window, agents, ok_, says, fix):
    config.update_global({"window": window})
    r = small(git_repo, *agents)
    assert r.ok is ok_ and says in r.detail, r
    if fix:
        assert r.fix.startswith(fix), r.fix


def test_the_short_system_prompt_makes_room_on_a_32k_window(git_repo, claude_settings):
    config.update_global({"window": 32_768, "warn": 20, "rotate": 25, "hard": 30})
    claude_settings({"CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT": "1"})
    r = small(git_repo, "claude")
    assert "~15400 tokens (the short system prompt" in r.detail and "past rotate" in r.detail  # 25 %: 8192
    config.update_global({"warn": 55, "rotate": 62, "hard": 72})
    r = small(git_repo, "claude")
    assert "past rotate" not in r.detail and "Claude Code compacts at 0 tokens" in r.detail, r


def test_a_ceiling_is_a_most_for_ours_and_claude_codes(git_repo, stand_in, claude_settings):
    """Ollama with the model not loaded: its num_ctx is the most it will run; a window above it is wrong."""
    s = stand_in({"GET /api/ps": ok({"models": []}),
                  "POST /api/show": ok({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
                                        "parameters": "num_ctx 16384"})})
    claude_settings({"ANTHROPIC_BASE_URL": s.url, "ANTHROPIC_MODEL": "qwen3", "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "16384"})
    config.update_global({"window": 12000})
    r = row(git_repo)
    assert r.ok and "Claude Code's server (Ollama) allows at most 16384" in r.detail, r
    claude_settings({"ANTHROPIC_BASE_URL": s.url, "ANTHROPIC_MODEL": "qwen3", "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "32768"})
    r = row(git_repo)
    assert not r.ok and r.fix.startswith("export CLAUDE_CODE_MAX_CONTEXT_TOKENS=16384"), r
