"""``doctor``: looks at everything cc-continuity depends on and says how to fix what is wrong.

The library of the report, naming no host: :mod:`.base` holds the row (``Result``) and what the checks
read (``Context``); the checks are one function each, the system's in :mod:`.system` and each host's in
its folder (``hosts/<name>/doctor.py``, on :mod:`.base`); :mod:`.runner` runs a list of checks and
renders the rows.  Which checks, in which order, for the agents judged, and the closing ``Next:`` line
are ``hosts/checkup.py``'s, above the hosts; the ``doctor`` verb (``commands/doctor.py``) prints it.  It
reads what the installer wrote (``install/``) and may send one test push (``notify/``); it never edits
the user's files.
"""
