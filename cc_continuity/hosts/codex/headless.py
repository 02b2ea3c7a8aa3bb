"""Codex CLI unattended: every session one ``codex exec``, rotated with no typing at all.

``cc-continuity run --agent codex "<task>"`` starts ``codex exec "<task>"`` with our hooks
told they are headless (:data:`~.host.HEADLESS_ENV`).  When the context crosses *rotate*
the Stop asks for the handoff as always, checks it, makes the checkpoint and hands over
with the driver ``headless``: nothing is typed, the turn ends and ``codex exec`` exits.
This loop then starts the next ``codex exec`` with the continuation; its SessionStart
claims the checkpoint (the process that made it is gone) and the bootstrap arrives as a
developer message before the continuation.  The loop ends with the first ``codex exec``
that ends without handing over (the task is done, or it failed), with its exit status.

The hooks must be installed and trusted (``cc-continuity install --agent codex``): an
untrusted hook is skipped silently by ``codex exec``, and then nothing rotates.  Nothing
here bypasses that check: ``--dangerously-bypass-hook-trust`` would trust a repository's
own ``.codex/`` hooks too.
"""

import os
import subprocess
import sys
import time

from ... import session
from ...project import Project
from ...rotation import texts
from .host import HEADLESS_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

MAX_ROTATIONS = 50  # a task that keeps rotating past this is stopped: something is wrong with it
LOOP_STOPPED = 3    # the exit status when MAX_ROTATIONS stopped the run


def handed_over(proj: Project, pid: int) -> "tuple[int, dict[str, Any]] | None":
    """(number, record) of the session ``codex exec`` process ``pid`` handed over headless, unclaimed; else None."""
    for n in reversed(proj.open_numbers()):
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        if rec.get("pid") == pid and rec.get("driver") == "headless" and rec["state"] in session.CLAIMABLE \
                and not rec.get("successor"):
            return n, dict(rec)
    return None


def run(task: str, codex: str, cwd: str, exec_args: "list[str]", env: "Mapping[str, str]",
        max_rotations: int = MAX_ROTATIONS, say: "Callable[[str], None] | None" = None) -> int:
    """Run ``task`` to its end through as many ``codex exec`` sessions as it takes; the last one's exit status."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    proj = Project.discover(cwd)
    child_env = dict(env)
    child_env[HEADLESS_ENV] = "1"
    prompt, rotations = task, 0
    while True:
        started = time.monotonic()
        proc = subprocess.Popen([codex, "exec"] + list(exec_args) + [prompt], cwd=cwd, env=child_env,
                                stdin=subprocess.DEVNULL)
        code = proc.wait()
        got = handed_over(proj, proc.pid)
        if got is None:
            return code
        n, rec = got
        rotations += 1
        cid = (rec.get("checkpoint") or {}).get("id") or session.checkpoint_id(n)
        if rotations > max_rotations:
            say("cc-continuity: stopped after %d rotations (--max-rotations); %s waits for a successor: "
                "`cc-continuity run --agent codex` again continues it" % (max_rotations, cid))
            return LOOP_STOPPED
        successor = proj.session_name(proj.peek_next_number())
        say("cc-continuity: %s handed over %s after %.0f s; %s continues it" % (
            rec.get("name"), cid, time.monotonic() - started, successor))
        prompt = texts.continuation_prompt(cid, successor)


def find_codex(env: "Mapping[str, str]", given: "str | None" = None) -> "str | None":
    """The codex executable: ``given``, else ``$CC_CONTINUITY_CODEX``, else the first ``codex`` on PATH."""
    for cand in (given, env.get("CC_CONTINUITY_CODEX")):
        if cand:
            return cand
    for d in (env.get("PATH") or "").split(os.pathsep):
        path = os.path.join(d, "codex")
        if d and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None
