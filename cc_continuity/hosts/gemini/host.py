"""Gemini CLI as the rotation's host: the port of rotation/host.py filled from its session file.

The session file (``transcript_path`` in every payload, :mod:`.chats`) carries each model request's
context size (``tokens.input``) and is written before AfterAgent runs, so the newest record is the
turn's own.  A hook's clear (``clearContext``) keeps the session id and starts a new generation in
the same file: readings never look past the newest header.  Gemini's file tools name their file
``file_path``; a held repeat can only be denied (BeforeTool takes ``deny``, no question to the user).
"""

from __future__ import annotations

import os

from ... import card, procs
from ...rotation.host import Host
from ...rotation.caps import at_cap
from ..ports import HookPorts
from . import chats, generations
from .generations import key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ...rotation.host import Env, Got

# Tools that change no file (a checkpoint's snapshot waits only for the others); 0.61's names.
READ_ONLY = frozenset({"read_file", "read_many_files", "list_directory", "glob", "grep_search", "search_file_content",
                       "google_web_search", "web_fetch", "list_background_processes", "read_background_output"})
WRITERS = frozenset({"write_file", "replace"})


def agent_process(start: int) -> int | None:
    """The Gemini CLI process among ``start`` and its ancestors: the node whose command line runs gemini
    (the CLI relaunches itself as a child node; the hook's nearest such ancestor is the one that runs it)."""
    for pid in [start] + procs.ancestors(start, limit=6):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read(4096).split(b"\0")
        except OSError:
            return None
        if argv and os.path.basename(argv[0]) in (b"node", b"nodejs") and any(b"gemini" in a for a in argv[1:4]):
            return pid
    return None


class GeminiHost(Host):
    name = "gemini"
    label = "Gemini CLI"
    write_with = "with your write_file tool"
    can_ask = False  # BeforeTool takes a deny: a held repeat is denied, never asked

    def agent_pid(self, env: Env) -> int | None:
        return agent_process(os.getppid())

    def reading(self, transcript: str) -> Got:
        got = chats.read_session(transcript)
        return {"tokens": got["tokens"], "model": got["model"], "source": got["source"],
                "generation": got["generation"]}

    def reply_reading(self, transcript: str, last_message: object) -> tuple[bool, Got | None]:
        # The turn's record is on disk when AfterAgent runs (seen on 0.61): the newest is the turn's.
        got = self.reading(transcript)
        return got["tokens"] is not None, got

    def tokens_spent(self, transcript: str) -> int | None:
        try:
            return chats.tokens_spent(transcript)
        except OSError:
            return None

    def first_request_tokens(self, transcript: str) -> int | None:
        try:
            rows = chats.generation_rows(transcript)
        except OSError:
            return None
        for row in rows:
            tokens = row.get("tokens")
            if row.get("type") == "gemini" and isinstance(tokens, dict):
                value = tokens.get("input")
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return None

    def last_reply(self, transcript: str) -> str | None:
        try:
            rows = chats.generation_rows(transcript)
        except OSError:
            return None
        for row in reversed(rows):
            if row.get("type") == "gemini":
                text = chats.text_of(row).strip()
                if text:
                    return text[:1500] + ("…" if len(text) > 1500 else "")
        return None

    def read_only(self, tool: object) -> bool:
        return tool in READ_ONLY

    def writes(self, tool: object, tool_input: Mapping[str, Any], command: str, path: str) -> bool:
        return tool in WRITERS and tool_input.get("file_path") == path


GEMINI = GeminiHost()


class GeminiContext(HookPorts):
    """The rotation's context for one Gemini CLI hook call: the host is :data:`GEMINI`, the session is keyed
    by its generation (:func:`key`), and the host hands over by itself (``native``: the verifying
    AfterAgent's answer clears and continues)."""

    def __init__(self, event: str, payload: "dict[str, Any]", env: "Env | None" = None,
                 session_key: str | None = None) -> None:
        sid = payload.get("session_id")
        self.gemini_session_id = sid if isinstance(sid, str) else None
        if card.valid_session_id(self.gemini_session_id):  # ``session_key``: its key, when the caller read it
            payload = dict(payload, session_id=session_key or key(self.gemini_session_id))
        super().__init__(event, payload, env, host=GEMINI)

    def own_driver(self) -> str | None:
        """``native`` (the clearing answer continues in-process); under ``cc-continuity run`` past its caps,
        ``headless``: the turn ends, the process exits, the run loop decides (rotation/run.py)."""
        done = generations.generation(self.gemini_session_id) - 1 if self.gemini_session_id else 0
        path = self.payload.get("transcript_path")
        spent = (lambda: GEMINI.tokens_spent(path)) if isinstance(path, str) and path else None  # (under a budget)
        return "headless" if at_cap(self.env, done, spent=spent) else "native"
