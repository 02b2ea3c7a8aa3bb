"""Test-only fault points: a named place where a test kills the process, inert otherwise.

``CC_CONTINUITY_FAULT`` names one or more points (comma-separated, ``<where>``
as passed to :func:`point`); a process reaching a named point sends itself
SIGKILL, exactly as a kill -9 from outside would land there, so the kill-and-budget
tests hit the same place every run instead of racing a timer.  Unset (always, outside
tests), a point is one environment lookup.
"""

import posix
import time

TYPE_CHECKING = False  # mypy takes this name as true; at run time only the builtin _signal is loaded
if TYPE_CHECKING:
    import signal as _signal  # the builtin _signal has no stubs: its public face has them
else:
    import _signal

ENV = b"CC_CONTINUITY_FAULT"


def point(where: "str") -> "None":
    names = posix.environ.get(ENV)
    if names is not None and where.encode() in names.split(b","):
        posix.kill(posix.getpid(), 9)


class Injected(RuntimeError):
    """The error a test asked for at a named point (:func:`fail`)."""


def fail(where: "str") -> "None":
    """Like :func:`point`, but the process raises :class:`Injected` there: a code path that fails, not one
    killed from outside (the e2e's rotator that cannot start, for one)."""
    names = posix.environ.get(ENV)
    if names is not None and where.encode() in names.split(b","):
        raise Injected("a fault injected at %s (CC_CONTINUITY_FAULT)" % where)


class TookTooLong(BaseException):
    """A part of a hook ran past its own budget (:class:`within`); a BaseException, so that no
    ``except Exception`` inside the block takes it for the block's own error and carries on."""


class within:  # noqa: N801 - used as ``with faults.within(6.0):``
    """Run a block for at most ``seconds`` inside the hook's own budget, then raise :class:`TookTooLong`.

    The hook's budget (``hooks.main``'s SIGALRM) keeps running: the block gets
    ``seconds`` or what is left of the budget less ``reserve`` (for what comes
    after it: building and printing the answer), whichever is shorter, and the
    outer timer is put back with the time the block used taken off.  Off the main
    thread (no signals there) the block runs unbounded, as before.
    """

    def __init__(self, seconds: "float", reserve: "float" = 2.0) -> None:
        self.seconds, self.reserve = seconds, reserve

    def __enter__(self) -> "within":
        self._t0 = time.monotonic()
        self._outer, _ = _signal.getitimer(_signal.ITIMER_REAL)
        self._handler = _signal.getsignal(_signal.SIGALRM)
        limit = self.seconds if not self._outer else min(self.seconds, self._outer - self.reserve)

        def _raise(signum: "int", frame: "object") -> "None":
            raise TookTooLong()

        try:
            _signal.signal(_signal.SIGALRM, _raise)
        except ValueError:  # not the main thread: no signals here
            self._armed = False
            return self
        self._armed = True
        _signal.setitimer(_signal.ITIMER_REAL, max(limit, 0.001))
        return self

    def __exit__(self, *exc: "object") -> "None":
        if not self._armed:
            return
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, self._handler)
        if self._outer:
            _signal.setitimer(_signal.ITIMER_REAL, max(self._outer - (time.monotonic() - self._t0), 0.001))
