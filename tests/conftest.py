"""Every test runs with a private HOME and CC_CONTINUITY_HOME.

Nothing here may touch the real ``~/.claude`` or ``~/.claude-continuity``.
"""

import contextlib
import os
import shutil
import subprocess
import sys

import pytest

from helpers import leftovers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRUB = (
    "CLAUDE_PROJECT_DIR", "CLAUDE_PID", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_MAX_CONTEXT_TOKENS", "CC_CONTINUITY", "CC_CONTINUITY_NAME", "TMUX", "TMUX_PANE",
    "CLAUDECODE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "CLAUDE_ENV_FILE",
    "CC_CONTINUITY_UNATTENDED", "CC_CONTINUITY_WRAPPER", "CC_CONTINUITY_TMUX_SOCKET", "CC_CONTINUITY_CLAUDE",
    "CLAUDE_CODE_SESSION_ID", "NO_COLOR", "CODEX_HOME", "CC_CONTINUITY_CODEX",
    "GEMINI_CLI_HOME", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_API_KEY",
    "CC_CONTINUITY_GEMINI", "CC_CONTINUITY_HEADLESS", "CC_CONTINUITY_RUN_ROTATIONS", "CC_CONTINUITY_RUN_DEADLINE",
    "CC_CONTINUITY_RUN_TOKENS", "ANTHROPIC_AUTH_TOKEN",
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """A fresh HOME and CC_CONTINUITY_HOME per test; Claude-related env scrubbed."""
    home = tmp_path / "home"
    home.mkdir()
    _isolate(monkeypatch, home, tmp_path / "cchome")
    return home


def _isolate(monkeypatch, home, state):
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CC_CONTINUITY_HOME", str(state))
    for name in _SCRUB:
        monkeypatch.delenv(name, raising=False)
    # Gemini CLI's system settings win over everything: the machine's /etc/gemini-cli is not the test's.
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", os.path.join(str(state) + "-etc", "settings.json"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # Subprocesses (`python -m cc_continuity ...`) import this checkout, not whatever
    # `pip install -e` pointed at (another worktree would test other code).
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", REPO + (os.pathsep + old if old else ""))


@pytest.fixture(scope="session")
def isolated_build():
    """``with isolated_build(base) as mp:``: build a world once for many tests (a module- or session-scoped
    fixture, copied per test) in a HOME and CC_CONTINUITY_HOME of its own under ``base``, Claude's
    environment scrubbed as every test's is; ``mp`` (a MonkeyPatch) is undone when the block ends."""
    @contextlib.contextmanager
    def build(base):
        (base / "home").mkdir(exist_ok=True)
        with pytest.MonkeyPatch.context() as mp:
            _isolate(mp, base / "home", base / "cchome")
            yield mp
    return build


# -- the rotation set-up as a ladder of fixtures, in-process (tests/helpers/ladder.py) ----------------
# project -> working -> requested -> verified -> cleared -> claimed: each rung a Ladder one step on.
# (Imported when a test asks for a rung: the test process of the others loads no rotation module.)

def _ladder(monkeypatch):
    from cc_continuity.rotation import turn
    from helpers import ladder

    monkeypatch.setattr(turn, "STOP_WAIT_S", ladder.STOP_WAIT_S)
    return ladder


@pytest.fixture
def make_project(tmp_path, isolated_home, monkeypatch):
    """``make_project(root=tmp_path/"proj", files=ladder.FILES, **HookDriver keywords)``: the *project* rung
    for a test that needs its own files or more than one project (climb with the Ladder's methods)."""
    lad = _ladder(monkeypatch)
    return lambda root=None, files=None, **kw: lad.Ladder.new(tmp_path / "proj" if root is None else root, files, **kw)


@pytest.fixture
def project(make_project):
    """A git repository (ladder.FILES) and its agent on the fake host; nothing has run."""
    return make_project()


@pytest.fixture
def working(project):
    """S1 started and prompted; its turn's last reply at 65 % (past *rotate*), its Stop not run."""
    return project.work()


@pytest.fixture
def requested(working):
    """The Stop at *rotate*: HANDOFF_REQUESTED (``.request``, ``.handoff_path``)."""
    return working.request_handoff()


@pytest.fixture(scope="session")
def verified_world(tmp_path_factory):
    """*verified* built once per session (per xdist worker) in its own HOME and CC_CONTINUITY_HOME."""
    base = tmp_path_factory.mktemp("ladder")
    (base / "home").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, base / "home", base / "cchome")
        return _ladder(mp).build_world(base)


