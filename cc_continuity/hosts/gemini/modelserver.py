"""The model server Gemini CLI talks to, as ``configure --window auto`` asks it (serverwindow/):
``GOOGLE_GEMINI_BASE_URL`` from the user's own environment, the model of their user settings, and the
``GEMINI_API_KEY`` Gemini sends there (``x-goog-api-key``).

Not from a repository's ``.env`` or ``.gemini/``: Gemini reads those into its own environment
(hosts/gemini/envfile.py), but they are not the user.  Google's own API: None.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from . import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


FRESH_TOKENS = 8_400  # a fresh `gemini -p`'s first request (0.61, scripted server, bytes/4), our policy's tool on


def fresh_tokens(env: Mapping[str, str]) -> tuple[int, str]:
    return FRESH_TOKENS, "its system instruction and tools"


def model_server(env: Mapping[str, str]) -> dict[str, Any] | None:
    """``{"url", "model", "credential", "where", "window"}`` (``window``: the one Gemini 0.61 assumes for every
    model, :data:`.files.GEMINI_LIMIT`), or None."""
    url = env.get("GOOGLE_GEMINI_BASE_URL")
    host = (urlsplit(url).hostname or "") if url else ""
    if not url or host.endswith(".googleapis.com"):
        return None
    model = None
    try:
        with open(files.settings_path(files.gemini_home(env)), "rb") as f:
            doc = json.loads(files.strip_comments(f.read(1 << 20).decode("utf-8")))
        block = doc.get("model") if isinstance(doc, dict) else None
        model = block.get("name") if isinstance(block, dict) and isinstance(block.get("name"), str) else None
    except (OSError, ValueError, files.SettingsError):
        pass
    key = env.get("GEMINI_API_KEY")
    return {"url": url, "model": model or env.get("GEMINI_MODEL") or None,
            "credential": {"x-goog-api-key": key} if key else None, "where": "GOOGLE_GEMINI_BASE_URL",
            "window": files.GEMINI_LIMIT}


def own_window_fix(tokens: int) -> str | None:
    """Gemini CLI 0.61 has no setting for its window (it assumes :data:`.files.GEMINI_LIMIT` for every model)."""
    return None
