"""The plugin route's rows (hosts/claude/doctor_plugin.py): the plugin, its Python and packages, the mod, the
skills either route ships, a PreSkillShellCommand hook."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from cc_continuity import __version__, paths
from cc_continuity.hosts.claude import doctor_plugin as claude_plugin
from cc_continuity.install import settings
from cc_continuity.install import skills as install_skills
from helpers.doctor import PYTHON, REPO, red


# -- the plugin ------------------------------------------------------------------

def plugin_copy(inst, pid="cc-continuity@cc-continuity-local", version=__version__):
    """A plugin as Claude Code keeps it (plugins/cache + installed_plugins.json), enabled in settings."""
    from cc_continuity.install import plugin

    root = os.path.join(paths.claude_config_dir(), "plugins", "cache", pid.split("@")[1], "cc-continuity", version)
    files = plugin.files(PYTHON, os.path.join(inst.cchome, "app"), "#!/bin/sh\n")
    plugin.write(root, files)
    meta = json.load(open(os.path.join(root, ".claude-plugin", "plugin.json")))
    meta["version"] = version
    json.dump(meta, open(os.path.join(root, ".claude-plugin", "plugin.json"), "w"))
    index = os.path.join(paths.claude_config_dir(), "plugins", "installed_plugins.json")
    doc = json.load(open(index)) if os.path.exists(index) else {"version": 2, "plugins": {}}
    doc["plugins"][pid] = [{"scope": "user", "installPath": root, "version": version}]
    json.dump(doc, open(index, "w"))
    s = inst.read_settings()
    s.setdefault("enabledPlugins", {})[pid] = True
    s["hooks"] = {}
    inst.write_settings(s)
    shutil.rmtree(os.path.join(paths.claude_config_dir(), "skills"), ignore_errors=True)
    return root


def fake_plugin_test(inst, said):
    """`claude plugin test` answering the way the real one does (its lines checked in tests/e2e)."""
    inst.claude.write_text("#!/bin/sh\nif [ \"$1\" = plugin ]; then echo 'claude plugin test: %s' >&2; exit 1; fi\n"
                           "echo '2.1.332 (Claude Code)'\n" % said)


def test_a_plugin_install_is_green_and_its_own_hook_command_is_probed(inst):
    plugin_copy(inst)
    fake_plugin_test(inst, "/tmp/x: no hooks module to load; there is no hooks/hooks.json naming one")
    results = inst.check()
    assert [r for r in results.values() if not r.ok] == []
    assert "by the plugin cc-continuity@cc-continuity-local" in results["hooks"].detail
    assert "from the plugin" in results["skills"].detail
    assert results["mod"].detail.startswith("mods can load here")
    assert "the hook ran" in results["hook-probe"].detail


def test_plugin_and_settings_hooks_together_are_double_wiring(inst):
    plugin_copy(inst)
    s = inst.read_settings()
    s["hooks"] = settings.render_fragment(settings.load_fragment(), PYTHON, os.path.join(inst.cchome, "app"))["hooks"]
    inst.write_settings(s)
    red(inst.check("hooks")["hooks"], "double wiring", "cc-continuity install",
         "claude plugin uninstall cc-continuity@cc-continuity-local")


def test_two_plugins_an_old_copy_or_no_copy_are_red(inst):
    root = plugin_copy(inst)
    plugin_copy(inst, pid="cc-continuity@cc-continuity")
    red(inst.check("plugin")["plugin"], "2 cc-continuity plugins", "runs 2 times")
    s = inst.read_settings()
    del s["enabledPlugins"]["cc-continuity@cc-continuity"]
    inst.write_settings(s)
    assert inst.check("plugin")["plugin"].ok
    plugin_copy(inst, version="0.0.9")  # the same id, an older copy
    red(inst.check("plugin")["plugin"], "version 0.0.9", "claude plugin update")
    shutil.rmtree(os.path.dirname(root))
    red(inst.check("plugin")["plugin"], "no copy of it")
    red(inst.check("hooks")["hooks"], "hooks/hooks.json is missing")


@pytest.mark.parametrize("said, ok, fragment", [
    ("/tmp/x: no hooks module to load; there is no hooks/hooks.json naming one", True, "mods can load"),
    ("hooks modules are turned off here (disableAllHooks, allowManagedHooksOnly or a policy)", False, "disableAllHooks"),
    ("hooks modules are turned off in this process: the rollout switch served off", False, "rollout switch"),
    ("something new", False, "no answer we know"),
])
def test_whether_mods_load_is_what_claude_plugin_test_says(inst, said, ok, fragment):
    plugin_copy(inst)
    fake_plugin_test(inst, said)
    result = inst.check("mods")["mod"]
    assert result.ok is ok and fragment in result.detail, result


def test_without_a_plugin_or_with_mod_off_nothing_is_asked(inst):
    fake_plugin_test(inst, "hooks modules are turned off in this process")
    assert "no plugin" in inst.check("mods")["mod"].detail
    plugin_copy(inst)
    with open(paths.config_file(), "w") as f:
        json.dump({"mod": False}, f)
    result = inst.check("mods")["mod"]
    assert result.ok and '"mod": false' in result.detail


def test_skills_missing_or_unparseable(inst):
    base = os.path.join(paths.claude_config_dir(), "skills")
    shutil.rmtree(os.path.join(base, "continuity-rotate"))
    with open(os.path.join(base, "continuity-status", "SKILL.md"), "w") as f:
        f.write("no front matter here\n")
    r = inst.check("skills")["skills"]
    red(r, "continuity-rotate missing", "continuity-status has no front matter", "cc-continuity install")
    assert "continuity-on " not in r.detail


def test_a_pre_skill_shell_command_hook_is_flagged_only_where_it_can_block_us(inst, monkeypatch):
    assert inst.check("skill-shell")["skill-shell"].detail == "no PreSkillShellCommand hook"
    os.makedirs(os.path.join(str(inst.repo), ".claude"), exist_ok=True)
    with open(os.path.join(str(inst.repo), ".claude", "settings.json"), "w") as f:
        json.dump({"hooks": {"PreSkillShellCommand": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "/usr/local/bin/deny-all"}]}]}}, f)
    result = inst.check("skill-shell")["skill-shell"]
    assert result.ok and "cannot be refused" in result.detail  # our skills inject no shell command
    assert claude_plugin.skill_shell_commands() == {}
    monkeypatch.setattr(claude_plugin, "skill_shell_commands", lambda: {"continuity-status": ["cc-continuity status"]})
    red(inst.check("skill-shell")["skill-shell"], "continuity-status", "cc-continuity status")


def test_skills_that_name_a_command_the_bash_tool_cannot_find_are_red(inst):
    """The bare name resolves only through ~/.local/bin, which Claude Code's Bash tool may lack."""
    for name, text in install_skills.shipped().items():
        with open(install_skills.target(paths.claude_config_dir(), name), "wb") as f:
            f.write(text)
    red(inst.check("skills")["skills"], "`cc-continuity`, which is not found", "cc-continuity install")
    for name, text in install_skills.shipped(inst.launcher).items():
        with open(install_skills.target(paths.claude_config_dir(), name), "wb") as f:
            f.write(text)
    assert "found without your PATH" in inst.check("skills")["skills"].detail
    os.chmod(inst.launcher, 0o600)  # there, but it cannot run
    red(inst.check("skills")["skills"], "--version` failed")


