"""``install --agent gemini`` / ``uninstall --agent gemini``: our hooks and the compression threshold in
``~/.gemini/settings.json``, and out again.

The pure parts (hosts/gemini/files.py) on bytes: the merge keeps a user's file byte for byte where it is
theirs (tabs, a number Python would not keep, their hooks), a file with comments is refused with the exact
lines to add, a threshold the user set is theirs, uninstall gives back the bytes.  Then the verbs in a temp
HOME (the real Gemini CLI reading what install wrote: tests/e2e/test_gemini_install_e2e.py).
"""

import json
import os

import pytest

from cc_continuity import paths
from cc_continuity.errors import SettingsError
from cc_continuity.hosts.gemini import files as gemini
from cc_continuity.hosts.gemini import hooks as gemini_hooks
from cc_continuity.hosts.gemini import install as gemini_install
from cc_continuity.install import settings
from helpers.codex import cli, listing, write

PY, APP = "/usr/bin/python3", "/home/u/.claude-continuity/app"
THEIRS = (b'{\n\t"security": {"auth": {"selectedType": "gemini-api-key"}},\n\t"hooks": {\n\t\t"BeforeTool": [\n'
          b'\t\t\t{"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", '
          b'"command": "guard", "timeout": 1e400}]}\n\t\t]\n\t},\n\t"x-note": "m\xc3\xaene"\n}')
COMMENTED = (b'{\n  // my settings\n  "ui": {"theme": "GitHub"}, /* a "string" in a comment */\n'
             b'  "url": "http://x//y/*z*/"\n}\n')


def gemini_dir():
    return os.path.join(os.environ["HOME"], ".gemini")


def test_comments_are_blanked_outside_strings_and_lines_stay_where_they_were():
    text = COMMENTED.decode()
    stripped = gemini.strip_comments(text)
    assert stripped.count("\n") == text.count("\n") and len(stripped) == len(text)
    assert json.loads(stripped) == {"ui": {"theme": "GitHub"}, "url": "http://x//y/*z*/"}
    assert gemini.strip_comments('{"a": "\\"//"} // x') == '{"a": "\\"//"}     '
    assert gemini.load(COMMENTED, "s.json") == ({"ui": {"theme": "GitHub"}, "url": "http://x//y/*z*/"}, True)
    assert gemini.load(b'{"a": 1}', "s.json")[1] is False
    with pytest.raises(SettingsError, match="line 2 column"):
        gemini.load(b'{\n  "a": ,  // broken\n}', "s.json")


def test_our_table_is_every_event_named_with_millisecond_timeouts():
    table = gemini.render(PY, APP)["hooks"]
    assert list(table) == list(gemini_hooks.EVENTS)
    for event, (group,) in table.items():
        (handler,) = group["hooks"]
        assert group["matcher"] == "*" and handler["name"] == "cc-continuity-" + event
        assert handler["timeout"] == gemini_hooks.TIMEOUTS_MS[event] >= 1000 * (gemini_hooks.BUDGET[event] + 1)
        assert settings.is_our_handler(handler, gemini.mark()) and handler["command"].endswith(" " + event)
    with pytest.raises(SettingsError, match=r"has a \$ in it"):
        gemini.render("/opt/$HOME/python3", APP)


@pytest.mark.parametrize("window, hard", [(1_000_000, 72), (1_048_576, 72), (200_000, 90), (2_000_000, 60),
                                          (32_000, 100), (1_000_000, 99.5)])
def test_the_threshold_set_is_just_above_our_hard_ceiling(window, hard):
    t = gemini.wanted_threshold(window, hard)
    assert 0 < t <= 1 and round(t, 2) == t
    assert t * gemini.GEMINI_LIMIT > min(window * hard / 100, gemini.GEMINI_LIMIT - 1) or t == 1.0
    assert t - 0.02 < window * hard / 100 / gemini.GEMINI_LIMIT or t == 1.0  # not far above it either
    assert gemini.wanted_threshold(1_000_000, 72) == 0.7


