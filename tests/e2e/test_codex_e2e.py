"""The real Codex CLI 0.171.0 offline against the scripted Responses API: the pieces a rotation needs.

Each test is a throwaway HOME and CODEX_HOME (tests/helpers/codex.py) and its own
ResponsesModel; ``codex exec`` runs with the hooks' trust bypassed unless the test is
about trust.  The readers under test are cc_continuity/hosts/codex/.
CI: ``CC_CONTINUITY_CODEX_BIN=<.ci/install-codex.sh> python3 -m pytest -m 'e2e and codex'``.
"""

import json
import os
import shutil

import pytest

from cc_continuity.hosts.codex import rollout, wire
from helpers.codex import find_codex_bin, ok

pytestmark = pytest.mark.codex
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "codex")
ALL = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop",
       "SessionEnd")
TOOL = {"name": "tool", "when": {"latest_contains": "please run a tool"},
        "reply": [{"type": "exec_command", "cmd": "echo hello-from-tool > tool-ran.txt && pwd"}],
        "then": ["Tool done."]}


def reading_at(b, call):
    """The rollout's reading as it was when the hook ``call`` ran (the probe noted its flushed size)."""
    with open(call["payload"]["transcript_path"], "rb") as f:
        head = f.read(call["transcript_size"])
    snap = os.path.join(b.root, "at-%s.jsonl" % call["event"])
    with open(snap, "wb") as f:
        f.write(head)
    return rollout.read_rollout(snap)["tokens"]


def test_a_text_and_tool_turn_runs_offline_and_the_readers_read_it(box):
    b = box({"rules": [TOOL]})
    b.install_probe(ALL)
    p = ok(b.exec("please run a tool"))
    assert p.stdout.strip().splitlines()[-1] == "Tool done."
    assert open(os.path.join(b.work, "tool-ran.txt")).read() == "hello-from-tool\n", "the command really ran"
    main = b.model.requests(kind="main")
    assert len(main) == 2 and main[0].metadata["request_kind"] == "turn"
    assert "exec_command" in main[0].tools
    assert main[1].latest_text.rstrip().endswith(b.work), "the follow-up carries the command's output"
    assert main[0].messages("user")[-1] == "please run a tool"
    # The meter's reading is the last request's usage, of the effective window.
    (path,) = b.rollouts()
    got = rollout.read_rollout(path)
    assert got["tokens"] == main[-1].usage["total_tokens"] and got["window"] == rollout.effective_window(20000)
    # Every payload parses, each event with exactly the keys the recorded fixture has (a new
    # or lost key in a later binary shows here).
    calls = b.hook_calls()
    assert [c["event"] for c in calls] == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                                           "SessionEnd"]
    with open(os.path.join(DATA, "hook-payloads.jsonl")) as f:
        keys = {}
        for line in f:
            c = json.loads(line)
            keys.setdefault(c["event"], set(c["payload"]))
    for c in calls:
        parsed = wire.parse(json.dumps(c["payload"]), expect=c["event"])
        assert parsed["session_id"] == main[0].thread_id and parsed["transcript_path"] == path
        assert set(c["payload"]) == keys[c["event"]], c["event"]
        assert c["env"]["CODEX_HOME"] == b.codex_home
    assert wire.parse(json.dumps(calls[2]["payload"]))["command"] == TOOL["reply"][0]["cmd"]
    # At PreToolUse and PostToolUse the rollout reads as the request that called the tool, at Stop as the last.
    for call, req in zip(calls[2:5], (main[0], main[0], main[1])):
        assert reading_at(b, call) == req.usage["total_tokens"], call["event"]


def test_untrusted_hooks_are_skipped_silently_in_exec(box):
    b = box({"rules": [TOOL]})
    b.install_probe(ALL)
    p = ok(b.exec("please run a tool", bypass_trust=False))
    assert p.stdout.strip().splitlines()[-1] == "Tool done."
    assert b.hook_calls() == [] and "hook: Stop" not in p.stderr
    assert "hook: Stop" in ok(b.exec("please run a tool")).stderr, "trust bypassed, the same table runs"
    assert [c["event"] for c in b.hook_calls()][-1] == "SessionEnd"


