"""``install --agent codex`` / ``uninstall --agent codex``: hooks.json and the trust tables in config.toml.

The pure parts (hosts/codex/files.py) on bytes: the merge and unmerge of hooks.json (foreign
entries, odd formatting and exact numbers kept byte for byte, a file we cannot parse
refused), Codex's trust key and hash (the hashes below are the ones Codex 0.171.0's
``hooks/list`` gave for these entries), and config.toml's tables edited as text
(tests/data/codex/trust-all-*.toml: a config.toml before and after the binary's own
"Trust all").  Then the verbs in a temp HOME, without a codex binary (the real one:
tests/e2e/test_codex_install_e2e.py).
"""

import json
import os
import shutil
import sys

import pytest

from cc_continuity import install, paths
from cc_continuity.hosts.codex import hooks as codex_hooks
from cc_continuity.hosts.codex import files as codex
from cc_continuity.install import settings
from helpers import TESTS
from helpers.codex import cli, codex_dir, listing, write

DATA = os.path.join(TESTS, "data", "codex")
PY, APP = "/usr/bin/python3", "/home/u/.claude-continuity/app"
# What `codex app-server` hooks/list (0.171.0) reported for render(PY, APP) and one foreign entry.
BINARY_HASHES = {
    "SessionStart": "sha256:7bcec29ef65ce01f2c756381ae2d41eb79650ec1dcdf508e832cf12ac4de37c9",
    "UserPromptSubmit": "sha256:b20f7b30be2335a48007a86e58331b81e1786b547dfbc686df50ca429dc21d94",
    "PreToolUse": "sha256:581bb657745d133844570cbb182ddefd989b045b992e38a191eb52164297b8d8",
    "PostToolUse": "sha256:41135ab621d69efde277caa2ffc19a4f58592e880bd54e140340672b4d84609b",
    "Stop": "sha256:b8252372776d994d71afb8c90dd0d29512b82f0af47f9d2383ed82919e2fd39a",
    "PreCompact": "sha256:59d8bd57924850eefefc04b75c2fe97520cd7e6f130a5b230e885ef343bc97f8",
    "SessionEnd": "sha256:60acdd26db8d2192c333083f8c104a6ee25ca6bc0c71bb997f0af0ac26fd0f8c",
}
FOREIGN = {"matcher": "Bash", "hooks": [{"type": "command", "command": 'guard "$x" ünï', "timeout": 0,
                                         "statusMessage": "checking"}]}
FOREIGN_HASH = "sha256:b936def9ac3f987a7cde19bcbee84593e50e5a5ee3d90bc023e52836cb8370bc"
# A user's hooks.json as people write them: tabs, their own key order, a number Python would not keep.
THEIRS = (b'{\n\t"hooks": {\n\t\t"PreToolUse": [\n\t\t\t{"matcher": "Bash", "hooks": [{"type": "command", '
          b'"command": "guard", "timeout": 1e400}]}\n\t\t],\n\t\t"Notification": []\n\t},\n\t"x-note": "m\xc3\xaene"\n}')


def test_our_entries_hash_as_the_binary_hashes_them():
    doc = codex.render(PY, APP)
    assert list(doc["hooks"]) == list(codex_hooks.EVENTS)
    for event in codex_hooks.EVENTS:
        (group,) = doc["hooks"][event]
        (handler,) = group["hooks"]
        assert handler["timeout"] == codex_hooks.TIMEOUTS[event] and "matcher" not in group
        assert codex.entry_hash(event, None, handler) == BINARY_HASHES[event], event
    # timeout 0 counts as 1, a status message and a matcher are part of the identity
    assert codex.entry_hash("PreToolUse", "Bash", FOREIGN["hooks"][0]) == FOREIGN_HASH
    assert codex.entry_hash("Stop", None, {"type": "command", "command": "x", "commandWindows": "y"}) is None
    assert [codex.label(e) for e in ("PreToolUse", "SessionStart", "UserPromptSubmit", "Stop")] == [
        "pre_tool_use", "session_start", "user_prompt_submit", "stop"]


