"""The errors cc-continuity tells the user about: one base, one per area, one handler.

``cli.main`` catches :class:`Error` once: it prints ``cc-continuity <verb>: <message>``
(one line; the details go to the log) and exits with :attr:`Error.exit_code`.  Each
concrete error keeps its builtin ancestor too (``ConfigError`` is still a
``ValueError``), so code that caught the builtin goes on working.

Control flow inside a module (a budget alarm, a rebuild signal) is not an Error: those
never reach the user.  This module imports nothing: the slow paths that raise these
must not pay for it.
"""

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


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


# -- one class per failure, below its area (each module that raises one names it too) -----------------

class ToolDenied(Error):
    """An MCP tool of ``cc-continuity mcp`` refused: a client not allowed, bad arguments, a held repeat, a session
    in no state for it; the text says why, and reaches the agent as the tool's error (mcpserver/)."""


class SettingsError(InstallError, ValueError):
    """settings.json cannot be used as it is; nothing was written."""


class BlockError(InstallError, ValueError):
    """The file's markers are unbalanced; it was not changed."""


class ManifestError(InstallError, ValueError):
    """install.json (the record uninstall works from) is not a JSON object."""


class AppError(InstallError, RuntimeError):
    """The app copy (the package and its libraries) cannot be made or kept."""


class PluginError(InstallError, RuntimeError):
    """A ``claude plugin`` command failed; the message has its output."""


class CodexError(InstallError, ValueError):
    """A Codex file we cannot use as it is (or a CODEX_HOME Codex would refuse); nothing was written."""


class SnapshotError(RotationError, RuntimeError):
    """git is present but a command needed for the snapshot failed."""

    def __init__(self, message: str, cmd: "Sequence[str] | None" = None, returncode: int | None = None,
                 stderr: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


class TmuxError(RotationError, RuntimeError):
    """tmux is missing, the server or pane is gone, or a tmux command failed."""


class PlanError(RotationError, ValueError):
    """The plan file is missing, not JSON, or lacks a usable field."""


class RotationFailed(RotationError, RuntimeError):
    """A step did not complete within its bounds; the message is the ledger reason."""


class AgentGone(RotationFailed):
    """The agent process this rotation serves has exited or left the pane."""


class ServiceError(WatchError, RuntimeError):
    """A service file we cannot write or remove safely, or a service command that failed."""


class ScenarioError(RehearsalError, ValueError):
    """The scenario is malformed; the message names the offending place."""


class LeaseHeld(ShareError):
    """The checkpoint is claimed already; ``holder`` is the lease's claim.json (machine, author, at)."""

    exit_code = 3

    def __init__(self, message: str, holder: "dict[str, Any]") -> None:
        super().__init__(message)
        self.holder = holder


class CorpusError(ConfigError):
    """A corpus folder cannot be read: ``file`` names it, ``msg`` says why (one line, through ``cli.main``)."""

    def __init__(self, file: str, msg: str) -> None:
        super().__init__(file, None, msg)


class BudgetExceeded(BaseException):
    """A hook call ran past its budget (raised by SIGALRM: hosts.run_hook, for every host's entry).

    Control flow, not an :class:`Error`: the runner catches it and logs ``budget-exceeded``; a
    BaseException, so that no ``except Exception`` inside a step takes it for the step's own error."""
