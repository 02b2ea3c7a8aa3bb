"""How the package runs git: one runner, two profiles kept apart.

Three parts of the package call git for different reasons, and each had its own copy
of what makes that safe: the scrub of the variables that point git at another
repository, the settings, the bound.  A setting added to one copy was missing from
the others.  Here they are once, as data, with the functions that apply them:

- :data:`SNAPSHOT` — git as a library inside the user's repository: a snapshot
  (``snapshot/``) and the hold's work-tree state (``holds/effects.py``).  It runs no
  program the repository names (no hook, no fsmonitor, no credential helper, no
  filter or diff driver, no pager, editor, ssh, askpass or signing program), takes
  no optional lock (read-only commands never refresh the user's index) and never
  prompts.
- :data:`SHARING` — git as the user, talking to a remote (``share/``): their
  credentials, ssh agent and credential helpers, never a prompt (no terminal, no
  askpass, ssh in batch mode with a connect timeout), each call bounded and, at its
  timeout, killed with its process group (the remote helper and ssh too); no hook.

:func:`run` is the bounded runner (both profiles); :func:`read` the reader a tool
call's hook uses (``posix_spawnp`` and a pipe: ``subprocess`` costs ~8 ms to import,
more than the rest of a classified call).  Importing this module loads nothing but
builtins; ``subprocess`` is imported by :func:`run` when it is called.  Standard
library only.
"""

import posix
import sys

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (a tool call's hook loads this)
if TYPE_CHECKING:
    import signal as _signal  # the builtin _signal has no stubs: its public face has them
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
else:
    import _signal


# Variables that point git at another repository or index (``git rev-parse --local-env-vars``): an outer
# git process (a pre-commit hook running us) cannot redirect a call made here.
LOCAL_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_DIR", "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE", "GIT_WORK_TREE", "GIT_NAMESPACE",
)
# Programs that would ask someone for a password (the environment's win over core.askPass).
ASKPASS_ENV = ("GIT_ASKPASS", "SSH_ASKPASS")


class Profile:
    """A way of running git: what it says on the command line and what its environment drops and sets."""

    __slots__ = ("name", "config", "drop", "force", "default", "ssh_options", "timeout", "group", "no_drivers")

    def __init__(self, name: str, *, config: "tuple[str, ...]", drop: "tuple[str, ...]",
                 force: "tuple[tuple[str, str], ...]", default: "tuple[tuple[str, str], ...]" = (),
                 ssh_options: str = "", timeout: float, group: bool, no_drivers: bool) -> None:
        self.name = name
        self.config = config            # ``-c key=value`` pairs: a command's own config wins over every file
        self.drop = frozenset(drop)     # variables removed from the caller's environment
        self.force = force              # variables set whatever the environment said
        self.default = default          # variables set where the environment has none
        self.ssh_options = ssh_options  # appended to the user's GIT_SSH_COMMAND (or ssh)
        self.timeout = timeout          # a call's bound when the caller names none (seconds)
        self.group = group              # each call in a session of its own: a timeout kills its process group
        self.no_drivers = no_drivers    # every filter and diff driver the repository's config names is emptied

    def __repr__(self) -> str:
        return "<git profile %s>" % self.name


# No hooks (post-index-change, reference-transaction), no fsmonitor daemon, no split index (it would
# write sharedindex.* files into the user's .git).  And no program the repository names (issue 22: a
# snapshot runs nothing the repository defined): a command's own config wins over every config file.
# An empty helper list, no external diff, and programs never needed (no remote, no signing, no editor,
# no pager) set to one that does nothing.  Drivers have names of the repository's choosing: emptied
# one by one (``no_drivers``).
SNAPSHOT = Profile(
    "snapshot",
    config=(
        "-c", "core.hooksPath=/dev/null",
        "-c", "core.fsmonitor=false",
        "-c", "core.splitIndex=false",
        "-c", "advice.addEmbeddedRepo=false",
        "-c", "diff.external=",
        "-c", "core.sshCommand=false",
        "-c", "core.askPass=false",
        "-c", "credential.helper=",
        "-c", "gpg.program=false",
        "-c", "gpg.ssh.program=false",
        "-c", "gpg.x509.program=false",
        "-c", "commit.gpgSign=false",
        "-c", "core.editor=false",
        "-c", "sequence.editor=false",
        "-c", "core.pager=cat",
        "-c", "gc.auto=0",
    ),
    drop=LOCAL_ENV + ASKPASS_ENV,
    force=(("GIT_OPTIONAL_LOCKS", "0"), ("GIT_TERMINAL_PROMPT", "0"), ("LC_ALL", "C")),
    timeout=30.0, group=False, no_drivers=True,
)

