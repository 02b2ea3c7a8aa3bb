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

It stops going round too, between two sessions: the same handoff twice in a row (section for section), or
the same work tree at the last :data:`SAME_TREE` checkpoints.

Exit statuses (distinct, in :data:`EXIT`): 0 done; 3 a cap reached (the newest checkpoint waits: ``run
--resume`` continues it); 4 a person is needed (a session said so with ``cc-continuity signal needs-human``, a
harmful repeat was held, or the chain goes round); 5 the agent failed (its own status in the summary); 2
nothing to resume; 6 the agent stopped on a rate or usage limit and 7 on its model server failing or gone, each
after the agent's own retries (:mod:`.limits`: what it said, and when it resets where the host recorded it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from .. import gitrun, ledger, session
from ..digest import sha256
from ..project import Project
from . import handoff, limits, texts, turn
from .caps import DEADLINE_ENV, HEADLESS_ENV, ROTATIONS_ENV, TOKENS_ENV, at_cap  # noqa: F401  (the loop's, re-exported)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from .context import Context
    from .host import Host

MAX_ROTATIONS = 10  # the default cap: a task that rotates more than this in one run is likely going round
SAME_TREE = 3  # checkpoints in a row with the same work tree that stop a run (a read-only task: --same-tree 0)
EXIT = {"done": 0, "cap": 3, "needs a person": 4, "agent failed": 5, "nothing to resume": 2, "limit": 6,
        "model server": 7}
STDERR_KEEP = 1 << 16  # a back-end that reads its agent's stderr (Gemini's stop is there only) keeps its tail


class Backend:
    """The port: one host's sessions, headless.  Filled in ``hosts/<name>/headless.py``."""

    name = "agent"
    in_process = False  # True: one process rotates by itself (its hooks read the caps from the environment)
    host: Host | None = None  # the host's reader of its own transcripts (the tokens a session spent)

    def command(self, binary: str, prompt: str, extra: list[str]) -> list[str]:
        """The command line of one session that starts with ``prompt`` (``extra``: the user's arguments)."""
        raise NotImplementedError

    def find(self, env: Mapping[str, str], given: str | None = None) -> str | None:
        """The agent's executable, or None."""
        raise NotImplementedError

    @staticmethod
    def executable(name: str, env: Mapping[str, str], given: str | None, env_var: str) -> str | None:
        """The agent's executable as the run verb finds one: ``given``, else ``$env_var``, else ``name`` on the
        PATH of ``env``, else None."""
        for cand in (given, env.get(env_var)):
            if cand:
                return cand
        return shutil.which(name, path=env.get("PATH") or "")

    def session_args(self, proj: Project) -> list[str]:
        """Arguments of ours for every session of ``proj``, before the user's (none by default)."""
        return []

    reads_stderr = False  # True: the agent's stderr is read (and passed on) for :meth:`api_stop`

    def api_stop(self, chain: list[tuple[int, dict[str, Any]]], stderr: str) -> dict[str, Any] | None:
        """The model server's stop the process ended on (:func:`.limits.stop`), or None: by default the host's
        reading of the newest session's transcript (``stderr``: the process's stderr tail, when read)."""
        if self.host is None:
            return None
        for _, rec in reversed(chain):
            if isinstance(rec.get("transcript"), str):
                return self.host.api_stop(rec["transcript"])
        return None

    def context(self, event: str, payload: dict[str, Any], env: Mapping[str, str]) -> Context:
        """The rotation's context for a step the loop takes itself in one of this host's sessions (its process
        over: :func:`.turn.finish_undecided`), with the host's ports (pushes as configured)."""
        raise NotImplementedError


def _chain(proj: Project, after: int) -> list[tuple[int, dict[str, Any]]]:
    """``[(number, record)]`` of this project's sessions numbered above ``after``, oldest first (numbers only
    grow: a clock stepped back or ahead during a run changes nothing here)."""
    out = []
    for n in proj.numbers():
        if n <= after:
            continue
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        out.append((n, dict(rec)))
    return out


