"""Claude Code unattended: ``cc-continuity run --agent claude "<task>"`` (the loop: rotation/run.py), each session
one ``claude -p``.

Our hooks run as installed (settings.json or the plugin) with ``CC_CONTINUITY_HEADLESS=1`` in their
environment, so the verifying Stop hands over with the driver ``headless`` (:meth:`.host.HookContext
.own_driver`): no tmux, no mod, nothing typed; the turn ends and ``claude -p`` exits, and the loop starts the
next ``claude -p`` with the continuation, whose SessionStart claims the checkpoint.  What a session may do
without asking is the user's to give, after ``--`` (``--permission-mode``, ``--allowedTools``, a model ...);
the handoff's own write is allowed by our PreToolUse.
"""

from ...rotation.run import Backend
from ..ports import HookPorts
from .executable import find_real_claude
from .host import CLAUDE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

NO_BINARY = ("no claude executable: install Claude Code (npm install -g @anthropic-ai/claude-code), or set "
             "CC_CONTINUITY_CLAUDE or pass --claude PATH")


class ClaudeBackend(Backend):
    name = "claude"
    host = CLAUDE
    option = "--claude"

    def command(self, binary: str, prompt: str, extra: "list[str]") -> "list[str]":
        return [binary, "-p", prompt] + list(extra)

    def find(self, env: "Mapping[str, str]", given: "str | None" = None) -> "str | None":
        if given:
            return given
        try:
            return find_real_claude(env)
        except RuntimeError:
            return None

    def context(self, event: str, payload: "dict[str, Any]", env: "Mapping[str, str]") -> HookPorts:
        return HookPorts(event, payload, env, host=CLAUDE)


BACKEND = ClaudeBackend()
