"""The harness drives the real Claude Code: no dialogs, prompts reach the scripted
model, replies (text and tools) land, hooks fire with the tmux pane, /clear
rotates the session id, and ``claude -p`` works."""

import json
import os
import re
import sys
import textwrap

import pytest

pytestmark = pytest.mark.e2e

DIALOG_WORDS = ("trust this folder", "Choose the text style", "Do you want to use this API key",
                "Make auto mode your default", "Select login method", "Press Enter to continue")


def _last_assistant_usage(transcript):
    usage = None
    with open(transcript, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            if entry.get("type") == "assistant" and not entry.get("isSidechain"):
                usage = entry["message"]["usage"]
    return usage


def test_interactive_prompt_hooks_and_clear(sandbox_factory):
    sb = sandbox_factory({
        "rules": [{"when": {"last_user_contains": "hello scripted world"}, "reply": "Reply from the script."}],
        "usage_plan": {"cache_read_input_tokens": {"start": 35000, "step": 1000}, "input_tokens": 10,
                       "cache_creation_input_tokens": 2000, "output_tokens": 20},
    })
    sb.record_hooks(["SessionStart", "SessionEnd", "UserPromptSubmit", "Stop"])

    sb.start_claude()
    screen = sb.screen()
    assert not [w for w in DIALOG_WORDS if w in screen], screen
    assert "accept edits on" in screen  # the sandbox's permission mode, not auto mode
    start = sb.wait_for(lambda: sb.hook_records("SessionStart"), what="SessionStart")[0]
    first_sid = start["payload"]["session_id"]
    assert start["payload"]["source"] == "startup"
    assert start["env"]["TMUX_PANE"] == sb.pane and start["env"]["TMUX"].startswith(sb.socket)

    req = sb.ask("hello scripted world")
    assert req.session_id == first_sid and req.rule == "rules[0]"
    assert "Reply from the script." in sb.screen()
    stop = sb.wait_for(lambda: sb.hook_records("Stop"), what="Stop hook")[0]
    assert stop["payload"]["session_id"] == first_sid
    assert stop["payload"]["last_assistant_message"] == "Reply from the script."
    transcript = stop["payload"]["transcript_path"]
    assert os.path.dirname(transcript) == sb.transcript_dir()
    assert _last_assistant_usage(transcript)["cache_read_input_tokens"] == 35000

    sb.submit("/clear")
    new_start = sb.wait_for(lambda: [r for r in sb.hook_records("SessionStart")
                                     if r["payload"]["source"] == "clear"], what="SessionStart(clear)")[0]
    end = sb.hook_records("SessionEnd")[0]["payload"]
    assert (end["reason"], end["session_id"]) == ("clear", first_sid)
    second_sid = new_start["payload"]["session_id"]
    assert second_sid != first_sid
    sb.wait_idle()

    req2 = sb.ask("second prompt after clear")
    assert req2.session_id == second_sid
    assert not req2.contains("hello scripted world")  # the old conversation is gone
    assert req2.rule == "default" and "Scripted reply 2." in sb.screen()
    assert sb.model.session_ids() == [first_sid, second_sid]


STOP_HOOK = textwrap.dedent('''\
    import json, sys
    payload = json.load(sys.stdin)
    if not payload["stop_hook_active"]:
        print(json.dumps({"decision": "block", "reason": "Write the handoff to %s now."}))
''')


def test_tool_use_and_templated_handoff_write(sandbox_factory):
    sb = sandbox_factory()
    target = os.path.join(sb.root, "handoff.md")
    sb.model.set_scenario({
        "rules": [
            {"name": "note", "when": {"last_user_contains": "make a note"},
             "reply": [{"type": "text", "text": "Writing the note."},
                       {"type": "tool_use", "name": "Write",
                        "input": {"file_path": "{project}/note.txt", "content": "note body\n"}}],
             "then": ["Note written."]},
            {"name": "handoff", "when": {"last_user_contains": "Stop hook feedback"},
             "extract": {"path": r"handoff to (/\S+) now"},
             "reply": [{"type": "tool_use", "name": "Write",
                        "input": {"file_path": "{path}", "content": "{handoff}"}}],
             "then": ["Handoff written."], "times": 1},
        ],
        "vars": {"handoff": "# Handoff\nnext: verify\n", "project": sb.project},
    })
    script = os.path.join(sb.root, "stop_hook.py")
    with open(script, "w") as f:
        f.write(STOP_HOOK % target)
    sb.add_hook("Stop", "'%s' '%s'" % (sys.executable, script))
    sb.record_hooks(["Stop"])

    sb.start_claude()
    sb.ask("please make a note")
    sb.wait_for(lambda: len(sb.hook_records("Stop")) >= 2, what="second Stop")
    sb.wait_idle()

    with open(os.path.join(sb.project, "note.txt")) as f:
        assert f.read() == "note body\n"
    with open(target) as f:
        assert f.read() == "# Handoff\nnext: verify\n"
    assert [r.rule for r in sb.model.main_requests()] == ["note", "then", "handoff", "then"]
    feedback = sb.model.main_requests()[2]
    assert "Stop hook feedback:\nWrite the handoff to %s now." % target in feedback.latest_text
    stops = [r["payload"] for r in sb.hook_records("Stop")]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert stops[-1]["last_assistant_message"] == "Handoff written."


def test_print_mode(sandbox_factory):
    sb = sandbox_factory({"rules": [{"when": {"last_user_contains": "hello"}, "reply": "Printed hello."}]})
    sb.record_hooks(["SessionStart", "Stop"])
    proc = sb.run_print("hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Printed hello."
    (req,) = sb.model.main_requests()
    assert "hello" in req.latest_text and req.session_id
    assert [r["payload"]["session_id"] for r in sb.hook_records("Stop")] == [req.session_id]


def test_exit_and_restart_with_resume(sandbox_factory):
    sb = sandbox_factory()
    sb.record_hooks(["SessionStart", "SessionEnd"])
    sb.start_claude()
    first = sb.ask("remember the word octopus")
    sb.exit_claude()
    assert sb.hook_records("SessionEnd")[-1]["payload"]["reason"] == "prompt_input_exit"

    sb.start_claude(["--resume", first.session_id])
    resumed = sb.wait_for(lambda: [r for r in sb.hook_records("SessionStart")
                                   if r["payload"]["source"] == "resume"], what="SessionStart(resume)")[0]
    assert resumed["payload"]["session_id"] == first.session_id
    again = sb.ask("what was the word")
    assert again.session_id == first.session_id and again.contains("remember the word octopus")


def test_the_claude_binary_is_found_and_answers(claude_bin, claude_bin_version):
    """Which claude the suite drives (also what tests/test_e2e_runner.py runs the runner on)."""
    assert os.path.isabs(claude_bin) and os.access(claude_bin, os.X_OK)
    assert re.match(r"^\d+\.\d+\.\d+", claude_bin_version), claude_bin_version
    print("e2e: claude %s at %s" % (claude_bin_version, claude_bin))
