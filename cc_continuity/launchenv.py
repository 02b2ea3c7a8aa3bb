"""The launching shell's environment, handed to a new tmux pane through a 0600 file.

A tmux server that is already running gives a new session *its* environment, not the
shell's; so ``launch`` saves the shell's here and the pane's trampoline loads and deletes
it.  Files a trampoline never picked up are swept after :data:`MAX_AGE_S`.
"""

import json
import os

from . import atomic, paths

MAX_AGE_S = 120  # the trampoline reads its file within a second


def files_dir() -> str:
    return os.path.join(paths.runtime_dir(), "launch")


def new_path(name: str) -> str:
    return os.path.join(files_dir(), "env-%s-%d-%s.json" % (name, os.getpid(), os.urandom(4).hex()))


def write(path: str, saved: dict[str, str]) -> None:
    paths.ensure_dir(paths.runtime_dir())
    paths.ensure_dir(os.path.dirname(path))
    sweep()
    atomic.write_text(path, json.dumps({"env": saved}), mode=0o600)


def stale(max_age: float = MAX_AGE_S, now: float | None = None) -> list[str]:
    """Environment files no trampoline picked up within ``max_age`` seconds."""
    return paths.older_than(files_dir(), max_age, now, prefix="env-")


def sweep() -> None:
    paths.remove_older(files_dir(), MAX_AGE_S, prefix="env-")
