"""The core CLI verbs: status, history, signal, on/off, meter errors (real repo, real hook-registered sessions)."""

import argparse
import json
import os
import subprocess
import sys
import uuid

import pytest

from cc_continuity import cli as cli_mod
from cc_continuity import config, session
from cc_continuity.project import Project
from helpers.transcripts import Transcript, claude_transcript_path, hook_env, hook_payload, run_hook


@pytest.fixture
def repo(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(git_repo))
    return str(git_repo)


@pytest.fixture
def cli(capsys):
    """Run ``cc-continuity <args>`` in-process: (exit code, stdout, stderr)."""
    def run(*args):
        try:
            code = cli_mod.main(list(args))
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err
    return run


def real_cli(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "cc_continuity", *args], capture_output=True, text=True, cwd=cwd,
                          env=env or os.environ, timeout=60)


def start_session(repo, home, tokens=None, pid=None, source="startup"):
    sid = str(uuid.uuid4())
    t = Transcript(session_id=sid, cwd=repo)
    if tokens:
        t.turn(tokens)
    path = t.write(claude_transcript_path(home, repo, sid))
    env = hook_env(repo, pid or os.getpid())
    res = run_hook("SessionStart", hook_payload("SessionStart", sid, path, repo, source=source), env)
    assert res.returncode == 0, res.stderr
    return sid, path, env


def test_no_verb_prints_help_and_exits_2(cli, repo):
    code, out, err = cli()
    assert code == 2 and "status" in out and "verify" in out


def test_a_mistyped_verb_gets_a_did_you_mean_and_a_bad_option_the_verbs_own_usage(cli, repo):
    code, out, err = cli("stauts")
    assert code == 2 and "unknown command 'stauts' (did you mean 'status'?)" in err, err
    code, out, err = cli("xyzzy")
    assert code == 2 and "unknown command 'xyzzy';" in err and "did you mean" not in err, err
    code, out, err = cli("history", "--bogus")
    assert code == 2, err
    assert err.startswith("usage: cc-continuity history [-h]") and "unrecognized arguments: --bogus" in err, err


def test_version(repo):
    res = real_cli("--version", cwd=repo)
    assert res.returncode == 0 and res.stdout.startswith("cc-continuity ")


# -- the verb table: a verb's parser alone -------------------------------------------------------
def test_every_verb_module_is_in_the_table_and_registers_its_verb():
    pkg = os.path.join(os.path.dirname(cli_mod.__file__), "commands")
    modules = {f[:-3] for f in os.listdir(pkg) if f.endswith(".py") and not f.startswith("_")}
    assert modules == {mod for mod, _ in cli_mod.VERBS.values()}
    assert list(cli_mod.VERBS) == sorted(cli_mod.VERBS)  # `cc-continuity --help` lists them in this order
    for verb, (_, line) in cli_mod.VERBS.items():
        sub = next(a for a in cli_mod.build_parser([verb])._actions if isinstance(a, argparse._SubParsersAction))
        assert list(sub.choices) == [verb] and [c.help for c in sub._choices_actions] == [line], verb


