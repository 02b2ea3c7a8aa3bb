"""Every hook fired twice at once, as Claude Code does when a plugin and settings.json both wire us.

Claude Code does not deduplicate a plugin's hooks against settings.json's; each
event then reaches us as two processes started together with the same stdin.
``install`` and ``doctor`` catch the double wiring; until it is mended, each call
must still be handled once (``cc_continuity/hosts/claude/hooks``: ``first``).  A whole rotation fired
that way must leave the ledger and the state a single wiring leaves, and each
answer (a block, a bootstrap, a note) exactly once.
"""

import json
import os
import re
import subprocess

from cc_continuity import config, session
from cc_continuity.hosts.claude import hooks as once
from helpers.hookdriver import HookDriver, compact, handoff_text, tokens_at
from helpers import REPO

S1 = "a7a7a7a7-0000-4000-8000-000000000001"
S2 = "b8b8b8b8-0000-4000-8000-000000000002"
S3 = "c9c9c9c9-0000-4000-8000-000000000003"
S4 = "d0d0d0d0-0000-4000-8000-000000000004"
PLUGIN_ROOT = REPO
VOLATILE = {"ts", "prev", "n", "prompt_id", "ms", "waited_ms", "session_id", "sha256", "pid", "at", "took_ms",
            "requested_at", "chars", "commit", "tree", "ref", "snapshot_ms",
            "age_s", "snapshot"}  # (revalidation: the checkpoint's age, its ref names the project key)


def fire(drv, twins, event, sid, **fields):
    """Run ``event`` once, or as two processes with the same stdin; the answers that were not empty."""
    raw = compact(drv.payload(event, sid, **fields)).encode()
    wirings = [drv.env(sid), drv.env(sid, CLAUDE_PLUGIN_ROOT=PLUGIN_ROOT)][:twins]  # settings.json, the plugin
    procs = [subprocess.Popen(drv.command(event), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, cwd=drv.root) for env in wirings]
    for p in procs:
        p.stdin.write(raw)
    for p in procs:
        p.stdin.close()
    answers = []
    for p in procs:
        out, err = p.stdout.read(), p.stderr.read()
        assert p.wait(timeout=60) == 0 and not err, (event, err)
        if out:
            answers.append(drv._stop_request(json.loads(out)) if event == "Stop" else json.loads(out))
    return answers


def rotation(drv, twins, S1, S2):
    """A manual rotation (no tmux) with a tool call, a late prompt and a handoff retry."""
    answers = []
    sections = config.HANDOFF_SECTIONS
    t = drv.transcript(S1)
    t.assistant(tokens_at(10))
    answers += fire(drv, twins, "SessionStart", S1, source="startup")
    answers += fire(drv, twins, "UserPromptSubmit", S1, prompt="build the parser")
    answers += fire(drv, twins, "PreToolUse", S1, tool_use_id="toolu_a1")
    t.assistant(tokens_at(40))
    answers += fire(drv, twins, "PostToolUse", S1, tool_use_id="toolu_a1")
    t.assistant(tokens_at(65), "Step finished.")
    answers += fire(drv, twins, "Stop", S1, prompt_id="p-1")
    answers += fire(drv, twins, "UserPromptSubmit", S1, prompt="LATE also handle empty input")
    with open(drv.handoff_path(S1), "w") as f:
        f.write("# Handoff\n## Goal\ntoo short\n")
    t.assistant(tokens_at(66), "Handoff written.")
    answers += fire(drv, twins, "Stop", S1, prompt_id="p-2", stop_hook_active=True)
    with open(drv.handoff_path(S1), "w") as f:
        f.write(handoff_text(sections, extra={"Goal": "Rewrite the parser; keep the CLI stable."}))
    t.assistant(tokens_at(67), "Handoff fixed.")
    answers += fire(drv, twins, "Stop", S1, prompt_id="p-2", stop_hook_active=True)
    answers += fire(drv, twins, "SessionEnd", S1, reason="clear")
    drv.transcript(S2).assistant(tokens_at(12))
    answers += fire(drv, twins, "SessionStart", S2, source="clear")
    answers += fire(drv, twins, "UserPromptSubmit", S2, prompt="go on")
    return answers


def story(drv, sid):
    """The ledger with what differs between two runs (times, ids, hashes) left out."""
    rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in drv.ledger(sid)]
    for r in rows:  # a revalidation's reason names the checkpoint's age ("... 1 s ago"): a time too
        if isinstance(r.get("reason"), str):
            r["reason"] = re.sub(r"\b\d+ (?:s|min|h \d+ min|days) ago\b", "N ago", r["reason"])
    return rows


def test_a_rotation_fired_twice_is_the_rotation_fired_once(tmp_path):
    files = {"README.md": "hello\n", "src/app.py": "x = 1\n"}
    once_drv = HookDriver(tmp_path / "one" / "proj", files=files)
    twice_drv = HookDriver(tmp_path / "two" / "proj", files=files)
    single = rotation(once_drv, 1, S3, S4)  # other session ids: the markers are per session
    double = rotation(twice_drv, 2, S1, S2)
    kinds = lambda answers: [sorted(a.get("hookSpecificOutput", a)) for a in answers]
    assert kinds(double) == kinds(single)  # each block, bootstrap and note exactly once
    assert [a.get("decision") for a in double].count("block") == 2
    for twice_sid, once_sid in ((S1, S3), (S2, S4)):
        assert story(twice_drv, twice_sid) == story(once_drv, once_sid)
    old = twice_drv.state(S1)
    assert old["state"] == session.ROTATED and old["checkpoint"]["tries"] == 2
    assert [r["text"] for r in twice_drv.ledger(S1, ev="prompt")] == ["build the parser",
                                                                      "LATE also handle empty input"]
    dupes = [o for e, sid8, ms, o in twice_drv.log_entries() if o.startswith("duplicate") and sid8 in (S1[:8], S2[:8])]
    assert len(dupes) == 11  # one twin of each of the 11 calls stood down