@pytest.fixture
def verified(verified_world, tmp_path, isolated_home, monkeypatch):
    """cp-001 verified, the user asked for /clear (``.checkpoint``, ``.verified_out``): a copy of the
    session's world under this test's paths, not a rotation."""
    _ladder(monkeypatch)
    return verified_world.copy_to(tmp_path)


@pytest.fixture
def cleared(verified):
    """/clear: S1 ended, S2 started and claimed cp-001 (``.bootstrap``)."""
    return verified.clear()


@pytest.fixture
def claimed(cleared):
    """S2's first prompt: ACTIVE (``.claimed_out``)."""
    return cleared.claim()


@pytest.fixture
def git_repo(tmp_path):
    """A real git repository with one commit on branch ``main``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)
    run("init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    run("add", "README.md")
    run("commit", "-q", "-m", "initial")
    return repo


@pytest.fixture
def server():
    """A private tmux server (its own socket, killed at teardown); shadows libtmux's plugin fixture."""
    if not shutil.which("tmux"):
        pytest.skip("needs tmux")
    from helpers import TmuxServer

    srv = TmuxServer()
    try:
        yield srv
    finally:
        srv.kill()


def pytest_xdist_auto_num_workers(config):
    """What ``-n auto`` (README line 2, .ci/run) means: two workers a core.  Most of the suite's time
    is waiting (tmux, hooks and git as subprocesses, servers, bounded polls), so one a core would
    leave the cores idle.  Each test is on its own: a temp HOME and CC_CONTINUITY_HOME, its own tmux
    socket, ports the kernel picks."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # (macOS)
        cores = os.cpu_count() or 1
    return 2 * cores


def pytest_report_header(config):
    return "python %s; tmux %s; git %s" % (
        sys.version.split()[0],
        "yes" if shutil.which("tmux") else "no",
        "yes" if shutil.which("git") else "no",
    )


# -- no process of this run outlives it ------------------------------------------------------------

LEFTOVER_GRACE_S = 10.0  # a detached job that is finishing gets this long to end on its own (env: CC_TEST_LEFTOVER_GRACE_S)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Fail the run when a process it started is still alive (then kill it).

    Ours = this run's basetemp root in the process's environment or command line (every test's
    HOME and CC_CONTINUITY_HOME are under it; helpers/leftovers.py), never a process name: another
    pytest on this machine has another root.  Under pytest-xdist each worker's basetemp is
    ``<root>/popen-gwN``: the controller checks the shared root once the workers are done."""
    if hasattr(session.config, "workerinput"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    root = getattr(factory, "_basetemp", None)
    if root is None:  # no test asked for a temp dir: nothing can hold one
        return
    grace = float(os.environ.get("CC_TEST_LEFTOVER_GRACE_S") or LEFTOVER_GRACE_S)
    left = leftovers.wait_gone(str(root), grace)
    if not left:
        return
    lines = ["%d process%s started by this run outlived it by %.0f s (killed now):" % (
        len(left), "" if len(left) == 1 else "es", grace)]
    lines += ["  pid %d: %s" % (pid, cmdline[:300]) for pid, cmdline in left]
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.ensure_newline()
    for line in lines:
        if tr is not None:
            tr.write_line(line, red=True)
        else:
            sys.stderr.write(line + "\n")
    leftovers.kill(left)
    if session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