def _verb_modules_loaded(*args):
    """The verb modules ``cc-continuity <args>`` imported (in a fresh interpreter), and its exit status."""
    code = ("import sys\nfrom cc_continuity import cli\ntry:\n    rc = cli.main(sys.argv[1:])\n"
            "except SystemExit as e:\n    rc = e.code\n"
            "print(sorted(m.split('.')[-1] for m in sys.modules if m.startswith('cc_continuity.commands.')"
            " and m != 'cc_continuity.commands._util'), rc, file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    loaded, rc = res.stderr.splitlines()[-1].rsplit(" ", 1)
    return eval(loaded), int(rc)


@pytest.mark.parametrize("args", [("history", "--help"), ("status", "--bogus"), ("doctor", "-h"),
                                  ("notify-flush", "--help"), ("watchdog", "status", "--help")])
def test_a_verb_imports_its_own_module_alone(args, repo):
    loaded, rc = _verb_modules_loaded(*args)
    assert loaded == [cli_mod.VERBS[args[0]][0]] and rc in (0, 2), (args, loaded, rc)


def test_help_no_verb_and_a_mistyped_one_build_every_verb_and_version_none(repo):
    every = sorted(mod for mod, _ in cli_mod.VERBS.values())
    assert _verb_modules_loaded("--help") == (every, 0)
    assert _verb_modules_loaded() == (every, 2)
    assert _verb_modules_loaded("stauts") == (every, 2)
    assert _verb_modules_loaded("--version") == ([], 0)


def test_a_broken_verb_is_named_and_the_others_still_run(cli, repo, monkeypatch):
    monkeypatch.setitem(cli_mod.VERBS, "status", ("no_such_module", "broken"))
    code, out, err = cli("status")
    assert code == 2 and "command 'status' unavailable" in err and "unknown command 'status'" in err, err
    code, out, err = cli()
    assert code == 2 and "command 'status' unavailable" in err and "verify" in out, err
    code, out, err = cli("history", "--json")
    assert code == 0 and "unavailable" not in err, err


# -- status -------------------------------------------------------------------------------------
def test_status_json(cli, repo, isolated_home):
    sid, path, env = start_session(repo, isolated_home, tokens=130_000)
    code, out, err = cli("status", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["project"] == repo and doc["slug"] == "repo" and doc["enabled"] is True
    [row] = doc["sessions"]
    assert row["name"] == "repo-001" and row["number"] == 1 and row["session_id"] == sid
    assert row["state"] == session.ACTIVE
    assert row["alive"] is True and row["pid"] == os.getpid()
    assert (row["tokens"], row["window"], row["percent"], row["level"]) == (130_000, 200_000, 65.0, "rotate")
    assert row["flags"] == {}


def test_status_text_and_all(cli, repo, isolated_home):
    sid1, path1, env = start_session(repo, isolated_home)
    run_hook("SessionEnd", hook_payload("SessionEnd", sid1, path1, repo, reason="prompt_input_exit"), env)
    start_session(repo, isolated_home, tokens=60_000)
    code, out, err = cli("status")
    assert code == 0
    assert "repo-002" in out and "ACTIVE" in out and "30%" in out and "rotation on" in out
    assert "repo-001" not in out, "ended sessions are hidden by default"
    code, out, err = cli("status", "--all", "--json")
    assert [(r["name"], r["state"]) for r in json.loads(out)["sessions"]] == [
        ("repo-001", session.ENDED), ("repo-002", session.ACTIVE)]


def test_status_with_no_sessions(cli, repo):
    code, out, err = cli("status")
    assert code == 0 and "no sessions recorded yet" in out
    code, out, err = cli("status", "--json")
    assert json.loads(out)["sessions"] == []


def test_status_unreadable_session_is_reported(cli, repo, isolated_home):
    start_session(repo, isolated_home)
    p = Project.discover(repo)
    with open(os.path.join(p.session_dir(1), "state.json"), "w") as f:
        f.write("{garbage")
    code, out, err = cli("status", "--json")
    assert code == 0
    assert json.loads(out)["sessions"][0]["state"] == "UNREADABLE"


def test_status_bad_config_names_file_and_key(cli, repo):
    os.makedirs(os.path.join(repo, ".claude"))
    path = config.project_file(repo)
    with open(path, "w") as f:
        f.write('{"hard": "very"}')
    code, out, err = cli("status")
    assert code == 2 and path in err and "'hard'" in err and out == ""


# -- history -----------------------------------------------------------------------------------
def test_history_json_links_the_clear_chain(cli, repo, isolated_home):
    sid1, path1, env = start_session(repo, isolated_home)
    run_hook("SessionEnd", hook_payload("SessionEnd", sid1, path1, repo, reason="clear"), env)
    start_session(repo, isolated_home, source="clear")
    code, out, err = cli("history", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["project"] == repo and doc["rotations"] == 0
    rows = doc["sessions"]
    assert [(r["number"], r["name"], r["state"], r["predecessor"], r["ended"]) for r in rows] == [
        (1, "repo-001", session.ENDED, None, "clear"),
        (2, "repo-002", session.ACTIVE, 1, None)]
    code, out, err = cli("history")
    assert "2 sessions, 0 rotations" in out and "ended (clear)" in out
    from cc_continuity.commands._util import count
    assert (count(1, "session"), count(0, "rotation"), count(2, "rotation")) == ("1 session", "0 rotations",
                                                                              "2 rotations")


# -- signal --------------------------------------------------------------------------------------
def test_signal_needs_human_then_status_shows_flag(cli, repo, isolated_home, monkeypatch):
    sid, path, env = start_session(repo, isolated_home)
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", sid)
    code, out, err = cli("signal", "needs-human", "pick a   database\n please")
    assert code == 0, err
    assert "repo-001 flagged needs-human: pick a database please" in out
    code, out, err = cli("status", "--json")
    flags = json.loads(out)["sessions"][0]["flags"]
    assert flags["needs_human"]["text"] == "pick a database please"
    code, out, err = cli("status")
    assert "[NEEDS-HUMAN]" in out
    code, out, err = cli("signal", "done", "all tests pass")
    assert set(json.loads(cli("status", "--json")[1])["sessions"][0]["flags"]) == {"needs_human", "done"}
    p = Project.discover(repo)
    from cc_continuity import ledger

    sigs = [r for r in ledger.read(session.ledger_path(p.session_dir(1))) if r["ev"] == "signal"]
    assert [(r["kind"], r["text"]) for r in sigs] == [("needs-human", "pick a database please"),
                                                      ("done", "all tests pass")]


def test_signal_without_session_id_picks_newest_live(cli, repo, isolated_home):
    start_session(repo, isolated_home)
    start_session(repo, isolated_home)
    code, out, err = cli("signal", "done", "finished")
    assert code == 0 and out.startswith("repo-002 flagged done")


def test_signal_errors(cli, repo, isolated_home):
    code, out, err = cli("signal", "needs-human", "help")
    assert code == 2 and "no live cc-continuity session" in err
    start_session(repo, isolated_home)
    code, out, err = cli("signal", "needs-human", "help", "--session", "nope-not-a-session")
    assert code == 2 and "no session nope-not-a-session" in err
    code, out, err = cli("signal", "needs-human", "   ")
    assert code == 2 and "reason" in err
    code, out, err = cli("signal", "bogus", "x")
    assert code == 2


# -- on / off --------------------------------------------------------------------------------------
def test_off_then_on(cli, repo, isolated_home):
    start_session(repo, isolated_home)
    path = config.user_project_file(repo)  # the user's own per-project file, in the state dir
    code, out, err = cli("off")
    assert code == 0 and path in out and "disabled" in out
    with open(path) as f:
        assert json.load(f) == {"enabled": False}
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    doc = json.loads(cli("status", "--json")[1])
    assert doc["enabled"] is False
    assert "rotation OFF" in cli("status")[1]
    code, out, err = cli("on")
    assert code == 0 and "enabled" in out
    with open(path) as f:
        assert json.load(f) == {"enabled": True}
    assert json.loads(cli("status", "--json")[1])["enabled"] is True
    assert not os.path.exists(config.project_file(repo))  # nothing written into the repository


def test_off_keeps_other_project_settings_and_on_wins_over_the_repository(cli, repo):
    os.makedirs(os.path.join(repo, ".claude"))
    with open(config.project_file(repo), "w") as f:
        json.dump({"window": 500000, "warn": 50, "enabled": False}, f)
    config.update_project(repo, {"rotate": 61})
    assert cli("off")[0] == 0
    with open(config.user_project_file(repo)) as f:
        assert json.load(f) == {"rotate": 61, "enabled": False}
    with open(config.project_file(repo)) as f:
        assert json.load(f) == {"window": 500000, "warn": 50, "enabled": False}
    assert cli("on")[0] == 0  # the user's own choice beats the repository's opt-out
    assert config.load(repo)["enabled"] is True and config.load(repo)["window"] == 500000


def test_off_from_a_subdirectory_targets_the_root(cli, repo, monkeypatch):
    sub = os.path.join(repo, "src", "deep")
    os.makedirs(sub)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    monkeypatch.chdir(sub)
    assert cli("off")[0] == 0
    assert os.path.exists(config.user_project_file(repo))
    assert config.load(repo)["enabled"] is False
    assert not os.path.exists(os.path.join(sub, ".claude"))


def test_on_with_broken_project_config_fails_without_writing(cli, repo):
    os.makedirs(os.path.join(repo, ".claude"))
    with open(config.project_file(repo), "w") as f:
        f.write("{broken")
    code, out, err = cli("on")
    assert code == 2 and config.project_file(repo) in err
    with open(config.project_file(repo)) as f:
        assert f.read() == "{broken"


def test_off_is_honoured_by_the_hooks(cli, repo, isolated_home):
    assert cli("off")[0] == 0
    sid, path, env = start_session(repo, isolated_home)
    assert Project.discover(repo).lookup(sid) is None


# -- meter errors ----------------------------------------------------------------------------------
def test_meter_missing_file_exit_2(repo, tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    res = real_cli("meter", missing, cwd=repo)
    assert res.returncode == 2
    assert res.stderr.strip() == "cc-continuity: no such transcript: %s" % missing
    assert res.stdout == ""


def test_meter_other_errors(cli, repo, tmp_path):
    code, out, err = cli("meter", str(tmp_path))
    assert code == 2 and "is a directory" in err
    t = Transcript()
    t.turn(1000)
    path = t.write(str(tmp_path / "t.jsonl"))
    code, out, err = cli("meter", path, "--window", "0")
    assert code == 2 and "--window" in err
    code, out, err = cli("meter", path)
    assert code == 0 and "tokens  1,000" in out and "window  200,000 (model)" in out
