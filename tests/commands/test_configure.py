"""``cc-continuity configure``: valid changes land in the right file; a bad value names its option and writes nothing."""

import json
import os

import pytest

from cc_continuity import cli, config, paths


@pytest.fixture
def repo(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    return git_repo


def configure(capsys, *args):
    """(exit status, stdout, stderr) of ``cc-continuity configure ARGS`` run in-process."""
    try:
        rc = cli.main(["configure", *args])
    except SystemExit as e:  # argparse rejects a value
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def snapshot(root):
    return read(paths.config_file()), read(config.user_project_file(str(root))), read(config.project_file(str(root)))


def test_global_changes_are_written_and_shown(repo, capsys):
    rc, out, err = configure(capsys, "--window", "200k", "--thresholds", "50,60,70", "--rotate-tokens", "1.5m",
                             "--ntfy", "https://ntfy.example/topic", "--unattended", "on", "--disable")
    assert rc == 0, err
    with open(paths.config_file()) as f:
        doc = json.load(f)
    assert doc == {"window": 200000, "warn": 50, "rotate": 60, "hard": 70, "rotate_tokens": 1500000,
                   "ntfy_url": "https://ntfy.example/topic", "unattended": True, "enabled": False}
    assert os.stat(paths.config_file()).st_mode & 0o777 == 0o600
    assert read(config.project_file(str(repo))) is None
    assert "* window        200000" in out and paths.config_file() in out
    cfg = config.load(str(repo))
    assert cfg.thresholds() == (50, 60, 70) and cfg["unattended"] is True


def test_project_changes_go_to_the_users_project_file_only(repo, capsys):
    rc, out, err = configure(capsys, "--project", "--disable", "--unattended", "off")
    assert rc == 0, err
    with open(config.user_project_file(str(repo))) as f:
        assert json.load(f) == {"enabled": False, "unattended": False}
    assert config.user_project_file(str(repo)).startswith(paths.home() + "/projects/")
    assert read(paths.config_file()) is None
    assert read(config.project_file(str(repo))) is None  # never into the repository
    assert config.load(str(repo))["enabled"] is False
    assert config.load(None)["enabled"] is True
    assert config.user_project_file(str(repo)) in out


def test_project_unattended_from_configure_works_and_an_old_repo_file_value_is_explained(repo, capsys):
    """Older versions wrote `configure --project` values into the repository: that value is now ignored,
    configure says so and how to keep it, and the same value set with configure takes effect."""
    os.makedirs(repo / ".claude")
    (repo / ".claude" / "continuity.json").write_text(json.dumps({"unattended": True, "window": 150000}))
    cfg = config.load(str(repo))
    assert cfg["unattended"] is False and cfg["window"] == 150000
    rc, out, err = configure(capsys, "--project", "--thresholds", "50,60,70")
    assert rc == 0, err
    assert "continuity.json sets 'unattended'" in err and "configure --project --unattended" in err
    rc, out, err = configure(capsys, "--project", "--unattended", "on")
    assert rc == 0, err
    cfg = config.load(str(repo))
    assert cfg["unattended"] is True and cfg.source("unattended") == config.user_project_file(str(repo))
    assert json.loads((repo / ".claude" / "continuity.json").read_text()) == {"unattended": True, "window": 150000}


def test_auto_and_off_reset_to_null(repo, capsys):
    assert configure(capsys, "--window", "131072", "--rotate-tokens", "400000", "--ntfy", "http://127.0.0.1:1/t")[0] == 0
    rc, out, err = configure(capsys, "--window", "auto", "--rotate-tokens", "off", "--ntfy", "off")
    assert rc == 0, err
    with open(paths.config_file()) as f:
        doc = json.load(f)
    assert doc["window"] is None and doc["rotate_tokens"] is None and doc["ntfy_url"] is None
    cfg = config.load(str(repo))
    assert cfg["window"] is None and cfg["ntfy_url"] is None


@pytest.mark.parametrize("args, option", [
    (["--window", "lots"], "--window"),
    (["--window", "-5"], "--window"),
    (["--window", "10"], "--window"),            # config's own floor (>= 1000)
    (["--thresholds", "50,60"], "--thresholds"),
    (["--thresholds", "70,60,80"], "--thresholds"),
    (["--thresholds", "50,60,101"], "--thresholds"),
    (["--thresholds", "a,b,c"], "--thresholds"),
    (["--rotate-tokens", "0"], "--rotate-tokens"),
    (["--rotate-tokens", "12.5"], "--rotate-tokens"),
    (["--ntfy", "ftp://example.org/x"], "--ntfy"),
    (["--ntfy", "ntfy.sh/topic"], "--ntfy"),
    (["--unattended", "maybe"], "--unattended"),
    (["--enable", "--disable"], "--disable"),
    # one bad option spoils the whole call: the good one is not written either
    (["--window", "200000", "--thresholds", "90,80,70"], "--thresholds"),
])
def test_bad_values_name_the_option_and_write_nothing(repo, capsys, args, option):
    assert configure(capsys, "--rotate-tokens", "300000")[0] == 0
    assert configure(capsys, "--project", "--window", "100000")[0] == 0
    before = snapshot(repo)
    rc, out, err = configure(capsys, *args)
    assert rc != 0
    assert option in err
    assert snapshot(repo) == before
    rc, out, err = configure(capsys, "--project", *args)
    assert rc != 0 and option in err
    assert snapshot(repo) == before


@pytest.mark.parametrize("global_file_existed", [True, False])
def test_a_value_that_clashes_with_the_other_layer_is_rolled_back(repo, capsys, global_file_existed):
    (repo / ".claude").mkdir()
    with open(config.project_file(str(repo)), "w") as f:
        f.write('{"rotate": 65, "hard": 68}')
    if global_file_existed:
        assert configure(capsys, "--window", "150000")[0] == 0
    before = snapshot(repo)
    # Valid on its own, but the effective warn (66) would exceed the project's rotate (65).
    rc, out, err = configure(capsys, "--thresholds", "66,70,80")
    assert rc == 2
    assert "--thresholds" in err and "nothing was written" in err
    assert snapshot(repo) == before
    assert config.load(str(repo)).thresholds() == (55, 65, 68)


def test_no_options_prints_the_effective_values(repo, capsys):
    (repo / ".claude").mkdir()
    with open(config.project_file(str(repo)), "w") as f:
        f.write('{"rotate": 65}')
    rc, out, err = configure(capsys)
    assert rc == 0
    assert read(paths.config_file()) is None
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "65" in lines["rotate"] and "continuity.json" in lines["rotate"]
    assert "(default)" in lines["warn"]


# -- --window auto: the model server's answer (serverwindow/, stand-ins in tests/helpers/standin.py) ----------
from helpers.standin import ok, stand_in  # noqa: E402,F401  (a fixture)

PROPS = {"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}


def _user_settings(env):
    d = os.path.join(os.environ["HOME"], ".claude")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "settings.json"), "w") as f:
        json.dump({"env": env}, f)


