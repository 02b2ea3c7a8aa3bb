"""The model server an installed host talks to, for ``configure --window auto`` (serverwindow/ asks it).

Claude Code's today (``hosts/claude/modelserver.py``): its ``ANTHROPIC_BASE_URL`` from the user's shell or user
settings.  Codex's provider ``base_url`` and Gemini's ``GOOGLE_GEMINI_BASE_URL`` are not asked yet.
"""

from .claude import modelserver as claude

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def configured(env: "Mapping[str, str]") -> "dict[str, Any] | None":
    """The first host's own model server (``{"url", "model", "credential", "where"}``), or None."""
    return claude.model_server(env)