def test_merge_keeps_their_bytes_and_unmerge_gives_them_back():
    new, rec = codex.plan_hooks(THEIRS, PY, APP, where="hooks.json")
    doc = codex.parse_hooks(new)
    assert doc["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == settings.Number("1e400")  # not Infinity
    assert b"1e400" in new and "mîne" in new.decode() and b'\n\t\t"PreToolUse"' in new  # tabs kept
    assert [list(g) for g in doc["hooks"]["PreToolUse"]] == [["matcher", "hooks"], ["hooks"]]  # theirs first
    ours = codex.entries(doc, "/c/hooks.json")
    assert [e["key"] for e in ours if e["event"] == "PreToolUse"] == ["/c/hooks.json:pre_tool_use:1:0"]
    assert len(ours) == len(codex_hooks.EVENTS) and "statusLine" not in doc
    assert codex.plan_hooks(new, PY, APP, rec)[0] == new, "a second install changes nothing"
    assert codex.plan_unhooks(new, json.loads(json.dumps(rec))) == THEIRS
    # Someone else wrote the file since: only ours go, their change stays.
    doc["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "late"}]})
    touched = settings.dumps(doc, "\t").encode()
    left = codex.parse_hooks(codex.plan_unhooks(touched, rec))
    assert left["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "late"}]}]
    assert "SessionStart" not in left["hooks"] and left["x-note"] == "mîne"
    # Created by us, so deleted again.
    created, rec2 = codex.plan_hooks(None, PY, APP)
    assert codex.plan_unhooks(created, rec2) is None


@pytest.mark.parametrize("bad", [b'{"hooks": {"Stop": [}}', b'{"hooks": []}', b'{"a": 1, "a": 2}', b"[]",
                                 b"\xff\xfe{}"])
def test_a_hooks_json_we_cannot_parse_is_refused(bad):
    with pytest.raises(settings.SettingsError):
        codex.plan_hooks(bad, PY, APP)


# -- config.toml ---------------------------------------------------------------------


def read_data(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def test_after_the_binarys_trust_all_untrust_gives_back_the_file_but_codexs_own_tui_state():
    """Codex inserted an explicit [hooks.state] header before a foreign trust table, put ours after it, and
    rewrote its own [tui] tables; taking ours out leaves exactly the file before but for Codex's own state."""
    before, after = read_data("trust-all-before.toml"), read_data("trust-all-after.toml")
    ours = {"/home/u/codex-home/hooks.json:session_start:0:0", "/home/u/codex-home/hooks.json:stop:0:0"}
    new, removed = codex.plan_untrust(after, ours, drop_state_header=True)
    codex_own = before.replace(b'screen_reader_detection_done = true\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 1',
                               b'screen_reader_detection_done = true\n\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 2')
    assert sorted(removed) == sorted(ours) and new == codex_own
    assert new.endswith(b"# last comment, no newline")
    # The header was there before us: it stays.
    kept, _ = codex.plan_untrust(after, ours, drop_state_header=False)
    assert b"[hooks.state]\n" in kept and b"session_start" not in kept


def test_trust_then_untrust_is_the_identity_on_odd_files():
    odd = (b"# top comment\nmodel = 'x'   # why\nlist = [\n  [1, 2],\n  [3],\n]\ntext = '''\n[not.a.table]\n'''\n"
           b'esc = """ \\""" [x] """\n\n[hooks.state."/elsewhere:stop:0:0"]\nenabled = false\n\n'
           b'[[profiles]]\nname = "a"\n\n[tui]   # mine\nx = 1')
    trusts = {"/c/hooks.json:stop:1:0": "sha256:aa", "/c/hooks.json:session_start:0:0": "sha256:bb"}
    new = codex.plan_trust(odd, trusts)
    state = codex.trust_state(codex.load_config(new))
    assert state["/c/hooks.json:stop:1:0"] == {"trusted_hash": "sha256:aa"}
    assert state["/elsewhere:stop:0:0"] == {"enabled": False}
    assert new.startswith(odd.split(b"\n\n[[profiles]]")[0])  # ours after the last [hooks.state...] table
    assert codex.plan_trust(new, trusts) == new, "trusting again changes nothing"
    back, removed = codex.plan_untrust(new, set(trusts), drop_state_header=True)
    assert back == odd and sorted(removed) == sorted(trusts)
    # Into an empty or absent file, and out again.
    for empty in (None, b""):
        made = codex.plan_trust(empty, trusts)
        assert made.startswith(b"[hooks.state.") and codex.plan_untrust(made, set(trusts), True)[0] == b""


def test_trust_keeps_the_other_lines_of_an_existing_table():
    old = b'[hooks.state."/c/hooks.json:stop:0:0"]\nenabled = false\ntrusted_hash = "sha256:old"  # then\n'
    new = codex.plan_trust(old, {"/c/hooks.json:stop:0:0": "sha256:new"})
    assert new == b'[hooks.state."/c/hooks.json:stop:0:0"]\nenabled = false\ntrusted_hash = "sha256:new"\n'


@pytest.mark.parametrize("text", [b"model = \n", b"[a]\nx = 1\n[a]\nx = 2\n", b"\xff"])
def test_a_config_toml_we_cannot_parse_is_refused(text):
    with pytest.raises(codex.CodexError):
        codex.plan_trust(text, {"k": "sha256:x"})
    with pytest.raises(codex.CodexError):
        codex.plan_untrust(text, {"k"}, True)


def test_an_edit_toml_cannot_take_is_refused_not_written():
    inline = b'hooks = { state = { "other" = { enabled = false } } }\n'
    with pytest.raises(codex.CodexError, match="edit it by hand"):
        codex.plan_trust(inline, {"/c/hooks.json:stop:0:0": "sha256:x"})


def test_only_keys_naming_our_entries_count_as_ours():
    doc, _ = codex.plan_hooks(json.dumps({"hooks": {"Stop": [FOREIGN]}}).encode(), PY, APP)
    ours = codex.entries(codex.parse_hooks(doc), "/c/hooks.json")
    stop = next(e for e in ours if e["event"] == "Stop")
    cfg = codex.load_config(("\n".join('[hooks.state."%s"]\ntrusted_hash = "%s"' % kv for kv in [
        ("/c/hooks.json:stop:0:0", FOREIGN_HASH),        # theirs, at its place
        ("/c/hooks.json:stop:1:0", stop["hash"]),        # ours, at its place
        ("/c/hooks.json:stop:7:0", stop["hash"]),        # ours, where it stood before a group moved it
        ("/other/hooks.json:stop:0:0", stop["hash"]),    # another hooks.json: not ours to touch
        ("/c/hooks.json:pre_tool_use:0:0", "sha256:old"),  # ours by place (untrusted since it changed)
    ])).encode())
    assert codex.our_trust_keys(cfg, "/c/hooks.json", ours) == {
        "/c/hooks.json:stop:1:0", "/c/hooks.json:stop:7:0", "/c/hooks.json:pre_tool_use:0:0"}


def test_codex_home_is_where_codex_looks(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    assert codex.codex_home({"CODEX_HOME": str(tmp_path / "link")}) == str(real), "Codex canonicalizes it"
    assert codex.codex_home({"HOME": str(tmp_path)}) == str(tmp_path / ".codex")
    with pytest.raises(codex.CodexError, match="not a directory"):
        codex.codex_home({"CODEX_HOME": str(tmp_path / "missing")})


# -- the verbs ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_codex_binary(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `codex` to ask: the hashes as computed


def test_install_trust_uninstall_leaves_codex_home_byte_identical(capsys):
    write(os.path.join(codex_dir(), "hooks.json"), THEIRS)
    write(os.path.join(codex_dir(), "config.toml"), read_data("trust-all-before.toml"))
    before = listing(codex_dir())
    rc, out, err = cli(capsys, "install", "--agent", "codex")
    assert rc == 0, err
    assert "codex: ~/.codex/hooks.json hooks merged (7 events)" in out
    assert 'choose "Trust all and continue"' in out and "--agent codex --trust" in out
    assert listing(codex_dir())["config.toml"] == before["config.toml"], "no --trust: config.toml untouched"
    assert not os.path.exists(os.path.join(os.environ["HOME"], ".claude")), "nothing of Claude Code's"
    rc, out, err = cli(capsys, "install", "--agent", "codex", "--trust")
    assert rc == 0, err
    assert "our 7 hooks trusted in ~/.codex/config.toml (computed as Codex 0.171 computes them" in out
    hooks_file = os.path.join(codex_dir(), "hooks.json")
    with open(hooks_file, "rb") as f:
        ours = codex.entries(codex.parse_hooks(f.read()), hooks_file)
    with open(os.path.join(codex_dir(), "config.toml"), "rb") as f:
        state = codex.trust_state(codex.load_config(f.read()))
    assert {e["key"]: e["hash"] for e in ours} == {k: v["trusted_hash"] for k, v in state.items() if k.startswith(
        hooks_file)}, "ours, and only ours"
    assert cli(capsys, "install", "--agent", "codex", "--trust")[1].count("already trusted") == 1
    rc, out, err = cli(capsys, "uninstall", "--agent", "codex")
    assert rc == 0, err
    assert "codex: ~/.codex/hooks.json our 7 hooks removed" in out and "7 trust entries of ours removed" in out
    assert listing(codex_dir()) == before
    assert sorted(os.listdir(paths.home())) == ["backups"]


def test_with_both_installed_uninstall_says_what_it_removed_for_each(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    record = install.manifest.load()
    assert "settings" in record and record["codex"]["home"] == codex_dir()
    # Claude Code's re-install keeps Codex's part of the record, and the other way round.
    assert cli(capsys, "install", "--no-wrapper")[0] == 0 and "codex" in install.manifest.load()
    rc, out, _ = cli(capsys, "uninstall", "--agent", "claude")
    assert rc == 0 and "settings: ~/.claude/settings.json" in out and "codex:" not in out
    assert "app: kept, Codex CLI's hooks run from it" in out and os.path.isdir(os.path.join(paths.home(), "app"))
    assert set(install.manifest.load()) >= {"codex", "app"} and "settings" not in install.manifest.load()
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    rc, out, _ = cli(capsys, "uninstall")
    assert rc == 0
    lines = out.splitlines()
    assert any(line.startswith("settings: ~/.claude/settings.json") for line in lines)
    assert "codex: ~/.codex/hooks.json deleted (install created it)" in lines
    assert "codex: ~/.codex/config.toml: 7 trust entries of ours removed (file deleted: nothing else was in it)" \
        in lines
    assert "app: ~/.claude-continuity/app removed" in lines or any(line.startswith("app: ") and "removed" in line
                                                                    for line in lines)
    assert not os.path.exists(codex_dir()), "the ~/.codex install made is gone again"


def test_uninstall_of_one_agent_with_purge_keeps_what_the_other_needs(capsys):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    assert cli(capsys, "install", "--agent", "codex")[0] == 0
    rc, out, _ = cli(capsys, "uninstall", "--agent", "codex", "--purge")
    assert rc == 1 and "purge: not done, Claude Code's install still uses" in out
    assert os.path.isdir(os.path.join(paths.home(), "app"))
    assert cli(capsys, "uninstall", "--purge")[0] == 0 and not os.path.exists(paths.home())


def test_dry_run_writes_nothing_and_install_is_idempotent(tmp_path, capsys):
    write(os.path.join(codex_dir(), "hooks.json"), THEIRS)
    before = listing(str(tmp_path))
    rc, out, _ = cli(capsys, "install", "--agent", "codex", "--trust", "--dry-run")
    assert rc == 0 and listing(str(tmp_path)) == before
    assert "+++ ~/.codex/hooks.json (after)" in out and "+++ ~/.codex/config.toml (after)" in out
    assert "from cc_continuity.hosts.codex.hooks import main" in out
    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    first = listing(codex_dir())
    rc, out, _ = cli(capsys, "install", "--agent", "codex", "--trust")
    assert rc == 0 and listing(codex_dir()) == first and "codex: ~/.codex/hooks.json unchanged" in out


@pytest.mark.parametrize("name, data", [("hooks.json", b'{"hooks": {"Stop": [,]}}'),
                                        ("config.toml", b'model = "x"\nmodel = "y"\n')])
def test_a_file_it_cannot_parse_is_refused_and_nothing_is_written(tmp_path, capsys, name, data):
    write(os.path.join(codex_dir(), name), data)
    before = listing(str(tmp_path))
    rc, out, err = cli(capsys, "install", "--agent", "codex", "--trust")
    assert rc == 1 and "nothing was changed" in err and name in err, err
    assert listing(str(tmp_path)) == before


def test_options_of_the_other_agent_are_refused(capsys):
    rc, _, err = cli(capsys, "install", "--agent", "codex", "--plugin")
    assert rc == 1 and "--plugin: Claude Code's only" in err
    rc, _, err = cli(capsys, "install", "--trust")
    assert rc == 1 and "--trust is Codex's" in err
    assert not os.path.exists(paths.home())


def test_codex_home_is_honoured_and_a_missing_one_refused(tmp_path, capsys, monkeypatch):
    home = tmp_path / "elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(home))
    rc, _, err = cli(capsys, "install", "--agent", "codex")
    assert rc == 1 and "CODEX_HOME=%s is not a directory" % home in err
    home.mkdir()
    assert cli(capsys, "install", "--agent", "codex")[0] == 0
    assert os.path.isfile(home / "hooks.json") and not os.path.exists(codex_dir())
    assert cli(capsys, "uninstall", "--agent", "codex")[0] == 0 and os.listdir(home) == []


def test_a_repository_codex_folder_changes_nothing_of_ours(tmp_path, capsys, monkeypatch, git_repo):
    """A repository's .codex/ may carry hooks (even ones that look like ours) and trust tables for
    $CODEX_HOME's entries: install, doctor and uninstall, run inside it, read none of it."""
    dot = git_repo / ".codex"
    dot.mkdir()
    planted = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch /tmp/x # from "
                                                         "cc_continuity.hosts.codex.hooks import main"}]}]}})
    (dot / "hooks.json").write_text(planted)
    (dot / "config.toml").write_text('[hooks.state."%s/hooks.json:stop:0:0"]\nenabled = false\n'
                                     'trusted_hash = "sha256:evil"\n' % codex_dir())
    monkeypatch.chdir(git_repo)
    opened, auditing = [], [True]
    sys.addaudithook(lambda event, args: opened.append(str(args[0]))  # (an audit hook stays: it goes quiet)
                     if auditing[0] and event == "open" and args else None)
    try:
        assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
        rc, out, _ = cli(capsys, "doctor")
        assert "ok    codex-trust      our 7 hooks trusted" in out, out
        assert cli(capsys, "uninstall", "--agent", "codex")[0] == 0
    finally:
        auditing[0] = False
    assert opened and [p for p in opened if str(dot) in p] == []
    assert (dot / "hooks.json").read_text() == planted and "sha256:evil" in (dot / "config.toml").read_text()
    shutil.rmtree(dot)