def test_window_auto_keeps_the_servers_answer_with_its_source(repo, capsys, stand_in):
    s = stand_in({"GET /props": ok(PROPS)})
    _user_settings({"ANTHROPIC_BASE_URL": s.url, "ANTHROPIC_MODEL": "qwen3-coder"})
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 0, err
    cfg = config.load(str(repo))
    assert cfg["window"] == 32768 and cfg.source("window") == paths.config_file()
    assert cfg["window_source"].startswith("llama-server /props at %s, 20" % s.url.split("//")[1])
    assert "Claude Code's server (llama-server) says 32768 tokens for qwen3-coder" in out
    assert "Claude Code: asked GET /props: llama-server 32768" in out
    rc, out, err = configure(capsys, "--window", "100k")  # by hand: no server said it
    assert rc == 0 and config.load(str(repo))["window_source"] is None and config.load(str(repo))["window"] == 100000


def test_window_auto_asks_only_the_users_own_server(repo, capsys, stand_in):
    """A repository's .claude/settings.json points ANTHROPIC_BASE_URL elsewhere: never asked, never sent a key."""
    mine, theirs = stand_in({"GET /props": ok(PROPS)}), stand_in({"GET /props": ok({"default_generation_settings":
                                                                                 {"n_ctx": 999999}})})
    _user_settings({"ANTHROPIC_BASE_URL": mine.url, "ANTHROPIC_AUTH_TOKEN": "sk-mine"})
    os.makedirs(os.path.join(str(repo), ".claude"), exist_ok=True)
    with open(os.path.join(str(repo), ".claude", "settings.json"), "w") as f:
        json.dump({"env": {"ANTHROPIC_BASE_URL": theirs.url}}, f)
    with open(os.path.join(str(repo), ".env"), "w") as f:
        f.write("ANTHROPIC_BASE_URL=%s\n" % theirs.url)
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 0 and config.load(str(repo))["window"] == 32768, err
    assert not theirs.seen and "authorization" not in mine.seen[0][2]


