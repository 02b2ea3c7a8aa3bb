"""The whole report (hosts/checkup.py, doctor/runner.py, commands/doctor.py): rows, JSON, exit status, the closing line,
and which agents are judged: `--agent`, and each install shape (Claude Code only, Codex CLI only, both,
none)."""

import json
import os
import subprocess
import sys

from cc_continuity import paths
from cc_continuity.hosts import checkup
from cc_continuity.hosts.claude import doctor as claude
from cc_continuity.install import wrapper

CLAUDE_AND_SYSTEM = [c for c in checkup.CHECKS if checkup.agent_of(c) not in ("codex", "gemini")]

# -- the whole report ------------------------------------------------------------

def test_good_install_is_all_green(inst):
    results = inst.check()
    bad = [r for r in results.values() if not r.ok]
    assert bad == []
    assert "10 events" in results["hooks"].detail
    assert "6 skills" in results["skills"].detail


def test_cli_json_shape_and_exit_status(inst):
    r = inst.cli("--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)
    assert isinstance(rows, list) and len(rows) == len(CLAUDE_AND_SYSTEM) + 2  # + Codex and Gemini CLI's neutral rows
    for row in rows:
        assert set(row) == {"name", "ok", "detail", "fix"}
        assert row["ok"] is True and row["fix"] is None and row["detail"]
    os.unlink(inst.settings_path)
    r = inst.cli("--json")
    assert r.returncode == 1
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["hooks"]["ok"] is False and rows["hooks"]["fix"] == "cc-continuity install"


def test_text_report_one_line_per_check_with_fixes_and_no_colour_when_piped(inst):
    inst.manifest["rc"][0]["path"] = os.path.join(str(inst.home), "nowhere.rc")
    inst.save_manifest()
    r = inst.cli()
    assert r.returncode == 1
    assert "\033[" not in r.stdout
    lines = r.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith(("ok  ", "FAIL"))) == len(CLAUDE_AND_SYSTEM)
    assert [line.split()[1] for line in lines if line.startswith("-   ")] == ["codex-cli", "gemini-cli"]
    wrapper_line = next(i for i, line in enumerate(lines) if line.startswith("FAIL") and " wrapper " in line)
    assert "fix: cc-continuity install" in lines[wrapper_line + 1]
    assert "cc-continuity rehearse" in r.stdout
    coloured = checkup.render([checkup.Result("x", True, "fine"), checkup.Result("y", False, "bad", "do z")], color=True)
    assert "\033[32m" in coloured and "\033[31m" in coloured


def test_a_crashing_check_is_reported_not_raised(inst):
    def check_boom(ctx):
        raise KeyError("surprise")

    [r] = checkup.run_checks(checkup.Context(env=inst.env), [check_boom])
    assert r.name == "boom" and not r.ok and "surprise" in r.detail


