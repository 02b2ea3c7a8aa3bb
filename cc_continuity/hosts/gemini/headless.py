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

import re
import time

from ...rotation import limits
from ...rotation.run import Backend
from .host import GEMINI, GeminiContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# What gemini -p writes on stderr when it gives up on its model server (0.61, docs/HOST_LIMITS.md): its last
# "Error when talking to Gemini API" line, the error's class and message; a limit's status 429 (its quota
# errors by name), "Please retry in Ns" where the server said so; "fetch failed" when it could not connect.
_GAVE_UP = re.compile(r"Error when talking to Gemini API[^\n]*?\.json (\w+): ([^\n]*)")
_QUOTA = re.compile(r"\b(?:TerminalQuotaError|RetryableQuotaError)\b|\bstatus:? 429\b")
_STATUS = re.compile(r"\bstatus:? (5\d\d)\b")
_RETRY_IN = re.compile(r"Please retry in (\d+(?:\.\d+)?)s")

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

    reads_stderr = True  # (its only record of a limit)

    def api_stop(self, chain: "list[tuple[int, dict[str, Any]]]", stderr: str) -> "dict[str, Any] | None":
        """Gemini CLI records no failed request in its session file and runs no hook on one: its stderr says it
        (the last "Error when talking to Gemini API"); a reset only as "Please retry in Ns" (from now)."""
        found = list(_GAVE_UP.finditer(stderr))
        if not found:
            return None
        cls, message = found[-1].groups()
        after = stderr[found[-1].start():]
        retry = _RETRY_IN.findall(after) or _RETRY_IN.findall(stderr)
        resets = time.time() + float(retry[-1]) if retry else None
        if cls.endswith("QuotaError") or _QUOTA.search(after):
            return limits.stop(limits.LIMIT, message, 429, resets, where="gemini's stderr")
        status = _STATUS.findall(after)
        return limits.stop(limits.SERVER, message, int(status[-1]) if status else None, where="gemini's stderr")

    def context(self, event: str, payload: "dict[str, Any]", env: "Mapping[str, str]") -> GeminiContext:
        """(``payload``'s session id is the record's: the key of a Gemini session's generation already.)"""
        sid = payload.get("session_id")
        return GeminiContext(event, payload, env, session_key=sid if isinstance(sid, str) else None)


BACKEND = GeminiBackend()