def waiting(chain: list[tuple[int, dict[str, Any]]]) -> tuple[int, dict[str, Any]] | None:
    """The newest session of ``chain`` whose checkpoint is verified and waits for a successor, or None."""
    for n, rec in reversed(chain):
        if rec["state"] in session.CLAIMABLE and rec.get("checkpoint") and not rec.get("successor"):
            return n, rec
    return None


def run(backend: Backend, binary: str, task: str | None, cwd: str, extra: list[str], env: Mapping[str, str],
        max_rotations: int = MAX_ROTATIONS, max_time_s: float | None = None,
        say: Callable[[str], None] | None = None, resume: bool = False, same_tree: int = SAME_TREE,
        report: Callable[[dict[str, Any]], None] | None = None, live: Callable[[str], None] | None = None,
        max_tokens: int | None = None) -> int:
    """Run ``task`` to its end through as many sessions as it takes, within the caps; an :data:`EXIT` status.
    ``resume``: start from the project's newest checkpoint waiting for a successor instead (``task`` unused).
    ``report``: given the run's summary at its end (``run --json``).  ``live``: given a progress line every
    second while a session works (a terminal's one line; :func:`progress`).  ``max_tokens``: no session starts
    once the run's sessions spent this many (:meth:`.host.Host.tokens_spent`), and an in-process rotation
    hands over ``headless`` instead past it."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    proj = Project.discover(cwd)
    started = time.time()
    deadline = started + max_time_s if max_time_s else None
    facts: dict[str, Any] = {"agent": backend.name, "sessions": 0, "rotations": 0, "checkpoints": [],
                             "agent_exit": None, "why": None, "needs": None, "gaps_ms": [], "degraded": [],
                             "tokens": 0, "held": 0, "stopped": None}
    ended: float | None = None
    prompt = _resumed(proj, say) if resume else task or ""
    if prompt is None:
        return _end(say, report, facts, "nothing to resume", started)
    seen: list[tuple[str, str | None, str | None]] = []  # (checkpoint, its handoff's digest, its tree)
    while True:
        child = dict(env, **{HEADLESS_ENV: "1", "CC_CONTINUITY_UNATTENDED": "1",
                             ROTATIONS_ENV: str(max(0, max_rotations - facts["rotations"]))})
        if deadline:
            child[DEADLINE_ENV] = "%.3f" % deadline
        if max_tokens is not None:
            child[TOKENS_ENV] = str(max(0, max_tokens - facts["tokens"]))
        t0, before = time.time(), proj.newest_number()
        if ended is not None:  # the runner's own time between two sessions: read the records, start the next
            facts["gaps_ms"].append(round((t0 - ended) * 1000, 1))
        argv = backend.command(binary, prompt, backend.session_args(proj) + list(extra))
        proc = subprocess.Popen(argv, cwd=cwd, env=child, stdin=subprocess.DEVNULL,
                                stderr=subprocess.PIPE if backend.reads_stderr else None)
        tail = _Tail(proc.stderr) if proc.stderr is not None else None
        facts["agent_exit"] = _wait(proc, proj, before, facts, started, live)
        ended = time.time()
        chain = _finish(backend, proj, _chain(proj, before), child, say)
        _tally(proj, chain, facts, seen)
        facts["tokens"] += _spent(backend, chain)
        why = _stops(backend, chain, facts, seen, Caps(max_rotations, deadline, max_tokens, same_tree), say,
                     tail.text() if tail else "")
        if why:
            return _end(say, report, facts, why, started)
        n, rec = waiting(chain) or (0, {})
        cid = _cid(n, rec)
        facts["rotations"] += 1
        successor = proj.session_name(proj.peek_next_number())
        say("cc-continuity: %s handed over %s after %.0f s; %s continues it" % (
            rec.get("name"), cid, time.time() - t0, successor))
        prompt = texts.continuation_prompt(cid, successor)


class Caps:
    """What stops a run between two sessions: its caps, and the checkpoints in a row with one work tree.
    (A plain class: Gemini's hooks import this module, and they do not pay for ``typing``.)"""

    __slots__ = ("max_rotations", "deadline", "max_tokens", "same_tree")

    def __init__(self, max_rotations: int, deadline: float | None, max_tokens: int | None, same_tree: int) -> None:
        self.max_rotations, self.deadline, self.max_tokens, self.same_tree = (
            max_rotations, deadline, max_tokens, same_tree)


def _stops(backend: Backend, chain: list[tuple[int, dict[str, Any]]], facts: dict[str, Any],
           seen: list[tuple[str, str | None, str | None]], caps: Caps, say: Callable[[str], None],
           stderr: str = "") -> str | None:
    """Between two sessions: why the run ends here (an :data:`EXIT` key, said), or None: the next session starts."""
    got, flagged = waiting(chain), _flagged(chain)
    if flagged:  # (a session said so, or a repeat was held: even one that handed over after it stops the run)
        facts["needs"] = flagged[1]
        say("cc-continuity: %s needs a person: %s" % (flagged[0], flagged[1]))
        return "needs a person"
    said_done = _flagged(chain, "done")
    if said_done:  # `cc-continuity signal done`: no successor, even when a checkpoint was made after it
        say("cc-continuity: %s said the task is done%s" % (said_done[0], ": " + said_done[1] if said_done[1] else ""))
        return "done"
    if got is None:
        return _stopped(backend, chain, facts, say, stderr) or ("agent failed" if facts["agent_exit"] else "done")
    cid = _cid(*got)
    looping = _looping(seen, caps.same_tree)
    if looping:
        facts["needs"] = looping
        say("cc-continuity: %s waits for a successor, but the run stopped: %s" % (cid, looping))
        return "needs a person"
    cap = _cap(facts, caps)
    if cap:
        say("cc-continuity: %s waits for a successor: the run reached %s; `cc-continuity run --agent %s --resume` "
            "continues it" % (cid, cap, backend.name))
        return "cap"
    return None


def _stopped(backend: Backend, chain: list[tuple[int, dict[str, Any]]], facts: dict[str, Any],
             say: Callable[[str], None], stderr: str) -> str | None:
    """A process that failed on its model server (a limit, or the server failing or gone): the :data:`EXIT` key,
    said with the reset time where known; None for any other failure."""
    if not facts["agent_exit"] or not chain:
        return None
    got = backend.api_stop(chain, stderr)
    if got is None:
        return None
    facts["stopped"] = {k: got[k] for k in ("kind", "status", "message", "resets_at")}
    say("cc-continuity: %s stopped on %s" % (chain[-1][1].get("name"), limits.said(got)))
    return "limit" if got["kind"] == limits.LIMIT else "model server"


class _Tail:
    """The agent's stderr passed on as it comes, its last :data:`STDERR_KEEP` bytes kept (a thread)."""

    def __init__(self, stream: Any) -> None:
        import threading  # (a back-end that reads stderr only)

        self.buf, self.stream = bytearray(), stream
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        out = getattr(sys.stderr, "buffer", None)
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            if out is not None:
                out.write(chunk)
                out.flush()
            self.buf += chunk
            del self.buf[:-STDERR_KEEP]

    def text(self) -> str:
        self.thread.join(5)
        return self.buf.decode("utf-8", "replace")


def _cap(facts: dict[str, Any], caps: Caps) -> str | None:
    """The cap the run has reached, between two sessions, or None."""
    if facts["rotations"] >= caps.max_rotations:
        return "--max-rotations %d" % caps.max_rotations
    if caps.deadline is not None and time.time() >= caps.deadline:
        return "--max-time"
    if caps.max_tokens is not None and facts["tokens"] >= caps.max_tokens:
        return "--max-tokens %d (%d spent)" % (caps.max_tokens, facts["tokens"])
    return None


def _spent(backend: Backend, chain: list[tuple[int, dict[str, Any]]]) -> int:
    """The tokens a process's sessions spent, each transcript once (an in-process host's sessions share one)."""
    paths = {str(rec["transcript"]) for _, rec in chain if isinstance(rec.get("transcript"), str)}
    if backend.host is None:
        return 0
    return sum(backend.host.tokens_spent(p) or 0 for p in sorted(paths))


def _finish(backend: Backend, proj: Project, chain: list[tuple[int, dict[str, Any]]], env: Mapping[str, str],
            say: Callable[[str], None]) -> list[tuple[int, dict[str, Any]]]:
    """The process is over: a rotation it ended in, its handoff requested and never decided (the process killed,
    its turns cut short, its Stop hook gone at a headless teardown), is decided now (:func:`.turn
    .finish_undecided`); the chain read again when one was."""
    done = False
    for n, rec in chain:
        if not turn.undecided(rec):
            continue
        payload = {"session_id": rec.get("session_id"), "cwd": proj.root, "transcript_path": rec.get("transcript")}
        got = turn.finish_undecided(backend.context("Run", payload, env), n, proj.session_dir(n))
        if got:
            done = True
            say("cc-continuity: %s's process ended before its handoff was decided; the run decided it: %s" % (
                rec.get("name"), "the handoff it wrote" if got == "valid" else "a machine handoff (degraded)"))
    return _chain(proj, chain[0][0] - 1) if done else chain


def _wait(proc: subprocess.Popen[bytes], proj: Project, before: int, facts: dict[str, Any], started: float,
          live: Callable[[str], None] | None) -> int:
    """The session's process's exit status; meanwhile, with ``live``, its progress line once a second."""
    if live is None:
        return proc.wait()
    while True:
        try:
            return proc.wait(1.0)
        except subprocess.TimeoutExpired:
            chain = _chain(proj, before)
            if chain:
                n, rec = chain[-1]
                live(progress(rec, _last_tool(proj.session_dir(n)), facts["rotations"], time.time() - started))


def progress(rec: dict[str, Any], tool: str | None, rotations: int, seconds: float) -> str:
    """One line: the session, its context, the run's rotations and time, the last tool it ran."""
    pct = (rec.get("last_reading") or {}).get("percent")
    return "%s · ctx %s · %d rotation%s · %dm%02ds%s" % (
        rec.get("name") or "?", "%d%%" % round(pct) if isinstance(pct, (int, float)) else "-", rotations,
        "" if rotations == 1 else "s", seconds // 60, seconds % 60, " · %s" % tool if tool else "")


def _last_tool(sdir: str) -> str | None:
    for row in reversed(ledger.tail(session.ledger_path(sdir), 20)):
        if isinstance(row, dict) and row.get("ev") == "tool":
            return "%s %s" % (row.get("tool"), str(row.get("target") or "")[:40])
    return None


def _resumed(proj: Project, say: Callable[[str], None]) -> str | None:
    """The continuation of the project's newest checkpoint waiting for a successor, or None (said why)."""
    got = waiting(_chain(proj, 0))
    if got is None:
        say("cc-continuity: nothing to resume: no checkpoint of %s waits for a successor" % proj.slug)
        return None
    say("cc-continuity: resuming from %s" % _cid(*got))
    return texts.continuation_prompt(_cid(*got), proj.session_name(proj.peek_next_number()))


def _tally(proj: Project, chain: list[tuple[int, dict[str, Any]]], facts: dict[str, Any],
           seen: list[tuple[str, str | None, str | None]]) -> None:
    """One session's process is over: count it and its in-process rotations (those from one process to the
    next are counted by the loop, once each), note its checkpoints (their handoff's digest and tree)."""
    facts["sessions"] += 1
    facts["rotations"] += sum(1 for _, rec in chain if rec["state"] == session.ROTATED and rec.get("driver") == "native")
    facts["held"] += sum(1 for _, rec in chain if _held(rec))
    for n, rec in chain:
        if rec.get("checkpoint") and _cid(n, rec) not in [c for c, _, _ in seen]:
            seen.append((_cid(n, rec), _handoff_digest(proj.session_dir(n), rec), _tree(proj.root, rec)))
            if rec["checkpoint"].get("degraded"):  # the model's handoff never passed: a machine one went on
                facts["degraded"].append(_cid(n, rec))
    facts["checkpoints"] = [c for c, _, _ in seen]


def _held(rec: dict[str, Any]) -> bool:
    """Did this session's harmful repeat get held (its needs-a-person flag names the ``repeat <code>``)?"""
    flag = (rec.get("flags") or {}).get("needs_human")
    return isinstance(flag, dict) and "repeat " in str(flag.get("text") or "")


def _cid(n: int, rec: dict[str, Any]) -> str:
    return str((rec.get("checkpoint") or {}).get("id") or session.checkpoint_id(n))


def _handoff_digest(sdir: str, rec: dict[str, Any]) -> str | None:
    """sha256 of a checkpoint's handoff, section by section as the model wrote them (None: a machine handoff,
    which says nothing of the model's progress, or none to read)."""
    if (rec.get("checkpoint") or {}).get("degraded"):
        return None
    try:
        with open(session.handoff_path(sdir), encoding="utf-8", errors="replace") as f:
            sections = handoff.sections_of(f.read(1 << 21))
    except OSError:
        return None
    return sha256("\n\0".join("%s\n%s" % kv for kv in sorted(sections.items())).encode("utf-8")).hexdigest()


def _tree(root: str, rec: dict[str, Any]) -> str | None:
    """The work-tree snapshot's tree of a checkpoint (None: none, or not yet taken)."""
    ref = (rec.get("checkpoint") or {}).get("ref")
    if not ref:
        return None
    try:
        got = gitrun.run(["rev-parse", "--verify", "-q", ref + "^{tree}"], root, gitrun.SNAPSHOT, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    tree = got.stdout.decode("ascii", "replace").strip()
    return tree if got.returncode == 0 and tree else None


def _looping(seen: list[tuple[str, str | None, str | None]], same_tree: int) -> str | None:
    """Why the chain goes round, or None: the same handoff twice in a row, or the same work tree across
    ``same_tree`` checkpoints in a row (0: not checked)."""
    if len(seen) >= 2 and seen[-1][1] and seen[-1][1] == seen[-2][1]:
        return "%s's handoff is %s's again, section for section (the task goes round)" % (seen[-1][0], seen[-2][0])
    trees = [t for _, _, t in seen[-same_tree:]] if same_tree else []
    if same_tree and len(trees) == same_tree and trees[0] and len(set(trees)) == 1:
        return "the work tree is the same at the last %d checkpoints (nothing changes; --same-tree 0 allows it)" % (
            same_tree)
    return None


def _end(say: Callable[[str], None], report: Callable[[dict[str, Any]], None] | None, facts: dict[str, Any],
         why: str, started: float) -> int:
    facts["why"], facts["seconds"] = why, round(time.time() - started, 1)
    facts["exit"] = EXIT.get(why, 2)
    say(_summary(why, facts["sessions"], facts["rotations"], facts["seconds"], facts["agent_exit"] or 0,
                 facts["tokens"]) + ("; %d side effect%s held" % (facts["held"], "" if facts["held"] == 1 else "s")
                                     if facts["held"] else ""))
    if facts["degraded"]:
        say("cc-continuity: %d handoff%s degraded (%s): the model's was never valid, a machine handoff went on; its "
            "checkpoint's facts say why (a sandbox that refused the write says \"Read-only file system\")" % (
                len(facts["degraded"]), "" if len(facts["degraded"]) == 1 else "s", ", ".join(facts["degraded"])))
    if report is not None:
        report(dict(facts))
    return int(facts["exit"])


def _flagged(chain: list[tuple[int, dict[str, Any]]], kind: str = "needs_human") -> tuple[str, str] | None:
    """``(session, what)`` of the newest session of ``chain`` flagged as needing a person (``cc-continuity signal
    needs-human``, a harmful repeat held in a run), or with ``kind`` ``"done"`` as done, or None."""
    for _n, rec in reversed(chain):
        flag = (rec.get("flags") or {}).get(kind)
        if flag:
            return str(rec.get("name")), str(flag.get("text") or "") if isinstance(flag, dict) else ""
    return None


def _summary(why: str, sessions: int, rotations: int, seconds: float, code: int, tokens: int = 0) -> str:
    label = {"limit": "stopped on a limit", "model server": "stopped: the model server failed"}.get(why, why)
    return "cc-continuity: run %s: %d session%s, %d rotation%s, %.0f s%s%s" % (
        label, sessions, "" if sessions == 1 else "s", rotations, "" if rotations == 1 else "s", seconds,
        ", %s tokens" % format(tokens, ",") if tokens else "",
        "; the agent exited %d" % code if why == "agent failed" else "")
