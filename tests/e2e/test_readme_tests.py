"""The README's second line, exactly as written, in a fresh clone, a fresh HOME, on the distribution's Python.

``/usr/bin/python3`` here is Debian 12's (PEP 668: a plain ``pip install`` is refused), the
interpreter a new contributor has.  The line makes its own virtualenv under HOME, outside
the checkout, installs the dev extras from pip's configured index or wheelhouse, and runs
the default suite, which must pass.  That inner run skips this test (e2e is not in the
default suite, and ``CC_CONTINUITY_README_INNER`` says so too).  Claude Code plays no part:
it runs once, with the pinned version.
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from .harness import PINNED_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM_PYTHON = "/usr/bin/python3"
INNER = "CC_CONTINUITY_README_INNER"

sys.path.insert(0, os.path.join(ROOT, "tests"))
from test_readme_install import system_python_ok  # noqa: E402


def readme_second_line():
    with open(os.path.join(ROOT, "README.md")) as f:
        block = f.read().split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()][1]


@pytest.mark.skipif(os.environ.get(INNER) == "1", reason="this is the run README line 2 started")
@pytest.mark.skipif(not system_python_ok(), reason="needs a system /usr/bin/python3 >= 3.11")
def test_readme_second_line_in_a_fresh_clone_on_the_system_python(tmp_path, claude_bin_version):
    if claude_bin_version != PINNED_VERSION:
        pytest.skip("needs no Claude Code: runs once, with the pinned %s" % PINNED_VERSION)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", ROOT, str(clone)], check=True, timeout=120)
    home = tmp_path / "fresh"
    home.mkdir()
    bindir = tmp_path / "sysbin"
    bindir.mkdir()
    os.symlink(SYSTEM_PYTHON, bindir / "python3")  # `python3` is the distribution's, whatever pyenv says
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "LC_ALL", "TERM")}
    env = dict(keep, HOME=str(home), SHELL="/bin/bash", PATH="%s:/usr/local/bin:/usr/bin:/bin" % bindir,
               **{INNER: "1"})
    line = readme_second_line()
    t0 = time.monotonic()
    p = subprocess.run(["bash", "-c", line], cwd=str(clone), env=env, capture_output=True, text=True,
                       timeout=1800, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    assert p.returncode == 0, "%r failed after %.0f s:\n%s\n%s" % (line, took, p.stdout[-5000:], p.stderr[-3000:])
    summary = [s for s in p.stdout.splitlines() if " passed" in s][-1]
    assert "failed" not in summary and "error" not in summary, summary
    # (its path must not name our package: the stand-in claudes of the inner suite have it in their
    # shebang, and realclaude takes a script naming cc-continuity for a shim of ours)
    venv = home / ".venvs" / "continuity-dev"
    assert (venv / "bin" / "python").exists(), "the line's virtualenv is under HOME"
    assert not any(n.startswith((".venv", "venv")) for n in os.listdir(clone)), "nothing of it in the checkout"
    print("README line 2: %s in %.0f s" % (summary.strip("= "), took))
    shutil.rmtree(venv)