def test_merge_keeps_their_bytes_and_undo_gives_them_back():
    new, rec = gemini.plan(THEIRS, PY, APP, 0.7)
    doc = settings.parse(new.decode(), "s")
    assert new.startswith(b'{\n\t"security"') and b"1e400" in new and "m\u00eene" in new.decode()
    assert [h["hooks"][0]["name"] for h in doc["hooks"]["BeforeTool"]] == ["guard", "cc-continuity-BeforeTool"]
    assert gemini.threshold_of(doc) == 0.7 and rec["threshold_set"] == 0.7 and rec["created_model"]
    assert gemini.plan(new, PY, APP, 0.7, rec)[0] == new  # a second install changes nothing
    assert gemini.plan_undo(new, rec) == THEIRS
    # Somebody wrote the file since: only ours goes, their edit stays.
    edited = new.replace(b'"x-note"', b'"added": true,\n\t"x-note"')
    back = gemini.plan_undo(edited, rec)
    assert settings.parse(back.decode(), "s") == dict(settings.parse(THEIRS.decode(), "s"), added=True)
    assert gemini.plan_undo(None, rec) is None
    assert gemini.plan(None, PY, APP, 0.7)[1]["original"] is None
    created, crec = gemini.plan(None, PY, APP, 0.7)
    assert gemini.plan_undo(created.replace(b"0.7", b"0.7 "), crec) is None  # ours only, rewritten: deleted


def test_a_threshold_the_user_set_is_theirs():
    mine = b'{"model": {"compressionThreshold": 0.9, "name": "gemini-2.5-pro"}}'
    new, rec = gemini.plan(mine, PY, APP, 0.7)
    assert gemini.threshold_of(settings.parse(new.decode(), "s")) == 0.9 and rec["threshold_set"] is None
    assert gemini.plan_undo(new, rec) == mine
    low = b'{"model": {"compressionThreshold": 0.3}}'
    new, rec = gemini.plan(low, PY, APP, 0.7)
    assert gemini.threshold_of(settings.parse(new.decode(), "s")) == 0.3
    edited = new.replace(b"0.3", b"0.35")
    assert gemini.threshold_of(settings.parse(gemini.plan_undo(edited, rec).decode(), "s")) == 0.35


def test_a_file_with_comments_is_refused_with_the_lines_to_add():
    with pytest.raises(SettingsError) as e:
        gemini.plan(COMMENTED, PY, APP, 0.7, where="~/.gemini/settings.json")
    text = str(e.value)
    assert text.startswith("~/.gemini/settings.json has comments") and "changes nothing in it" in text
    fragment = json.loads(text[text.index("\n{"):])
    assert fragment == {"hooks": gemini.render(PY, APP)["hooks"], "model": {"compressionThreshold": 0.7}}


def test_install_uninstall_leaves_the_gemini_folder_byte_identical(tmp_path, capsys):
    write(os.path.join(gemini_dir(), "settings.json"), THEIRS)
    write(os.path.join(gemini_dir(), "trustedFolders.json"), b'{"/w": "TRUST_FOLDER"}')
    before = listing(gemini_dir())
    rc, out, err = cli(capsys, "install", "--agent", "gemini")
    assert rc == 0, err
    assert "gemini: ~/.gemini/settings.json hooks merged (7 events)" in out
    assert "model.compressionThreshold 0.7: Gemini compresses at 734003 tokens" in out
    assert "`/permissions trust`" in out and "trusts no folder for you" in out
    assert listing(gemini_dir())["trustedFolders.json"] == before["trustedFolders.json"]
    assert not os.path.exists(os.path.join(os.environ["HOME"], ".claude")), "nothing of Claude Code's"
    rc, out, _ = cli(capsys, "install", "--agent", "gemini")
    assert rc == 0 and "gemini: ~/.gemini/settings.json unchanged" in out
    rc, out, err = cli(capsys, "uninstall", "--agent", "gemini")
    assert rc == 0, err
    assert "gemini: ~/.gemini/settings.json our 7 hooks removed" in out
    assert listing(gemini_dir()) == before
    assert sorted(os.listdir(paths.home())) == ["backups"]