def test_a_stop_block_continues_the_turn_with_the_reason_and_the_reading_is_flushed_first(box):
    reason = "Context at rotate: write the handoff to HANDOFF.md, then stop."
    b = box({"rules": [{"name": "handoff", "when": {"latest_contains": "write the handoff to HANDOFF.md"},
                        "reply": [{"type": "exec_command", "cmd": "printf 'goal: demo\\n' > HANDOFF.md"}],
                        "then": ["Handoff written."]}],
             "default": {"reply": "First answer."}})
    b.install_probe(["Stop"])
    b.script_replies("Stop", [json.loads(wire.block_stop(reason)), None])
    p = ok(b.exec("do the work"))
    assert p.stdout.strip().splitlines()[-1] == "Handoff written."
    assert open(os.path.join(b.work, "HANDOFF.md")).read() == "goal: demo\n"
    stops = [wire.parse(json.dumps(c["payload"])) for c in b.hook_calls("Stop")]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert [s["last_assistant_message"] for s in stops] == ["First answer.", "Handoff written."]
    assert len({s["turn_id"] for s in stops}) == 1, "the same turn went on"
    main = b.model.requests(kind="main")
    assert len(main) == 3
    hook_prompt = main[1].messages("user")[-1]
    assert hook_prompt.startswith("<hook_prompt") and reason in hook_prompt, hook_prompt
    # At each Stop the rollout already held the reading of the request that ended there.
    for call, req in zip(b.hook_calls("Stop"), (main[0], main[2])):
        assert reading_at(b, call) == req.usage["total_tokens"]


def test_pre_tool_use_deny_blocks_the_command_and_tells_the_model(box):
    b = box({"rules": [TOOL]})
    b.install_probe(["PreToolUse"])
    b.script_replies("PreToolUse", [json.loads(wire.deny_tool("PAST-HARD: write the handoff first"))])
    ok(b.exec("please run a tool"))
    assert not os.path.exists(os.path.join(b.work, "tool-ran.txt")), "the command did not run"
    out = b.model.requests(kind="main")[1].latest_text
    assert "Command blocked by PreToolUse hook: PAST-HARD: write the handoff first" in out, out


def test_additional_context_arrives_as_developer_messages_before_the_prompt(box):
    b = box({"default": {"reply": "ok"}})
    b.install_probe(["SessionStart", "UserPromptSubmit"])
    b.script_replies("SessionStart", [json.loads(wire.add_context("SessionStart", "INJECT-SS <handoff>goal</handoff>"))])
    b.script_replies("UserPromptSubmit", [json.loads(wire.add_context("UserPromptSubmit", "INJECT-UPS"))])
    ok(b.exec("the prompt"))
    (req,) = b.model.requests(kind="main")
    dev = req.messages("developer")
    assert any("INJECT-SS <handoff>goal</handoff>" in d for d in dev) and any("INJECT-UPS" in d for d in dev)
    texts = [json.dumps(it) for it in req.input]
    at = lambda needle: next(i for i, t in enumerate(texts) if needle in t)
    assert at("INJECT-SS") < at("the prompt") < at("INJECT-UPS"), "SessionStart's before the prompt, the prompt's after"


