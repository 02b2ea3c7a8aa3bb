"""The model server Claude Code talks to, as ``configure --window auto`` asks it (serverwindow/): its base URL,
the model id it sends, and the credential it sends there.

Only from the user's own shell and user settings (``$CLAUDE_CONFIG_DIR/settings.json``'s ``env`` block, which
Claude Code applies to itself, and its ``model``): a repository's ``.claude/settings.json`` or ``.env`` cannot
point the question anywhere, nor make a credential go with it.  No base URL, or Anthropic's own: None (the
window then comes from the model id, as before).
"""

from __future__ import annotations

import json
import os
from urllib.parse import urlsplit

from ... import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


# A fresh session's first request with our hooks installed (system prompt, tools, CLAUDE.md's block, the skills'
# list), measured against the scripted server on 2.1.328 and 2.1.332 (`claude -p`, bytes/4; the two differ by
# 14 bytes of tool text): the full system prompt, and the short one unknown model ids get since 2.1.330.
FRESH_TOKENS = {"full": 22_300, "short": 12_900}
# Claude Code's auto-compaction threshold for a window W it is given (CLAUDE_CODE_MAX_CONTEXT_TOKENS): W less
# min(its max output, 20,000) less a 13,000 buffer (its debug log: 1M -> 967,000; 32,768 -> -232).
COMPACT_MARGIN = 33_000


def _user_settings(env: Mapping[str, str]) -> dict[str, Any]:
    d = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
    try:
        with open(os.path.join(paths.normalize(d), "settings.json"), "rb") as f:
            doc = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def model_server(env: Mapping[str, str]) -> dict[str, Any] | None:
    """``{"url", "model", "credential", "where", "window"}`` for Claude Code's model server, or None
    (Anthropic's API, or no base URL set); ``window``: its ``CLAUDE_CODE_MAX_CONTEXT_TOKENS``.  ``credential``: the headers Claude Code sends that URL (``ANTHROPIC_AUTH_TOKEN`` as a
    bearer token, else ``ANTHROPIC_API_KEY`` as ``x-api-key``), or None."""
    doc = _user_settings(env)
    block = doc.get("env") if isinstance(doc.get("env"), dict) else {}

    def get(name: str) -> tuple[str | None, str]:
        if env.get(name):
            return env[name], "your environment"
        value = block.get(name)
        return (str(value), "settings.json env") if value not in (None, "") else (None, "")

    url, where = get("ANTHROPIC_BASE_URL")
    host = (urlsplit(url).hostname or "") if url else ""
    if not url or host == "anthropic.com" or host.endswith(".anthropic.com"):
        return None
    model = get("ANTHROPIC_MODEL")[0] or (doc.get("model") if isinstance(doc.get("model"), str) else None)
    token, key = get("ANTHROPIC_AUTH_TOKEN")[0], get("ANTHROPIC_API_KEY")[0]
    credential = {"authorization": "Bearer %s" % token} if token else {"x-api-key": key} if key else None
    own = get("CLAUDE_CODE_MAX_CONTEXT_TOKENS")[0]
    return {"url": url, "model": model, "credential": credential, "where": "ANTHROPIC_BASE_URL (%s)" % where,
            "window": int(own) if own and own.isdigit() else None}


def own_window_fix(tokens: int) -> str:
    """How the user makes Claude Code's own window ``tokens``."""
    return "export CLAUDE_CODE_MAX_CONTEXT_TOKENS=%d (or put it in the \"env\" block of your settings.json)" % tokens


def fresh_tokens(env: Mapping[str, str]) -> tuple[int, str]:
    """A fresh Claude Code session's size (tokens) with the system prompt it will get, and what that is."""
    doc = _user_settings(env)
    block = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    chosen = str(env.get("CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT") or block.get("CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT") or "")
    short = chosen.strip().lower() in ("1", "true", "yes", "on")
    return FRESH_TOKENS["short" if short else "full"], "the %s system prompt" % ("short" if short else "full")
