"""``doctor``: looks at everything cc-continuity depends on and says how to fix what is wrong.

:mod:`.base` holds the row (``Result``) and what the checks read (``Context``); the checks are one
function each, in one module per host (:mod:`.claude` and :mod:`.claude_plugin` for Claude Code,
:mod:`.codex` for Codex CLI) and one for the system (:mod:`.system`); :mod:`.runner` chooses the
checks for the agents judged, runs them and closes the report (the summary, the ``Next:`` line).  The
``doctor`` verb (``commands/doctor.py``) prints it.  It reads what the installer wrote (``install/``),
the hook table (``hooks/``) and may send one test push (``notify/``); it never edits the user's files.
"""