def test_uninstall_without_the_record_still_finds_ours_by_their_bootstrap_and_hash(capsys):
    write(os.path.join(codex_dir(), "hooks.json"), THEIRS)
    write(os.path.join(codex_dir(), "config.toml"), read_data("trust-all-before.toml"))
    before = listing(codex_dir())
    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    os.unlink(install.manifest.path())  # a deleted state dir, a second CC_CONTINUITY_HOME
    rc, out, _ = cli(capsys, "uninstall")
    assert rc == 0 and "7 trust entries of ours removed" in out
    after = listing(codex_dir())
    assert after["config.toml"] == before["config.toml"], "the tables, and the header Codex would add, by text"
    # Without the original bytes, hooks.json is their document again, written in their indent (as settings.json).
    assert codex.parse_hooks(after["hooks.json"][0]) == codex.parse_hooks(THEIRS)


def test_a_claude_only_uninstall_is_not_held_back_by_an_unusable_codex_home(capsys, monkeypatch, tmp_path):
    assert cli(capsys, "install", "--no-wrapper")[0] == 0
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "gone"))
    rc, out, _ = cli(capsys, "uninstall", "--agent", "claude")
    assert rc == 0 and not os.path.exists(os.path.join(paths.home(), "app")), out


# -- the MCP server's table in config.toml ----------------------------------------------------------------------