def test_the_real_installer_passes_doctor(tmp_path, git_repo, isolated_home):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").write_text("#!/bin/sh\necho '2.1.328 (Claude Code)'\n")
    (bindir / "claude").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), SHELL="/bin/bash")
    r = subprocess.run([sys.executable, "-m", "cc_continuity.cli", "install"], env=env, cwd=str(git_repo),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(str(isolated_home), ".claude.json"), "w") as f:
        json.dump({"projects": {str(git_repo): {"hasTrustDialogAccepted": True}}}, f)
    # Right after install, in the shell that ran it: the wrapper is for new shells, not a failure.
    results = {x.name: x for x in checkup.run_checks(checkup.Context(env=env, cwd=str(git_repo)))}
    assert results["wrapper"].ok and "read by shells started from now on" in results["wrapper"].detail
    assert [x for x in results.values() if not x.ok] == []
    env[wrapper.ACTIVE_ENV] = "1"
    results = {x.name: x for x in checkup.run_checks(checkup.Context(env=env, cwd=str(git_repo)))}
    assert [x for x in results.values() if not x.ok] == []
    # The installed launcher runs `launch` from the app copy.
    launcher = claude.launcher_path(json.load(open(os.path.join(paths.home(), "install.json"))))
    r = subprocess.run([launcher, "launch", "--print", "--", "hi"], env=env, cwd=str(git_repo),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["argv"] == [str(bindir / "claude"), "hi"]


# -- which agents are judged: each install shape, and --agent ---------------------------------------------

def rows_of(check_list):
    names = {c.__name__[len("check_"):].replace("_", "-") for c in check_list}
    return {"mod" if n == "mods" else n for n in names}  # (check_mods' row is "mod")


SYSTEM = rows_of(c for c in checkup.CHECKS if checkup.agent_of(c) is None)
CLAUDE = rows_of(c for c in checkup.CHECKS if checkup.agent_of(c) == "claude")
CODEX = rows_of(c for c in checkup.CHECKS if checkup.agent_of(c) == "codex")
GEMINI = rows_of(c for c in checkup.CHECKS if checkup.agent_of(c) == "gemini")


def doctor(capsys, *args):
    """``cc-continuity doctor ARGS`` in this process: (exit status, the text report or the JSON rows by name)."""
    from cc_continuity.cli import main

    rc = main(["doctor", *args])
    out = capsys.readouterr().out
    return rc, ({r["name"]: r for r in json.loads(out)} if "--json" in args else out)


def install_codex(capsys, *more):
    from cc_continuity.cli import main

    assert main(["install", "--agent", "codex", *more]) == 0
    capsys.readouterr()


def test_the_rows_split_into_the_system_and_one_group_per_agent():
    assert SYSTEM and CLAUDE and CODEX and not (SYSTEM & CLAUDE or SYSTEM & CODEX or CLAUDE & CODEX)
    assert {"python", "git", "tmux", "config", "app-copy", "permissions", "ntfy"} <= SYSTEM
    assert {"claude", "hooks", "statusline", "wrapper", "skills", "plugin", "mod", "trust"} <= CLAUDE
    assert CODEX == {"codex-hooks", "codex-trust", "codex-firing"}
    assert GEMINI == {"gemini-hooks", "gemini-trust", "gemini-settings", "gemini-window", "gemini-firing"}
    assert not (GEMINI & (SYSTEM | CLAUDE | CODEX))


def test_a_codex_only_install_shows_no_claude_code_row_as_a_failure(capsys, git_repo, monkeypatch):
    """Issue 35: after `install --agent codex` doctor showed 8 of 28 rows red, 6 of them Claude Code's (the
    fix of each would install Claude Code's wiring), and its wrapper row said --no-wrapper."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no codex binary to ask, no claude
    monkeypatch.chdir(git_repo)
    install_codex(capsys)
    rc, rows = doctor(capsys, "--json")
    assert rc == 1
    assert set(rows) == SYSTEM | CODEX | {"claude-code", "gemini-cli"}
    assert rows["claude-code"]["ok"] and "cc-continuity install" in rows["claude-code"]["detail"]
    assert {name for name, r in rows.items() if not r["ok"]} == {"codex-trust", "codex-firing"}, rows
    rc, text = doctor(capsys)
    assert "2 of %d checks failed." % len(SYSTEM | CODEX) in text
    neutral, gemini = [line for line in text.splitlines() if line.startswith("-   ")]
    assert neutral.split()[1] == "claude-code" and "Claude Code is not set up here" in neutral
    assert gemini.split()[1] == "gemini-cli"
    next_line = text.splitlines()[-1]
    assert next_line.startswith("Next:") and "--no-wrapper" not in text
    assert "rehearse" not in next_line and "cc-continuity run --agent codex" in next_line
    # Asked for by name, Claude Code is judged: red where nothing is wired, and never "--no-wrapper".
    rc, rows = doctor(capsys, "--json", "--agent", "claude")
    assert set(rows) == SYSTEM | CLAUDE | {"gemini-cli"}  # (Gemini CLI: set up nowhere, its neutral row)
    assert not rows["hooks"]["ok"] and rows["hooks"]["fix"] == "cc-continuity install"
    assert not rows["wrapper"]["ok"] and "--no-wrapper" not in rows["wrapper"]["detail"]
    rc, text = doctor(capsys, "--agent", "claude")
    assert "then `cc-continuity doctor --agent claude` again" in text.splitlines()[-1]


def test_a_claude_only_install_judges_claude_code_and_names_codex_once(inst, capsys, monkeypatch):
    monkeypatch.chdir(inst.repo)
    for k, v in inst.env.items():
        monkeypatch.setenv(k, v)
    rc, rows = doctor(capsys, "--json")
    assert rc == 0 and set(rows) == SYSTEM | CLAUDE | {"codex-cli", "gemini-cli"}
    assert "cc-continuity install --agent codex" in rows["codex-cli"]["detail"]
    rc, text = doctor(capsys)
    assert "Next: `cc-continuity rehearse`" in text and "run --agent codex" not in text
    # --agent codex: Codex CLI is judged although it is not installed, and that is red with its install.
    rc, rows = doctor(capsys, "--json", "--agent", "codex")
    assert rc == 1 and set(rows) == SYSTEM | CODEX | {"gemini-cli"}
    assert rows["codex-hooks"]["fix"] == "cc-continuity install --agent codex"
    rc, rows = doctor(capsys, "--json", "--agent", "all")
    assert set(rows) == SYSTEM | CLAUDE | CODEX | GEMINI


def test_with_both_installed_both_are_judged_and_agent_narrows(inst, capsys, monkeypatch):
    monkeypatch.chdir(inst.repo)
    for k, v in dict(inst.env, PATH="%s:/usr/bin:/bin" % os.path.dirname(str(inst.claude))).items():
        monkeypatch.setenv(k, v)
    install_codex(capsys, "--trust")
    rc, rows = doctor(capsys, "--json")
    assert set(rows) == SYSTEM | CLAUDE | CODEX | {"gemini-cli"}, "no neutral row for the two set up"
    assert [n for n, r in rows.items() if not r["ok"]] == ["codex-firing"], rows  # no Codex session ran yet
    assert rows["wrapper"]["ok"] and rows["codex-trust"]["ok"]
    rc, text = doctor(capsys)
    assert "cc-continuity rehearse" in text.splitlines()[-1] and "run --agent codex" in text.splitlines()[-1]
    rc, rows = doctor(capsys, "--json", "--agent", "claude")
    assert rc == 0 and set(rows) == SYSTEM | CLAUDE | {"gemini-cli"}
    rc, rows = doctor(capsys, "--json", "--agent", "codex")
    assert rc == 1 and set(rows) == SYSTEM | CODEX | {"gemini-cli"}


def test_with_nothing_installed_one_row_says_how_to_start(capsys, git_repo, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.chdir(git_repo)
    rc, rows = doctor(capsys, "--json")
    assert rc == 1 and set(rows) == SYSTEM | {"install"}
    assert not rows["install"]["ok"] and "set up for no agent" in rows["install"]["detail"]
    assert rows["install"]["fix"] == ("`cc-continuity install` for Claude Code, or `cc-continuity install "
                                      "--agent codex` for Codex CLI, or `cc-continuity install --agent gemini` "
                                      "for Gemini CLI")
    rc, text = doctor(capsys)
    assert text.splitlines()[-1] == ("Next: `cc-continuity install` sets cc-continuity up for Claude Code, "
                                     "`cc-continuity install --agent codex` for Codex CLI, "
                                     "`cc-continuity install --agent gemini` for Gemini CLI.")
    # What a plugin or a lost record leaves still counts as set up: hooks of ours in settings.json.
    paths.ensure_dir(paths.claude_config_dir())
    from cc_continuity.install import settings

    with open(os.path.join(paths.claude_config_dir(), "settings.json"), "w") as f:
        json.dump(settings.render_fragment(settings.load_fragment(), sys.executable, "/gone/app"), f)
    rc, rows = doctor(capsys, "--json")
    assert set(rows) == SYSTEM | CLAUDE | {"codex-cli", "gemini-cli"} and not rows["hooks"]["ok"]
    with open(os.path.join(paths.claude_config_dir(), "settings.json"), "w") as f:
        f.write('{"hooks": {},}')  # unreadable: it may hold ours, so Claude Code is judged (the repair first)
    rc, rows = doctor(capsys, "--json")
    assert "hooks" in rows and rows["hooks"]["fix"].startswith("repair ")
