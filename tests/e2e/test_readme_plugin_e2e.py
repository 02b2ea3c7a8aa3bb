"""README's plugin route as written: its `claude plugin` lines, run in a folder holding the clone at
``./cc-continuity``, install the plugin; the copy Claude Code makes carries the ``cc-continuity``
command and no bytecode; uninstall then names that copy, which Claude Code keeps."""

import glob
import os
import re
import sys

import pytest

from .harness import REPO_ROOT
from .test_marketplace_e2e import snapshot

pytestmark = pytest.mark.e2e


def readme_plugin_lines():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```sh\n(.*?)```", f.read(), re.S)
    first = next(b for b in blocks if "claude plugin " in b)  # the first screen's, before "As a Claude Code plugin"
    lines = [line for line in first.splitlines() if line.startswith("claude plugin ")]
    assert len(lines) == 2 and lines[0] == "claude plugin marketplace add ./cc-continuity", lines
    return lines


def test_the_readme_plugin_lines_install_it_from_a_clone_as_written(sandbox_factory, tmp_path):
    sb = sandbox_factory()
    where = tmp_path / "work"
    snapshot(str(where / "cc-continuity"))
    for line in readme_plugin_lines():
        p = sb.run([sb.claude_bin, *line.split()[1:]], cwd=str(where), timeout=180)
        assert p.returncode == 0, (line, p.stdout + p.stderr)
    copies = glob.glob(os.path.join(sb.home, ".claude", "plugins", "cache", "*", "cc-continuity", "*"))
    assert len(copies) == 1, copies
    assert not [d for d, dirs, _ in os.walk(copies[0]) if "__pycache__" in dirs]
    launcher = os.path.join(copies[0], "bin", "cc-continuity")
    p = sb.run([launcher, "--version"], timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("cc-continuity "), p.stdout + p.stderr
    out = sb.run([sys.executable, "-m", "cc_continuity", "uninstall"], env={"PYTHONPATH": REPO_ROOT}, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "plugin: cc-continuity@cc-continuity uninstalled" in out.stdout, out.stdout
    shown = "~" + copies[0][len(sb.home):]
    assert "plugin: Claude Code keeps its cached copy %s (" % shown in out.stdout, out.stdout
    assert os.path.isdir(copies[0])  # Claude Code's, to delete later
