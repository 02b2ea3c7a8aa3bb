"""The plugin this repository is: manifest, marketplace, hooks.json, bin/ launcher.

The hook table is one fact with two installs: the plugin runs it as is
(``python3`` from PATH, ``${CLAUDE_PLUGIN_ROOT}`` as the app), a settings install
renders it with the absolute interpreter and the app copy.  These tests hold the
two together and run the plugin's own entry points for real.
"""

import json
import os
import shutil
import subprocess
import sys

from cc_continuity import __version__
from cc_continuity.hosts.claude.hooks import BUDGET, HANDLERS, REWAKE
from cc_continuity.install import settings as S

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return json.load(f)


def test_manifest_and_marketplace_describe_this_plugin():
    plugin = load("plugin/.claude-plugin/plugin.json")
    assert plugin["name"] == "cc-continuity" and plugin["version"] == __version__
    assert plugin["license"] == "MIT" and len(plugin["description"]) > 40
    market = load(".claude-plugin/marketplace.json")
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] and entry["source"] == "./plugin"
    assert market["description"] and market["owner"]["name"]
    assert not os.path.exists(os.path.join(REPO, "CLAUDE.md"))  # fails `claude plugin validate --strict`


def test_hooks_json_runs_the_same_entry_as_a_settings_install():
    table = load("plugin/hooks/hooks.json")
    assert table["modules"] == ["./mod.js"] and os.path.isfile(os.path.join(REPO, "plugin", "hooks", "mod.js"))
    boot = S.boot_code(S.PLUGIN_ROOT)
    seen = []
    for event, groups in table["hooks"].items():
        (group,) = groups
        for h in group["hooks"]:
            assert h["type"] == "command"
            args = h["args"]
            if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"):
                assert h["command"] == S.PLUGIN_PYTHON  # the link the chooser keeps: no shell on a tool call
            else:  # the chooser (sh, once a session or a prompt), then the same bootstrap
                assert [h["command"], args[0]] == list(S.PLUGIN_CHOOSER)
                args = args[1:]
            assert args[:3] == ["-S", "-c", boot], args  # the one bootstrap, with the plugin root
            name = args[3]
            assert name in HANDLERS and name in BUDGET and BUDGET[name] < h["timeout"]
            assert bool(h.get("async")) == bool(h.get("asyncRewake")) == (name in REWAKE)
            seen.append(name)
    from cc_continuity.hosts.claude.hooks.mod import MOD_EVENTS
    assert sorted(seen) == sorted(set(HANDLERS) - set(MOD_EVENTS))  # every hook handler wired, once
    # The settings install is the same table, rendered.
    rendered = S.render_fragment(S.load_fragment(), "/opt/py/bin/python3", "/opt/cc/app")
    for event, groups in table["hooks"].items():
        (mine,), (theirs,) = rendered["hooks"][event], groups
        assert {k: v for k, v in mine.items() if k != "hooks"} == {k: v for k, v in theirs.items() if k != "hooks"}
        for a, b in zip(mine["hooks"], theirs["hooks"]):
            assert a["command"] == "/opt/py/bin/python3" and a["args"][2] == S.boot_code("/opt/cc/app")
            assert {k: v for k, v in a.items() if k not in ("command", "args")} == \
                   {k: v for k, v in b.items() if k not in ("command", "args")}
            assert a["args"][3] == b["args"][-1]


