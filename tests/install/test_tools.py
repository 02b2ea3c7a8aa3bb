"""What uninstall leaves and names with the command that removes it: a launcher `uv tool install` or
`pipx install` put on PATH, and Claude Code's cached copy of the plugin."""

import json
import os
import subprocess
import sys

import pytest

from cc_continuity.hosts import setup
from cc_continuity.hosts.claude import install as claude_install
from cc_continuity.install import tools

KINDS = {"uv": ("share/uv/tools/cc-continuity", "uv-receipt.toml", "uv tool install", "uv tool uninstall cc-continuity"),
         "pipx": ("share/pipx/venvs/cc-continuity", "pipx_metadata.json", "pipx install", "pipx uninstall cc-continuity")}


def tool_env(home, kind):
    """A tool's environment as uv / pipx lay it out: a virtualenv with the tool's marker file, its
    console script, and the link to it in ~/.local/bin."""
    rel, marker, _how, _cmd = KINDS[kind]
    env = home / ".local" / rel
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    (env / marker).write_text("")
    script = env / "bin" / "cc-continuity"
    script.write_text("#!%s\nimport sys\nfrom cc_continuity.cli import main\nsys.exit(main())\n" % (env / "bin" / "python"))
    script.chmod(0o755)
    link = home / ".local" / "bin" / "cc-continuity"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(script)
    return env, link


@pytest.mark.parametrize("kind", ["uv", "pipx"])
def test_uninstall_run_by_a_tool_launcher_names_it_and_the_command(isolated_home, kind):
    env, link = tool_env(isolated_home, kind)
    path = "%s:/usr/bin:/bin" % link.parent
    p = subprocess.run(["cc-continuity", "uninstall"], env=dict(os.environ, PATH=path), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    _rel, _marker, how, command = KINDS[kind]
    lines = [line for line in p.stdout.splitlines() if line.startswith("launcher: ~/.local/bin/cc-continuity stays")]
    assert lines == ["launcher: ~/.local/bin/cc-continuity stays: `%s` put it there, not install; remove it "
                     "with: %s" % (how, command)], p.stdout


def test_a_tool_launcher_on_path_is_named_when_another_one_runs_uninstall(isolated_home, monkeypatch):
    env, link = tool_env(isolated_home, "uv")
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % link.parent)
    assert tools.tool_launchers() == [(str(link), "uv tool install", "uv tool uninstall cc-continuity")]
    # a copied script (no link): found by its #! interpreter
    link.unlink()
    link.write_text((env / "bin" / "cc-continuity").read_text())
    link.chmod(0o755)
    assert tools.tool_launchers() == [(str(link), "uv tool install", "uv tool uninstall cc-continuity")]
    out = []
    assert setup.uninstall(out=out.append) == 0
    assert "launcher: ~/.local/bin/cc-continuity stays: `uv tool install` put it there, not install; remove it " \
           "with: uv tool uninstall cc-continuity" in out, out


def test_no_tool_launcher_no_word_of_one(isolated_home, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    out = []
    assert setup.uninstall(out=out.append) == 0
    assert not [line for line in out if "stays" in line], out


def plugin_copy(home, market="cc-continuity", version="0.1.0"):
    copy = home / ".claude" / "plugins" / "cache" / market / "cc-continuity" / version
    (copy / ".claude-plugin").mkdir(parents=True)
    (copy / ".claude-plugin" / "plugin.json").write_text('{"name": "cc-continuity"}')
    (copy / ".orphaned_at").write_text("1764879185000")
    return copy


def test_uninstall_says_claude_code_keeps_its_cached_plugin_copy(isolated_home, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    plugin_copy(isolated_home)
    plugin_copy(isolated_home, market="mine", version="0.1.1")
    out = []
    assert setup.uninstall(out=out.append) == 0
    said = [line for line in out if "cached copy" in line]
    assert said == ["plugin: Claude Code keeps its cached copy ~/.claude/plugins/cache/%s/cc-continuity/%s "
                    "(%s) and deletes it later by itself; nothing runs from it" % (m, v, size)
                    for m, v, size in (("cc-continuity", "0.1.0", "38 bytes"), ("mine", "0.1.1", "38 bytes"))], out
    assert (isolated_home / ".claude" / "plugins" / "cache" / "mine").is_dir()  # Claude Code's to delete


def test_a_copy_of_a_plugin_still_enabled_is_not_called_left_over(isolated_home):
    plugin_copy(isolated_home)
    (isolated_home / ".claude" / "settings.json").write_text(json.dumps(
        {"enabledPlugins": {"cc-continuity@cc-continuity": True}}))
    out = []
    claude_install._name_plugin_cache(out.append, str(isolated_home / ".claude"))
    assert out == []