# -- issue 20: the marketplace route's plugin (the repository's own plugin/) -------------------------

MARKET_ID = "cc-continuity@cc-continuity"


def market_copy(inst):
    """The repository's plugin/ as Claude Code copies it from a marketplace (links followed)."""
    root = plugin_copy(inst, pid=MARKET_ID)
    shutil.rmtree(root)
    shutil.copytree(os.path.join(REPO, "plugin"), root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_plugins_python_off_is_red_with_the_words_the_hook_showed(inst, tmp_path):
    from cc_continuity.install import plugin

    root = market_copy(inst)
    data = plugin.data_dir(MARKET_ID, paths.claude_config_dir())
    assert data.endswith("/plugins/data/cc-continuity-cc-continuity")
    r = inst.check("plugin-python", "hook-probe")
    assert r["plugin-python"].ok and "no session since the plugin was installed" in r["plugin-python"].detail
    assert r["hook-probe"].ok and "nothing to probe yet" in r["hook-probe"].detail
    # The SessionStart found no Python 3.11+ (run for real on a PATH with only an old one).
    import pwd

    old = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv", "versions", "3.9.18", "bin", "python3")
    if not os.access(old, os.X_OK):
        pytest.skip("no Python 3.9 here")
    only_old = tmp_path / "only-old"
    only_old.mkdir()
    (only_old / "python3").symlink_to(old)
    for tool in ("id", "find", "dirname", "ln", "mv", "rm", "tr", "uname", "readlink"):
        (only_old / tool).symlink_to(shutil.which(tool))
    os.makedirs(data)
    p = subprocess.run(["/bin/sh", os.path.join(root, "hooks", "python.sh"), "-S", "-c", "pass", "SessionStart"],
                       env={"PATH": str(only_old), "CLAUDE_PLUGIN_DATA": data}, capture_output=True, text=True)
    shown = json.loads(p.stdout)["systemMessage"]
    r = inst.check("plugin-python", "hook-probe")
    red = r["plugin-python"]
    assert not red.ok and shown.startswith(red.detail) and "3.9.18" in red.detail, (red, shown)
    assert red.fix in shown  # the one command the line named
    assert not r["hook-probe"].ok and "silently doing nothing" in r["hook-probe"].detail  # the link is `true`
    # A Python turning up: chosen at the next SessionStart, and doctor says which.
    p = subprocess.run(["/bin/sh", os.path.join(root, "hooks", "python.sh"), "-S", "-c", "pass", "SessionStart"],
                       env={"PATH": os.path.dirname(PYTHON) + ":" + str(only_old), "CLAUDE_PLUGIN_DATA": data})
    r = inst.check("plugin-python", "hook-probe")
    assert r["plugin-python"].ok and "the plugin's hooks run %s" % os.path.dirname(PYTHON) in r["plugin-python"].detail
    assert r["hook-probe"].ok and "the hook ran" in r["hook-probe"].detail, r["hook-probe"]


def test_the_plugins_packages_row_is_red_on_a_refusing_index_and_fix_builds_them(inst, tmp_path, monkeypatch):
    """A marketplace plugin's optional packages (cc_continuity/deps): a build the user's own index refused
    is red with why and the one command that finishes it; `doctor --fix` runs that build, green after."""
    from cc_continuity import deps
    from cc_continuity.install import plugin
    from tests.helpers.pkgindex import PackageIndex, use_index, wheel

    market_copy(inst)
    data = plugin.data_dir(MARKET_ID, paths.claude_config_dir())
    os.makedirs(data)
    os.symlink(os.path.realpath(sys.executable), os.path.join(data, "python"))  # what the SessionStart chose
    assert "not built yet" in inst.check("plugin-packages")["plugin-packages"].detail
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # pip from ensurepip (no uv)
    files = tmp_path / "wheels"
    files.mkdir()
    _, digest = wheel(files, "tinypkg", "1.0", {"tinypkg/__init__.py": "VALUE = 1\n"})
    lock = tmp_path / "tiny.lock"
    lock.write_text("tinypkg==1.0 --hash=sha256:%s\n" % digest)
    monkeypatch.setattr(deps, "LOCK_FILE", str(lock))  # the environment doctor looks at: the tiny lock's
    with PackageIndex(files, status=403) as index:
        use_index(os.environ["HOME"], index.url)
        p = subprocess.run([sys.executable, "-S", "-m", "cc_continuity.deps.build", "--data", data, "--lock", str(lock)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 1
        red = inst.check("plugin-packages")["plugin-packages"]
        assert not red.ok and "answered HTTP 403" in red.detail and red.fix == "cc-continuity doctor --fix", red
        index.status = 200  # (--fix builds the real lock; here, the tiny one)
        from cc_continuity.deps import build

        real = build.build
        monkeypatch.setattr(build, "build", lambda d, py: real(d, py, lock=str(lock)))
        fixed = inst.check("plugin-packages", fix=True)["plugin-packages"]
    assert fixed.ok and "built in" in fixed.detail and "pip" in fixed.detail, fixed


def test_after_an_uninstall_inside_claude_code_doctor_names_what_is_left(inst):
    from cc_continuity.install import plugin

    market_copy(inst)
    s = inst.read_settings()
    s["statusLine"] = settings.render_fragment(settings.load_fragment(), PYTHON, inst.cchome + "/app")["statusLine"]
    inst.write_settings(s)
    assert inst.check("plugin")["plugin"].ok
    s["enabledPlugins"][MARKET_ID] = False  # `/plugin disable` (or uninstall) in Claude Code
    inst.write_settings(s)
    red(inst.check("plugin")["plugin"], "no cc-continuity plugin is enabled", "the status line in settings.json",
         "the state folder %s" % paths.home())
    assert inst.check("plugin")["plugin"].fix == plugin.LEFTOVER_FIX == "cc-continuity uninstall --purge"


def test_the_marketplace_route_alone_lacks_no_status_line_wrapper_or_app_copy(inst):
    """`/plugin marketplace add` + `/plugin install` and nothing else (no `cc-continuity install`): a plugin
    cannot ship the status line, and its hooks run its own copy; none of those rows is red for it."""
    from cc_continuity.install import manifest

    root = market_copy(inst)
    os.unlink(manifest.path())  # never installed by us
    shutil.rmtree(os.path.join(inst.cchome, "app"), ignore_errors=True)
    s = inst.read_settings()
    s.pop("statusLine", None)
    inst.write_settings(s)
    os.unlink(inst.manifest["rc"][0]["path"])  # no rc file of ours either
    r = inst.check("statusline", "wrapper", "app-copy")
    assert all(x.ok for x in r.values()), r
    assert "a plugin cannot ship the status line" in r["statusline"].detail
    assert r["app-copy"].detail == "not used: the plugin's hooks run its own copy (%s)" % root
    # Once `cc-continuity install` has run here, what it made is checked again: a lost status line is red.
    inst.save_manifest()
    red(inst.check("statusline")["statusline"], "not set, not ours")
