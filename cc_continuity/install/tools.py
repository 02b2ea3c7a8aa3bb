"""What uninstall cannot take out itself, named with the command that does.

* A launcher another tool installed: ``uv tool install`` (its environment holds ``uv-receipt.toml``)
  or ``pipx install`` (``pipx_metadata.json``).  Found from the running interpreter's environment
  and from the ``cc-continuity`` first on PATH (its link, or its script's ``#!`` interpreter).
* Claude Code's cached copy of the plugin (``plugins/cache/<marketplace>/cc-continuity/<version>/``),
  which ``claude plugin uninstall`` marks orphaned and Claude Code deletes later by itself.

Standard library only.
"""

import glob
import os
import shlex
import shutil
import sys

NAME = "cc-continuity"

# (the file that marks the tool's environment, how it was installed, the command that removes it)
KINDS = (
    ("uv-receipt.toml", "uv tool install", "uv tool uninstall %s"),
    ("pipx_metadata.json", "pipx install", "pipx uninstall %s"),
)


def _kind(env):
    """``(how, command)`` when ``env`` is a uv tool or pipx environment, else None."""
    for marker, how, command in KINDS:
        if os.path.isfile(os.path.join(env, marker)):
            return how, command % shlex.quote(os.path.basename(env.rstrip(os.sep)))
    return None


def _env_of_script(path):
    """The environment a console script runs in: its real file's ``bin/``'s parent, or its
    ``#!`` interpreter's (a copied script), whichever is a tool's environment; else None."""
    real = os.path.realpath(path)
    candidates = [os.path.dirname(os.path.dirname(real))]
    try:
        with open(real, "rb") as f:
            first = f.readline(512)
    except OSError:
        first = b""
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words:
            candidates.append(os.path.dirname(os.path.dirname(words[0])))
    return next((c for c in candidates if _kind(c)), None)


def tool_launchers(path_env=None, prefix=None):
    """``[(launcher, how, command)]``: each uv tool or pipx install of cc-continuity that runs this
    process or is the ``cc-continuity`` on PATH, once each."""
    found = {}
    prefix = os.path.realpath(sys.prefix if prefix is None else prefix)
    if _kind(prefix):
        argv0 = sys.argv[0] if sys.argv and os.path.basename(sys.argv[0]) == NAME else None
        found[prefix] = argv0 or prefix
    on_path = shutil.which(NAME, path=os.environ.get("PATH") if path_env is None else path_env)
    env = _env_of_script(on_path) if on_path else None
    if env and os.path.realpath(env) not in found:
        found[os.path.realpath(env)] = on_path
    out = []
    for env, launcher in found.items():
        kind = _kind(env)
        if kind:
            out.append((launcher, kind[0], kind[1]))
    return out


def plugin_cache_copies(claude_dir):
    """Claude Code's cached copies of the cc-continuity plugin, one folder per marketplace and version."""
    return sorted(d for d in glob.glob(os.path.join(claude_dir, "plugins", "cache", "*", NAME, "*"))
                  if os.path.isdir(d) and not os.path.islink(d))