def test_window_auto_with_no_answer_writes_nothing_and_says_what_to_do(repo, capsys, stand_in):
    s = stand_in({})  # every endpoint 404
    _user_settings({"ANTHROPIC_BASE_URL": s.url + "/v1"})
    before = snapshot(repo)
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 1 and snapshot(repo) == before
    assert "--window auto: Claude Code's server %s (ANTHROPIC_BASE_URL (settings.json env), model not set)" % (
        s.url) in err
    assert "Nothing was written; set the window by hand: cc-continuity configure --window N" in err


def test_window_auto_with_anthropics_own_api_detects_from_the_model_id(repo, capsys):
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 0 and "detected from the model id" in out and config.load(str(repo))["window"] is None


def test_window_auto_asks_every_hosts_own_server_and_keeps_the_smallest(repo, capsys, stand_in, monkeypatch):
    """Codex's provider (its user config.toml; a repository's .codex/config.toml is not the user's) and Gemini's
    GOOGLE_GEMINI_BASE_URL, with the credential each host sends there, only after a 401."""
    vllm = stand_in({"GET /v1/models": ok({"object": "list", "data": [{"id": "qwen", "max_model_len": 65536}]})})
    ollama = stand_in({"GET /api/ps": (401, {"error": "unauthorized"}, None, 0)})
    elsewhere = stand_in({"GET /props": ok(PROPS)})
    home = os.path.join(os.environ["HOME"], ".codex")
    os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('model = "qwen"\nmodel_provider = "box"\n[model_providers.box]\nbase_url = "%s/v1"\n'
                'env_key = "BOX_KEY"\nwire_api = "responses"\n' % vllm.url)
    os.makedirs(os.path.join(str(repo), ".codex"))
    with open(os.path.join(str(repo), ".codex", "config.toml"), "w") as f:
        f.write('model_provider = "x"\n[model_providers.x]\nbase_url = "%s"\n' % elsewhere.url)
    monkeypatch.setenv("BOX_KEY", "sk-box")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", ollama.url)
    monkeypatch.setenv("GEMINI_API_KEY", "gk-1")
    monkeypatch.setenv("GEMINI_MODEL", "qwen3")
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 1 and "Gemini CLI's server" in err, (out, err)  # Ollama kept refusing: nothing written
    assert [h.get("x-goog-api-key") for _, p, h, _ in ollama.seen if p == "/api/ps"] == [None, "gk-1"]
    assert config.load(str(repo))["window"] is None and not elsewhere.seen
    assert "authorization" not in vllm.seen[0][2]  # the vLLM stand-in asked for no key: none sent
    ollama.routes["GET /api/ps"] = ok({"models": [{"name": "qwen3:latest", "context_length": 16384}]})
    rc, out, err = configure(capsys, "--window", "auto")
    assert rc == 0, err
    cfg = config.load(str(repo))
    assert cfg["window"] == 16384 and cfg["window_source"].startswith("Ollama /api/ps at 127.0.0.1:"), cfg["window_source"]
    assert "Codex CLI's server (vLLM) says 65536 tokens for qwen" in out
