"""Claude Code as the rotation's host: the port of rotation/host.py filled from its own files.

The transcript is the JSONL Claude Code keeps per session; its context reading is the
root's meter (the per-tool-call path reads it too); the rest is hosts/claude/transcript.
The status line leaves Claude Code's own context numbers in the session's directory,
a reading the transcript may not hold yet at a turn's end.  ``CLAUDE_PID`` names the
process a ``/clear`` keeps.
"""

from __future__ import annotations

from ... import meter
from ...rotation.host import Host
from . import transcript

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...rotation.host import Env, Got


class ClaudeHost(Host):
    name = "claude"

    def agent_pid(self, env: Env) -> int | None:
        raw = env.get("CLAUDE_PID", "")
        return int(raw) if raw.isdigit() else None

    def reading(self, transcript_path: str) -> Got:
        got: Got = meter.read_transcript(transcript_path)
        return got

    def reply_reading(self, transcript_path: str, last_message: object) -> tuple[bool, Got | None]:
        return meter.reply_reading(transcript_path, last_message)

    def own_reading(self, sdir: str, session_id: str | None, since: float) -> Got | None:
        st = meter.load_status_reading(sdir)
        if not (st and st.get("session_id") == session_id and isinstance(st.get("at"), (int, float))
                and st["at"] >= since and isinstance(st.get("tokens"), int)):
            return None
        version = st.get("version")
        return {"tokens": st["tokens"], "model": None, "source": "statusline",
                "cc_version": version if isinstance(version, str) else None}

    def first_request_tokens(self, transcript_path: str) -> int | None:
        return transcript.first_request_tokens(transcript_path)

    def holds_context(self, transcript_path: str | None, needle: object) -> bool | None:
        return transcript.holds_context(transcript_path, needle)

    def open_todos(self, transcript_path: str) -> list[dict[str, str]] | None:
        return transcript.open_todos(transcript_path)

    def last_reply(self, transcript_path: str) -> str | None:
        return transcript.last_assistant_text(transcript_path)

    def call_ran(self, transcript_path: str | None, tool_use_id: str) -> str | None:
        return transcript.call_ran(transcript_path, tool_use_id)


CLAUDE = ClaudeHost()
