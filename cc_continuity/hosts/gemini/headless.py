"""Gemini CLI unattended: ``cc-continuity run --agent gemini "<task>"`` (the loop: rotation/run.py).

One ``gemini -p`` rotates by itself: its verifying AfterAgent clears and continues in-process (``native``), so
a whole chain may be one process.  Under ``run`` the caps hold inside it: once the process has made the
rotations its run allows, or the run's time is up, the AfterAgent hands over ``headless`` instead (the turn
ends, ``gemini -p`` exits, the checkpoint waits; :meth:`.host.GeminiContext.own_driver`), and the loop stops
there or starts the next ``gemini -p`` with the continuation, which claims it.

Gemini runs no hook in a folder it does not trust and ``gemini -p`` exits 55 there: nothing of ours passes
``--skip-trust`` or sets ``GEMINI_CLI_TRUST_WORKSPACE`` (``cc-continuity doctor`` names the command that
trusts the folder).  Writing files needs the user's own approval setup (``--yolo`` or a policy of theirs,
given after ``--``); the handoff's write is our policy rule's.
"""

from ...rotation.run import Backend
from .host import GEMINI, GeminiContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

NO_BINARY = ("no gemini executable: install Gemini CLI (npm install -g @google/gemini-cli) or pass "
             "--gemini PATH")


class GeminiBackend(Backend):
    name = "gemini"
    host = GEMINI
    option = "--gemini"
    in_process = True

    def command(self, binary: str, prompt: str, extra: "list[str]") -> "list[str]":
        return [binary] + list(extra) + ["-p", prompt]

    def find(self, env: "Mapping[str, str]", given: "str | None" = None) -> "str | None":
        return self.executable("gemini", env, given, "CC_CONTINUITY_GEMINI")

    def context(self, event: str, payload: "dict[str, Any]", env: "Mapping[str, str]") -> GeminiContext:
        """(``payload``'s session id is the record's: the key of a Gemini session's generation already.)"""
        sid = payload.get("session_id")
        return GeminiContext(event, payload, env, session_key=sid if isinstance(sid, str) else None)


BACKEND = GeminiBackend()
