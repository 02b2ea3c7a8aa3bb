"""The checks of Claude Code's plugin route: the plugin (plugin, plugin-python, plugin-packages), its mod
(mod), and the skills either route ships (skills, skill-shell); with the plugin's hook table read for
:mod:`.doctor`'s rows too."""

import json
import os
import re
import shutil
import subprocess
import tempfile

from ... import __version__, deps, paths, safefile
from ...doctor.base import PROBE_TIMEOUT_S, SETTINGS_MAX_BYTES, Result, _first_line, _run
from ...install import plugin, settings
from ...install.skills import SOURCE as SKILLS_SOURCE  # the package's data/skills/
from .executable import find_real_claude

# -- the plugin's own hook table ---------------------------------------------------

def _plugin_table(root):
    try:
        with open(os.path.join(root, "hooks", "hooks.json"), encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError, TypeError):
        return None
    return table if isinstance(table, dict) and isinstance(table.get("hooks"), dict) else None


def _plugin_handler(ctx):
    """(event, handler) of the plugin's own hook table, ``${CLAUDE_PLUGIN_ROOT}`` and PATH resolved."""
    _, root = ctx.plugin()
    table = _plugin_table(root) if root else None
    try:
        handler = dict(table["hooks"]["PostToolUse"][0]["hooks"][0])
    except (TypeError, KeyError, IndexError):
        return None, None
    data = plugin.data_dir(ctx.plugin()[0], paths.claude_config_dir())
    fill = lambda text: (text.replace("${CLAUDE_PLUGIN_ROOT}", root).replace("${CLAUDE_PLUGIN_DATA}", data)
                         if isinstance(text, str) else text)
    command = fill(handler.get("command"))
    if isinstance(command, str) and not os.path.isabs(command):
        command = shutil.which(command, path=ctx.env.get("PATH")) or command  # the plugin's python3
    handler.update(command=command, args=[fill(a) for a in handler.get("args") or []])
    return "PostToolUse", handler


