"""The model server Codex CLI talks to, as ``configure --window auto`` asks it (serverwindow/): the ``base_url`` of
the provider its user config selects, the model, and the credential Codex sends there.

Only the user's ``$CODEX_HOME/config.toml`` (a repository's ``.codex/config.toml`` cannot point the question
anywhere).  The built-in providers (OpenAI's API) and a provider without ``base_url``: None.  The credential
is the provider's ``env_key`` variable from the user's environment, as Codex sends it (a bearer token).
"""

from __future__ import annotations

import os

from . import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


FRESH_TOKENS = 9_700  # a fresh `codex exec`'s first request (0.171, scripted server, bytes/4): ours add nothing


def fresh_tokens(env: Mapping[str, str]) -> tuple[int, str]:
    return FRESH_TOKENS, "its base instructions and tools"


def model_server(env: Mapping[str, str]) -> dict[str, Any] | None:
    """``{"url", "model", "credential", "where", "window"}`` (``window``: the config's ``model_context_window``),
    or None."""
    try:
        path = files.config_path(files.codex_home(env))
        with open(path, "rb") as f:
            doc = files.load_config(f.read(1 << 20))
    except (OSError, files.CodexError):
        return None
    name = doc.get("model_provider")
    providers = doc.get("model_providers") if isinstance(doc.get("model_providers"), dict) else {}
    provider = providers.get(name) if isinstance(name, str) else None
    url = provider.get("base_url") if isinstance(provider, dict) else None
    if not isinstance(url, str) or not url:
        return None
    key_name = provider.get("env_key")
    key = env.get(key_name) if isinstance(key_name, str) else None
    window = doc.get("model_context_window")
    return {"url": url, "model": doc.get("model") if isinstance(doc.get("model"), str) else None,
            "credential": {"authorization": "Bearer %s" % key} if key else None,
            "where": "model_providers.%s.base_url (%s)" % (name, os.path.basename(path)),
            "window": window if isinstance(window, int) and not isinstance(window, bool) else None}


def own_window_fix(tokens: int) -> str:
    """How the user makes Codex's own window ``tokens``."""
    return "set model_context_window = %d in your Codex config.toml" % tokens
