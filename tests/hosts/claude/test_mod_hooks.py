"""The Python side of the plugin's mod (hooks/mod.js -> cc_continuity/hosts/claude/hooks/mod.py).

Each handler under test runs as the mod runs it - the hook entry with JSON on stdin -
for a live stand-in Claude process (the heartbeat is keyed by pid and start time), in a
real git repository.  The rotation that leads up to it climbs the ladder in-process
(tests/helpers/ladder.py; a ModHello that only makes the mod alive is the real handler,
in-process).  The mod's own JavaScript runs against the real binary in
tests/e2e/test_mod_e2e.py.
"""

import json
import os
import subprocess
import sys

import pytest

from cc_continuity import config, meter, session
from cc_continuity.rotation import handover, texts
from helpers.hookdriver import HookDriver, dead_pid, handoff_text, tokens_at
from helpers.ladder import S1, S2


@pytest.fixture
def claude():
    """A live process standing in for Claude Code (its pid and start time are what count)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc.pid
    proc.kill()
    proc.wait()


FILES = {"README.md": "hello\n", "src/app.py": "x = 1\n"}


@pytest.fixture
def lad(make_project, claude):
    """The project on the ladder, its agent the live stand-in."""
    return make_project(files=FILES, claude_pid=claude)


@pytest.fixture
def drv(lad):
    return lad.drv


def mod(drv, handler, sid, **payload):
    return drv.hook(handler, sid, mod={"version": 1}, **payload)


def valid_handoff():
    return handoff_text(config.HANDOFF_SECTIONS, extra={"Goal": "Rewrite the parser; keep the CLI stable.",
                                                        "Files touched": "- `src/app.py` (modified)"})


def to_verified(lad, sid, driver="manual"):
    """Start, cross the rotate level, write a valid handoff, end the turn: verified (the ladder's rungs)."""
    lad.work(sid=sid, prompts=("build the parser",))
    out = lad.request_handoff(sid).request
    assert out and out["decision"] == "block", out
    return lad.verify(valid_handoff(), sid, driver=driver).verified_out


def test_hello_leaves_a_heartbeat_for_this_very_process_and_names_the_runtime_folder(drv, claude):
    out = mod(drv, "ModHello", S1, cwd=drv.root)
    assert out == {"runtime": os.path.join(os.environ["CC_CONTINUITY_HOME"], "runtime")}
    assert handover.mod_alive(claude)
    assert not handover.mod_alive(dead_pid())
    # The same pid after a restart (another start time) is not the process whose mod spoke.
    path = handover._heartbeat_path(claude)
    beat = json.load(open(path))
    beat["started"] -= 5
    json.dump(beat, open(path, "w"))
    assert not handover.mod_alive(claude)


def test_hello_from_a_dead_process_leaves_no_heartbeat(tmp_path):
    gone = HookDriver(tmp_path / "gone", claude_pid=dead_pid())
    mod(gone, "ModHello", S1, cwd=gone.root)
    assert not os.path.exists(os.path.join(os.environ["CC_CONTINUITY_HOME"], "runtime", "mod",
                                           "%d.json" % gone.claude_pid))


def test_turn_end_keeps_the_context_claude_code_computed(lad, drv):
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    assert mod(drv, "ModTurnEnd", S1, usage={"tokens": tokens_at(41), "window": 200000}) is None
    got = meter.load_status_reading(drv.sdir(S1))
    assert (got["session_id"], got["tokens"], got["window"]) == (S1, tokens_at(41), 200000)
    for bad in ({"tokens": True}, {"tokens": "9"}, "x", None):  # nothing else is taken for a reading
        assert mod(drv, "ModTurnEnd", S1, usage=bad) is None
    assert meter.load_status_reading(drv.sdir(S1))["tokens"] == tokens_at(41)


def test_with_the_mod_alive_a_verified_checkpoint_is_offered_to_it_and_taken_once(lad, drv):
    mod(drv, "ModHello", S1, cwd=drv.root)
    assert to_verified(lad, S1, "mod") is None  # nothing asks the user for /clear
    rec = drv.state(S1)
    assert (rec["state"], rec["driver"]) == (session.ROTATING, "mod")
    assert [r["driver"] for r in drv.ledger(S1, ev="driver")] == ["mod"]
    # Offered as a file the mod reads without starting Python.
    with open(handover.handover_file(S1)) as f:
        plan = json.load(f)
    assert plan["session_id"] == S1 and plan["checkpoint"] == rec["checkpoint"]["id"]
    assert drv.root in plan["continuation"] and drv.handoff_path(S1) in plan["continuation"]
    # A mod that could not read the folder asks at its turn's end: it gets the plan, once.
    first = mod(drv, "ModTurnEnd", S1, usage={"tokens": tokens_at(66), "window": 200000})
    assert first["handover"]["continuation"] == plan["continuation"]
    assert handover.handover_holder(S1) == "mod"
    assert mod(drv, "ModTurnEnd", S1, usage={"tokens": tokens_at(66), "window": 200000}) is None


def test_an_offer_the_tmux_rotator_took_is_not_handed_to_the_mod_too(lad, drv):
    lad.mod_hello(S1)
    to_verified(lad, S1, "mod")
    assert handover.take_handover(S1, "tmux")
    assert mod(drv, "ModTurnEnd", S1, usage={"tokens": tokens_at(66), "window": 200000}) is None
    assert handover.handover_holder(S1) == "tmux" and not handover.handover_offered(S1)


def test_without_a_heartbeat_or_with_mod_off_the_driver_is_not_the_mod(lad, drv, make_project, tmp_path):
    out = to_verified(lad, S1)  # no ModHello: no mod in this process
    assert "Type /clear" in out["systemMessage"]
    assert drv.state(S1)["driver"] == "manual"
    assert not handover.handover_offered(S1)
    other = make_project(tmp_path / "other", {"src/app.py": "x = 1\n"}, claude_pid=drv.claude_pid)
    other.drv.config(mod=False)
    mod(other.drv, "ModHello", S2, cwd=other.drv.root)
    to_verified(other, S2)
    assert other.drv.state(S2)["driver"] == "manual" and not handover.handover_offered(S2)


def test_a_failed_hand_over_is_given_back_and_without_a_rotator_the_user_is_asked(lad, drv):
    lad.mod_hello(S1)
    to_verified(lad, S1, "mod")
    assert handover.take_handover(S1, "mod")
    cid = drv.state(S1)["checkpoint"]["id"]
    # The mod pins it under the prompt at once (no turn's end may come to say it), and at every turn's end after.
    said = mod(drv, "ModDone", S1, ok=False, step="clear", error="clear refused")
    assert said == {"notice": texts.type_clear(cid)}
    assert handover.handover_offered(S1) and handover.handover_holder(S1) is None
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    failed = drv.ledger(S1, ev="mod")
    assert failed[-1]["ok"] is False and failed[-1]["error"] == "clear refused"
    assert mod(drv, "ModTurnEnd", S1, usage={"tokens": tokens_at(66), "window": 200000}) == said


def test_a_failed_hand_over_with_a_dead_rotator_behind_it_asks_the_user_too(lad, drv):
    """A rotator was spawned but is gone (it failed, or was killed): nobody would take the hand-over back."""
    lad.mod_hello(S1)
    to_verified(lad, S1, "mod")
    with drv.project.edit(drv.sdir(S1)) as rec:
        rec["rotator_pid"], rec["tmux_socket"], rec["tmux_pane"] = dead_pid(), "/tmp/no-such-socket", "%1"
    assert handover.take_handover(S1, "mod")
    said = mod(drv, "ModDone", S1, ok=False, step="submit", error="submit refused")
    assert said and "Type /clear" in said["notice"]
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR


def test_a_done_hand_over_is_recorded(lad, drv):
    lad.mod_hello(S1)
    to_verified(lad, S1, "mod")
    mod(drv, "ModDone", S1, ok=True, step="submitted", new_session_id=S2, cleared_ms=310, submitted_ms=420)
    rec = drv.ledger(S1, ev="mod")[-1]
    assert (rec["step"], rec["new_session_id"], rec["cleared_ms"], rec["submitted_ms"]) == ("submitted", S2, 310, 420)
    assert drv.state(S1)["state"] == session.ROTATING  # the successor's SessionStart claims it


def test_an_auto_compaction_becomes_a_rotation_with_a_machine_handoff(lad, drv):
    lad.mod_hello(S1)
    lad.work(97, sid=S1, prompts=("port the parser to the new grammar",), text="Reading files.")
    out = mod(drv, "ModCompact", S1, trigger="auto")
    assert out["skip"].startswith("cc-continuity")
    cont = out["handover"]["continuation"]
    assert "port the parser to the new grammar" in cont  # a skipped compaction does not retry the prompt
    rec = drv.state(S1)
    assert (rec["state"], rec["driver"], rec["checkpoint"]["degraded"]) == (session.ROTATING, "mod", True)
    assert handover.handover_holder(S1) == "mod"
    assert [r["step"] for r in drv.ledger(S1, ev="mod")][-2:] == ["compaction_skipped", "handover"]
    # Claude Code asks again (a second compaction attempt): skipped, no second hand-over.
    again = mod(drv, "ModCompact", S1, trigger="auto")
    assert again == {"skip": out["skip"]}


@pytest.mark.parametrize("case", ["manual", "subagent", "repo_off", "user_mod_off"])
def test_compaction_is_left_to_claude_code(lad, drv, case):
    lad.mod_hello(S1)
    lad.said(S1, tokens_at(10))
    lad.start(S1)
    fields = {"trigger": "manual" if case == "manual" else "auto"}
    if case == "subagent":
        fields["agent_id"] = "a1b2"
    if case == "repo_off":
        os.makedirs(os.path.join(drv.root, ".claude"), exist_ok=True)
        with open(os.path.join(drv.root, ".claude", "continuity.json"), "w") as f:
            json.dump({"compact_to_rotation": False}, f)
    if case == "user_mod_off":
        drv.config(mod=False)
    assert mod(drv, "ModCompact", S1, **fields) is None
    assert drv.state(S1)["state"] == session.ACTIVE


def test_status_and_history_say_which_driver_hands_over(lad, drv):
    lad.mod_hello(S1)
    to_verified(lad, S1, "mod")
    rows = json.loads(drv.cli("status", "--json").stdout)["sessions"]
    assert [(r["name"], r["driver"]) for r in rows] == [("proj-001", "mod")]
    assert "driver mod" in drv.cli("status").stdout
    lad.clear(S1, S2, tokens=tokens_at(5))
    hist = json.loads(drv.cli("history", "--json").stdout)["sessions"]
    assert [(r["name"], r["driver"]) for r in hist] == [("proj-001", "mod"), ("proj-002", None)]
    assert "by mod" in drv.cli("history").stdout