def _marketplace_only(ctx):
    """The plugin's own copy, when it is the whole install: a cc-continuity plugin enabled whose hooks run
    that copy (``${CLAUDE_PLUGIN_ROOT}``, the marketplace route) and no ``cc-continuity install`` here.
    Then no status line, wrapper or app copy of ours was ever made, and none is missing; else None."""
    if ctx.manifest() is not None or not ctx.plugin():
        return None
    _, root = ctx.plugin()
    try:
        command = (_plugin_table(root) or {})["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    except (KeyError, IndexError, TypeError):
        return None
    return root if command == settings.PLUGIN_PYTHON else None



# -- the plugin and its mod ---------------------------------------------------------

MOD_PROBE_TIMEOUT_S = 30
MODS_CAN_LOAD = "no hooks module to load"  # what `claude plugin test` says of a folder without a mod
MODS_OFF = "turned off"


def check_plugin(ctx):
    doc, _ = ctx.settings()
    ids = plugin.enabled(doc) if doc else []
    if not ids:
        left = plugin.leftovers(doc, ctx.manifest(), paths.home())
        if left:  # the plugin was uninstalled or disabled inside Claude Code, which runs no code of ours
            return Result("plugin", False, "no cc-continuity plugin is enabled and no hook of ours runs, but %s "
                          "remain" % " and ".join(left), plugin.LEFTOVER_FIX)
        return Result("plugin", True, "not installed as a plugin: settings.json carries the hooks and the tmux "
                      "rotator hands over (`cc-continuity install --plugin` adds the in-process mod)")
    if len(ids) > 1:
        return Result("plugin", False, "%d cc-continuity plugins are enabled (%s): every hook runs %d times" % (
            len(ids), ", ".join(ids), len(ids)), "keep one: `claude plugin uninstall %s`" % ids[-1])
    pid, root = ctx.plugin()
    if not root or not os.path.isdir(root):
        return Result("plugin", False, "%s is enabled but Claude Code has no copy of it (%s)" % (pid, root),
                      "claude plugin install %s --scope user" % pid)
    have = plugin.installed_version(root)
    if have != __version__:
        return Result("plugin", False, "%s is version %s, this cc-continuity is %s" % (pid, have, __version__),
                      "claude plugin marketplace update %s && claude plugin update %s (or cc-continuity install "
                      "--plugin)" % (pid.split("@")[1], pid))
    return Result("plugin", True, "%s %s enabled (%s)" % (pid, have, root))


def _tool_call_command(root):
    """What the plugin at ``root`` runs on a tool call (its PostToolUse command), or None."""
    try:
        return (_plugin_table(root) or {})["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    except (KeyError, IndexError, TypeError):
        return None


def check_plugin_python(ctx):
    """The Python the plugin's hooks run: chosen once a session by its SessionStart (plugin/hooks/python.sh)."""
    if not ctx.plugin():
        return Result("plugin-python", True, "no plugin")
    pid, root = ctx.plugin()
    command = _tool_call_command(root)
    if command != settings.PLUGIN_PYTHON:
        return Result("plugin-python", True, "the plugin's hooks run %s (written by install --plugin)" % command)
    state, text = plugin.chosen_python(pid, paths.claude_config_dir())
    if state == "off":  # the very line the hook showed the user
        fix = text.split("Fix: ", 1)[-1].rstrip(".") if "Fix: " in text else "install Python 3.11 or newer"
        return Result("plugin-python", False, text.split(" Fix: ", 1)[0], fix)
    if state == "unchosen":
        return Result("plugin-python", True, "no session since the plugin was installed: the first one's "
                      "SessionStart (or, in a session it was installed into, the first prompt) chooses the "
                      "Python its hooks run")
    if state == "gone":
        return Result("plugin-python", True, "the Python the plugin's hooks ran (%s) is gone: the next prompt "
                      "or session chooses again" % text)
    return Result("plugin-python", True, "the plugin's hooks run %s (chosen once, no shell on a tool call)" % text)


def check_plugin_packages(ctx):
    """The optional packages of a plugin from a marketplace: built in its data folder (cc_continuity/deps)."""
    if not ctx.plugin():
        return Result("plugin-packages", True, "no plugin")
    pid, root = ctx.plugin()
    command = _tool_call_command(root)
    if command != settings.PLUGIN_PYTHON:
        return Result("plugin-packages", True, "the plugin runs the app copy, whose lib/ carries them")
    cfg, _ = ctx.config()
    if cfg is not None and not cfg["fetch_packages"]:
        return Result("plugin-packages", True, "not built (fetch_packages: false): side-effect holds read shell "
                      "commands the simpler way, and the watchdog needs `cc-continuity install`")
    chosen, python = plugin.chosen_python(pid, paths.claude_config_dir())
    if chosen != "chosen":
        return Result("plugin-packages", True, "built once the first session has chosen its Python")
    data = plugin.data_dir(pid, paths.claude_config_dir())
    python = os.path.realpath(python)
    from ...deps import build  # (doctor's and --fix's only: the installers and the index)

    try:
        version = build._version(python)
    except (build.BuildError, OSError, subprocess.SubprocessError) as e:
        return Result("plugin-packages", False, "the plugin's Python %s does not answer: %s" % (python, e),
                      "start a new session (it chooses a Python again)")
    status, info = deps.state(data, python, version)
    if status in ("failed", "absent") and ctx.fix:
        print("doctor --fix: building the plugin's optional packages in %s ..." % info["path"], flush=True)
        try:
            build.build(data, python)
        except build.BuildError:
            pass
        status, info = deps.state(data, python, version)
    if status == "built" and cfg is not None and cfg["mcp_server"]:
        return _mcp_sdk(ctx, build, data, python, version)
    if status == "built":
        return Result("plugin-packages", True, "built in %s (%s, %.0f MB, %.0f s)" % (
            info["path"], info.get("installer"), (info.get("bytes") or 0) / 1e6, info.get("seconds") or 0))
    if status == "building":
        return Result("plugin-packages", True, "being built now in %s (a session started it)" % info["path"])
    if status == "failed":
        return Result("plugin-packages", False, "could not be built (%s): %s; side-effect holds read shell commands "
                      "the simpler way meanwhile" % (", ".join(deps.PACKAGES), info.get("why")), build.FIX)
    return Result("plugin-packages", True, "not built yet: the next session (or prompt) starts it")



def _mcp_sdk(ctx, build, data, python, version):
    """The optional packages are built and the MCP server is on (``mcp_server``): its SDK's environment too."""
    status, info = deps.state(data, python, version, deps.MCP_LOCK)
    if status in ("failed", "absent") and ctx.fix:
        print("doctor --fix: building the MCP server's SDK in %s ..." % info["path"], flush=True)
        try:
            build.build(data, python, lock=deps.MCP_LOCK)
        except build.BuildError:
            pass
        status, info = deps.state(data, python, version, deps.MCP_LOCK)
    if status == "built":
        return Result("plugin-packages", True, "built, and the MCP server's SDK in %s (%.0f MB, %.0f s)" % (
            info["path"], (info.get("bytes") or 0) / 1e6, info.get("seconds") or 0))
    if status == "failed":
        return Result("plugin-packages", False, "the MCP server's SDK could not be built: %s; the plugin's server "
                      "stays off meanwhile" % info.get("why"), build.FIX)
    return Result("plugin-packages", True, "built; the MCP server's SDK %s in %s (the plugin's server starts in a "
                  "session after that)" % ("is being built" if status == "building" else "is built at the next "
                                           "session", info["path"]))


def check_mods(ctx):
    """Can plugin mods load here?  ``claude plugin test`` on a folder without one says (tested on 2.1.328-332)."""
    if not ctx.plugin():
        return Result("mod", True, "no plugin, no mod: the tmux rotator types /clear (or you do)")
    cfg, _ = ctx.config()
    if cfg is not None and not cfg["mod"]:
        return Result("mod", True, '"mod": false in the config: the tmux rotator hands over')
    try:
        claude = find_real_claude(ctx.env)
    except RuntimeError:
        claude = None
    if not claude:
        return Result("mod", False, "cannot ask Claude Code whether mods load: no claude on PATH",
                      "put claude on PATH, then `cc-continuity doctor` again")
    with tempfile.TemporaryDirectory(prefix="cc-continuity-modprobe-") as empty:
        rc, out, err = _run([claude, "plugin", "test", empty], env=ctx.env, timeout=MOD_PROBE_TIMEOUT_S)
    said = _first_line(err) or _first_line(out)
    if MODS_CAN_LOAD in said:
        return Result("mod", True, "mods can load here: the mod hands over in-process (the tmux rotator stands by)")
    if MODS_OFF in said:
        why = said.split(":", 1)[-1].strip()
        return Result("mod", False, "Claude Code will not load the mod: %s; rotations fall back to tmux" % why,
                      "nothing to do if tmux rotation suits you; mods need hooks on (no disableAllHooks, no "
                      "--bare) and the rollout switch served on")
    return Result("mod", False, "`claude plugin test` gave no answer we know: %s" % (said or err or "nothing"),
                  "run `claude plugin test <an empty folder>` yourself; rotations fall back to tmux meanwhile")




def _frontmatter(text):
    """The ``key: value`` pairs of a SKILL.md front matter, or None when there is none."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    out = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return out
        m = re.match(r"^([A-Za-z][A-Za-z0-9_-]*):\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("\"'")
    return None


def shipped_skills():
    """Skill names the package ships (``data/skills/<name>/SKILL.md``)."""
    base = SKILLS_SOURCE
    try:
        return sorted(n for n in os.listdir(base) if os.path.isfile(os.path.join(base, n, "SKILL.md")))
    except OSError:
        return []


def check_skills(ctx):
    names = shipped_skills()
    if not names:
        return Result("skills", False, "this cc-continuity package ships no skills (a broken build)",
                      "reinstall cc-continuity (pip install --force-reinstall cc-continuity)")
    base = os.path.join(paths.claude_config_dir(), "skills")
    if ctx.plugin():
        pid, root = ctx.plugin()
        missing = [n for n in names if not root or not os.path.isfile(os.path.join(root, "skills", n, "SKILL.md"))]
        if missing:
            return Result("skills", False, "the plugin %s lacks %s" % (pid, ", ".join(missing)),
                          "claude plugin update %s" % pid)
        twice = [n for n in names if os.path.isfile(os.path.join(base, n, "SKILL.md"))]
        if twice:
            return Result("skills", False, "%s are in %s and in the plugin %s (each shows twice in the / menu)" % (
                ", ".join(twice), base, pid), "cc-continuity install (it takes out its own copies while the "
                "plugin is enabled)")
        problem = _command_problem(ctx, skills_command(os.path.join(root, "skills")), os.path.join(root, "bin"))
        if problem:
            return Result("skills", False, problem, "put a Python 3.11+ on PATH as python3, or set "
                          "CC_CONTINUITY_PYTHON in the environment Claude Code starts with")
        return Result("skills", True, "%d skills from the plugin %s (/%s:continuity-...)" % (
            len(names), pid, pid.split("@")[0]))
    problems = []
    for name in names:
        path = os.path.join(base, name, "SKILL.md")
        try:
            with open(path, encoding="utf-8") as f:
                fm = _frontmatter(f.read())
        except FileNotFoundError:
            problems.append("%s missing" % name)
            continue
        except (OSError, UnicodeDecodeError) as e:
            problems.append("%s unreadable (%s)" % (name, e))
            continue
        if fm is None:
            problems.append("%s has no front matter" % name)
        elif not fm.get("description"):
            problems.append("%s has no description" % name)
    if problems:
        return Result("skills", False, "in %s: %s" % (base, "; ".join(problems)), "cc-continuity install")
    command = skills_command(base)
    problem = _command_problem(ctx, command)
    if problem:
        return Result("skills", False, problem, "cc-continuity install (the skills then name the launcher by its "
                      "absolute path)")
    return Result("skills", True, "%d skills in %s, running %s (found without your PATH)" % (len(names), base, command))


# What Claude Code's Bash tool may have at least: the system directories, not ~/.local/bin
# (macOS never has it; Debian adds it only at the next login once it exists).
BARE_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def skills_command(skills_dir):
    """The command our installed skills tell the model to run (from ``continuity-status``)."""
    try:
        with open(os.path.join(skills_dir, "continuity-status", "SKILL.md"), encoding="utf-8") as f:
            m = re.search(r"Run `(\S+) status", f.read())
    except (OSError, UnicodeDecodeError):
        return None
    return m.group(1) if m else None


def _command_problem(ctx, command, plugin_bin=None):
    """Does ``command --version`` run as the Bash tool would run it, with only the system PATH?"""
    if not command:
        return "the skills name no cc-continuity command"
    path = (plugin_bin + ":" if plugin_bin else "") + BARE_PATH
    env = {k: v for k, v in ctx.env.items() if not k.startswith("CLAUDE")}
    env["PATH"] = path
    exe = command if os.path.isabs(command) else shutil.which(command, path=path)
    if not exe:
        return ("the skills and `signal` run `%s`, which is not found on %s: Claude Code's Bash tool has your "
                "PATH, and ~/.local/bin is not always on it" % (command, path))
    rc, out, err = _run([exe, "--version"], env=env, timeout=PROBE_TIMEOUT_S)
    if rc != 0:
        return "`%s --version` failed with only the system PATH (exit %s): %s" % (
            command, rc, _first_line(err) or _first_line(out))
    return None


MANAGED_SETTINGS = ("/etc/claude-code/managed-settings.json",
                    "/Library/Application Support/ClaudeCode/managed-settings.json")


def _settings_layers(ctx):
    """Every settings file Claude Code reads for this project (user, project, local, managed)."""
    files = [ctx.settings_path]
    if ctx.root:
        files += [os.path.join(ctx.root, ".claude", "settings.json"),
                  os.path.join(ctx.root, ".claude", "settings.local.json")]
    return files + list(MANAGED_SETTINGS)


def skill_shell_commands():
    """``{skill: [inline command]}`` of our skills' ``!`cmd``` injections (PreSkillShellCommand gates them)."""
    base = SKILLS_SOURCE
    out = {}
    for name in shipped_skills():
        with open(os.path.join(base, name, "SKILL.md"), encoding="utf-8") as f:
            found = re.findall(r"!`([^`]+)`", f.read())
        if found:
            out[name] = found
    return out


def check_skill_shell(ctx):
    """A ``PreSkillShellCommand`` hook (2.1.332) refuses a skill's inline shell commands: ours then abort."""
    hooked = []
    for path in _settings_layers(ctx):
        inside = ctx.root if ctx.root and path.startswith(ctx.root + os.sep) else None  # the repository's own
        try:
            doc = json.loads(safefile.read_bounded(path, SETTINGS_MAX_BYTES, inside=inside))
        except (OSError, ValueError):
            continue
        groups = (doc.get("hooks") or {}).get("PreSkillShellCommand") if isinstance(doc, dict) else None
        if isinstance(groups, list) and groups:
            hooked.append(path)
    ours = skill_shell_commands()
    if not hooked:
        return Result("skill-shell", True, "no PreSkillShellCommand hook")
    if not ours:
        return Result("skill-shell", True, "PreSkillShellCommand hooks in %s; our skills run no inline shell "
                      "command, so they cannot be refused" % ", ".join(hooked))
    return Result("skill-shell", False, "PreSkillShellCommand hooks in %s may refuse the inline commands of %s "
                  "(a refused one aborts the skill)" % (", ".join(hooked), ", ".join(sorted(ours))),
                  "let the hook allow %s" % "; ".join(c for cs in ours.values() for c in cs))


