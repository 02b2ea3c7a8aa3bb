"""The agent a session runs in, as the rotation needs it: a port each host folder fills in.

The rotation's steps never open an agent's transcript or read its variables themselves;
they ask the :class:`Host` their :class:`~.context.Context` carries.  ``hosts/claude``
fills it for Claude Code, ``hosts/codex`` for Codex CLI; the protocol's tests use a
stand-in (tests/helpers/fakehost.py).  Everything here reads the agent's own files and
environment; nothing talks to the agent, and nothing here may be slow: these run inside
hooks, under their budgets.

A reading (``Got``) is ``{"tokens": int | None, "model": str | None, "source": str}``,
with ``version`` (the agent's, when its transcript names it) where known.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from collections.abc import Mapping
    from typing import Any

    Env = Mapping[str, str]
    Got = dict[str, Any]


class Host:
    """The port.  Each method says what the rotation asks; a host answers from its own files."""

    name = "agent"
    label = "the agent"  # how a push names it
    write_with = "with your tool for writing files"  # how the handoff request says to write the file
    # A tool call (rotation/toolcall.py) as this host's payload shapes it:
    write_allowed = "writing it is allowed"  # how the hard ceiling's deny says the handoff's own write goes
    reads_meanwhile = "reading works meanwhile"  # what a snapshot's wait lets through
    can_ask = True  # a held repeat may ask the user (False: the host takes only a deny)

    def agent_pid(self, env: Env) -> int | None:
        """The process the session lives in (a ``/clear`` keeps it: it pairs a successor with its predecessor)."""
        return None

    def reading(self, transcript: str) -> Got:
        """The transcript's newest main-thread usage.  Raises OSError when it cannot be read."""
        raise NotImplementedError

    def reply_reading(self, transcript: str, last_message: object) -> tuple[bool, Got | None]:
        """Does the transcript hold the reply that ended the turn yet (``last_message``), and its reading.
        Raises OSError when it cannot be read."""
        raise NotImplementedError

    def own_reading(self, sdir: str, session_id: str | None, since: float) -> Got | None:
        """A reading the agent took itself, after ``since`` (Claude Code's status line); None when it has none."""
        return None

    def first_request_tokens(self, transcript: str) -> int | None:
        """The context size of the session's very first model request (its start alone), or None."""
        return None

    def tokens_spent(self, transcript: str) -> int | None:
        """The tokens the session's model requests took, every request's input (cached or not) and output summed
        (a run's ``--max-tokens``); None when the transcript has none or cannot be read.  Not for a hook's path
        unless a budget asks: it reads the whole transcript (bounded)."""
        return None

    def api_stop(self, transcript: str) -> "dict[str, Any] | None":
        """The model server's stop the session ended on (:func:`.limits.stop`: a limit, or a server failing or
        gone), read from the transcript, or None (it did not end on one, or the host records none there)."""
        return None

    def holds_context(self, transcript: str | None, needle: object) -> bool | None:
        """Does the transcript hold ``needle`` among the context our hooks added?  None: it cannot tell yet
        (no transcript, or no hook's context recorded in it so far)."""
        return None

    def open_todos(self, transcript: str) -> list[dict[str, str]] | None:
        """The open items of the agent's newest todo list, or None when it keeps none."""
        return None

    def last_reply(self, transcript: str) -> str | None:
        """The text of the newest reply, or None."""
        return None

    def read_only(self, tool: object) -> bool:
        """Can a call of this tool change no file (it goes on while a checkpoint's snapshot is taken)?"""
        return False

    def writes(self, tool: object, tool_input: Mapping[str, Any], command: str, path: str) -> bool:
        """Does this call write the file ``path`` (the handoff: let through past the hard ceiling)?"""
        return False

    def our_cli(self, command: str, env: Env) -> bool:
        """Is this shell command ``cc-continuity ...`` itself (let through past the hard ceiling)?"""
        return command.strip().startswith("cc-continuity")

    def shell_aliases(self, env: Env) -> dict[str, str]:
        """The user's shell aliases as this host's shell runs them (a hold reads a command through them)."""
        return {}

    def call_ran(self, transcript: str | None, tool_use_id: str) -> str | None:
        """What the transcript says of a tool call with no recorded outcome: "not run", "ran", or None."""
        return None
