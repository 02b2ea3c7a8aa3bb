"""The hook and status-line entries under every supported Python found here (3.11 and newer).

The fast path imports interpreter builtins (``posix``, the SHA-256 module) that
moved between versions; a hook that cannot import fails open, silently, so only
running it under each interpreter shows it works.
"""

import os
import shutil
import subprocess
import sys

import pytest

from helpers.hookdriver import HookDriver, tokens_at
from helpers.transcripts import hook_command

S1 = "f6f6f6f6-0000-4000-8000-000000000001"


def interpreters():
    """{"3.x": path} of each Python 3.11+ on PATH or under pyenv (whose shims may refuse to run)."""
    import glob

    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [shutil.which("python3.%d" % minor) for minor in range(11, 16)] + [sys.executable]
    candidates += sorted(glob.glob(os.path.join(pyenv, "versions", "3.*", "bin", "python3")))
    found = {}
    for path in candidates:
        if not path:
            continue
        try:
            out = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and tuple(map(int, out.stdout.split("."))) >= (3, 11):
            found.setdefault(out.stdout.strip(), path)
    return sorted(found.items())


PYTHONS = interpreters()


def test_the_running_interpreter_is_among_them():
    assert "%d.%d" % sys.version_info[:2] in dict(PYTHONS)


@pytest.mark.parametrize("version, python", PYTHONS, ids=[v for v, _ in PYTHONS])
def test_hooks_and_status_line_work_under(tmp_path, version, python):
    drv = HookDriver(tmp_path / "proj")
    drv.command = lambda event: hook_command(event, python)
    drv.transcript(S1).assistant(tokens_at(10))
    assert drv.hook("SessionStart", S1, source="startup") is None
    drv.hook("UserPromptSubmit", S1, prompt="hello")
    drv.hook("PreToolUse", S1)
    drv.hook("PostToolUse", S1)
    drv.transcript(S1).assistant(tokens_at(60), "Done.")
    out = drv.hook("Stop", S1)  # past warn: the user is told, nothing blocks
    assert drv.state(S1)["state"] == "WARNED", out
    outcomes = [o for _, _, _, o in drv.outcomes]
    assert not any(o.startswith(("error", "duplicate")) for o in outcomes), outcomes
    line = drv.statusline(S1, 60, python=python)
    assert "60%" in line and "proj-001" in line, line