@pytest.mark.parametrize("size, limit, whole", [(10000, None, True), (10008, None, False), (20000, 5000, True)])
def test_the_injection_limit_is_2500_tokens_of_4_bytes_unless_the_hook_raises_it(box, size, limit, whole):
    text = "H" + "x" * (size - 2) + "T"
    b = box({"default": {"reply": "ok"}})
    b.install_probe(["SessionStart"], extra={"SessionStart": {"additionalContextLimit": limit}} if limit else None)
    b.script_replies("SessionStart", [json.loads(wire.add_context("SessionStart", text))])
    ok(b.exec("the prompt"))
    (req,) = b.model.requests(kind="main")
    dev = "\n".join(req.messages("developer"))
    assert wire.fits_injection(text, limit or wire.INJECT_LIMIT_TOKENS) is whole
    assert (text in dev) is whole
    if not whole:
        assert "truncated" in dev and "original token count: %d" % wire.approx_tokens(text) in dev, dev[-500:]
        spilled = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(b.root, "tmp")) for f in fs]
        assert any(open(f).read() == text for f in spilled), "the whole text is spilled under $TMPDIR"


@pytest.mark.parametrize("last_total, compacts", [(17999, False), (18000, True)])
def test_before_a_turn_compaction_starts_at_90_percent_of_the_configured_window(box, last_total, compacts):
    b = box({"default": {"reply": "ok", "usage": {"input_tokens": last_total - 17, "output_tokens": 17}},
             "compact_summary": "SUMMARY-X"})
    b.install_probe(["PreCompact", "SessionStart"])
    ok(b.exec("first turn"))
    assert b.model.requests(kind="compaction") == []
    ok(b.resume_last("second turn"))
    assert bool(b.model.requests(kind="compaction")) is compacts
    assert rollout.auto_compact_limit(20000) == 18000
    sources = [c["payload"]["source"] for c in b.hook_calls("SessionStart")]
    if compacts:
        assert [wire.parse(json.dumps(c["payload"]))["trigger"] for c in b.hook_calls("PreCompact")] == ["auto"]
        assert sources == ["startup", "resume", "compact"]
        (path,) = b.rollouts()
        assert rollout.read_rollout(path)["tokens"] == b.model.requests(kind="main")[-1].usage["total_tokens"]
    else:
        assert b.hook_calls("PreCompact") == [] and sources == ["startup", "resume"]


@pytest.mark.parametrize("call_total, compacts", [(17900, False), (17999, True)])
def test_within_a_turn_the_tool_output_counts_toward_the_limit(box, call_total, compacts):
    """Mid-turn, Codex adds what it is about to send (the tool's output, ~26 tokens here): 17,999 compacts."""
    tool = dict(TOOL, usage={"input_tokens": call_total - 17, "output_tokens": 17})
    b = box({"rules": [tool], "compact_summary": "SUMMARY-X"})
    ok(b.exec("please run a tool"))
    assert bool(b.model.requests(kind="compaction")) is compacts
    main = b.model.requests(kind="main")
    assert len(main) == 2 and ("SUMMARY-X" in main[1].text) is compacts


# -- the TUI in a real tmux -------------------------------------------------------


