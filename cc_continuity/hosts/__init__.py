"""The agents cc-continuity rotates, one folder per host, and what every host's hook entry shares.

Each host folder fills the rotation's host port (rotation/host.py) from its own files and holds
what else is its own (its hook entry and wire, its transcript, its launch, its install piece
``install.py`` and its doctor checks ``doctor.py``, each the same shape in every folder);
:data:`HOSTS` lists them.  Above the folders, ``setup.py`` (install and uninstall) and ``checkup.py``
(doctor's report) find each host's ``install.py`` and ``doctor.py`` by the names in :data:`HOSTS`: a
new host is its folder and its row here (tests/hosts/test_host_units.py checks each folder's units).

Here too is the one fail-open runner of a hook call (:func:`run_hook`), for every host's entry
(Claude Code's ``hosts/claude/hooks``, Codex's ``hosts/codex/hooks.py``).  A host's entry names
the call for the log, its budget and the function that answers its stdin; the runner does the
rest, the same for every host: a SIGALRM budget below the timeout the host was given, stdin read
once and bounded, the answer written, what it carried sent (``after``), one line in
``logs/hooks.log``, and ``_exit`` with no interpreter teardown.  Whatever happens inside (bad
stdin, a corrupt state file, a full disk, a bug, the budget) the process exits 0 with nothing on
stdout, and the log line says what it was.  The one other status: a clean answer that asks to wake
the model (``wake``, Claude Code's async hooks with asyncRewake) exits 2 with that text on stderr.

Every hook call imports this package (it is its entry's parent), so it is the runner's place: it
costs the hot path no module more.  Standard library builtins only (``posix``, ``time``,
``_signal``); a host's own modules are imported by its entry, never here (what the per-call hosts'
entries share besides is :mod:`.entry`: every line here is run at every Claude Code tool call).
"""

import posix
import time

TYPE_CHECKING = False  # mypy takes this name as true; at run time only the else branch runs (hot path)
if TYPE_CHECKING:
    import signal as _signal  # the builtin _signal has no stubs: its public face has them
    from collections.abc import Callable, Iterable
    from types import FrameType
    from typing import Any, NoReturn

    # (stdout text or None, outcome for the log, session id, what to run once the answer is out, wake text or None)
    Answer = tuple[str | None, str, object, Iterable[Callable[[], Any]], str | None]
else:
    import _signal

# Every host, by its folder's name: its port (rotation/host.py's Host, filled in) and the function its hook entry
# runs when a tool call must be decided, which calls the one tool-call step (rotation/toolcall.before_tool: the
# snapshot's wait, the hard ceiling, the handoff's write, the hold).  A new host is a row here;
# tests/hosts/test_toolcall.py runs each row's step and fails for a host that decides a tool call on its own.
HOSTS = {
    "claude": ("cc_continuity.hosts.claude.host:ClaudeHost", "cc_continuity.hosts.claude.hooks.pre_tool_use:_decide"),
    "codex": ("cc_continuity.hosts.codex.host:CodexHost", "cc_continuity.hosts.codex.hooks:_pre_tool_use"),
    "gemini": ("cc_continuity.hosts.gemini.host:GeminiHost", "cc_continuity.hosts.gemini.hooks:_before_tool"),
}

MAX_STDIN = 64 * 1024 * 1024


def _on_alarm(signum: "int", frame: "FrameType | None") -> "NoReturn":
    # (errors is loaded only when a budget runs out: the per-tool-call path never pays for it)
    from ..errors import BudgetExceeded

    raise BudgetExceeded()


def read_stdin(limit: "int" = MAX_STDIN) -> "bytes":
    """All of stdin; ``ValueError`` past ``limit`` bytes (a read that fails ends it)."""
    chunks = []
    total = 0
    while True:
        try:
            b = posix.read(0, 1 << 20)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
        total += len(b)
        if total > limit:
            raise ValueError("stdin larger than %d bytes" % limit)
    return b"".join(chunks)


def run_hook(name: "str", budget: "float", answer: "Callable[[bytes], Answer]", limit: "int" = MAX_STDIN,
        session_of: "Callable[[bytes], object] | None" = None) -> "NoReturn":
    """Run one hook call: ``answer(stdin)`` under ``budget`` seconds, fail-open; log it as ``name``; exit.

    ``session_of(stdin)`` names the session in the log line of a call that failed before it knew it."""
    t0 = time.monotonic()
    out: "str | None" = None
    wake: "str | None" = None
    outcome, sid = "error", None
    after: "Iterable[Callable[[], Any]]" = ()
    raw = b""
    try:
        _signal.signal(_signal.SIGALRM, _on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, budget)
        try:
            raw = read_stdin(limit)
            out, outcome, sid, after, wake = answer(raw)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    except BaseException as e:  # fail open: log, print nothing, exit 0
        out, wake, outcome = None, None, failed(e)
    if sid is None and outcome != "ok" and session_of is not None:
        try:
            sid = session_of(raw)  # a call that failed still names its session in the log
        except BaseException:
            pass
    if out is not None:
        from .. import faults  # (only a call with an answer: a tool call's steady state has none)

        faults.point(name + ":before_output")
        try:
            posix.write(1, out.encode("utf-8"))
            for then in after:
                then()  # the answer is out: what it carried was sent
        except Exception:  # noqa: BLE001 - the answer is out; a failed note about it costs nothing more
            pass
    status = 0
    if wake is not None:
        try:
            posix.write(2, wake.encode("utf-8"))
            status = 2
        except OSError:
            pass
    try:
        from .. import log  # (after the answer: the log line costs the call nothing it waits for)

        log.hook(name, sid, (time.monotonic() - t0) * 1000, outcome + (" (wakes the model)" if status else ""))
    except BaseException:
        pass
    posix._exit(status)


def failed(e: "BaseException") -> "str":
    """The log's outcome for a call that raised ``e``: the budget, or the error and where it was raised."""
    from ..errors import BudgetExceeded  # (a failed call only)

    return "budget-exceeded" if isinstance(e, BudgetExceeded) else "error: " + describe(e)


def describe(e: "BaseException") -> "str":
    """One line: exception type, message, and where it was raised."""
    tb = e.__traceback__
    where = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        where = "%s:%d" % (code.co_filename.rpartition("/")[2], tb.tb_lineno)
        tb = tb.tb_next
    return "%s(%s) at %s" % (type(e).__name__, str(e)[:200], where)
