"""The agents cc-continuity rotates, one folder per host: each fills the rotation's host port
(rotation/host.py) from its own files, and holds what else is its own (its hook entry and wire,
its transcript).  Importing this package loads nothing: a hook imports its own host's modules.
"""