def test_trust_all_in_the_tui_writes_a_hash_per_entry_and_exec_then_runs_them(box, tui):
    b = box({"default": {"reply": "ok"}})
    b.install_probe(["SessionStart", "UserPromptSubmit", "Stop"])
    b.trust_folder()
    run = tui(b, "--no-daemon")
    run.wait_screen("Hooks need review")
    assert "3 hooks are new or changed" in run.screen()
    assert run.choose("2", "› 2. Trust all and continue") <= 5
    run.key("Enter")
    run.wait_screen("Ask Codex to do anything")
    run.close()
    config = open(b.config_path).read()
    for event in ("session_start", "user_prompt_submit", "stop"):
        assert '[hooks.state."%s:%s:0:0"]\ntrusted_hash = "sha256:' % (b.hooks_path, event) in config, config
    assert b.hook_calls() == [], "nothing ran before a prompt"
    ok(b.exec("hello", bypass_trust=False))
    assert [c["event"] for c in b.hook_calls()] == ["SessionStart", "UserPromptSubmit", "Stop"]
    # A changed entry is untrusted again (skipped silently); the others still run.
    table = json.load(open(b.hooks_path))
    table["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 11
    json.dump(table, open(b.hooks_path, "w"))
    before = len(b.hook_calls())
    ok(b.exec("again", bypass_trust=False))
    assert [c["event"] for c in b.hook_calls()[before:]] == ["SessionStart", "UserPromptSubmit"]


def test_clear_typed_into_the_tui_starts_a_thread_whose_session_start_injects_at_the_next_prompt(box, tui):
    handoff = "SESSIONSTART-INJECT source=clear <handoff>goal: demo</handoff>"
    b = box({"rules": [{"name": "handoff", "when": {"latest_contains": "write the handoff to HANDOFF.md"},
                        "reply": [{"type": "exec_command", "cmd": "printf 'goal: demo\\n' > HANDOFF.md"}],
                        "then": ["Handoff written."]}],
             "default": {"reply": "First answer."}, "title": "Scripted title"})
    b.install_probe(["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"])
    b.script_replies("SessionStart", [None, json.loads(wire.add_context("SessionStart", handoff))])
    b.script_replies("Stop", [json.loads(wire.block_stop("write the handoff to HANDOFF.md")), None])
    b.trust_folder()
    run = tui(b, "--no-daemon", "--dangerously-bypass-hook-trust")
    run.wait_screen("Ask Codex to do anything")
    run.type("do the work")
    run.wait_screen("Handoff written.")
    assert open(os.path.join(b.work, "HANDOFF.md")).read() == "goal: demo\n"
    first = b.hook_calls("SessionStart")[0]["payload"]["session_id"]
    b.model.wait_for(lambda reqs: [r for r in reqs if r.kind == "title"])
    run.type("/clear")
    run.wait_gone("Handoff written.")  # the clear happened: the old conversation is off the screen
    run.wait_screen("Ask Codex to do anything")
    assert [c["payload"]["source"] for c in b.hook_calls("SessionStart")] == ["startup"], "nothing until a prompt"
    run.type("Continue the task from HANDOFF.md")
    try:
        req = b.model.wait_for(lambda reqs: [r for r in reqs if r.kind == "main"
                                             and r.metadata.get("history_initialization") == "cleared"], timeout=20)[0]
    except TimeoutError as e:
        raise AssertionError("%s\nscreen:\n%s" % (e, run.screen())) from None
    starts = [wire.parse(json.dumps(c["payload"])) for c in b.hook_calls("SessionStart")]
    assert [s["source"] for s in starts] == ["startup", "clear"]
    assert starts[1]["session_id"] != first and starts[1]["session_id"] == req.thread_id
    texts = [json.dumps(it) for it in req.input]
    at = lambda needle: next(i for i, t in enumerate(texts) if needle in t)
    assert at(handoff.split(" <")[0]) < at("Continue the task from HANDOFF.md")
    assert handoff in req.messages("developer") and "First answer." not in req.text, "a fresh context"
    assert len(b.rollouts()) == 2 and starts[1]["transcript_path"] == b.rollouts()[-1]
    # Every hook ran with the pane's TMUX_PANE, from the TUI process itself (--no-daemon).
    assert {c["env"].get("TMUX_PANE") for c in b.hook_calls()} == {run.pane}
    assert {c["ppid"] for c in b.hook_calls()} == {run.pid}
    # /status shows the context left as rollout.percent_left computes it from the reading.
    assert not os.path.exists(os.path.join(b.codex_home, "packages")), "--no-daemon: no copy of the binary"
    b.model.wait_for(lambda reqs: len([r for r in reqs if r.kind == "title"]) >= 2)
    run.type("/status")
    screen = run.wait_screen("Context window:")
    got = rollout.read_rollout(b.rollouts()[-1])
    assert "Context window:      %d%% left" % rollout.percent_left(got["tokens"], got["window"]) in screen, screen


def test_a_compaction_veto_stops_it_and_interrupts_the_turn(box):
    b = box({"default": {"reply": "ok", "usage": {"input_tokens": 18500, "output_tokens": 17}},
             "compact_summary": "SUMMARY-X"})
    b.install_probe(["PreCompact", "Stop"])
    b.script_replies("PreCompact", [json.loads(wire.veto_compaction("cc-continuity rotates instead"))])
    ok(b.exec("first turn"))
    p = b.resume_last("second turn")
    assert b.model.requests(kind="compaction") == [], "vetoed"
    assert [c["event"] for c in b.hook_calls()] == ["Stop", "PreCompact"], "and the turn did not go on"
    assert len(b.model.requests(kind="main")) == 1
    assert p.returncode == 1 and "hook: PreCompact Stopped\nturn interrupted" in p.stderr, (p.returncode, p.stderr[-800:])


def test_a_blocked_prompt_sends_nothing(box):
    b = box({"default": {"reply": "ok"}})
    b.install_probe(["UserPromptSubmit", "Stop"])
    b.script_replies("UserPromptSubmit", [json.loads(wire.block_prompt("not now")), None])
    p = ok(b.exec("first"))
    assert b.model.requests() == [] and p.stdout.strip() == "" and b.hook_calls("Stop") == []
    ok(b.exec("second"))
    assert len(b.model.requests(kind="main")) == 1 and len(b.hook_calls("Stop")) == 1


def test_a_hooks_list_hash_written_to_config_toml_trusts_the_entry_and_a_repository_hook_stays_out(box):
    """What install and doctor can build on: hooks/list (app-server) names each entry's key, source,
    current hash and trust; ``[hooks.state."<key>"] trusted_hash = <hash>`` in config.toml trusts it."""
    b = box({"default": {"reply": "ok"}})
    b.install_probe(["SessionStart", "Stop"])
    os.makedirs(os.path.join(b.work, ".codex"))
    marker = os.path.join(b.root, "REPO-HOOK-RAN")
    with open(os.path.join(b.work, ".codex", "hooks.json"), "w") as f:
        json.dump({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch %s" % marker}]}]}}, f)
    hooks = b.hooks_list()
    assert [(h["key"], h["source"], h["trustStatus"]) for h in hooks] == [
        ("%s:session_start:0:0" % b.hooks_path, "user", "untrusted"), ("%s:stop:0:0" % b.hooks_path, "user", "untrusted")
    ], "an untrusted folder's .codex/ is not even loaded"
    assert all(h["currentHash"].startswith("sha256:") and len(h["currentHash"]) == 71 for h in hooks)
    b.trust_hooks(hooks)
    assert [h["trustStatus"] for h in b.hooks_list()] == ["trusted", "trusted"]
    ok(b.exec("hi", bypass_trust=False))
    assert [c["event"] for c in b.hook_calls()] == ["SessionStart", "Stop"]
    # The folder trusted, the repository's hook is listed as a project hook, untrusted, and never runs.
    b.trust_folder()
    listed = {h["key"]: h for h in b.hooks_list()}
    repo = listed["%s:stop:0:0" % os.path.join(b.work, ".codex", "hooks.json")]
    assert (repo["source"], repo["trustStatus"]) == ("project", "untrusted")
    ok(b.exec("again", bypass_trust=False))
    assert [c["event"] for c in b.hook_calls()] == ["SessionStart", "Stop"] * 2 and not os.path.exists(marker)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_sandbox_talks_to_nothing_but_the_scripted_model(box, tmp_path):
    """Every socket a run opens is a Unix one or loopback: no DNS, no OpenAI, no GitHub."""
    b = box({"rules": [TOOL]})
    trace = tmp_path / "strace.txt"
    wrapper = tmp_path / "codex-traced"
    wrapper.write_text('#!/bin/sh\nexec strace -f -qq -e trace=connect,sendto,sendmsg -o %s %s "$@"\n'
                       % (trace, find_codex_bin()))
    wrapper.chmod(0o755)
    b.bin = str(wrapper)
    ok(b.exec("please run a tool"))
    inet = [line for line in trace.read_text().splitlines() if "AF_INET" in line]
    assert inet and all('inet_addr("127.0.0.1")' in line and "htons(%d)" % b.model.port in line for line in inet), inet
