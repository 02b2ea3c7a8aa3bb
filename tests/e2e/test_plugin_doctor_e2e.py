"""A real plugin install: ``doctor`` on it (``claude plugin test`` says whether mods load; a
settings install on top, every event twice, is caught and mended), and a whole rotation run with
both wirings at once, where each event must still be handled once."""

import collections
import json
import re
import sys

import pytest

from cc_continuity.install import settings as install_settings
from cc_continuity.rehearse import CONTINUATION, rotation_scenario

from .common import ADDITIONAL, Continuity, first_request, plugin_sandbox, prompt, text_blocks

pytestmark = pytest.mark.e2e
PLUGIN = "cc-continuity@cc-continuity-local"


def idle(project):
    return {"rules": []}


def doctor(sb):
    proc = sb.cli("doctor", "--json", timeout=180)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return {row["name"]: row for row in json.loads(proc.stdout)}


def test_a_plugin_install_is_green_where_it_matters(sandbox_factory):
    sb = plugin_sandbox(sandbox_factory, idle)
    rows = doctor(sb)
    for name in ("plugin", "hooks", "hook-probe", "mod", "skills", "skill-shell", "app-copy"):
        assert rows[name]["ok"], rows[name]
    assert PLUGIN in rows["plugin"]["detail"] and "by the plugin" in rows["hooks"]["detail"]
    assert rows["mod"]["detail"].startswith("mods can load here")
    assert "the hook ran" in rows["hook-probe"]["detail"]  # the plugin's own command, run for real


def test_mods_turned_off_are_reported_and_rotation_falls_back(sandbox_factory):
    sb = plugin_sandbox(sandbox_factory, idle, mods_off=True)
    rows = doctor(sb)
    assert not rows["mod"]["ok"] and "rollout switch served off" in rows["mod"]["detail"], rows["mod"]
    assert "fall back to tmux" in rows["mod"]["detail"]
    assert rows["hooks"]["ok"], rows["hooks"]  # the classic hooks still run


def test_settings_hooks_beside_the_plugin_are_double_wiring_and_install_mends_it(sandbox_factory):
    sb = plugin_sandbox(sandbox_factory, idle)
    doc = sb.settings()
    rendered = install_settings.render_fragment(install_settings.load_fragment(), "/usr/bin/python3",
                                                sb.cc_home + "/app")
    doc["hooks"] = rendered["hooks"]  # what an older settings-only install left
    sb.write_settings(doc)
    rows = doctor(sb)
    assert not rows["hooks"]["ok"] and "double wiring" in rows["hooks"]["detail"], rows["hooks"]
    assert "cc-continuity install" in rows["hooks"]["fix"] and PLUGIN in rows["hooks"]["fix"]
    proc = sb.cli("install", "--no-wrapper", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "from the plugin" in proc.stdout
    assert not install_settings.has_ours({"hooks": sb.settings().get("hooks", {})})
    assert doctor(sb)["hooks"]["ok"]


TASK_TWICE = "Double wiring task: keep a work log"


def test_with_both_wirings_each_event_is_handled_once(sandbox_factory):
    """Claude Code runs the plugin's hooks and settings.json's side by side, with the same stdin."""
    sb = plugin_sandbox(sandbox_factory, lambda p: rotation_scenario(p, rotations=1, task=TASK_TWICE))
    doc = sb.settings()
    doc["hooks"] = install_settings.render_fragment(install_settings.load_fragment(), sys.executable,
                                                    sb.cc_home + "/app")["hooks"]
    sb.write_settings(doc)
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_TWICE)
    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=120)
    assert cont.record(1)["state"] == "ROTATED" and done.session_id == cont.record(2)["session_id"]
    handled, twins = collections.Counter(), collections.Counter()
    for line in cont.hooks_log().splitlines():
        m = re.match(r"\S+ (\S+) sid=\S+ \S+ (.*)$", line)
        if m and not m.group(1).startswith("Mod"):
            (twins if m.group(2).startswith("duplicate") else handled)[m.group(1)] += 1
    assert twins, "no call came twice: was the settings wiring live?"
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert twins[event] and twins[event] == handled[event], (event, handled, twins)
    assert [r["text"] for r in cont.events(1, "prompt")] == [TASK_TWICE]
    assert len(cont.events(1, "checkpoint")) == 1
    boots = [t for _, t in text_blocks(first_request(sb, done.session_id)) if ADDITIONAL + CONTINUATION in t]
    assert len(boots) == 1, "the bootstrap reached the successor %d times" % len(boots)
