"""The work tree as a commit under ``refs/continuity/``, without touching the user's branches, HEAD or index.

``worktree`` makes it: ``build`` builds its tree in a private index of ours (``indexes``: git's stat
cache kept between checkpoints) and ``refs`` publishes it; every git call goes through ``gitrun``,
which runs no program the repository names.  ``facts`` reads the machine's git facts, ``drift`` what
changed since a snapshot; ``job`` runs a snapshot detached, so a hook waits only briefly;
``retention`` prunes the old ones.
"""
