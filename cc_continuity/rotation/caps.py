"""A run's caps as a session of it reads them from its environment (``cc-continuity run`` sets them: rotation/run.py).

Apart from the loop, so that a host whose hooks rotate in-process (Gemini CLI's) reads them without loading the
loop and what it needs (subprocess, git, the handoff's patterns) on every hook call: the standard library's
``time`` only.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

HEADLESS_ENV = "CC_CONTINUITY_HEADLESS"      # "1": started by `cc-continuity run` (no one types)
ROTATIONS_ENV = "CC_CONTINUITY_RUN_ROTATIONS"  # how many rotations this session's process may still make
DEADLINE_ENV = "CC_CONTINUITY_RUN_DEADLINE"   # the run's end (epoch seconds): no rotation starts a session after it
TOKENS_ENV = "CC_CONTINUITY_RUN_TOKENS"  # the tokens this session's process may still spend (--max-tokens)


def at_cap(env: Mapping[str, str], rotations_done: int, now: float | None = None,
           spent: Callable[[], int | None] | None = None) -> str | None:
    """Why a session of a run must hand over ``headless`` now rather than rotate in-process (it has made
    ``rotations_done`` already; ``spent``: the tokens its process has spent, asked only under a budget), or
    None: not under ``run``, or within its caps."""
    if env.get(HEADLESS_ENV) != "1":
        return None
    left = env.get(ROTATIONS_ENV, "")
    if left.isdigit() and rotations_done >= int(left):
        return "its run's --max-rotations"
    budget = env.get(TOKENS_ENV, "")
    if budget.isdigit() and spent is not None and (spent() or 0) >= int(budget):
        return "its run's --max-tokens"
    deadline = env.get(DEADLINE_ENV, "")
    try:
        if deadline and (time.time() if now is None else now) >= float(deadline):
            return "its run's --max-time"
    except ValueError:
        return None
    return None
