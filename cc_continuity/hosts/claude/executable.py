"""The real Claude Code executable: what the wrapper runs, doctor probes and install checks.

Not ours: the ``claude()`` wrapper, our launcher and any shim that names our package are
skipped, so a PATH where one of them comes first still finds Claude Code itself.
"""

import os
import sys
from collections.abc import Mapping

from ... import paths

ENV_CLAUDE = "CC_CONTINUITY_CLAUDE"  # absolute path of the real claude, when it is not on PATH


def find_real_claude(env: Mapping[str, str]) -> str | None:
    """The real claude executable: ``$CC_CONTINUITY_CLAUDE``, else the first on PATH that is not ours."""
    explicit = env.get(ENV_CLAUDE)
    if explicit:
        if os.path.isabs(explicit) and os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise RuntimeError("%s=%r is not an executable file given by absolute path" % (ENV_CLAUDE, explicit))
    ours = {os.path.realpath(p) for p in _our_launchers()}
    candidates = [os.path.join(d, "claude") for d in (env.get("PATH") or "").split(os.pathsep) if os.path.isabs(d)]
    home = env.get("HOME")
    if home:  # where Claude Code's old "local" installer put it (reached through an alias)
        candidates.append(os.path.join(home, ".claude", "local", "claude"))
    for cand in candidates:
        if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
            continue
        real = os.path.realpath(cand)
        if real in ours or _looks_like_ours(real):
            continue
        return cand
    return None


def _our_launchers() -> list[str]:
    out = [os.path.join(paths.home(), "bin", "cc-continuity")]
    if sys.argv and sys.argv[0]:
        out.append(sys.argv[0])
    return out


def _looks_like_ours(path: str) -> bool:
    """A script that mentions cc-continuity is a shim or wrapper of ours, not claude.

    Its first line is left out: an interpreter that lives under a folder named cc-continuity (a pipx or
    uv tool venv, CI's own virtualenv) says nothing of what the script is."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return True
    body = head.split(b"\n", 1)[1] if b"\n" in head else b""
    return head.startswith(b"#!") and (b"cc-continuity" in body or b"cc_continuity" in body)


def claude_global_config(env: Mapping[str, str]) -> str:
    """Claude Code's global config (``~/.claude.json``; inside ``$CLAUDE_CONFIG_DIR`` when that is set)."""
    base = env.get("CLAUDE_CONFIG_DIR")
    if base:
        base = os.path.abspath(os.path.expanduser(base))
        legacy = os.path.join(base, ".config.json")
        return legacy if os.path.isfile(legacy) else os.path.join(base, ".claude.json")
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude.json")
