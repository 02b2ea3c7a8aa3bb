"""The launching shell's environment, handed to a new tmux pane through a 0600 file.

A tmux server that is already running gives a new session *its* environment, not the
shell's; so ``launch`` saves the shell's here and the pane's trampoline loads and deletes
it.  Beside them, ``exit-*`` files: the pane's end (status, last screen) that the pane-died
hook leaves for the launcher waiting on the tmux client (hosts/claude/launch.py ``report``).  Files
nobody picked up are swept after :data:`MAX_AGE_S`.
"""

import json
import os

from ... import atomic, paths

MAX_AGE_S = 120  # the trampoline reads its file within a second, the launcher its exit file too
ENV_PREFIX, EXIT_PREFIX = "env-", "exit-"


def files_dir() -> str:
    return os.path.join(paths.runtime_dir(), "launch")


def new_path(name: str, prefix: str = ENV_PREFIX) -> str:
    return os.path.join(files_dir(), "%s%s-%d-%s.json" % (prefix, name, os.getpid(), os.urandom(4).hex()))


def write(path: str, saved: dict[str, str]) -> None:
    paths.ensure_dir(paths.runtime_dir())
    paths.ensure_dir(os.path.dirname(path))
    sweep()
    atomic.write_text(path, json.dumps({"env": saved}), mode=0o600)


def stale(max_age: float = MAX_AGE_S, now: float | None = None) -> list[str]:
    """Environment files no trampoline picked up within ``max_age`` seconds."""
    return paths.older_than(files_dir(), max_age, now, prefix=ENV_PREFIX)


def sweep() -> None:
    for prefix in (ENV_PREFIX, EXIT_PREFIX):
        paths.remove_older(files_dir(), MAX_AGE_S, prefix=prefix)
