"""Gemini CLI as the rotation's host: the port of rotation/host.py filled from its session file.

The session file (``transcript_path`` in every payload, :mod:`.chats`) carries each model request's
context size (``tokens.input``) and is written before AfterAgent runs, so the newest record is the
turn's own.  A hook's clear (``clearContext``) keeps the session id and starts a new generation in
the same file: readings never look past the newest header.  Gemini's file tools name their file
``file_path``; a held repeat can only be denied (BeforeTool takes ``deny``, no question to the user).
"""

from __future__ import annotations

import os

from ... import atomic, card, fastjson, paths, procs, safefile
from ...rotation.host import Host
from ..ports import HookPorts
from . import chats

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


# -- a session's generations: what keys it across the clears it does not announce ----------------------
#
# A clear our AfterAgent asks for keeps Gemini's session id and fires no SessionEnd/SessionStart, yet the
# successor is a session of its own to us (its record, its card, its ``ids/`` link).  So the host counts
# the clears it asked for: ``runtime/gemini/<session id>.gen`` holds the generation (none: the first), and
# the key of generation N > 1 is ``<session id>_gN``.  The count is raised when the clearing answer is
# written (:func:`next_generation`), before Gemini acts on it.  A typed /clear is a new session id.

def _generation_path(sid: str) -> str:
    return paths.runtime_dir() + "/gemini/" + sid + ".gen"


def generation(sid: str) -> int:
    """The generation of Gemini session ``sid`` (1 until a clear of ours)."""
    try:
        with open(_generation_path(sid), "rb") as f:
            n = fastjson.loads(f.read(64))
    except (OSError, ValueError):
        return 1
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def key(sid: str, gen: int | None = None) -> str:
    """Our session key for generation ``gen`` (the current one by default) of Gemini session ``sid``."""
    gen = generation(sid) if gen is None else gen
    return sid if gen <= 1 else "%s_g%d" % (sid, gen)


def next_generation(sid: str) -> int:
    """A clear of ours is being answered: the generation after this one (written, private), returned."""
    gen = generation(sid) + 1
    safefile.private_dir(paths.runtime_dir())
    safefile.private_dir(paths.runtime_dir() + "/gemini")
    atomic.write_text(_generation_path(sid), str(gen), fsync=False, follow=False)
    return gen


class GeminiContext(HookPorts):
    """The rotation's context for one Gemini CLI hook call: the host is :data:`GEMINI`, the session is keyed
    by its generation (:func:`key`), and the host hands over by itself (``native``: the verifying
    AfterAgent's answer clears and continues)."""

    def __init__(self, event: str, payload: "dict[str, Any]", env: "Env | None" = None) -> None:
        sid = payload.get("session_id")
        self.gemini_session_id = sid if isinstance(sid, str) else None
        if card.valid_session_id(self.gemini_session_id):
            payload = dict(payload, session_id=key(self.gemini_session_id))
        super().__init__(event, payload, env, host=GEMINI)

    def own_driver(self) -> str | None:
        return "native"
