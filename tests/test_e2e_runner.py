"""``python3 -m pytest -m e2e`` as the README gives it: with a claude on PATH it drives that
one; with none it fails loudly (a run that skips everything would pass and prove nothing).

The runner runs for real on one e2e test that needs only the binary; the
caches .ci/install-claude.sh fills are pointed at an empty dir, so PATH is
all there is.
"""

import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE = "tests/e2e/test_harness_smoke.py::test_the_claude_binary_is_found_and_answers"


def runner(tmp_path, path):
    env = {k: v for k, v in os.environ.items() if k not in ("CC_CONTINUITY_CLAUDE_BIN", "CC_CLAUDE_VERSION")}
    empty = tmp_path / "no-cache"
    empty.mkdir(exist_ok=True)
    env.update(PATH=path, CC_CLAUDE_CACHE=str(empty), XDG_CACHE_HOME=str(empty))
    return subprocess.run([sys.executable, "-m", "pytest", "-m", "e2e", "-q", "-s", "-p", "no:cacheprovider", ONE],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_claude_on_path_is_the_one_driven(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    fake = bindir / "claude"
    fake.write_text("#!/bin/sh\necho \"$@\" >> %s\necho '2.1.328 (Claude Code)'\n" % log)
    fake.chmod(0o755)
    p = runner(tmp_path, "%s:/usr/bin:/bin" % bindir)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "1 passed" in p.stdout and "skipped" not in p.stdout, p.stdout
    assert "e2e: claude 2.1.328 at %s" % fake in p.stdout
    assert log.read_text().split() == ["--version"]


def test_no_claude_anywhere_fails_loudly(tmp_path):
    p = runner(tmp_path, "/usr/bin:/bin")
    assert p.returncode != 0, p.stdout
    assert "no Claude Code binary for the e2e suite" in p.stdout, p.stdout[-2000:]
    assert "put claude on PATH" in p.stdout and "install-claude.sh" in p.stdout
    assert "skipped" not in p.stdout.splitlines()[-1], p.stdout


CODEX_ONE = "tests/e2e/test_codex_headless_e2e.py::test_the_headless_chain_rotates_three_times_with_no_typing"


def codex_runner(tmp_path, **env_extra):
    """The README's Claude-only machine: no CC_CONTINUITY_CODEX_BIN and an empty Codex cache."""
    return cli_runner(tmp_path, "CODEX", CODEX_ONE, **env_extra)


def cli_runner(tmp_path, cli, one, **env_extra):
    """``pytest -m e2e <one>`` with no CC_CONTINUITY_<cli>_BIN, no CI and an empty CC_<cli>_CACHE."""
    env = {k: v for k, v in os.environ.items() if k not in ("CC_CONTINUITY_%s_BIN" % cli, "CI")}
    empty = tmp_path / ("no-" + cli.lower())
    empty.mkdir(exist_ok=True)
    env.update({"CC_%s_CACHE" % cli: str(empty)}, **env_extra)
    return subprocess.run([sys.executable, "-m", "pytest", "-m", "e2e", "-q", "-rs", "-p", "no:cacheprovider",
                           one], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_no_codex_skips_the_codex_tests_and_says_how_to_get_one(tmp_path):
    # Before: `pytest -m e2e` with no Codex CLI errored in every Codex test (28 errors).
    p = codex_runner(tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    last = p.stdout.strip().splitlines()[-1]
    # (its one test, run under two sandbox modes)
    assert "2 skipped" in last and "error" not in last and "failed" not in last, p.stdout
    assert "SKIPPED" in p.stdout and "CC_CONTINUITY_CODEX_BIN" in p.stdout and ".ci/install-codex.sh" in p.stdout


def test_no_codex_under_ci_fails(tmp_path):
    p = codex_runner(tmp_path, CI="true")
    assert p.returncode != 0, p.stdout
    assert "no Codex CLI for the codex e2e tests" in p.stdout and "skipped" not in p.stdout.splitlines()[-1]


def test_a_codex_bin_that_is_no_executable_fails_even_outside_ci(tmp_path):
    p = codex_runner(tmp_path, CC_CONTINUITY_CODEX_BIN=str(tmp_path / "nothing"))
    assert p.returncode != 0 and "is not an executable file" in p.stdout, p.stdout[-2000:]


GEMINI_ONE = "tests/e2e/test_gemini_contract_e2e.py::test_an_untrusted_folder_exits_55_before_any_hook"
NO_GEMINI_PATH = "/usr/bin:/bin"  # the Gemini CLI's last resort is `gemini` on PATH


@pytest.mark.skipif(shutil.which("gemini", path=NO_GEMINI_PATH) is not None, reason="a gemini on the system PATH")
@pytest.mark.parametrize("extra, fails", [({}, False), ({"CI": "true"}, True),
                                          ({"CC_CONTINUITY_GEMINI_BIN": "/nonexistent/gemini"}, True)],
                         ids=["skips", "fails-under-ci", "fails-on-a-bad-bin"])
def test_no_gemini_cli_skips_saying_how_except_under_ci(tmp_path, extra, fails):
    p = cli_runner(tmp_path, "GEMINI", GEMINI_ONE, PATH=NO_GEMINI_PATH, **extra)
    last = p.stdout.strip().splitlines()[-1]
    if fails:
        assert p.returncode != 0 and "skipped" not in last, p.stdout[-2000:]
        assert ("is not an executable file" if extra.get("CC_CONTINUITY_GEMINI_BIN")
                else "no Gemini CLI for the gemini e2e tests") in p.stdout, p.stdout[-2000:]
    else:
        assert p.returncode == 0 and "1 skipped" in last, p.stdout[-2000:] + p.stderr[-2000:]
        assert "CC_CONTINUITY_GEMINI_BIN" in p.stdout and ".ci/install-gemini.sh" in p.stdout
