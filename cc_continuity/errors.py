"""The errors cc-continuity tells the user about: one base, one per area, one handler.

``cli.main`` catches :class:`Error` once: it prints ``cc-continuity <verb>: <message>``
(one line; the details go to the log) and exits with :attr:`Error.exit_code`.  Each
concrete error keeps its builtin ancestor too (``ConfigError`` is still a
``ValueError``), so code that caught the builtin goes on working.

Control flow inside a module (a budget alarm, a rebuild signal) is not an Error: those
never reach the user.  This module imports nothing: the slow paths that raise these
must not pay for it.
"""


class Error(Exception):
    """Something the user must be told, in one line; exit status ``exit_code``."""

    exit_code = 1


class ConfigError(Error, ValueError):
    """A config file or value that cannot be used.  ``file`` and ``key`` say where."""

    def __init__(self, file: str, key: str | None, msg: str) -> None:
        self.file = file
        self.key = key
        self.msg = msg
        where = file if key is None else "%s: key %r" % (file, key)
        super().__init__("%s: %s" % (where, msg))


class InstallError(Error):
    """Installing, uninstalling or checking what is installed failed (nothing half-done is left)."""


class RotationError(Error):
    """Driving a rotation failed: the snapshot, the pane, the rotator's plan."""


class StateDirError(RotationError):
    """A state directory we write into is not ours (a link, another user's, not a directory): no rotation."""


class WatchError(Error):
    """The watchdog service could not be installed, started or read."""


class RehearsalError(Error, RuntimeError):
    """The offline rehearsal did not complete (no claude, nothing installed, no tmux ...): says what to do."""


class ShareError(Error, RuntimeError):
    """Publishing a checkpoint to a git remote, or claiming one from it, failed (the message says what git said).

    ``nothing_landed``: a push that failed in a way that proves the remote changed nothing (it
    answered with a refusal of the whole atomic push, or git never reached it); False when unknown."""

    nothing_landed = False


class BudgetExceeded(BaseException):
    """A hook call ran past its budget (raised by SIGALRM: hookrun.py, for every host's entry).

    Control flow, not an :class:`Error`: the runner catches it and logs ``budget-exceeded``; a
    BaseException, so that no ``except Exception`` inside a step takes it for the step's own error."""
