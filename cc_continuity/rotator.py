"""The detached process that types ``/clear`` and the continuation into Claude Code's pane.

Why detached: the Stop hook that decides to rotate is part of the turn that must
end before ``/clear`` can run (typed while Claude is busy it is swallowed), so the
hook writes a plan and :func:`spawn` starts this process in its own session; it
outlives the hook and waits for the pane to go idle.

Usage: ``python -m cc_continuity.rotator <plan.json>``. The plan::

    {"socket": "/tmp/tmux-1000/default", "pane": "%3",
     "started_marker": "/abs/...",    # created by the successor's SessionStart hook
     "delivered_marker": "/abs/...",  # optional; created by its UserPromptSubmit hook
     "continuation": "Continuing from cp-004 (proj-005).",
     "ledger": "/abs/.../ledger.jsonl", "successor_name": "proj-005",
     "timeouts": {"idle_s": 120, "marker_s": 60, "delivery_s": 20, "type_s": 5},
     "retries": 3}

``retries`` counts extra attempts per step (0 = try once). A marker that already
exists counts as done, so re-running a plan after a crash never clears twice.
Every step goes to the ledger as ``{"ev": "rotator", "step": …, "ms": …}`` with
steps ``begin, idle, clear_sent, started, idle, continuation_sent, delivered,
renamed`` (plus ``not_typed``/``stuck`` before a retry, ``failed`` at the end of
a failure). Exit status 0 on success, 1 on failure (also for an unusable plan:
reported on stderr and, when the plan names a ledger, as ``failed`` there).
"""

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from . import ledger, paths
from .tmux import Pane, TmuxError

DEFAULT_TIMEOUTS = {"idle_s": 120.0, "marker_s": 60.0, "delivery_s": 20.0, "type_s": 5.0}
DEFAULT_RETRIES = 3
MAX_RETRIES = 10
POLL_S = 0.05
_REQUIRED = ("socket", "pane", "started_marker", "continuation", "ledger", "successor_name")
_ABSOLUTE = ("started_marker", "delivered_marker", "ledger")


class PlanError(ValueError):
    """The plan file is missing, not JSON, or lacks a usable field."""


class RotationFailed(RuntimeError):
    """A step did not complete within its bounds; the message is the ledger reason."""


