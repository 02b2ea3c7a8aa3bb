"""The agents cc-continuity rotates, one folder per host: each fills the rotation's host port
(rotation/host.py) from its own files, and holds what else is its own (its hook wire, its transcript)."""

from ..rotation.host import Host
from .claude.host import CLAUDE


def of_record(rec: "dict[str, object]") -> Host:
    """The host a session record was made by (records without one are Claude Code's: they came first)."""
    if rec.get("host") == "codex":
        from .codex.host import CODEX  # (its reader: only for a Codex session's record)

        return CODEX
    return CLAUDE
