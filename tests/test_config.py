"""config: defaults < global < project < env, validated, errors naming file and key, nothing half-written."""

import json
import os
import subprocess
import sys

import pytest

from cc_continuity import atomic, config, paths


def write_json(path, obj):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "proj"
    r.mkdir()
    return str(r)


def global_file():
    return paths.config_file()


def test_defaults_without_any_file(root):
    cfg = config.load(root, env={})
    for key, (default, _check, _doc) in config.SCHEMA.items():
        assert cfg[key] == default, key
        assert cfg.source(key) == "default"
    assert cfg.thresholds() == (55, 62, 72)
    assert cfg.warnings == []
    assert not os.path.exists(global_file()), "loading must not create files"


def test_defaults_are_not_shared_between_loads():
    a = config.load(None, env={})
    a["notify_events"].append("mutated")
    assert config.load(None, env={})["notify_events"] == ["all"]


def test_global_then_project_then_env(root):
    g = write_json(global_file(), {"warn": 50, "rotate": 60, "window": 300000, "unattended": False, "tmux": False})
    p = write_json(config.project_file(root), {"rotate": 65, "enabled": True})
    cfg = config.load(root, env={})
    assert (cfg["warn"], cfg["rotate"], cfg["hard"]) == (50, 65, 72)
    assert cfg.source("warn") == g
    assert cfg.source("rotate") == p
    assert cfg.source("hard") == "default"
    assert cfg["window"] == 300000 and cfg.source("window") == g
    assert cfg["tmux"] is False

    env = {"CC_CONTINUITY": "0", "CC_CONTINUITY_UNATTENDED": "1"}
    cfg = config.load(root, env=env)
    assert cfg["enabled"] is False and cfg.source("enabled") == "env CC_CONTINUITY=0"
    assert cfg["unattended"] is True and cfg.source("unattended") == "env CC_CONTINUITY_UNATTENDED=1"

    # other values of the variables do nothing
    cfg = config.load(root, env={"CC_CONTINUITY": "1", "CC_CONTINUITY_UNATTENDED": "yes"})
    assert cfg["enabled"] is True and cfg.source("enabled") == p
    assert cfg["unattended"] is False and cfg.source("unattended") == g


def test_load_reads_os_environ_by_default(root, monkeypatch):
    monkeypatch.setenv("CC_CONTINUITY", "0")
    assert config.load(root)["enabled"] is False


def test_project_file_alone_without_root_is_ignored(root):
    write_json(config.project_file(root), {"warn": 40})
    assert config.load(None, env={})["warn"] == 55
    assert config.load(root, env={})["warn"] == 40


@pytest.mark.parametrize("key,value", [
    ("warn", "high"), ("warn", True), ("warn", 0), ("warn", 101), ("window", 12.5), ("window", 10),
    ("enabled", "yes"), ("ntfy_url", "ftp://x"), ("notify_events", "all"), ("notify_events", [""]),
    ("handoff_sections", []), ("rotate_tokens", "1e6"), ("statusline_chain_timeout_ms", 5),
])
def test_wrong_value_names_file_and_key(root, key, value):
    repo_key = key in config.REPO_ANY or key in config.REPO_NARROW
    p = write_json(config.project_file(root) if repo_key else config.user_project_file(root), {key: value})
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    e = exc.value
    assert e.file == p and e.key == key
    assert p in str(e) and repr(key) in str(e)


def test_wrong_value_in_global_names_global_file(root):
    g = write_json(global_file(), {"warn": "high"})
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    assert exc.value.file == g and g in str(exc.value) and "'warn'" in str(exc.value)


@pytest.mark.parametrize("text", ["{not json", '{"warn": 55,}', "[1, 2]", '"a string"', "\xff\xfe"])
def test_invalid_json_names_the_file(root, text):
    p = config.project_file(root)
    os.makedirs(os.path.dirname(p))
    with open(p, "wb") as f:
        f.write(text.encode("latin-1"))
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    assert exc.value.file == p and exc.value.key is None
    assert str(exc.value).startswith(p + ":")


def test_empty_file_is_no_overrides(root):
    write_json(config.project_file(root), "  \n")
    assert config.load(root, env={})["warn"] == 55


def test_unknown_key_is_a_warning_not_an_error(root):
    p = write_json(config.project_file(root), {"warm": 50, "$schema": "x", "// note": "y", "rotate": 60})
    cfg = config.load(root, env={})
    assert cfg["rotate"] == 60
    assert len(cfg.warnings) == 1
    assert p in cfg.warnings[0] and "'warm'" in cfg.warnings[0]
    with pytest.raises(KeyError):
        cfg["warm"]


def test_warn_above_rotate_is_an_error(root):
    g = write_json(global_file(), {"warn": 70})
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    assert exc.value.key == "warn" and exc.value.file == g
    assert "warn <= rotate <= hard" in str(exc.value)


def test_rotate_above_hard_is_an_error(root):
    p = write_json(config.project_file(root), {"rotate": 80})
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    assert exc.value.key == "rotate" and exc.value.file == p




