"""cc-continuity: zero-touch session rotation for Claude Code.

Kept import-free on purpose: the hook fast path imports this package under
``python -S`` and pays for every line here on every tool call.
"""

__version__ = "0.1.0"
