"""The work tree as a commit under ``refs/continuity/``, without touching the user's branches, HEAD or index.

``worktree`` builds it in a private index of ours (git's stat cache kept between
checkpoints) and runs no program the repository names; ``job`` runs it detached, so a
hook waits only briefly; ``retention`` prunes the old ones.
"""