def test_order_error_names_the_file_that_set_the_bad_value(root):
    p = write_json(config.project_file(root), {"rotate": 50})  # below the default warn (55)
    with pytest.raises(config.ConfigError) as exc:
        config.load(root, env={})
    assert exc.value.file == p and exc.value.key == "rotate"
    assert p in str(exc.value)


def test_update_global_order_error_names_the_global_file():
    with pytest.raises(config.ConfigError) as exc:
        config.update_global({"hard": 50})  # below the default rotate (62)
    assert exc.value.file == global_file() and exc.value.key == "hard"
    assert not os.path.exists(global_file())


# -- writes ------------------------------------------------------------------------
def test_update_global_writes_validated_json(root):
    new = config.update_global({"warn": 50, "ntfy_url": "https://ntfy.sh/topic"})
    assert new == {"warn": 50, "ntfy_url": "https://ntfy.sh/topic"}
    with open(global_file()) as f:
        assert json.load(f) == new
    assert oct(os.stat(global_file()).st_mode & 0o777) == oct(0o600)
    assert oct(os.stat(paths.home()).st_mode & 0o777) == oct(0o700)
    cfg = config.load(root, env={})
    assert cfg["warn"] == 50 and cfg.source("warn") == global_file()
    # None removes a key that has a non-null default
    config.update_global({"warn": None})
    with open(global_file()) as f:
        assert json.load(f) == {"ntfy_url": "https://ntfy.sh/topic"}


def test_update_global_bad_value_writes_nothing_when_absent():
    with pytest.raises(config.ConfigError) as exc:
        config.update_global({"warn": "high"})
    assert exc.value.key == "warn" and exc.value.file == global_file()
    assert not os.path.exists(global_file())


@pytest.mark.parametrize("changes", [{"warn": "high"}, {"rotate": 99}, {"nonsense": 1}, {"warn": 80}])
def test_update_global_bad_change_leaves_bytes_unchanged(changes):
    original = '{\n  "warn": 50,\n  "custom //": "kept"\n}\n'
    write_json(global_file(), original)
    before = os.stat(global_file())
    with pytest.raises(config.ConfigError) as exc:
        config.update_global(changes)
    assert exc.value.file == global_file()
    with open(global_file()) as f:
        assert f.read() == original
    assert os.stat(global_file()).st_ino == before.st_ino
    assert [n for n in os.listdir(paths.home()) if n.startswith(atomic.TMP_MARK)] == []


def test_update_global_refuses_to_overwrite_a_broken_file():
    write_json(global_file(), "{broken")
    with pytest.raises(config.ConfigError):
        config.update_global({"warn": 50})
    with open(global_file()) as f:
        assert f.read() == "{broken"


def test_update_project_keeps_other_keys_and_never_writes_the_repo(root):
    write_json(config.user_project_file(root), {"window": 500000, "unknown_future_key": 1})
    config.update_project(root, {"enabled": False})
    with open(config.user_project_file(root)) as f:
        assert json.load(f) == {"window": 500000, "unknown_future_key": 1, "enabled": False}
    assert not os.path.exists(config.project_file(root))
    assert os.stat(config.user_project_file(root)).st_mode & 0o777 == 0o600


# -- `cc-continuity config show` ------------------------------------------------------
def show(root, *args, env=None):
    e = dict(os.environ, CLAUDE_PROJECT_DIR=root)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "cc_continuity", "config", "show", *args], capture_output=True,
                          text=True, cwd=root, env=e, timeout=60)


def test_config_show_json_shape_and_sources_and_no_token(root):
    token = "tk_SECRET_8f3a1c"
    g = write_json(global_file(), {"ntfy_url": "https://ntfy.example/t", "ntfy_token": token, "warn": 50})
    p = write_json(config.project_file(root), {"rotate": 60, "typo_key": 1})
    res = show(root, "--json", env={"CC_CONTINUITY_UNATTENDED": "1"})
    assert res.returncode == 0, res.stderr
    assert token not in res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {"project", "values", "sources", "warnings"}
    assert doc["project"] == os.path.realpath(root)
    assert set(doc["values"]) == set(config.SCHEMA) == set(doc["sources"])
    assert doc["values"]["ntfy_token"] == "<set>"
    assert doc["values"]["warn"] == 50 and doc["sources"]["warn"] == g
    assert doc["values"]["rotate"] == 60 and doc["sources"]["rotate"] == p
    assert doc["sources"]["hard"] == "default"
    assert doc["values"]["unattended"] is True and doc["sources"]["unattended"].startswith("env")
    assert len(doc["warnings"]) == 1 and "typo_key" in doc["warnings"][0]

    res = show(root)
    assert res.returncode == 0
    assert token not in res.stdout + res.stderr
    rows = {line.split()[0]: line for line in res.stdout.splitlines() if line and not line.startswith("warning")}
    assert set(rows) == set(config.SCHEMA)
    assert g in rows["warn"] and p in rows["rotate"]
    assert "typo_key" in res.stdout


def test_config_show_bad_config_exit_2_names_file_and_key(root):
    p = write_json(config.project_file(root), {"warn": "high"})
    res = show(root)
    assert res.returncode == 2
    assert p in res.stderr and "'warn'" in res.stderr
    assert res.stdout == ""
