"""The adapter to tmux: the pane Claude Code runs in, and the rotator that types into it.

* :mod:`.pane` - a typed :class:`Pane` over the tmux CLI (the standard library only),
  the screen it shows (read by the agent's reader: :class:`ClaudeScreen` by default),
  literal text and tmux-safe names.
* :mod:`.rotator` - the detached process that types ``/clear`` and the
  continuation (``python -m cc_continuity.tmux.rotator <plan.json>``).

``from cc_continuity import tmux; tmux.Pane`` names the pane's API; the rotator is
imported by whoever starts it (the Stop hook, the watchdog), never by the
per-tool-call path.
"""

from .pane import (BUSY_MARK, CHUNK_CHARS, KEYS_PER_CALL, PROMPT, RULE, STATUS_LINES_ABOVE, ClaudeScreen, Pane,
                   Screen, TmuxError, can_drive, literal_text, strip_styles, styled_cells, tmux_name, typed_text)

__all__ = ["BUSY_MARK", "CHUNK_CHARS", "KEYS_PER_CALL", "PROMPT", "RULE", "STATUS_LINES_ABOVE", "ClaudeScreen",
           "Pane", "Screen", "TmuxError", "can_drive", "literal_text", "strip_styles", "styled_cells", "tmux_name",
           "typed_text"]