def test_a_commented_settings_file_is_refused_and_nothing_is_written(tmp_path, capsys):
    write(os.path.join(gemini_dir(), "settings.json"), COMMENTED)
    before = listing(str(tmp_path))
    rc, _out, err = cli(capsys, "install", "--agent", "gemini")
    assert rc != 0 and "has comments" in err and '"cc-continuity-AfterAgent"' in err
    assert listing(str(tmp_path)) == before
    assert not gemini_install.still_installed(None)  # a commented file without ours holds nothing of ours


def test_dry_run_writes_nothing_and_other_agents_options_are_refused(tmp_path, capsys):
    before = listing(str(tmp_path))
    rc, out, _ = cli(capsys, "install", "--agent", "gemini", "--dry-run")
    assert rc == 0 and listing(str(tmp_path)) == before
    assert "+++ ~/.gemini/settings.json (after)" in out and gemini.mark() in out
    for flag in ("--plugin", "--trust", "--no-wrapper", "--unattended"):
        rc, _out, err = cli(capsys, "install", "--agent", "gemini", flag)
        assert rc != 0 and flag in err and "not for Gemini CLI" in err
    assert listing(str(tmp_path)) == before


def test_gemini_cli_home_is_where_gemini_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "elsewhere"))
    assert gemini.gemini_home() == str(tmp_path / "elsewhere" / ".gemini")
    assert cli(capsys, "install", "--agent", "gemini")[0] == 0
    assert os.path.isfile(tmp_path / "elsewhere" / ".gemini" / "settings.json")
    assert not os.path.exists(gemini_dir())
    monkeypatch.setenv("GEMINI_CLI_HOME", "relative")
    with pytest.raises(SettingsError, match="not an absolute path"):
        gemini.gemini_home()