def test_the_plugins_hook_command_runs_from_any_copy_of_the_plugin(tmp_path, git_repo):
    """What Claude Code runs: the chooser, then the bootstrap, ${CLAUDE_PLUGIN_*} replaced by the copy's."""
    from cc_continuity import config

    config.update_global({"fetch_packages": False})  # no build of the optional packages behind this test
    root = tmp_path / "plugin-copy"
    shutil.copytree(os.path.join(REPO, "cc_continuity"), root / "cc_continuity", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(REPO, "plugin", "hooks"), root / "hooks")
    data = tmp_path / "plugin-data"
    data.mkdir()
    table = load("plugin/hooks/hooks.json")
    (group,) = table["hooks"]["SessionStart"]
    h = group["hooks"][0]
    fill = lambda a: a.replace("${CLAUDE_PLUGIN_ROOT}", str(root)).replace("${CLAUDE_PLUGIN_DATA}", str(data))
    args = [fill(h["command"])] + [fill(a) for a in h["args"]]
    payload = {"session_id": "a1b2c3d4-0000-4000-8000-000000000001", "transcript_path": str(tmp_path / "t.jsonl"),
               "cwd": str(git_repo), "hook_event_name": "SessionStart", "source": "startup"}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the bootstrap's sys.path
    env.update(CLAUDE_PROJECT_DIR=str(git_repo), CLAUDE_PLUGIN_DATA=str(data),
               PATH=os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    p = subprocess.run(args, input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert os.path.realpath(data / "python") == os.path.realpath(sys.executable)
    with open(os.path.join(os.environ["CC_CONTINUITY_HOME"], "logs", "hooks.log")) as f:
        assert "SessionStart" in f.read()
    # A copy that lost its package still exits 0 (a missing script would exit 2: a block).
    shutil.rmtree(root / "cc_continuity")
    p = subprocess.run(args, input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b""
    (post,) = table["hooks"]["PostToolUse"][0]["hooks"]  # a tool call's hook: the kept link, exec'd
    p = subprocess.run([fill(post["command"])] + [fill(a) for a in post["args"]], input=b"{}", env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b""


def test_bin_launcher_runs_the_plugins_own_package(tmp_path):
    launcher = os.path.join(REPO, "bin", "cc-continuity")
    assert os.access(launcher, os.X_OK)
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin", "HOME": str(tmp_path),
           "CC_CONTINUITY_HOME": str(tmp_path / "cc")}
    # Through a symlink, from another directory: it finds its own root, not the cwd's.
    link = tmp_path / "on-path" / "cc-continuity"
    link.parent.mkdir()
    link.symlink_to(launcher)
    p = subprocess.run([str(link), "--version"], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "cc-continuity %s" % __version__, p.stderr
    # With no Python >= 3.11 it says so (exit 127, like a missing command) instead of a traceback.
    p = subprocess.run([launcher, "--version"], env={"PATH": str(tmp_path / "empty")}, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 127 and "needs Python 3.11" in p.stderr


LEAN_LIMIT = 2_000_000  # bytes of files in the plugin copy (docs/ARCHITECTURE.md, "The plugin copy")


def test_the_plugin_copy_is_what_the_plugin_runs_and_stays_lean():
    """Claude Code copies the marketplace entry's source (``./plugin``), following its links."""
    top = os.path.join(REPO, "plugin")
    assert sorted(os.listdir(top)) == [".claude-plugin", ".mcp.json", "bin", "cc_continuity", "evals", "hooks", "skills"]
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    tracked = {os.path.realpath(os.path.join(REPO, p)) for p in tracked.decode().split("\0") if p}
    size, count = 0, 0
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        for fn in filenames:
            real = os.path.realpath(os.path.join(dirpath, fn))
            if real in tracked:  # what a git marketplace's clone has
                size += os.path.getsize(real)
                count += 1
    assert 100 < count and size <= LEAN_LIMIT, (count, size)


def test_a_git_marketplace_copy_holds_no_bytecode(tmp_path):
    """A git marketplace is a clone: __pycache__ is ignored (.gitignore), so the plugin copy Claude Code
    makes from it has none, even from a checkout where the suite ran (this one: it has them)."""
    clone = str(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", REPO, clone], check=True, capture_output=True, timeout=120)
    found = [os.path.join(d, n) for d, dirs, files in os.walk(os.path.join(clone, "plugin"), followlinks=True)
             for n in dirs + files if n == "__pycache__" or n.endswith(".pyc")]
    assert found == []
    ignored = subprocess.run(["git", "check-ignore", "-q", "cc_continuity/__pycache__/x.cpython-311.pyc"],
                             cwd=REPO, timeout=30)
    assert ignored.returncode == 0
