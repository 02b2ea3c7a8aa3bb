"""``doctor``: looks at everything cc-continuity depends on and says how to fix what is wrong.

:mod:`.checks` holds the checks (one function each, listed in ``CHECKS``); the
``doctor`` verb (``commands/doctor.py``) runs and prints them.  It reads what the
installer wrote (``install/``), the hook table (``hooks/``) and may send one test
push (``notify/``); it never edits the user's files.
"""