LAUNCHER = "/home/u/.cc-continuity/bin/cc-continuity"
USER_TOML = b'model = "gpt-6"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n\n[projects."/w"]\ntrust_level = "trusted"\n'


@pytest.mark.parametrize("old", [None, b"", USER_TOML, USER_TOML.rstrip(b"\n"), b"# only a comment\n"])
def test_the_mcp_table_goes_in_and_comes_out_byte_for_byte(old):
    new = codex.plan_mcp(old, LAUNCHER, {"CC_CONTINUITY_HOME": "/s/cch"})
    doc = codex.load_config(new)
    assert codex.mcp_entry(doc) == {"command": LAUNCHER, "args": ["mcp"], "env": {"CC_CONTINUITY_HOME": "/s/cch"}}
    if old:
        assert {k: v for k, v in doc.items() if k != "mcp_servers"} == {
            k: v for k, v in codex.load_config(old).items() if k != "mcp_servers"}
    assert codex.plan_mcp(new, LAUNCHER, {"CC_CONTINUITY_HOME": "/s/cch"}) == new  # twice is once
    back, done = codex.plan_unmcp(new, LAUNCHER)
    assert done == "removed" and back == (old or b"") + (b"\n" if old and not old.endswith(b"\n") else b"")


def test_a_moved_state_folder_updates_our_table_in_place():
    first = codex.plan_mcp(USER_TOML, LAUNCHER, {})
    second = codex.plan_mcp(first, LAUNCHER, {"CC_CONTINUITY_HOME": "/elsewhere"})
    assert codex.mcp_entry(codex.load_config(second))["env"] == {"CC_CONTINUITY_HOME": "/elsewhere"}
    assert codex.plan_unmcp(second, LAUNCHER)[0] == USER_TOML


def test_a_table_of_our_name_that_is_not_ours_is_refused_and_left_alone():
    theirs = USER_TOML + b'\n[mcp_servers.cc-continuity]\ncommand = "npx"\nargs = ["evil"]\n'
    with pytest.raises(codex.CodexError, match="is not ours"):
        codex.plan_mcp(theirs, LAUNCHER, {})
    assert codex.plan_unmcp(theirs, LAUNCHER) == (theirs, "not ours (npx): left alone")


def test_an_inline_server_table_is_refused_rather_than_rewritten():
    inline = b'mcp_servers = { cc-continuity = { command = "%s", args = ["mcp"] } }\n' % LAUNCHER.encode()
    with pytest.raises(codex.CodexError, match="nothing was written"):
        codex.plan_unmcp(inline, LAUNCHER)