def load_plan(path):
    """Read and validate a plan file; return it with defaults filled in."""
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except OSError as e:
        raise PlanError("cannot read plan %s: %s" % (path, e.strerror or e)) from None
    except ValueError as e:
        raise PlanError("plan %s is not valid JSON: %s" % (path, e)) from None
    if not isinstance(plan, dict):
        raise PlanError("plan %s is not a JSON object" % path)
    for key in _REQUIRED:
        if not isinstance(plan.get(key), str) or not plan[key].strip():
            raise PlanError("plan %s: %r must be a non-empty string" % (path, key))
    for key in _ABSOLUTE:
        value = plan.get(key)
        if value is not None and (not isinstance(value, str) or not os.path.isabs(value)):
            raise PlanError("plan %s: %r must be an absolute path" % (path, key))
    timeouts = dict(DEFAULT_TIMEOUTS)
    given = plan.get("timeouts") or {}
    if not isinstance(given, dict):
        raise PlanError("plan %s: 'timeouts' must be an object" % path)
    for key, value in given.items():
        if key in timeouts:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
                raise PlanError("plan %s: timeouts.%s must be a number of seconds > 0" % (path, key))
            timeouts[key] = float(value)
    plan["timeouts"] = timeouts
    retries = plan.get("retries", DEFAULT_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise PlanError("plan %s: 'retries' must be an integer 0..%d" % (path, MAX_RETRIES))
    plan["retries"] = retries
    try:
        Pane(plan["socket"], plan["pane"])
    except ValueError as e:
        raise PlanError("plan %s: %s" % (path, e)) from None
    return plan


def _wait_for(predicate, timeout):
    """Poll ``predicate`` until true (return True) or ``timeout`` passes (return False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        time.sleep(min(POLL_S, deadline - now))


def _squash(text):
    return "".join(text.split())


def _box_holds(box, sent):
    """Does the input box show ``sent``? Whitespace is ignored (wrapping, trimmed ends)."""
    want, have = _squash(sent), _squash(box)
    if not want or not have:
        return False
    if want in have:
        return True
    # A long text may be shown in part; demand a substantial part.
    return len(have) >= min(len(want), 16) and have in want


class Rotator:
    """Runs one plan against one pane. ``pane`` can be injected (tests, other drivers)."""

    def __init__(self, plan, pane=None):
        self.plan = plan
        self.pane = pane or Pane(plan["socket"], plan["pane"], plan.get("tmux_bin"))
        self.timeouts = plan["timeouts"]
        self.attempts = plan["retries"] + 1
        self.t0 = time.monotonic()

    def note(self, step, **fields):
        """Append one step to the predecessor's ledger; a ledger error never stops the rotation."""
        record = {"ev": "rotator", "step": step, "ms": int((time.monotonic() - self.t0) * 1000)}
        record.update(fields)
        try:
            ledger.append(self.plan["ledger"], record)
        except Exception as e:  # keep going: the pane matters more than the record
            print("rotator: cannot write ledger %s: %s; record %r"
                  % (self.plan["ledger"], e, record), file=sys.stderr)

    def run(self):
        """Perform the hand-over; return the exit status (0 ok, 1 failed)."""
        try:
            with _pane_lock(self.plan):
                self.note("begin", pid=os.getpid(), pane=self.plan["pane"],
                          successor=self.plan["successor_name"])
                self._clear()
                self._continue()
                self._rename()
            return 0
        except RotationFailed as e:
            self.note("failed", reason=str(e))
        except TmuxError as e:
            self.note("failed", reason="tmux: %s" % e)
        except SystemExit as e:  # SIGTERM
            self.note("failed", reason="terminated (%s)" % e.code)
        except Exception as e:  # a bug or a missing module: say so where doctor and Stop look
            self.note("failed", reason="%s: %s" % (type(e).__name__, e))
        return 1

    # -- steps --------------------------------------------------------------

    def _idle(self, phase, attempt):
        if not self.pane.wait_idle(self.timeouts["idle_s"]):
            raise RotationFailed("pane %s not idle within %gs (%s)"
                                 % (self.plan["pane"], self.timeouts["idle_s"], phase))
        self.note("idle", phase=phase, attempt=attempt)

    def _type(self, text):
        """Clear the box, type ``text``; True once the box shows it (False: nothing arrived)."""
        residual = self.pane.clear_input()
        sent = self.pane.type_literal(text)
        shown = _wait_for(lambda: _box_holds(self.pane.input_text(self.pane.capture()), sent),
                          self.timeouts["type_s"])
        return shown, sent, residual

    def _clear(self):
        marker = self.plan["started_marker"]
        if os.path.exists(marker):
            self.note("started", preexisting=True)
            return
        for attempt in range(1, self.attempts + 1):
            self._idle("predecessor", attempt)
            if os.path.exists(marker):  # a late start from the previous attempt
                self.note("started", attempt=attempt - 1, late=True)
                return
            shown, _, residual = self._type("/clear")
            if not shown:
                self.note("not_typed", what="/clear", attempt=attempt, residual=residual)
                continue
            self.pane.press("Enter")
            self.note("clear_sent", attempt=attempt, residual=residual)
            if _wait_for(lambda: os.path.exists(marker), self.timeouts["marker_s"]):
                self.note("started", attempt=attempt)
                return
        raise RotationFailed("successor did not start: %s missing after %d /clear attempt(s)"
                             % (marker, self.attempts))

    def _continue(self):
        marker = self.plan.get("delivered_marker")
        arrived = lambda: bool(marker) and os.path.exists(marker)
        if arrived():
            self.note("delivered", via="marker", preexisting=True)
            return
        text = self.plan["continuation"]
        for attempt in range(1, self.attempts + 1):
            self._idle("successor", attempt)
            if arrived():
                self.note("delivered", via="marker", attempt=attempt - 1, late=True)
                return
            shown, sent, residual = self._type(text)
            if not shown:
                self.note("not_typed", what="continuation", attempt=attempt, residual=residual)
                continue
            self.pane.press("Enter")
            self.note("continuation_sent", attempt=attempt, chars=len(sent))
            left_box = lambda: not _box_holds(self.pane.input_text(self.pane.capture()), sent)
            if marker:
                if _wait_for(arrived, self.timeouts["delivery_s"]):
                    self.note("delivered", via="marker", attempt=attempt)
                    return
                if left_box():  # submitted, but the hook never confirmed: do not send twice
                    self.note("delivered", via="screen", attempt=attempt, confirmed=False)
                    return
            elif _wait_for(left_box, self.timeouts["delivery_s"]):
                self.note("delivered", via="screen", attempt=attempt)
                return
            self.note("stuck", what="continuation", attempt=attempt)  # still in the box
        raise RotationFailed("continuation not delivered after %d attempt(s)" % self.attempts)

    def _rename(self):
        name = self.plan["successor_name"]
        errors = []
        for rename in (self.pane.rename_session, self.pane.rename_window):
            try:
                rename(name)
            except TmuxError as e:  # cosmetic: the hand-over itself succeeded
                errors.append(str(e))
        if errors:
            self.note("renamed", name=name, ok=False, errors=errors)
        else:
            self.note("renamed", name=name, ok=True)


class _pane_lock:
    """One rotator per pane: a second one for the same pane fails instead of typing twice."""

    def __init__(self, plan):
        key = hashlib.sha256(("%s\0%s" % (plan["socket"], plan["pane"])).encode()).hexdigest()[:16]
        self.path = os.path.join(paths.runtime_dir(), "rotator-%s.lock" % key)
        self.fd = None

    def __enter__(self):
        paths.ensure_dir(os.path.dirname(self.path))
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, paths.FILE_MODE)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RotationFailed("another rotator is already working on this pane") from None
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def spawn(plan_path, log_path=None):
    """Start ``python -m cc_continuity.rotator <plan>`` fully detached; return its pid.

    Own session (no controlling terminal, not killed with the hook's process
    group), stdin from /dev/null, output to ``log_path`` or /dev/null: a Stop hook
    whose stdout pipe stayed open in a child would keep Claude Code waiting.
    """
    plan_path = os.path.abspath(plan_path)
    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The app copy keeps its dependencies (libtmux) in <app>/lib: the base
    # interpreter the hooks run on need not have them.
    lib = os.path.join(package_parent, "lib")
    extra = [package_parent] + ([lib] if os.path.isdir(lib) else [])
    env["PYTHONPATH"] = os.pathsep.join(p for p in extra + [env.get("PYTHONPATH", "")] if p)
    out = subprocess.DEVNULL
    if log_path:
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, paths.FILE_MODE)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cc_continuity.rotator", plan_path],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out if log_path else subprocess.DEVNULL,
            cwd="/", env=env, start_new_session=True, close_fds=True,
        )
    finally:
        if log_path:
            os.close(out)
    return proc.pid


def _note_bad_plan(path, error):
    """Record an unusable plan in its ledger when the plan at least names one."""
    try:
        with open(path, encoding="utf-8") as f:
            where = json.load(f).get("ledger")
        if isinstance(where, str) and os.path.isabs(where):
            ledger.append(where, {"ev": "rotator", "step": "failed", "ms": 0, "reason": str(error)})
    except Exception:
        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m cc_continuity.rotator <plan.json>", file=sys.stderr)
        return 2
    try:
        plan = load_plan(argv[0])
    except PlanError as e:
        print("rotator: %s" % e, file=sys.stderr)
        _note_bad_plan(argv[0], e)
        return 1
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return Rotator(plan).run()


if __name__ == "__main__":
    sys.exit(main())
