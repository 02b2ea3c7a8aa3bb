"""``cc-continuity run``: a task run unattended to its end, session after session, with caps a loop cannot ignore.

One loop for every host; what differs is the host's back-end (:class:`Backend`, filled in its folder's
``headless.py``): the command line of one session, and where a session's process left the chain.  A session
either hands over by itself (Codex: ``codex exec`` ends with the driver ``headless`` and this loop starts the
successor with the continuation; Gemini: one ``gemini -p`` clears and continues in-process, ``native``, and
ends with the task), or ends without handing over: the task is done, it needs a person, or the agent failed.

The caps hold inside a session too.  Every session runs with :data:`HEADLESS_ENV` (its hooks know no one
types), ``CC_CONTINUITY_UNATTENDED=1`` (a harmful repeat is denied, never asked), the rotations it may still
make (:data:`ROTATIONS_ENV`) and the run's deadline (:data:`DEADLINE_ENV`): a host that rotates in-process
hands over ``headless`` instead once either is reached (:func:`at_cap`), so its process ends between two
sessions, never mid-turn, and the checkpoint waits.  A run started again claims it.

Exit statuses (distinct, in :data:`EXIT`): 0 done; 3 a cap reached (the newest checkpoint waits for the next
run); 4 a session needs a person (``cc-continuity signal needs-human``); 5 the agent failed (its own status
in the summary).
"""

from __future__ import annotations

import subprocess
import sys
import time

from .. import session
from ..project import Project
from . import texts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

HEADLESS_ENV = "CC_CONTINUITY_HEADLESS"      # "1": started by `cc-continuity run` (no one types)
ROTATIONS_ENV = "CC_CONTINUITY_RUN_ROTATIONS"  # how many rotations this session's process may still make
DEADLINE_ENV = "CC_CONTINUITY_RUN_DEADLINE"   # the run's end (epoch seconds): no rotation starts a session after it
MAX_ROTATIONS = 10  # the default cap: a task that rotates more than this in one run is likely going round
EXIT = {"done": 0, "cap": 3, "needs a person": 4, "agent failed": 5}


class Backend:
    """The port: one host's sessions, headless.  Filled in ``hosts/<name>/headless.py``."""

    name = "agent"
    in_process = False  # True: one process rotates by itself (its hooks read the caps from the environment)

    def command(self, binary: str, prompt: str, extra: list[str]) -> list[str]:
        """The command line of one session that starts with ``prompt`` (``extra``: the user's arguments)."""
        raise NotImplementedError

    def find(self, env: Mapping[str, str], given: str | None = None) -> str | None:
        """The agent's executable, or None."""
        raise NotImplementedError


def at_cap(env: Mapping[str, str], rotations_done: int, now: float | None = None) -> str | None:
    """Why a session of a run must hand over ``headless`` now rather than rotate in-process (it has made
    ``rotations_done`` already), or None: not under ``run``, or within its caps."""
    if env.get(HEADLESS_ENV) != "1":
        return None
    left = env.get(ROTATIONS_ENV, "")
    if left.isdigit() and rotations_done >= int(left):
        return "its run's --max-rotations"
    deadline = env.get(DEADLINE_ENV, "")
    try:
        if deadline and (time.time() if now is None else now) >= float(deadline):
            return "its run's --max-time"
    except ValueError:
        return None
    return None


def _chain(proj: Project, since: float) -> list[tuple[int, dict[str, Any]]]:
    """``[(number, record)]`` of this project's sessions started at or after ``since``, oldest first."""
    out = []
    for n in proj.numbers():
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        if (rec.get("created") or 0) >= since:
            out.append((n, dict(rec)))
    return out


def waiting(chain: list[tuple[int, dict[str, Any]]]) -> tuple[int, dict[str, Any]] | None:
    """The newest session of ``chain`` whose checkpoint is verified and waits for a successor, or None."""
    for n, rec in reversed(chain):
        if rec["state"] in session.CLAIMABLE and rec.get("checkpoint") and not rec.get("successor"):
            return n, rec
    return None


def run(backend: Backend, binary: str, task: str, cwd: str, extra: list[str], env: Mapping[str, str],
        max_rotations: int = MAX_ROTATIONS, max_time_s: float | None = None,
        say: Callable[[str], None] | None = None) -> int:
    """Run ``task`` to its end through as many sessions as it takes, within the caps; an :data:`EXIT` status."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    proj = Project.discover(cwd)
    started = time.time()
    deadline = started + max_time_s if max_time_s else None
    prompt, rotations, sessions, last_code = task, 0, 0, 0
    while True:
        child = dict(env, **{HEADLESS_ENV: "1", "CC_CONTINUITY_UNATTENDED": "1",
                             ROTATIONS_ENV: str(max(0, max_rotations - rotations))})
        if deadline:
            child[DEADLINE_ENV] = "%.3f" % deadline
        t0 = time.time()
        proc = subprocess.Popen(backend.command(binary, prompt, extra), cwd=cwd, env=child, stdin=subprocess.DEVNULL)
        last_code = proc.wait()
        sessions += 1
        chain = _chain(proj, t0 - 1)
        rotations += sum(1 for _, rec in chain if rec["state"] == session.ROTATED)
        got = waiting(chain)
        if got is None:
            why = _ended(chain, last_code)
            say(_summary(why, sessions, rotations, time.time() - started, last_code))
            return EXIT[why]
        n, rec = got
        cid = (rec.get("checkpoint") or {}).get("id") or session.checkpoint_id(n)
        capped = rotations >= max_rotations or (deadline is not None and time.time() >= deadline)
        if capped:
            say("cc-continuity: %s waits for a successor: the run reached %s; `cc-continuity run --agent %s` "
                "again continues it" % (cid, "--max-rotations %d" % max_rotations if rotations >= max_rotations
                                        else "--max-time", backend.name))
            say(_summary("cap", sessions, rotations, time.time() - started, last_code))
            return EXIT["cap"]
        rotations += 1
        successor = proj.session_name(proj.peek_next_number())
        say("cc-continuity: %s handed over %s after %.0f s; %s continues it" % (
            rec.get("name"), cid, time.time() - t0, successor))
        prompt = texts.continuation_prompt(cid, successor)


def _ended(chain: list[tuple[int, dict[str, Any]]], code: int) -> str:
    """Why a session ended without handing over: needs a person, the agent failed, or done."""
    last = chain[-1][1] if chain else {}
    if (last.get("flags") or {}).get("needs_human"):  # `cc-continuity signal needs-human`
        return "needs a person"
    return "agent failed" if code != 0 else "done"


def _summary(why: str, sessions: int, rotations: int, seconds: float, code: int) -> str:
    return "cc-continuity: run %s: %d session%s, %d rotation%s, %.0f s%s" % (
        why, sessions, "" if sessions == 1 else "s", rotations, "" if rotations == 1 else "s", seconds,
        "; the agent exited %d" % code if why == "agent failed" else "")
