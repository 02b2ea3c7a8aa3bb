"""cc-continuity as a Claude Code plugin: built from the app copy, registered with ``claude plugin``.

Two ways to have the plugin, one hook table (``hooks/hooks.json``):

* this repository is a plugin and its own marketplace: ``claude plugin
  marketplace add <repo>`` + ``claude plugin install cc-continuity@cc-continuity``.
  Its hooks run ``python3`` from PATH with the plugin's own copy of the package;
* ``cc-continuity install --plugin`` writes a plugin next to the app copy
  (``$CC_CONTINUITY_HOME/plugin``), its hooks rendered with the absolute base
  interpreter and the app copy (so a hook costs what it costs with a settings
  install, and the app's ``lib/`` is on its path), and registers it through Claude
  Code's own commands (marketplace ``cc-continuity-local``).

Either way the plugin carries the hooks, the six skills, ``bin/cc-continuity`` and
the mod; a plugin cannot carry the main status line, so that stays a settings
write.  Hooks are not deduplicated between a plugin and settings.json, so while a
cc-continuity plugin is enabled install writes no hooks of its own into settings
(and removes earlier ones): :func:`enabled` says whether one is.
"""

import json
import os
import shutil
import subprocess

from .. import __version__, atomic, errors, paths
from . import manifest as install_record
from . import settings

MARKETPLACE = "cc-continuity-local"
NAME = "cc-continuity"
PLUGIN_ID = "%s@%s" % (NAME, MARKETPLACE)
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


PluginError = errors.PluginError  # (defined with every error class, in errors.py)


def plugin_dir(home=None):
    return os.path.join(home or paths.home(), "plugin")


def manifest():
    """plugin.json (the repository's own is a copy: a test keeps them equal)."""
    return {
        "name": NAME,
        "version": __version__,
        "description": ("Zero-touch session rotation for Claude Code: at a context threshold the agent writes a "
                        "validated handoff, the git tree is snapshotted without touching your branches, the "
                        "context is cleared and the next session carries on. Hooks, six /continuity-* skills, "
                        "the cc-continuity command for the Bash tool, and a mod that clears and continues "
                        "in-process."),
        "author": {"name": "cc-continuity maintainers"},
        "license": "MIT",
        "keywords": ["context", "handoff", "rotation", "compaction", "checkpoint"],
    }


def files(python, app_dir, launcher_text, mcp=None):
    """``{relative path: bytes}`` of the plugin that runs the app copy at ``app_dir`` on ``python``; ``mcp``: the
    MCP server's entry it carries (``.mcp.json``), or None."""
    rendered = settings.render_fragment(settings.load_fragment(), python, app_dir)
    with open(os.path.join(_DATA, "hooks", "hooks.json"), encoding="utf-8") as f:
        table = json.load(f)
    table["hooks"] = rendered["hooks"]
    out = {
        ".claude-plugin/plugin.json": _json(manifest()),
        ".claude-plugin/marketplace.json": _json({
            "name": MARKETPLACE, "description": "cc-continuity, from this machine's installed copy",
            "owner": {"name": "cc-continuity maintainers"},
            "metadata": {"description": "cc-continuity, from this machine's installed copy"},
            "plugins": [{"name": NAME, "source": "./", "description": "the installed cc-continuity"}]}),
        "hooks/hooks.json": _json(table),
        "bin/cc-continuity": launcher_text.encode("utf-8"),
    }
    if mcp:
        out[".mcp.json"] = _json({"mcpServers": {"cc-continuity": mcp}})
    with open(os.path.join(_DATA, "hooks", "mod.js"), "rb") as f:
        out["hooks/mod.js"] = f.read()
    base = os.path.join(_DATA, "skills")
    for name in sorted(os.listdir(base)):
        skill = os.path.join(base, name, "SKILL.md")
        if os.path.isfile(skill):
            with open(skill, "rb") as f:
                out["skills/%s/SKILL.md" % name] = f.read()
    return out


def _json(doc):
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def write(target, content):
    """Make ``target`` hold exactly ``content`` (stale files of an older version removed)."""
    paths.ensure_dir(target)
    for rel, data in content.items():
        path = os.path.join(target, rel)
        paths.ensure_dir(os.path.dirname(path))
        atomic.write_bytes(path, data, mode=0o700 if rel.startswith("bin/") else 0o600, fsync=False)
    wanted = set(content)
    for dirpath, dirnames, filenames in os.walk(target, topdown=False):
        for fn in filenames:
            rel = os.path.relpath(os.path.join(dirpath, fn), target)
            if rel not in wanted:
                os.unlink(os.path.join(dirpath, fn))
        if dirpath != target and not os.listdir(dirpath):
            os.rmdir(dirpath)