def test_a_twin_comes_through_the_other_wiring_a_repeat_through_the_same():
    raw = b'{"hook_event_name":"Stop","last_assistant_message":"Done."}'
    plugin, settings = "/home/u/.claude/plugins/cache/x/cc-continuity/0.1.0", "settings"
    # One wiring: the same bytes again (the model said "Done." again after a block) is handled again.
    assert once.first("Stop", S1, {}, raw, settings)
    assert once.first("Stop", S1, {}, raw, settings)
    # Two wirings, in either order, over three genuine repeats: each handled once.
    handled = []
    for order in ((plugin, settings), (settings, plugin), (plugin, settings)):
        handled.append([once.first("Stop", S2, {}, raw, w) for w in order])
    assert handled == [[True, False]] * 3  # whichever copy comes first handles it
    # Keyed calls: one id, one call, from any wiring, however late.
    assert once.first("PostToolUse", S1, {"tool_use_id": "toolu_1"}, b"a", settings)
    assert not once.first("PostToolUse", S1, {"tool_use_id": "toolu_1"}, b"b", plugin)
    assert not once.first("PostToolUse", S1, {"tool_use_id": "toolu_1"}, b"b", settings)
    assert once.first("PostToolUse", S1, {"tool_use_id": "../../etc"}, b"c")  # not a name: counted by digest
    assert not any(".." in name or "/" in name for name in os.listdir(once.once_dir()))
    # The mod's calls come from one place only: never stood down.
    assert once.first("ModTurnEnd", S1, {}, raw, plugin) and once.first("ModTurnEnd", S1, {}, raw, settings)


def test_twins_racing_in_many_processes_are_handled_once_per_repeat():
    code = ("import sys, time; from cc_continuity.hosts.claude import hooks as once; t = float(sys.argv[1])\n"
            "while time.time() < t: pass\n"
            "print(once.first('Stop', sys.argv[2], {}, b'same bytes', sys.argv[3]))")
    import sys
    import time

    for round_ in range(8):
        start = time.time() + 0.3
        procs = [subprocess.Popen([sys.executable, "-c", code, str(start), S3, w], stdout=subprocess.PIPE, text=True)
                 for w in ("settings", "/plugin/root")]
        won = [p.communicate(timeout=20)[0].strip() == "True" for p in procs]
        assert sum(won) == 1, (round_, won)


def test_old_markers_are_swept_and_a_broken_folder_never_drops_a_call():
    import shutil
    import time

    assert once.first("PreToolUse", S1, {"tool_use_id": "t1"}, b"")
    assert once.sweep(now=time.time() + once.KEEP_S + 1) == 1
    shutil.rmtree(once.once_dir())
    with open(once.once_dir(), "w") as f:  # not a folder: nothing can be marked
        f.write("x")
    assert once.first("PreToolUse", S1, {"tool_use_id": "t2"}, b"")
    assert once.first("PreToolUse", S1, {"tool_use_id": "t2"}, b"")  # cannot tell: it runs


def test_startup_sweeps_old_markers_and_hand_overs(tmp_path):
    import time

    from cc_continuity.rotation import handover

    assert once.first("PreToolUse", S1, {"tool_use_id": "old"}, b"")
    handover.offer_handover(S1, {"n": 1})
    old = time.time() - 7 * 24 * 3600
    for path in (os.path.join(once.once_dir(), os.listdir(once.once_dir())[0]), handover.handover_file(S1)):
        os.utime(path, (old, old))
    assert once.first("PreToolUse", S1, {"tool_use_id": "new"}, b"")
    drv = HookDriver(tmp_path / "proj")
    drv.transcript(S2).assistant(tokens_at(5))
    drv.hook("SessionStart", S2, source="startup")
    left = os.listdir(once.once_dir())
    assert not any(".old" in n for n in left) and any(".new" in n for n in left)
    assert not handover.handover_offered(S1)


def test_a_prompt_typed_during_a_turn_is_not_taken_for_a_twin():
    """2.1.332 gives a prompt submitted while a turn runs that turn's prompt_id: two prompts, one id."""
    first = {"prompt_id": "p-running", "prompt": "Continuing from cp-001 ..."}
    typed = {"prompt_id": "p-running", "prompt": "also add a changelog entry"}
    raw = lambda p: json.dumps(p).encode()
    assert once.first("UserPromptSubmit", S1, first, raw(first))
    assert once.first("UserPromptSubmit", S1, typed, raw(typed))  # a prompt of its own: handled
    # Its twin through the other wiring still stands down.
    assert not once.first("UserPromptSubmit", S1, typed, raw(typed), wiring="/plugin/root")
