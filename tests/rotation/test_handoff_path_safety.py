"""Issue 10: what sits at the handoff path cannot redirect a write, and a verified handoff is 0600.

PreToolUse auto-allows (no permission prompt) a Write of this session's handoff file; the
machine fallback writes that same path itself.  A symlink or hard link there (a careless
agent's ``ln -s ~/.bashrc handoff.md``), a FIFO, or a checkpoint directory that is a link
or open to others must neither get the auto-allow nor be written through.  The session is
the ladder's *requested* rung (in-process, tests/helpers/ladder.py); PreToolUse, and the Stop a
FIFO must not hang, run as the real hook commands; the verifying Stops run in-process.
"""

import os
import stat
import time

import pytest

from cc_continuity import config, session
from cc_continuity.doctor import system
from cc_continuity.hosts import checkup
from helpers.hookdriver import handoff_text, tokens_at
from helpers.ladder import S1

@pytest.fixture
def drv(requested):
    d = requested.drv
    assert requested.request["decision"] == "block"
    assert d.state(S1)["state"] == session.HANDOFF_REQUESTED
    return d


@pytest.fixture
def victim(tmp_path):
    """A file of the user's that a link at the handoff path would point at."""
    p = tmp_path / "home" / ".bashrc"
    p.write_text("# the user's shell rc\n")
    return p


def write_tool(drv):
    return drv.hook("PreToolUse", S1, tool_name="Write",
                    tool_input={"file_path": drv.handoff_path(S1), "content": "x"})


def allowed(out):
    return ((out or {}).get("hookSpecificOutput") or {}).get("permissionDecision") == "allow"


def test_a_plain_or_missing_handoff_file_is_allowed(drv):
    assert not os.path.exists(drv.handoff_path(S1))
    assert allowed(write_tool(drv))
    cp = os.path.dirname(drv.handoff_path(S1))
    assert stat.S_IMODE(os.lstat(cp).st_mode) == 0o700
    with open(drv.handoff_path(S1), "w") as f:
        f.write("draft\n")
    assert allowed(write_tool(drv))


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "hard link", "fifo", "directory"])
def test_anything_but_a_plain_file_at_the_path_gets_no_auto_allow(drv, victim, kind):
    path = drv.handoff_path(S1)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if kind == "symlink":
        os.symlink(str(victim), path)
    elif kind == "dangling symlink":
        os.symlink(str(victim) + ".not-yet", path)
    elif kind == "hard link":
        os.link(str(victim), path)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        os.mkdir(path)
    assert not allowed(write_tool(drv))
    assert victim.read_text() == "# the user's shell rc\n"


@pytest.mark.parametrize("kind", ["symlinked dir", "open dir"])
def test_a_checkpoint_dir_that_is_a_link_or_open_to_others_gets_no_auto_allow(drv, tmp_path, kind):
    cp = os.path.dirname(drv.handoff_path(S1))
    if os.path.isdir(cp):
        os.rename(cp, cp + ".orig")
    if kind == "symlinked dir":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        os.symlink(str(elsewhere), cp)
    else:
        os.mkdir(cp, 0o700)
        os.chmod(cp, 0o755)
    assert not allowed(write_tool(drv))


def test_past_the_hard_ceiling_a_linked_handoff_is_denied_like_any_other_tool(drv, victim):
    path = drv.handoff_path(S1)
    os.symlink(str(victim), path)
    drv.transcript(S1).assistant(tokens_at(80))
    out = write_tool(drv)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_machine_fallback_replaces_a_link_and_never_writes_through_it(drv, requested, victim):
    path = drv.handoff_path(S1)
    os.symlink(str(victim), path)
    for _ in range(config.DEFAULTS["handoff_max_tries"]):
        requested.stop(S1, stop_hook_active=True)
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert victim.read_text() == "# the user's shell rc\n"
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    with open(path) as f:
        assert f.read().startswith("# Handoff (machine-written)")
    checks_seen = [r for r in drv.ledger(S1, ev="handoff_check")]
    assert any("plain file" in p for r in checks_seen for p in r["problems"]), checks_seen


def test_a_hard_linked_handoff_is_not_validated_nor_chmodded_and_the_target_survives(drv, requested, victim):
    path = drv.handoff_path(S1)
    os.chmod(str(victim), 0o644)
    with open(str(victim), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS))  # a valid handoff, but not in a file of its own
    os.link(str(victim), path)
    for _ in range(config.DEFAULTS["handoff_max_tries"]):
        requested.stop(S1, stop_hook_active=True)
    assert drv.state(S1)["checkpoint"]["degraded"] is True
    assert stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o644
    assert victim.read_text() == handoff_text(config.HANDOFF_SECTIONS)
    assert os.stat(path).st_ino != os.stat(str(victim)).st_ino


def test_a_fifo_at_the_handoff_path_does_not_hang_the_stop_hook(drv):
    path = drv.handoff_path(S1)
    os.mkfifo(path, 0o600)
    t0 = time.monotonic()
    out = drv.hook("Stop", S1, stop_hook_active=True, timeout=30)
    assert time.monotonic() - t0 < 10
    assert out["decision"] == "block" and "plain file" in out["reason"]


def test_a_verified_model_handoff_is_0600_and_doctor_stays_green(drv, requested):
    path = drv.handoff_path(S1)
    old = os.umask(0o022)
    try:
        with open(path, "w") as f:  # what the Write tool leaves: 0644
            f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    requested.stop(S1, stop_hook_active=True)
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["degraded"] is False
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    result = system.check_permissions(checkup.Context(cwd=drv.root))
    assert result.ok, result.detail