# The user's own credentials and helpers (their config, their ssh agent), but no way to ask: no terminal
# prompt, no askpass program (an empty core.askPass: git then asks no one, and falls through to no
# SSH_ASKPASS either), Git Credential Manager told never to ask, ssh in batch mode.  No hook, no
# fsmonitor.  A call is bounded (TRY_TIMEOUT_S in share/transport.py) and killed with its group.
SHARING = Profile(
    "sharing",
    config=("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.askPass="),
    drop=LOCAL_ENV + ASKPASS_ENV,
    force=(("GIT_TERMINAL_PROMPT", "0"), ("GCM_INTERACTIVE", "never"), ("SSH_ASKPASS_REQUIRE", "never")),
    default=(("LC_ALL", "C"),),
    ssh_options="-o BatchMode=yes -o ConnectTimeout=30",
    timeout=60.0, group=True, no_drivers=False,
)


def _process_env() -> "Mapping[str, str]":
    """This process's environment: ``os.environ`` where ``os`` is loaded (a change made through it is there
    only), else ``posix.environ`` decoded as ``os`` would (no one can have changed it through ``os``)."""
    os_module = sys.modules.get("os")
    if os_module is not None:
        return os_module.environ  # type: ignore[no-any-return]
    enc = sys.getfilesystemencoding()
    return {k.decode(enc, "surrogateescape"): v.decode(enc, "surrogateescape") for k, v in posix.environ.items()}


def environ(profile: Profile, base: "Mapping[str, str] | None" = None,
            extra: "Mapping[str, str] | None" = None) -> dict[str, str]:
    """The environment of a git call on ``profile``: ``base`` (this process's) less what it drops, with
    what it sets, then ``extra``."""
    env = {k: v for k, v in (_process_env() if base is None else base).items() if k not in profile.drop}
    for k, v in profile.default:
        env.setdefault(k, v)
    env.update(profile.force)
    if profile.ssh_options:
        env["GIT_SSH_COMMAND"] = (env.get("GIT_SSH_COMMAND") or "ssh") + " " + profile.ssh_options
    if extra:
        env.update(extra)
    return env


# -- the repository's drivers ------------------------------------------------------------------------------

_DRIVER_QUERY = ("config", "-z", "--name-only", "--get-regexp",
                 r"^(filter|diff)\..*\.(clean|smudge|process|required|textconv|command)$")
_DRIVER_ENDS = (".clean", ".smudge", ".process", ".required", ".textconv", ".command")
_drivers_of: "dict[str, tuple[tuple[str, str], ...]]" = {}  # cwd -> (key, neutral value): one query a place


def _driver_keys(out: bytes) -> "tuple[tuple[str, str], ...]":
    """(key, the value that empties it) of each driver key in ``git config -z --name-only``'s output."""
    keys = []
    for raw in out.split(b"\0"):
        key = raw.decode(sys.getfilesystemencoding(), "surrogateescape")
        if key.startswith(("filter.", "diff.")) and key.endswith(_DRIVER_ENDS) and key.index(".") < key.rindex(".") - 1:
            keys.append((key, "false" if key.endswith(".required") else ""))
    return tuple(keys)


