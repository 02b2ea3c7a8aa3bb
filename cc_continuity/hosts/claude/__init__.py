"""Claude Code as a host: what is its own and not the rotation's (its transcript, its executable).

The per-tool-call path reads Claude Code's transcript through the root's ``meter`` (kept
there: a tool call loads nothing more); the rest of what is Claude Code's lives here.
"""