def test_with_claude_code_too_uninstall_of_gemini_keeps_the_app(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert cli(capsys, "install", "--agent", "gemini")[0] == 0
    rc, out, _ = cli(capsys, "uninstall", "--agent", "gemini")
    assert rc == 0 and "app: kept, Claude Code's hooks run from it" in out
    assert not os.path.exists(gemini_dir()), "install made the folder and the file: both gone"


@pytest.mark.parametrize("rules, folder, want", [
    ({"/w": "TRUST_FOLDER"}, "/w/sub/deeper", True),
    ({"/w/p": "TRUST_PARENT"}, "/w/other", True),
    ({"/w": "TRUST_FOLDER", "/w/bad": "DO_NOT_TRUST"}, "/w/bad/x", False),
    ({"/w/bad": "DO_NOT_TRUST", "/w/bad/ok": "TRUST_FOLDER"}, "/w/bad/ok", True),
    ({"/w": "TRUST_FOLDER"}, "/wx", None),
    ({}, "/w", None),
])
def test_folder_trust_is_gemini_s_longest_rule(rules, folder, want):
    assert gemini.folder_trusted(folder, rules, env={}) is want
    assert gemini.folder_trusted(folder, rules, env={"GEMINI_CLI_TRUST_WORKSPACE": "true"}) is True


def _gemini_args(file_path, content="# Handoff\n"):
    """The arguments as Gemini 0.61's policy engine matches them: sorted JSON, each top-level pair between NULs."""
    args = {"content": content, "file_path": file_path}
    return "{" + ",".join("\0%s:%s\0" % (json.dumps(k), json.dumps(args[k])) for k in sorted(args)) + "}"


def test_the_policy_rule_allows_the_handoff_s_write_and_nothing_else():
    import re
    import tomllib

    home = "/home/u.x/.gemini"
    (rule,) = tomllib.loads(gemini.policy_text(home))["rule"]
    assert (rule["toolName"], rule["decision"], rule["priority"]) == ("write_file", "allow", 100)
    allowed = re.compile(rule["argsPattern"])
    assert allowed.search(_gemini_args(home + "/tmp/my-proj-2/continuity-handoff-001.md"))
    for path in (home + "/tmp/my-proj/sub/continuity-handoff-003.md", home + "/tmp/my-proj/notes.md",
                 home + "/tmp/my-proj/continuity-handoff-4.md.sh", home + "/tmp/../continuity-handoff-1.md",
                 "continuity-handoff-006.md", "/w/.gemini/tmp/x/continuity-handoff-008.md",
                 "/home/uXx/.gemini/tmp/p/continuity-handoff-1.md"):
        assert not allowed.search(_gemini_args(path)), path
    # the path named inside the content is not the file_path argument
    assert not allowed.search(_gemini_args("/w/README.md", '"file_path":"%s/tmp/p/continuity-handoff-1.md"' % home))
    with pytest.raises(SettingsError, match="quote, backslash or newline"):
        gemini.policy_text("/home/o'brien/.gemini")


def test_a_policy_file_changed_by_the_user_is_left_at_uninstall(capsys):
    assert cli(capsys, "install", "--agent", "gemini")[0] == 0
    policy = os.path.join(gemini_dir(), "policies", "cc-continuity.toml")
    assert oct(os.stat(policy).st_mode & 0o777) == "0o600"
    with open(policy, "a") as f:
        f.write("# mine too\n")
    rc, out, _ = cli(capsys, "uninstall", "--agent", "gemini")
    assert rc == 0 and "cc-continuity.toml changed since install: left as it is" in out
    assert os.path.isfile(policy)


SERVER = {"command": "/home/u/.claude-continuity/bin/cc-continuity", "args": ["mcp"]}


def test_our_mcp_server_entry_goes_in_beside_theirs_and_comes_out_exactly():
    theirs = THEIRS.replace(b'\t"x-note"', b'\t"mcpServers": {"docs": {"command": "docs-mcp"}},\n\t"x-note"')
    new, rec = gemini.plan(theirs, PY, APP, 0.7, server=SERVER)
    doc = settings.parse(new.decode(), "s")
    assert settings.plain(doc["mcpServers"]) == {"docs": {"command": "docs-mcp"}, "cc-continuity": SERVER}
    assert gemini.plan(new, PY, APP, 0.7, rec, server=SERVER)[0] == new
    assert gemini.plan_undo(new, rec) == theirs
    edited = new.replace(b'"x-note"', b'"added": true,\n\t"x-note"')
    back = settings.plain(settings.parse(gemini.plan_undo(edited, rec).decode(), "s"))
    assert back["mcpServers"] == {"docs": {"command": "docs-mcp"}} and back["added"] is True
    off, rec2 = gemini.plan(new, PY, APP, 0.7, rec)  # --no-mcp
    assert "mcpServers" in settings.parse(off.decode(), "s") and b"cc-continuity\"" not in off.split(b"mcpServers")[1]
    alone, arec = gemini.plan(THEIRS, PY, APP, 0.7, server=SERVER)
    edited = alone.replace(b'"x-note"', b'"added": true,\n\t"x-note"')
    assert "mcpServers" not in settings.parse(gemini.plan_undo(edited, arec).decode(), "s")  # created: goes


def test_an_mcp_entry_of_our_name_that_is_not_ours_is_refused():
    theirs = json.dumps({"mcpServers": {"cc-continuity": {"command": "npx", "args": ["evil"]}}}).encode()
    with pytest.raises(SettingsError, match="is not ours"):
        gemini.plan(theirs, PY, APP, 0.7, server=SERVER)
    new, rec = gemini.plan(theirs, PY, APP, 0.7)
    assert settings.plain(settings.parse(gemini.plan_undo(new + b" ", rec).decode(), "s"))["mcpServers"] == {
        "cc-continuity": {"command": "npx", "args": ["evil"]}}  # uninstall leaves it alone


def test_the_policy_allows_each_read_only_tool_by_name_and_nothing_else_of_the_server():
    from cc_continuity.install import mcp

    text = gemini.policy_text("/home/u/.gemini", mcp.READ_ONLY)
    rules = __import__("tomllib").loads(text)["rule"]
    served = [r for r in rules if "mcpName" in r]
    assert sorted(r["toolName"] for r in served) == sorted(mcp.READ_ONLY)
    assert all(r["mcpName"] == "cc-continuity" and r["decision"] == "allow" for r in served)
    assert text.startswith(gemini.policy_text("/home/u/.gemini"))
