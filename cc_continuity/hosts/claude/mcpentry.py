"""Claude Code's registration of the MCP server: ``claude mcp add --scope user`` and ``claude mcp remove``.

Claude Code keeps user-scope servers in its global config (``~/.claude.json``), which it rewrites often: that
file is only *read* here (is the entry there, is it ours), every change goes through Claude Code's own
commands.  A server of the same name in a project's ``.mcp.json`` or at local scope wins over the user's entry
(doctor names it).  Its read-only tools are allowed by narrow rules in settings.json (``mcp__cc-continuity__
<tool>``, one per tool, never the whole server): :data:`ALLOW`.
"""

import json
import os
import subprocess

from ...errors import InstallError
from ...install import mcp
from .executable import claude_global_config

ALLOW = ["mcp__%s__%s" % (mcp.SERVER, t) for t in mcp.READ_ONLY]
# A plugin's server's tools: mcp__plugin_<plugin>_<server>__<tool> (ours: plugin and server both cc-continuity).
PLUGIN_ALLOW = ["mcp__plugin_%s_%s__%s" % (mcp.SERVER, mcp.SERVER, t) for t in mcp.READ_ONLY]
# Where install puts the server: at user scope, in our plugin (install --plugin), or the marketplace plugin's own.
USER, PLUGIN, MARKETPLACE = "user", "plugin", "marketplace"
TIMEOUT_S = 60


def _global_config(env=None):
    """Claude Code's global config as a dict (read only; ``{}`` when absent or unreadable)."""
    try:
        with open(claude_global_config(os.environ if env is None else env), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def user_entry(env=None):
    """Our name's user-scope entry in Claude Code's global config (a dict), or None."""
    servers = _global_config(env).get("mcpServers")
    entry = servers.get(mcp.SERVER) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def is_ours(entry, launcher):
    return isinstance(entry, dict) and (entry.get("command"), entry.get("args")) == (launcher, ["mcp"])


def check(launcher):
    """Refuse (before anything is written) a user-scope server of our name that is not ours."""
    entry = user_entry()
    if entry is not None and not is_ours(entry, launcher):
        raise InstallError("an MCP server named %s is already in Claude Code's user scope and is not ours (%s): "
                           "remove it with `claude mcp remove --scope user %s`, or install without --mcp" % (
                               mcp.SERVER, entry.get("command") or entry.get("url") or "?", mcp.SERVER))


def _claude(claude, args):
    try:
        p = subprocess.run([claude, "mcp", *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InstallError("claude mcp %s: %s" % (args[0], e)) from None
    if p.returncode != 0:
        raise InstallError("claude mcp %s failed (exit %d): %s" % (args[0], p.returncode,
                                                                   (p.stderr or p.stdout).strip()[-400:]))


def register(claude, launcher):
    """Add (or bring up to date) our user-scope entry; returns what was done."""
    entry = user_entry()
    command, args = mcp.command(launcher)
    env = mcp.env()
    if is_ours(entry, launcher) and (entry.get("env") or {}) == env:
        return "unchanged"
    if entry is not None:
        check(launcher)
        _claude(claude, ["remove", "--scope", "user", mcp.SERVER])
    _claude(claude, ["add", "--scope", "user", mcp.SERVER]
            + [a for k, v in sorted(env.items()) for a in ("-e", "%s=%s" % (k, v))] + ["--", command, *args])
    return "added" if entry is None else "updated"


def unregister(claude, launcher):
    """Remove our user-scope entry (a foreign one of the same name stays); returns what was done."""
    entry = user_entry()
    if entry is None:
        return "not there"
    if not is_ours(entry, launcher):
        return "not ours (%s): left alone" % (entry.get("command") or "?")
    if claude is None:
        raise InstallError("cannot remove the MCP server %s: Claude Code's `claude` is not on PATH (or "
                           "CC_CONTINUITY_CLAUDE); run `claude mcp remove --scope user %s`" % (mcp.SERVER, mcp.SERVER))
    _claude(claude, ["remove", "--scope", "user", mcp.SERVER])
    return "removed"


def repo_entries(root, env=None):
    """Where a server of our name would win over the user's entry in Claude Code, for the project at ``root``:
    its ``.mcp.json`` (project scope) and the local scope (``projects[<root>]`` of the global config)."""
    found = []
    path = os.path.join(root, ".mcp.json")
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(1 << 20))
        if isinstance(doc, dict) and isinstance(doc.get("mcpServers"), dict) and mcp.SERVER in doc["mcpServers"]:
            found.append(path)
    except (OSError, ValueError):
        pass
    projects = _global_config(env).get("projects")
    project = projects.get(root) if isinstance(projects, dict) else None
    local = project.get("mcpServers") if isinstance(project, dict) else None
    if isinstance(local, dict) and mcp.SERVER in local:
        found.append("the local scope of %s (claude mcp add --scope local)" % root)
    return found
