"""Fixtures for driving the real Claude Code binary.

Every test in this directory is marked ``e2e``.  The binary is
``$CC_CONTINUITY_CLAUDE_BIN``, else the cache ``.ci/install-claude.sh`` fills,
else ``claude`` on PATH; when there is none, every e2e test *fails* with what
to do (a run that skips everything would pass and prove nothing).  The Codex
tests (marker ``codex``) skip, saying how to get one, when no Codex CLI is found,
except under ``CI=true``, where they fail too; so do the Gemini CLI tests (marker
``gemini``) when no Gemini CLI is found.

``CC_E2E_REPEAT=N`` runs every test N times in a row (timing bugs hide in
single runs); each run is its own test id, so the pass count is pytest's.
"""

import os

import pytest

from cc_continuity.rehearse.scripted_model import ScriptedModel
from helpers.codex import CodexSandbox, CodexTui, find_codex_bin
from helpers.gemini import GeminiSandbox, find_gemini_bin
from helpers.gemini_model import GeminiModel
from helpers.responses_model import ResponsesModel

from .harness import CLAUDE_BIN_ENV, ClaudeBinError, ClaudeSandbox, claude_version, find_claude_bin

_HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.fspath).startswith(_HERE + os.sep):
            item.add_marker(pytest.mark.e2e)


def pytest_generate_tests(metafunc):
    repeat = os.environ.get("CC_E2E_REPEAT", "")
    if repeat.isdigit() and int(repeat) > 1 and str(metafunc.definition.fspath).startswith(_HERE + os.sep):
        metafunc.fixturenames.append("e2e_run")
        metafunc.parametrize("e2e_run", range(1, int(repeat) + 1), ids=lambda k: "run%02d" % k)


@pytest.fixture(scope="session")
def claude_bin():
    """Absolute path of the claude executable (fails, loudly, when none is installed)."""
    try:
        path = find_claude_bin()
    except ClaudeBinError as e:
        pytest.fail(str(e))
    if path is None:
        pytest.fail("no Claude Code binary for the e2e suite: set %s, put claude on PATH, or run "
                    "`bash .ci/install-claude.sh` (it needs npm)" % CLAUDE_BIN_ENV)
    return path


@pytest.fixture(scope="session")
def claude_bin_version(claude_bin):
    return claude_version(claude_bin)


@pytest.fixture
def model_factory(tmp_path):
    """``make(scenario=None, log_path=None) -> ScriptedModel`` already started; stopped at teardown."""
    models = []

    def make(scenario=None, log_path=None):
        model = ScriptedModel(scenario, log_path=log_path or tmp_path / ("model-%d.jsonl" % len(models)))
        models.append(model)
        return model.start()

    yield make
    for model in models:
        model.stop()


@pytest.fixture
def sandbox_factory(claude_bin, claude_bin_version):
    """``make(scenario=None, model=None, **kw) -> ClaudeSandbox``; closed (tmux and claude killed) at teardown."""
    sandboxes = []

    def make(scenario=None, **kwargs):
        kwargs.setdefault("version", claude_bin_version)
        sandbox = ClaudeSandbox(claude_bin, scenario=scenario, **kwargs)
        sandboxes.append(sandbox)
        return sandbox

    yield make
    for sandbox in sandboxes:
        sandbox.close()


# -- the Codex CLI (marker codex): its binary, a sandbox on the scripted Responses API, its TUI in tmux --


NO_CODEX = ("no Codex CLI for the codex e2e tests: set CC_CONTINUITY_CODEX_BIN to its binary, e.g. "
            "CC_CONTINUITY_CODEX_BIN=\"$(bash .ci/install-codex.sh | tail -n 1)\" (it needs npm)")


@pytest.fixture(scope="session")
def codex_bin():
    """The Codex CLI binary.  None found: a skip that says how to get one (a Claude Code user's
    `pytest -m e2e` is not an error), except under CI=true, where it fails: CI installs one."""
    return _cli_or_skip(find_codex_bin, NO_CODEX)


def _cli_or_skip(find, missing):
    """``find()``'s path; none: skip saying ``missing`` (under CI=true: fail).  A path set in the
    environment that names no executable (``find`` raises FileNotFoundError) always fails."""
    try:
        path = find()
    except FileNotFoundError as e:  # CC_CONTINUITY_<CLI>_BIN names no executable: a mistake, never skipped
        pytest.fail(str(e))
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    return path


@pytest.fixture
def box(codex_bin, tmp_path):
    """``box(scenario, **sandbox kw)`` -> a CodexSandbox on a started ResponsesModel (stopped at teardown)."""
    models = []

    def make(scenario=None, **kw):
        model = ResponsesModel(scenario, log_path=tmp_path / ("model-%d.jsonl" % len(models))).start()
        models.append(model)
        return CodexSandbox(codex_bin, model, tmp_path / ("box-%d" % len(models)), **kw)

    yield make
    for m in models:
        m.stop()


@pytest.fixture
def tui(box):
    runs = []

    def start(b, *args):
        run = CodexTui(b, *args)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.close()


# -- the Gemini CLI (marker gemini): its executable, sandboxes on the scripted Gemini API --


NO_GEMINI = ("no Gemini CLI for the gemini e2e tests: set CC_CONTINUITY_GEMINI_BIN to its executable, e.g. "
             "CC_CONTINUITY_GEMINI_BIN=\"$(bash .ci/install-gemini.sh | tail -n 1)\" (it needs Node.js >= 20 and "
             "npm), or put gemini on PATH")


@pytest.fixture(scope="session")
def gemini_bin():
    """The Gemini CLI: $CC_CONTINUITY_GEMINI_BIN, else the cache .ci/install-gemini.sh fills, else gemini on
    PATH.  None: a skip that says how to get one, except under CI=true, where it fails: CI installs one."""
    return _cli_or_skip(find_gemini_bin, NO_GEMINI)


@pytest.fixture(scope="module")
def gemini_box(gemini_bin, tmp_path_factory):
    """``make(scenario=None, **sandbox kw)`` -> a GeminiSandbox on its own started GeminiModel.  Module-scoped,
    so a module can share one ``gemini -p`` among its tests; at its end every sandbox is closed (its
    processes killed, its root removed: the model's request log stays next to it) and must have left
    no process behind."""
    made = []

    def make(scenario=None, **kw):
        logs = tmp_path_factory.mktemp("gemini-model")
        model = GeminiModel(scenario, log_path=logs / "model.jsonl").start()
        box = GeminiSandbox(gemini_bin, model, root=tmp_path_factory.mktemp("gemini"), **kw)
        made.append(box)
        return box

    yield make
    left = []
    for box in made:
        left += box.close()
        box.model.stop()
    assert not left, "processes left behind (killed now): %s" % left
