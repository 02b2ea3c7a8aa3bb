"""``cc-continuity install`` / ``uninstall`` end to end, in a temp HOME.

Real files, real symlinks, the real app copy, and the installed hook and
status line commands run exactly as settings.json spells them.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from cc_continuity import __version__, install, paths
from cc_continuity.cli import main
from cc_continuity.install import app, settings, skills
from cc_continuity.install import plan as install_plan
from helpers import frontmatter

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

THEIR_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard", "timeout": 3}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
    "statusLine": {"type": "command", "command": "echo THEIR-STATUS", "padding": 1},
    "permissions": {"allow": ["Bash(ls:*)"]},
}


@pytest.fixture(autouse=True)
def shell_env(monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/bash")
    for name in ("ZDOTDIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")


def cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def snapshot(root):
    """Every path under ``root`` with its content, mode or link target."""
    found = {}
    if not os.path.lexists(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                found[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                found[rel] = ("dir", st.st_mode & 0o7777)
            else:
                with open(p, "rb") as f:
                    found[rel] = ("file", f.read(), st.st_mode & 0o7777)
    return found


def user_home():
    return os.environ["HOME"]


def claude_dir():
    return os.path.join(user_home(), ".claude")


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)


def populate(tmp_path):
    """A HOME as a user of other tools might have it."""
    home = user_home()
    write(os.path.join(claude_dir(), "settings.json"), json.dumps(THEIR_SETTINGS, indent=4))
    write(os.path.join(claude_dir(), "CLAUDE.md"), "# My rules\n\nBe brief.")  # no final newline
    write(os.path.join(claude_dir(), "skills", "my-skill", "SKILL.md"), "---\nname: my-skill\ndescription: mine\n---\nhi\n")
    dotfiles = tmp_path / "dotfiles"
    write(str(dotfiles / "bashrc"), "export EDITOR=vi\n# >>> conda initialize >>>\n# <<< conda initialize <<<\n", 0o600)
    os.symlink(str(dotfiles / "bashrc"), os.path.join(home, ".bashrc"))
    write(os.path.join(home, ".local", "bin", "other-tool"), "#!/bin/sh\n", 0o755)
    return dotfiles


def settings_doc():
    with open(os.path.join(claude_dir(), "settings.json"), "rb") as f:
        return settings.parse(f.read().decode())


def our_groups(doc):
    return {e: [g for g in gs if any(settings.is_our_handler(h) for h in g.get("hooks", []))]
            for e, gs in doc.get("hooks", {}).items()}


# -- the whole round trip --------------------------------------------------------

def test_install_then_uninstall_leaves_every_byte_of_home_as_it_was(tmp_path, capsys):
    dotfiles = populate(tmp_path)
    before_home, before_dotfiles = snapshot(user_home()), snapshot(str(dotfiles))

    rc, out, err = cli(capsys, "install")
    assert rc == 0, err
    assert len(out.strip().splitlines()) >= 8
    doc = settings_doc()
    ours = our_groups(doc)
    assert sorted(e for e, g in ours.items() if len(g) == 1) == sorted(
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "PreCompact",
         "SessionEnd", "StopFailure", "Notification"])
    assert doc["hooks"]["PreToolUse"][0] == THEIR_SETTINGS["hooks"]["PreToolUse"][0]  # theirs first, untouched
    assert [k for k in doc] == list(THEIR_SETTINGS)
    assert settings.is_our_statusline(doc["statusLine"])
    for name in skills.NAMES:
        assert os.path.isfile(skills.target(claude_dir(), name))
    assert "cc-continuity wrapper v%s" % __version__ in (dotfiles / "bashrc").read_text()
    assert os.path.islink(os.path.join(user_home(), ".bashrc"))
    link = os.path.join(user_home(), ".local", "bin", "cc-continuity")
    assert os.readlink(link) == app.launcher_path(paths.home())
    with open(os.path.join(paths.home(), "app", "VERSION")) as f:
        assert f.read().strip() == __version__

    rc, out, err = cli(capsys, "uninstall")
    assert rc == 0, err
    assert snapshot(user_home()) == before_home
    assert snapshot(str(dotfiles)) == before_dotfiles
    left = sorted(os.listdir(paths.home()))
    assert left == ["backups"], left

    rc, out, err = cli(capsys, "uninstall")  # safe to run twice
    assert rc == 0, err
    assert snapshot(user_home()) == before_home
    rc, out, err = cli(capsys, "uninstall", "--purge")
    assert rc == 0 and not os.path.exists(paths.home())


def test_installed_hooks_status_line_and_launcher_run(tmp_path, capsys, git_repo):
    write(os.path.join(claude_dir(), "settings.json"), json.dumps(THEIR_SETTINGS))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    doc = settings_doc()
    env = {"HOME": user_home(), "CC_CONTINUITY_HOME": paths.home(), "PATH": "/usr/bin:/bin",
           "CLAUDE_PROJECT_DIR": str(git_repo)}
    transcript = tmp_path / "t.jsonl"
    reply = {"type": "assistant", "isSidechain": False, "message": {
        "id": "msg_1", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "All done."}],
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}
    transcript.write_text(json.dumps(reply) + "\n")
    base = {"session_id": "abc-123", "transcript_path": str(transcript), "cwd": str(git_repo),
            "last_assistant_message": "All done."}
    for event, groups in our_groups(doc).items():
        if not groups:
            continue
        for h in groups[0]["hooks"]:  # Stop has two: the turn-end gate and the late (async) one
            payload = dict(base, hook_event_name=event, source="startup", tool_name="Bash",
                           tool_input={"command": "ls"}, prompt="hi", reason="other", stop_hook_active=False,
                           trigger="auto")
            p = subprocess.run([h["command"]] + h["args"], input=json.dumps(payload).encode(), env=env,
                               capture_output=True, timeout=90)
            assert p.returncode == 0, (event, h["args"][-1], p.stderr)
            assert b"Traceback" not in p.stderr
    assert os.listdir(paths.projects_dir()), "SessionStart registered the session"
    # The status line runs in a shell, and runs the user's own one first (install.json's statusline_chain).
    status = {"session_id": "abc-123", "cwd": str(git_repo), "workspace": {"project_dir": str(git_repo)},
              "model": {"id": "claude-opus-5-5"}, "context_window": {"context_window_size": 1000000,
                                                                    "used_percentage": 12}}
    p = subprocess.run(["/bin/sh", "-c", doc["statusLine"]["command"]], input=json.dumps(status).encode(), env=env,
                       capture_output=True, timeout=30)
    assert p.returncode == 0 and "THEIR-STATUS" in p.stdout.decode(), p
    # The launcher on PATH runs the app copy with the base interpreter, no venv needed.
    link = os.path.join(user_home(), ".local", "bin", "cc-continuity")
    p = subprocess.run([link, "--version"], env=env, capture_output=True, timeout=30)
    assert p.returncode == 0 and p.stdout.decode().strip() == "cc-continuity %s" % __version__


def test_install_twice_is_install_once(capsys, tmp_path):
    populate(tmp_path)
    assert cli(capsys, "install")[0] == 0
    first_home, first_app = snapshot(user_home()), os.readlink(app.app_link(paths.home()))
    with open(install.manifest.path()) as f:
        first_record = json.load(f)
    rc, out, _ = cli(capsys, "install")
    assert rc == 0
    assert snapshot(user_home()) == first_home
    assert os.readlink(app.app_link(paths.home())) == first_app, "an identical app copy is not redone"
    assert "settings: ~/.claude/settings.json unchanged" in out and "block unchanged" in out
    with open(install.manifest.path()) as f:
        second = json.load(f)
    first_record.pop("installed_at"), second.pop("installed_at")
    assert second == first_record


def test_dry_run_prints_diffs_and_writes_nothing(tmp_path, capsys):
    populate(tmp_path)
    before = snapshot(str(tmp_path))
    rc, out, err = cli(capsys, "install", "--dry-run", "--ntfy", "https://ntfy.sh/topic-s3cret", "--window", "200000")
    assert rc == 0, err
    assert snapshot(str(tmp_path)) == before
    assert "--- ~/.claude/settings.json (now)\n+++ ~/.claude/settings.json (after)" in out
    assert '+    "statusLine": {' not in out and '"command": "echo THEIR-STATUS"' in out  # replaced in place
    assert "from cc_continuity.hosts.claude.hooks import main" in out
    assert "+++ ~/.claude/CLAUDE.md (after)" in out and "+<!-- >>> cc-continuity claude-md v" in out
    assert "+# >>> cc-continuity wrapper v" in out
    for name in skills.NAMES:
        assert "+++ ~/.claude/skills/%s/SKILL.md (after)" % name in out
    assert "s3cret" not in out and "ntfy_url=(configured)" in out and "window=200000" in out
    # After a real install a dry run has nothing to change.
    assert cli(capsys, "install", "--ntfy", "https://ntfy.sh/topic-s3cret")[0] == 0
    before = snapshot(str(tmp_path))
    rc, out, _ = cli(capsys, "install", "--dry-run")
    assert rc == 0 and snapshot(str(tmp_path)) == before
    assert "+++" not in out and "app: up to date" in out and "s3cret" not in out, out


# -- refusals ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [b'{"model": "opus",,}', b'{"hooks": []}', b'{"a": 1, "a": 2}', b"[]"])
def test_a_settings_file_it_cannot_use_is_refused_and_nothing_is_written(tmp_path, capsys, bad):
    write(os.path.join(claude_dir(), "settings.json"), bad)
    before = snapshot(str(tmp_path))
    rc, out, err = cli(capsys, "install")
    assert rc == 1
    assert "settings.json" in err and "nothing was changed" in err
    assert snapshot(str(tmp_path)) == before


def test_unbalanced_markers_in_the_rc_file_are_refused(tmp_path, capsys):
    write(os.path.join(user_home(), ".bashrc"), "x\n# >>> cc-continuity wrapper v0.0.1 >>>\nhalf\n")
    before = snapshot(str(tmp_path))
    rc, _, err = cli(capsys, "install")
    assert rc == 1 and "start marker without an end marker" in err and ".bashrc: line 2" in err
    assert snapshot(str(tmp_path)) == before


def test_bad_thresholds_are_a_usage_error(capsys):
    for bad in ("70,60,50", "1,2", "a,b,c", "0,50,60", "50,60,101"):
        with pytest.raises(SystemExit) as e:
            main(["install", "--thresholds", bad])
        assert e.value.code == 2
    assert not os.path.exists(paths.home())


# -- details -----------------------------------------------------------------------

def test_symlinked_settings_json_is_written_through(tmp_path, capsys):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    original = json.dumps(THEIR_SETTINGS, indent=2).encode()
    write(str(real), original, 0o640)
    os.makedirs(claude_dir())
    link = os.path.join(claude_dir(), "settings.json")
    os.symlink("../../dotfiles/claude-settings.json", link)
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert os.readlink(link) == "../../dotfiles/claude-settings.json"
    assert settings.has_ours(settings.parse(real.read_text()))
    assert os.stat(real).st_mode & 0o777 == 0o640
    backups = os.listdir(os.path.join(paths.home(), "backups"))
    (b,) = [f for f in backups if f.startswith("settings.json.")]
    bpath = os.path.join(paths.home(), "backups", b)
    assert open(bpath, "rb").read() == original and os.stat(bpath).st_mode & 0o777 == 0o600
    assert cli(capsys, "uninstall")[0] == 0
    assert os.readlink(link) == "../../dotfiles/claude-settings.json"
    assert real.read_bytes() == original


def test_reinstall_replaces_an_older_group_of_ours_in_place(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    doc = settings_doc()
    doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 99  # as an older version wrote it
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "later-tool"}]})
    write(os.path.join(claude_dir(), "settings.json"), settings.dumps(doc))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    stop = settings_doc()["hooks"]["Stop"]
    assert len(stop) == 2 and stop[0]["hooks"][0]["timeout"] == 60 and stop[1]["hooks"][0]["command"] == "later-tool"


def test_uninstall_keeps_what_another_writer_changed(capsys):
    write(os.path.join(claude_dir(), "settings.json"), json.dumps(THEIR_SETTINGS, indent=2))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    doc = settings_doc()
    doc["model"] = "sonnet"
    doc["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "new-tool"}]})
    write(os.path.join(claude_dir(), "settings.json"), settings.dumps(doc, 3))  # rewritten its own way
    assert cli(capsys, "uninstall")[0] == 0
    expected = json.loads(json.dumps(THEIR_SETTINGS))
    expected["model"] = "sonnet"
    expected["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "new-tool"}]}]
    assert settings_doc() == expected


def test_uninstall_with_broken_settings_keeps_the_app_the_hooks_still_need(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    path = os.path.join(claude_dir(), "settings.json")
    good = open(path, "rb").read()
    write(path, good[:-5])
    rc, out, _ = cli(capsys, "uninstall", "--purge")
    assert rc == 1
    assert open(path, "rb").read() == good[:-5]
    assert os.path.isfile(os.path.join(paths.home(), "app", "cc_continuity", "hosts", "claude", "hooks", "__init__.py"))
    assert os.path.isfile(install.manifest.path()) and "purge: not done" in out
    write(path, good)
    assert cli(capsys, "uninstall")[0] == 0
    assert not os.path.exists(path), "install created it, so it goes"
    assert not os.path.lexists(os.path.join(paths.home(), "app"))


def test_foreign_files_are_left_alone(capsys):
    link = os.path.join(user_home(), ".local", "bin", "cc-continuity")
    write(link, "#!/bin/sh\necho pip-installed\n", 0o755)
    mine = skills.target(claude_dir(), "continuity-status")
    write(mine, "---\nname: continuity-status\ndescription: my own\n---\n")
    rc, out, _ = cli(capsys, "install", "--no-wrapper")
    assert rc == 0
    assert "exists and is not ours: left alone" in out
    assert open(link).read() == "#!/bin/sh\necho pip-installed\n"
    assert open(mine).read().endswith("my own\n---\n")
    assert cli(capsys, "uninstall")[0] == 0
    assert os.path.isfile(link) and os.path.isfile(mine)


def test_an_edited_skill_survives_uninstall(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    t = skills.target(claude_dir(), "continuity-history")
    with open(t, "a") as f:
        f.write("My extra line.\n")
    rc, out, _ = cli(capsys, "uninstall")
    assert rc == 0 and "was changed after install: left alone" in out
    assert open(t).read().endswith("My extra line.\n")
    assert not os.path.exists(skills.target(claude_dir(), "continuity-status"))


def test_claude_config_dir_is_respected(tmp_path, capsys, monkeypatch):
    cfg = tmp_path / "elsewhere"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert settings.has_ours(settings.parse((cfg / "settings.json").read_text()))
    assert (cfg / "skills" / "continuity-on" / "SKILL.md").is_file() and (cfg / "CLAUDE.md").is_file()
    assert not os.path.exists(claude_dir())
    assert cli(capsys, "uninstall")[0] == 0
    assert not cfg.exists(), "install created the dir and nothing else is in it"


def test_fish_wrapper_goes_to_conf_d_and_leaves_no_trace(capsys):
    rc, out, _ = cli(capsys, "install", "--shell", "fish")
    assert rc == 0
    conf = os.path.join(user_home(), ".config", "fish", "conf.d", "cc-continuity.fish")
    text = open(conf).read()
    assert "function claude" in text and "# >>> cc-continuity wrapper v" in text
    assert cli(capsys, "uninstall")[0] == 0
    assert not os.path.exists(os.path.join(user_home(), ".config"))


def test_options_go_to_the_config_and_secrets_are_not_printed(capsys):
    url = "https://ntfy.example/alerts-Xk29sQ?auth=tok3n"
    rc, out, err = cli(capsys, "install", "--no-wrapper", "--window", "200000", "--thresholds", "50,60,70.5",
                       "--ntfy", url, "--unattended")
    assert rc == 0, err
    with open(paths.config_file()) as f:
        cfg = json.load(f)
    assert cfg == {"window": 200000, "warn": 50, "rotate": 60, "hard": 70.5, "ntfy_url": url, "unattended": True}
    assert "Xk29sQ" not in out + err and "tok3n" not in out + err
    assert os.stat(paths.config_file()).st_mode & 0o777 == 0o600
    # The same value parser as `configure --ntfy`: refused before anything is planned.
    with pytest.raises(SystemExit) as e:
        main(["install", "--no-wrapper", "--ntfy", "ftp://x"])
    assert e.value.code == 2 and "expected an http(s) URL" in capsys.readouterr().err
    rc, out, _ = cli(capsys, "install", "--no-wrapper", "--window", "128k")
    assert rc == 0, out
    with open(paths.config_file()) as f:
        assert json.load(f)["window"] == 128000


def test_record_is_private_and_holds_the_chain(capsys):
    write(os.path.join(claude_dir(), "settings.json"), json.dumps(THEIR_SETTINGS))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    st = os.stat(install.manifest.path())
    assert st.st_mode & 0o777 == 0o600 and os.stat(paths.home()).st_mode & 0o777 == 0o700
    with open(install.manifest.path()) as f:
        rec = json.load(f)
    assert rec["statusline_chain"] == THEIR_SETTINGS["statusLine"]
    assert rec["python"] == app.base_interpreter() and os.path.isabs(rec["python"])


def test_backups_are_pruned_to_the_newest_few(tmp_path):
    target = str(tmp_path / "settings.json")
    made = [install_plan.backup(target, b"%d" % i) for i in range(install_plan.BACKUPS_KEPT + 3)]
    kept = sorted(os.listdir(os.path.join(paths.home(), "backups")))
    assert len(kept) == install_plan.BACKUPS_KEPT
    assert open(made[-1], "rb").read() == b"%d" % (install_plan.BACKUPS_KEPT + 2)


# -- shipped data ------------------------------------------------------------------

def test_skills_have_valid_frontmatter_and_run_their_verb():
    from cc_continuity.cli import build_parser

    verbs = set(build_parser()._subparsers._group_actions[0].choices)
    for name, data in skills.shipped().items():
        fields, body = frontmatter.parse_frontmatter(data.decode())
        verb = name[len("continuity-"):]
        assert fields["name"] == name
        assert 20 < len(fields["description"]) < 1536
        assert fields["allowed-tools"] == "Bash(cc-continuity %s:*)" % verb
        assert "`cc-continuity %s" % verb in body
        assert verb in verbs, "the skill runs a CLI verb that exists"
        if verb in ("rotate", "on", "off"):
            assert fields.get("disable-model-invocation") == "true", "only the user toggles or rotates"


def test_frontmatter_parser_refuses_what_yaml_would_read_differently():
    for bad in ("---\nname: a: b\n---\n", "---\ndescription: [x]\n---\n", "---\nname: x\n", "name: x\n---\n",
                "---\nname: x\nname: y\n---\n", "---\nkey without colon\n---\n"):
        with pytest.raises(frontmatter.FrontmatterError):
            frontmatter.parse_frontmatter(bad)
    assert frontmatter.parse_frontmatter('---\na: "q: x"\nb: \'it\'\'s\'\n---\nbody')[0] == {"a": "q: x", "b": "it's"}


def test_claude_md_block_states_facts_and_names_the_signals():
    text = install_plan.claude_md_body()
    assert 'cc-continuity signal needs-human "<reason>"' in text
    assert 'cc-continuity signal done "<summary>"' in text
    lowered = text.lower()
    for framing in ("system:", "<system", "ignore previous", "you must", "important:"):
        assert framing not in lowered
    assert len(text.splitlines()) < 30


def test_the_plugins_folders_are_real_and_the_package_data_links_to_them():
    """A plugin's hooks/ and skills/ must be real directories (a linked one is not read); the
    package ships the same files as data, through links in a checkout, as files in a wheel."""
    for name in ("skills", "hooks"):
        top = os.path.join(REPO, "plugin", name)
        assert os.path.isdir(top) and not os.path.islink(top)
        data = os.path.join(REPO, "cc_continuity", "data", name)
        assert os.path.islink(data) and os.path.realpath(data) == os.path.realpath(top)
    for name in ("launchd", "systemd"):
        assert os.readlink(os.path.join(REPO, name)) == "cc_continuity/data/" + name
    assert os.path.isfile(os.path.join(REPO, "plugin", "hooks", "hooks.json"))


def test_runtime_dependencies_match_pyproject():
    import re
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    assert sorted(re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in deps) == sorted(app.RUNTIME_DISTS)


# -- issue 10: the user's own status line survives a lost or mismatched install record -----------
THEIRS = {"type": "command", "command": "echo THEIR-STATUS", "padding": 1}


def _settings_at(cdir):
    with open(os.path.join(cdir, "settings.json"), "rb") as f:
        return settings.parse(f.read().decode())


def _run_status_line(cdir, env=None):
    """Run the status line exactly as that settings.json spells it (shell form)."""
    command = _settings_at(cdir)["statusLine"]["command"]
    res = subprocess.run(command, shell=True, input=b"{}", capture_output=True, timeout=30,
                         env=dict(os.environ, **(env or {})))
    assert res.returncode == 0, res.stderr
    return res.stdout.decode().splitlines()


def test_their_status_line_survives_a_deleted_state_dir(capsys):
    write(os.path.join(claude_dir(), "settings.json"), json.dumps({"statusLine": THEIRS}, indent=2))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    import shutil

    shutil.rmtree(paths.home())  # the state dir (and with it install.json) is gone
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert _run_status_line(claude_dir())[0] == "THEIR-STATUS"
    assert cli(capsys, "uninstall")[0] == 0
    assert _settings_at(claude_dir())["statusLine"] == THEIRS


def test_their_status_line_survives_a_second_cc_continuity_home(capsys, monkeypatch, tmp_path):
    write(os.path.join(claude_dir(), "settings.json"), json.dumps({"statusLine": THEIRS}, indent=2))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    monkeypatch.setenv("CC_CONTINUITY_HOME", str(tmp_path / "second-home"))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0  # its record knows nothing of the first
    assert _run_status_line(claude_dir())[0] == "THEIR-STATUS"
    assert cli(capsys, "uninstall")[0] == 0
    assert _settings_at(claude_dir())["statusLine"] == THEIRS


def test_each_claude_config_dir_keeps_and_gets_back_its_own_status_line(capsys, monkeypatch, tmp_path):
    a, b = tmp_path / "config-a", tmp_path / "config-b"
    theirs_b = {"type": "command", "command": "echo B-STATUS"}
    write(str(a / "settings.json"), json.dumps({"statusLine": THEIRS}))
    write(str(b / "settings.json"), json.dumps({"statusLine": theirs_b}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(a))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(b))
    assert cli(capsys, "install", "--no-wrapper")[0] == 0  # the record now describes b only
    assert _run_status_line(str(a))[0] == "THEIR-STATUS"  # each file runs its own user's line
    assert _run_status_line(str(b))[0] == "B-STATUS"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(a))
    assert cli(capsys, "uninstall")[0] == 0
    assert _settings_at(str(a))["statusLine"] == THEIRS
    assert _settings_at(str(b))["statusLine"] == theirs_b  # (uninstall also cleans the recorded file)


def test_what_the_model_runs_is_the_launcher_itself_so_no_path_is_needed(capsys, git_repo):
    """Claude Code's Bash tool has the user's PATH, which may lack ~/.local/bin (macOS, Debian before
    a new login): the installed skills and the CLAUDE.md block name the launcher by its path."""
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    launcher = os.path.join(paths.home(), "bin", "cc-continuity")
    env = {"HOME": user_home(), "CC_CONTINUITY_HOME": paths.home(), "PATH": "/usr/bin:/bin"}
    for name in skills.NAMES:
        verb = name[len("continuity-"):]
        with open(skills.target(claude_dir(), name), encoding="utf-8") as f:
            fields, body = frontmatter.parse_frontmatter(f.read())
        assert fields["allowed-tools"] == "Bash(%s %s:*)" % (launcher, verb)
        command = re.search(r"Run `([^`]+)` with the Bash tool", body).group(1)
        assert command.startswith(launcher + " " + verb)
        if verb in ("status", "history"):  # run it as the Bash tool would, without ~/.local/bin
            p = subprocess.run(["/bin/sh", "-c", command.replace("$ARGUMENTS", "")], env=env, cwd=str(git_repo),
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 0 and "not found" not in p.stderr, (command, p.stdout, p.stderr)
    with open(os.path.join(claude_dir(), "CLAUDE.md"), encoding="utf-8") as f:
        md = f.read()
    assert '`%s signal needs-human "<reason>"`' % launcher in md and "`cc-continuity signal" not in md
    assert cli(capsys, "uninstall")[0] == 0
    assert not any(os.path.exists(skills.target(claude_dir(), n)) for n in skills.NAMES)


def test_after_the_plugin_is_disabled_in_claude_code_the_next_command_names_what_is_left(tmp_path):
    """Issue 20: an uninstall or disable done in Claude Code runs no code of ours; the next verb says so."""
    from cc_continuity.install import plugin as install_plugin

    cdir = paths.claude_config_dir()
    os.makedirs(cdir, exist_ok=True)
    paths.ensure_dir(paths.home())
    status = settings.render_fragment(settings.load_fragment(), sys.executable, "/opt/cc/app")["statusLine"]
    doc = {"enabledPlugins": {"cc-continuity@cc-continuity": True}, "statusLine": status}
    with open(os.path.join(cdir, "settings.json"), "w") as f:
        json.dump(doc, f)
    env = dict(os.environ, PYTHONPATH=REPO)
    run = lambda verb: subprocess.run([sys.executable, "-m", "cc_continuity", verb], env=env, capture_output=True,
                                      text=True, timeout=60)
    assert install_plugin.LEFTOVER_FIX not in run("history").stderr  # enabled: nothing to say
    doc["enabledPlugins"]["cc-continuity@cc-continuity"] = False
    with open(os.path.join(cdir, "settings.json"), "w") as f:
        json.dump(doc, f)
    err = run("history").stderr
    assert "no longer enabled" in err and "the status line in settings.json" in err and paths.home() in err, err
    assert "`cc-continuity uninstall --purge` removes them" in err
    assert install_plugin.LEFTOVER_FIX not in run("uninstall").stdout.split("\n")[0]  # not on the verb that removes it


def test_install_mcp_beside_a_marketplace_plugin_turns_its_server_on_and_allows_its_read_only_tools(capsys):
    """The marketplace plugin carries its own server entry: install --mcp adds none at user scope (no `claude`
    is needed), turns the plugin's server on (mcp_server, which builds its SDK) and allows the plugin's tools."""
    from cc_continuity import config
    from cc_continuity.hosts.claude import mcpentry

    pytest.importorskip("mcp")
    os.makedirs(claude_dir(), exist_ok=True)
    write(os.path.join(claude_dir(), "settings.json"), json.dumps(
        {"enabledPlugins": {"cc-continuity@cc-continuity": True}}).encode())
    rc, out, err = cli(capsys, "install", "--no-wrapper", "--mcp")
    assert rc == 0, err
    assert "the plugin's own server entry starts once its SDK is built" in out, out
    assert config.load(None)["mcp_server"] is True
    allow = settings_doc()["permissions"]["allow"]
    assert allow == mcpentry.PLUGIN_ALLOW and not [r for r in allow if r.startswith("mcp__cc-continuity__")]
    assert not os.path.exists(os.path.join(user_home(), ".claude.json"))  # nothing registered at user scope
    rc, out, _ = cli(capsys, "uninstall")  # (1: no `claude` here to uninstall the plugin itself)
    assert "the marketplace plugin's own server entry goes with the plugin" in out, out
    assert "permissions" not in settings_doc(), out