def enabled(doc):
    """The cc-continuity plugins a settings document enables (``name@marketplace`` ids)."""
    plugins = doc.get("enabledPlugins") if isinstance(doc, dict) else None
    if not isinstance(plugins, dict):
        return []
    return sorted(k for k, v in plugins.items() if v is True and isinstance(k, str) and k.split("@")[0] == NAME)


def install_path(plugin_id, claude_dir):
    """Where Claude Code keeps its copy of an installed plugin (``plugins/installed_plugins.json``), or None."""
    try:
        with open(os.path.join(claude_dir, "plugins", "installed_plugins.json"), encoding="utf-8") as f:
            doc = json.load(f)
        entries = doc["plugins"][plugin_id]
        path = next(e["installPath"] for e in entries if isinstance(e, dict) and isinstance(e.get("installPath"), str))
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return None
    return path


def installed_version(root):
    """The version in a plugin copy's ``.claude-plugin/plugin.json``, or None."""
    try:
        with open(os.path.join(root, ".claude-plugin", "plugin.json"), encoding="utf-8") as f:
            version = json.load(f).get("version")
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def _claude(claude, args, env=None, timeout=120):
    try:
        p = subprocess.run([claude, "plugin", *args], capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PluginError("claude plugin %s: %s" % (" ".join(args), e)) from None
    if p.returncode != 0:
        raise PluginError("claude plugin %s failed (exit %d): %s" % (
            " ".join(args), p.returncode, (p.stderr or p.stdout).strip()[-400:]))
    return p.stdout


def register(claude, target, env=None):
    """``claude plugin marketplace add <target>`` and ``install`` (user scope); idempotent."""
    listed = _claude(claude, ["marketplace", "list"], env)
    if MARKETPLACE not in listed:
        _claude(claude, ["marketplace", "add", target], env)
    else:
        _claude(claude, ["marketplace", "update", MARKETPLACE], env)
    installed = _claude(claude, ["list"], env)
    if PLUGIN_ID in installed:
        _claude(claude, ["update", PLUGIN_ID], env)
    else:
        _claude(claude, ["install", PLUGIN_ID, "--scope", "user"], env)


def _listed(claude, args, env):
    """``claude plugin <args> --json`` as a list of objects ([] when it gives none we can read)."""
    try:
        rows = json.loads(_claude(claude, [*args, "--json"], env))
    except ValueError:
        return []
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def unregister(claude, ids=(), env=None):
    """Take our plugins out through Claude Code's own commands: ``PLUGIN_ID`` (what :func:`register`
    added) and ``ids`` (the ones the user enabled, a marketplace route), each uninstalled from the
    user scope, or disabled where Claude Code refuses; then each of their marketplaces that lists
    nothing else still installed.  Returns what was done, one phrase each."""
    done = []
    wanted = list(dict.fromkeys([PLUGIN_ID, *ids]))
    user = {r.get("id") for r in _listed(claude, ["list"], env) if r.get("scope") == "user"}
    for pid in wanted:
        if pid not in user:
            continue
        try:
            _claude(claude, ["uninstall", pid, "--scope", "user"], env)
            done.append("%s uninstalled" % pid)
        except PluginError as e:
            _claude(claude, ["disable", pid, "--scope", "user"], env)
            done.append("%s disabled (uninstall refused: %s)" % (pid, str(e)[-160:]))
    markets = {r.get("name") for r in _listed(claude, ["marketplace", "list"], env)}
    left = {str(r.get("id")).split("@", 1)[-1] for r in _listed(claude, ["list"], env)}
    for market in dict.fromkeys(pid.split("@", 1)[1] for pid in wanted if "@" in pid):
        if market in markets and market not in left:
            _claude(claude, ["marketplace", "remove", market], env)
            done.append("marketplace %s removed" % market)
    return done


def other_scopes(ids, claude_dir):
    """``[(id, scope, project path)]`` of our plugins installed for a project or locally: those live in
    a repository's files, so uninstall names them and edits none."""
    try:
        with open(os.path.join(claude_dir, "plugins", "installed_plugins.json"), encoding="utf-8") as f:
            entries = json.load(f)["plugins"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    for pid, rows in entries.items() if isinstance(entries, dict) else ():
        if not (isinstance(pid, str) and pid.split("@")[0] == NAME and isinstance(rows, list)):
            continue
        for row in rows:
            if isinstance(row, dict) and row.get("scope") in ("project", "local"):
                out.append((pid, row["scope"], row.get("projectPath") or "?"))
    return out


RESIDUE_KEYS = ("enabledPlugins", "extraKnownMarketplaces")


def only_plugin_tables(doc, ours_only=False):
    """A settings document holding nothing but Claude Code's plugin tables: empty, as it leaves them
    once a plugin and its marketplace are removed (``{"enabledPlugins": {}, "extraKnownMarketplaces": {}}``),
    or, with ``ours_only``, naming only cc-continuity plugins and their marketplaces."""
    if not isinstance(doc, dict) or not doc:
        return False
    for key, table in doc.items():
        if key not in RESIDUE_KEYS or not isinstance(table, dict):
            return False
        if table and not ours_only:
            return False
    ids = list(doc.get("enabledPlugins") or {})
    markets = {pid.split("@", 1)[-1] for pid in ids} | {MARKETPLACE}
    return all(pid.split("@")[0] == NAME for pid in ids) and set(doc.get("extraKnownMarketplaces") or {}) <= markets


def remove_dir(home=None):
    d = plugin_dir(home)
    if os.path.isdir(d):
        shutil.rmtree(d)
        return True
    return False


# -- the Python the plugin's hooks run, and what an uninstall in Claude Code leaves -------------

def data_dir(plugin_id, claude_dir):
    """``${CLAUDE_PLUGIN_DATA}`` of an installed plugin: Claude Code names it after the id with every
    character but ``[A-Za-z0-9_-]`` made ``-`` (2.1.328-2.1.332)."""
    return os.path.join(claude_dir, "plugins", "data", "".join(
        c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in plugin_id))


def chosen_python(plugin_id, claude_dir):
    """``(state, text)`` of the Python the plugin's SessionStart chose (``plugin/hooks/python.sh``).

    state: "chosen" (text: the interpreter), "off" (text: the one line the hook showed the user),
    "gone" (text: the interpreter the link names, which is not there: the next session chooses
    again) or "unchosen" (no session since the plugin was installed)."""
    data = data_dir(plugin_id, claude_dir)
    link = os.path.join(data, "python")
    try:
        with open(os.path.join(data, "off"), encoding="utf-8") as f:
            return "off", f.read().strip()
    except OSError:
        pass
    try:
        target = os.readlink(link)
    except OSError:
        return "unchosen", ""
    return ("chosen" if os.access(link, os.X_OK) else "gone"), target


def leftovers(doc, record, home):
    """What of ours remains once no cc-continuity plugin is enabled and settings.json runs no hook of
    ours, though the last install was a plugin or left the status line (an uninstall done inside
    Claude Code runs no code of ours): phrases, or [] when nothing of that kind is left."""
    if enabled(doc) or settings.has_ours({"hooks": (doc or {}).get("hooks") or {}}):
        return []
    status = settings.is_our_statusline((doc or {}).get("statusLine"))
    if not (status or (record or {}).get("plugin")):
        return []
    out = []
    if status:
        out.append("the status line in settings.json")
    if os.path.isdir(home):
        out.append("the state folder %s" % home)
    return out


LEFTOVER_FIX = "cc-continuity uninstall --purge"


def leftover_line(claude_dir: "str | None" = None) -> "str | None":
    """The one line every other verb prints when :func:`leftovers` finds something, else None."""
    try:
        with open(os.path.join(claude_dir or paths.claude_config_dir(), "settings.json"), encoding="utf-8") as f:
            doc = settings.parse(f.read())
    except (OSError, ValueError, errors.Error):
        return None
    try:
        record = install_record.load()
    except (OSError, ValueError, errors.Error):
        record = None
    left = leftovers(doc, record, paths.home())
    if not left:
        return None
    return "cc-continuity: its plugin is no longer enabled in Claude Code and no hook of ours runs, but %s " \
           "remain; `%s` removes them" % (" and ".join(left), LEFTOVER_FIX)
