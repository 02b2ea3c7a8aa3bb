"""The MCP server (``cc-continuity mcp``) as an install registers it: its name, its command, the tools a host may
run without asking, and the SDK's own folder beside the app copy.

The SDK (``mcp`` 2.x and what it needs: ~25 packages, ~45 MB) is copied, only when the server is turned on
(``install --mcp``), from the installing interpreter into ``$CC_CONTINUITY_HOME/mcp-lib/``, apart from the app
copy: the app copy stays what every hook loads, and another agent's install (which rebuilds the app copy)
leaves the server's packages alone.  ``cc-continuity mcp`` puts that folder on its path (after the app's own
``lib/``); nothing else does.  Removed again when no host has the server registered.

Each host registers it its own way (``hosts/<name>/install.py``): Claude Code with ``claude mcp add --scope
user`` (never by editing ``~/.claude.json``), Codex in config.toml's ``[mcp_servers]``, Gemini CLI in its user
settings' ``mcpServers``, and with each the host's narrow allow rule for :data:`READ_ONLY` tools only.
"""

import compileall
import hashlib
import os
import shutil
import sys

from .. import config, deps, errors, paths
from . import app

SERVER = "cc-continuity"  # the server's name in every host's config (its tools: mcp__cc-continuity__<tool>)
# The tools that only read (mcpserver/server.py registers them; tests/install/test_mcp.py holds the lists equal).
READ_ONLY = ("session_context", "list_checkpoints", "checkpoint_bootstrap", "list_effects", "verify_ledgers")
MUTATING = ("take_checkpoint", "request_rotation", "effect_begin", "effect_end", "claim_checkpoint")
SDK = "mcp"
LIB = "mcp-lib"
GET_SDK = ("the MCP SDK is not installed beside cc-continuity (%s); install it there first: "
           "pipx inject cc-continuity 'mcp>=2.3,<3', or pip install 'cc-continuity[mcp]'")


def sdk_paths():
    """Where the SDK may be, after this interpreter's own: the copy ``install --mcp`` made beside the app copy,
    the plugin's environment built for it (``configure --mcp-server on``); the optional packages made
    importable first."""
    deps.activate()
    out = [lib_dir(), deps.mcp_site()]
    return [p for p in out if p and os.path.isdir(p)]


def off_reason(e):
    """Why the server cannot start (``e``: the SDK's ImportError), and the one step that starts it."""
    if deps.plugin_data() is None:
        return ("the MCP SDK is not installed for this Python (%s): %s. Install it with pip install "
                "'cc-continuity[mcp]', then cc-continuity install --mcp" % (sys.executable, e))
    try:
        on = config.load(None)["mcp_server"]
    except config.ConfigError:
        on = False
    if not on:
        return ("the plugin's MCP server is off: run `cc-continuity configure --mcp-server on`; the next session "
                "builds its SDK (about 45 MB, from your package index) and the one after starts it")
    return ("the plugin's MCP server is on but its SDK is not built yet (a session's start builds it, in the "
            "background; `cc-continuity doctor --fix` builds it now): it starts in a session after that")


def lib_dir(home=None):
    return os.path.join(home or paths.home(), LIB)


def command(launcher):
    """``(command, args)`` a host runs: the launcher, with the verb."""
    return launcher, ["mcp"]


def env():
    """The server's environment entries: the state folder when the user moved it (else the host's own env)."""
    home = os.environ.get("CC_CONTINUITY_HOME")
    return {"CC_CONTINUITY_HOME": home} if home else {}


def entry(launcher):
    """The server's entry as a JSON config holds it (a plugin's ``.mcp.json``, Gemini's ``mcpServers``)."""
    command_, args = command(launcher)
    extra = env()
    return {"command": command_, "args": args, **({"env": extra} if extra else {})}


def sdk_dists():
    """The SDK's distributions in the installing interpreter, or :class:`InstallError` saying how to get them."""
    try:
        return app.dependency_dists((SDK,))
    except errors.AppError:
        raise errors.InstallError(GET_SDK % os.path.realpath(sys.executable)) from None


def _fingerprint(dists):
    h = hashlib.sha256()
    for d in dists:
        h.update(("%s==%s\0" % (d.metadata["Name"], d.version)).encode())
    h.update(sys.version.encode())
    return h.hexdigest()


def make(home=None):
    """The SDK's folder, made (or kept when it already holds these versions).  Returns whether it was made."""
    home = home or paths.home()
    dists = sdk_dists()
    target, fp = lib_dir(home), _fingerprint(dists)
    stamp = os.path.join(target, "FINGERPRINT")
    try:
        with open(stamp, encoding="utf-8") as f:
            if f.read().strip() == fp:
                return False
    except OSError:
        pass
    staging = "%s.staging-%s" % (target, os.urandom(3).hex())
    try:
        os.mkdir(staging, paths.DIR_MODE)
        app.copy_dists(dists, staging)
        compileall.compile_dir(staging, quiet=2)  # the server's start pays no compile (a failure: it compiles then)
        with open(os.path.join(staging, "FINGERPRINT"), "w", encoding="utf-8") as f:
            f.write(fp + "\n")
        old = "%s.old-%s" % (target, os.urandom(3).hex())
        if os.path.isdir(target):
            os.rename(target, old)  # a running server keeps the files it opened
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return True


def used_by(record):
    """Does an agent's part of the install record (``claude_mcp``; ``mcp`` in a host's own part, as Codex's and
    Gemini's) still register the server?"""
    return any((k.endswith("_mcp") and v) or (isinstance(v, dict) and v.get("mcp"))
               for k, v in (record or {}).items())


def remove(home=None):
    """Delete the SDK's folder; whether there was one."""
    target = lib_dir(home)
    if not os.path.isdir(target):
        return False
    shutil.rmtree(target)
    return True
