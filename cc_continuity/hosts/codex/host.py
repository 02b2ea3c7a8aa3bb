"""Codex CLI as the rotation's host: the port of rotation/host.py filled from its rollout, and the
context of one of its hook calls.

The rollout (``transcript_path`` in every payload) carries each request's usage and the
effective window (:mod:`.rollout`), flushed before Stop runs: a Stop's reading is the
turn's own.  What our hooks added arrives as a ``developer`` message in the rollout.
The hook is run by the Codex process itself (the TUI, or ``codex exec``), which a
``/clear`` keeps: that process pairs a successor with its predecessor.  Codex writes no
todo list of its own in 0.171 (its tools: exec_command, goals), so none is read.
"""

from __future__ import annotations

import os

from ... import fastjson, meter, procs
from ...meter import rows_backwards
from ...rotation.host import Host
from ..ports import HookPorts
from . import rollout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ...rotation.host import Env, Got

HEADLESS_ENV = "CC_CONTINUITY_HEADLESS"  # set by `cc-continuity run` for the codex exec it starts
SCAN = 8 << 20  # bytes of a rollout looked at for a fact (its first line alone is ~22 KB)
AGENT_NAMES = ("codex",)


def agent_process(start: int) -> int | None:
    """The Codex process among ``start`` and its ancestors (a hook's parent, or the shell that ran it)."""
    for pid in [start] + procs.ancestors(start, limit=4):
        try:
            with open("/proc/%d/comm" % pid, "rb") as f:
                name = f.read(64).strip().decode("utf-8", "replace")
        except OSError:
            return None
        if name in AGENT_NAMES:
            return pid
    return None


def _rows(path: str, scan: int, *needles: bytes) -> "Any":
    """The rollout's lines holding every one of ``needles``, newest first, parsed; OSError propagates."""
    for row in rows_backwards(path, scan, *needles):
        if isinstance(row.get("payload"), dict):
            yield row


def _texts(payload: "dict[str, Any]") -> list[str]:
    return [c["text"] for c in payload.get("content") or () if isinstance(c, dict) and isinstance(c.get("text"), str)]


class CodexHost(Host):
    name = "codex"
    label = "Codex CLI"
    write_with = "with one shell command (cat > <the path> <<'EOF' ... EOF)"
    write_allowed = "one command that writes that file is allowed"
    reads_meanwhile = "cc-continuity's own commands work meanwhile"
    can_ask = False  # Codex takes a deny only: a held repeat is denied, never asked

    def writes(self, tool: object, tool_input: Mapping[str, Any], command: str, path: str) -> bool:
        return path in command  # (cat > <path> <<'EOF' ...: the shell is how a Codex model writes a file)

    def agent_pid(self, env: Env) -> int | None:
        return agent_process(os.getppid())

    def reading(self, transcript: str) -> Got:
        got = rollout.read_rollout(transcript)
        return {"tokens": got["tokens"], "window": got["window"], "model": None, "source": got["source"]}

    def reply_reading(self, transcript: str, last_message: object) -> tuple[bool, Got | None]:
        # Codex has flushed the turn's usage when Stop runs (seen on 0.171): the newest is the turn's.
        got = self.reading(transcript)
        return got["tokens"] is not None, got

    def first_request_tokens(self, transcript: str) -> int | None:
        try:
            with open(meter.open_transcript(transcript), "rb") as f:
                data = f.read(SCAN)
        except OSError:
            return None
        for line in data.splitlines():
            if b'"token_usage_record"' not in line and b'"token_count"' not in line:
                continue
            try:
                row = fastjson.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            payload = row.get("payload") if isinstance(row, dict) else None
            if not isinstance(payload, dict):
                continue
            usage = payload.get("usage") if row.get("type") == "token_usage_record" else \
                (payload.get("info") or {}).get("last_token_usage") if payload.get("type") == "token_count" else None
            tokens = rollout.usage_tokens(usage)
            if tokens is not None:
                return tokens
        return None

    def api_stop(self, transcript: str) -> dict[str, Any] | None:
        return rollout.api_stop(transcript)

    def tokens_spent(self, transcript: str) -> int | None:
        try:
            return rollout.tokens_spent(transcript)
        except OSError:
            return None

    def holds_context(self, transcript: str | None, needle: object) -> bool | None:
        if not transcript or not isinstance(needle, str):
            return None
        seen = False
        try:
            for row in _rows(transcript, SCAN, b'"developer"'):
                payload = row["payload"]
                if row.get("type") != "response_item" or payload.get("role") != "developer":
                    continue
                seen = True
                if any(needle in text for text in _texts(payload)):
                    return True
        except OSError:
            return None
        return False if seen else None

    def last_reply(self, transcript: str) -> str | None:
        try:
            for row in _rows(transcript, SCAN, b'"assistant"'):
                payload = row["payload"]
                if row.get("type") == "response_item" and payload.get("role") == "assistant":
                    text = "\n".join(_texts(payload)).strip()
                    if text:
                        return text[:1500] + ("…" if len(text) > 1500 else "")
        except OSError:
            return None
        return None


CODEX = CodexHost()


class CodexContext(HookPorts):
    """The rotation's context for one Codex hook call: the host is :data:`CODEX`; a turn's id stands in
    for Claude Code's prompt id; pushes and the tmux rotator are the hook ports' (:class:`~..ports.HookPorts`):
    the rotator types into Codex's TUI (its plan says ``host: codex``) and checks, before each batch of
    keys, that the Codex process the hook ran under (:func:`agent_process`) is still the pane's."""

    SCREEN_READER = "cc_continuity.hosts.codex.screen:CodexScreen"  # (named, not imported: the hook loads no tmux)

    def __init__(self, event: str, payload: "dict[str, Any]", env: "Env | None" = None) -> None:
        if payload.get("turn_id") and "prompt_id" not in payload:
            payload = dict(payload, prompt_id=payload["turn_id"])  # what pairs a turn's hooks (the late Stop, an offer)
        super().__init__(event, payload, env, host=CODEX)

    def own_driver(self) -> str | None:
        """``headless`` under ``cc-continuity run --agent codex`` (its loop starts the successor: no typing)."""
        return "headless" if self.env.get(HEADLESS_ENV) == "1" else None