def without_drivers(env: "Mapping[str, str]", cwd: str, query: "Callable[[Sequence[str]], bytes]") -> "Mapping[str, str]":
    """``env`` plus config that empties every filter and diff driver the config of ``cwd`` defines.

    Through ``GIT_CONFIG_COUNT`` (a driver's name may hold any character, ``=`` too, which ``-c``
    cannot carry), after any such entries already there.  A filter left without its commands
    stores the file as it is (an unchanged file keeps its index blob: git does not read it again);
    one marked required fails instead.  ``query(args)``: the driver query's stdout (b"" when it
    fails), asked once per place.
    """
    found = _drivers_of.get(cwd)
    if found is None:
        found = _drivers_of[cwd] = _driver_keys(query(_DRIVER_QUERY))
    if not found:
        return env
    out_env = dict(env)
    try:
        n = int(out_env.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        n = 0
    for i, (key, value) in enumerate(found, n):
        out_env["GIT_CONFIG_KEY_%d" % i], out_env["GIT_CONFIG_VALUE_%d" % i] = key, value
    out_env["GIT_CONFIG_COUNT"] = str(n + len(found))
    return out_env


# -- the runners -------------------------------------------------------------------------------------------

def run(args: "Sequence[str]", cwd: str, profile: Profile, *, env: "Mapping[str, str] | None" = None,
        input: bytes | None = None, timeout: float | None = None, umask: int = -1) -> "subprocess.CompletedProcess[bytes]":
    """git ``args`` in ``cwd`` on ``profile``: its exit status, stdout and stderr (bytes); never raises on the status.

    ``env``: the whole environment (default: :func:`environ` of ``profile``).  Bounded by ``timeout``
    (default: the profile's): then git is killed (with its process group where the profile runs each
    call in a session of its own) and ``subprocess.TimeoutExpired`` raised.  ``OSError`` when git cannot
    start (none installed, no such ``cwd``)."""
    import subprocess  # (a tool call's hook loads this module for read(): subprocess +~8 ms, only here)

    timeout = profile.timeout if timeout is None else timeout
    env = environ(profile) if env is None else env
    if profile.no_drivers:
        def query(q: "Sequence[str]") -> bytes:
            try:
                return subprocess.run(["git", *profile.config, *q], cwd=cwd, env=environ(profile),
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                      timeout=timeout).stdout
            except (OSError, subprocess.SubprocessError):
                return b""  # (no git, no such directory: the call itself will say so)
        env = without_drivers(env, cwd, query)
    cmd = ["git", *profile.config, *args]
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=profile.group,
                          umask=umask) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc.pid, profile.group)
            proc.wait()  # (no more reading: a process outside the group may still hold the pipes)
            raise subprocess.TimeoutExpired(cmd, timeout) from None
        except BaseException:  # (interrupted: git does not outlive its caller's wait)
            _kill(proc.pid, profile.group)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill(pid: int, group: bool) -> None:
    try:
        if group:
            posix.killpg(pid, _signal.SIGKILL)
        else:
            posix.kill(pid, _signal.SIGKILL)
    except OSError:  # (gone already)
        pass


def read(args: "Sequence[str]", root: str, profile: Profile = SNAPSHOT) -> "bytes | None":
    """git ``args`` in the work tree ``root`` on ``profile``: its stdout when it exits 0, else None.

    ``posix_spawnp`` and a pipe, for a tool call's hook (no ``subprocess``).  Bounded by the hook's own
    budget (hooks/BUDGET): git is killed when that interrupts the read."""
    env: "Mapping[str, str]" = environ(profile)
    if profile.no_drivers:
        env = without_drivers(env, root, lambda q: _spawn_read(["git", "-C", root, *profile.config, *q], env) or b"")
    return _spawn_read(["git", "-C", root, *profile.config, *args], env)


def _spawn_read(argv: "list[str]", env: "Mapping[str, str]") -> "bytes | None":
    try:
        r, w = posix.pipe()
    except OSError:
        return None
    try:
        pid = posix.posix_spawnp(argv[0], argv, env, file_actions=[
            (posix.POSIX_SPAWN_DUP2, w, 1), (posix.POSIX_SPAWN_CLOSE, r),
            (posix.POSIX_SPAWN_OPEN, 2, "/dev/null", posix.O_WRONLY, 0),
            (posix.POSIX_SPAWN_OPEN, 0, "/dev/null", posix.O_RDONLY, 0)])
    except OSError:
        posix.close(r)
        posix.close(w)
        return None
    posix.close(w)
    chunks = []
    done = False
    try:
        while True:
            b = posix.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
        done = True
    finally:
        posix.close(r)
        if not done:
            _kill(pid, False)
        _, status = posix.waitpid(pid, 0)
    return b"".join(chunks) if posix.WIFEXITED(status) and posix.WEXITSTATUS(status) == 0 else None
