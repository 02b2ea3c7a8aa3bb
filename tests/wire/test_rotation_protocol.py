"""Issue 4, zero-touch rotation: the hook-level protocol end to end.

Every step runs the installed hook command (``python -S -c <bootstrap> <Event>``)
with stdin shaped like Claude Code 2.1.328's live payloads, against a real git
repository; the tmux variant also runs a real private tmux server whose pane holds
the stand-in prompt (tests/helpers/fake_prompt.py) and the real detached rotator.
"""

import hashlib
import json
import os
import re
import signal
import time

import pytest

from cc_continuity import config, session
from cc_continuity.rotation import texts
from helpers.hookdriver import HookDriver, handoff_text, tokens_at

SECTIONS = config.HANDOFF_SECTIONS
S1 = "a1a1a1a1-0000-4000-8000-000000000001"
S2 = "b2b2b2b2-0000-4000-8000-000000000002"
S3 = "c3c3c3c3-0000-4000-8000-000000000003"
FAKE_TOKEN = "ghp_" + "Zq7" * 12  # GitHub PAT shape: ghp_ + 36 alphanumerics
FILES = {"README.md": "hello\n", "src/app.py": "print('v1')\n", "src/util.py": "X = 1\n"}
HAPPY_STEPS = ["begin", "idle", "clear_sent", "started", "idle", "continuation_sent", "delivered", "renamed"]


@pytest.fixture
def drv(tmp_path):
    return HookDriver(tmp_path / "proj", files=FILES)


def valid_handoff(marker="MARKER-HANDOFF-7f3a"):
    return handoff_text(SECTIONS, extra={"Goal": "Rewrite the parser (%s); keep the CLI stable." % marker,
                                         "Files touched": "- `src/app.py` (modified)\n- `src/util.py:1`"})


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def start_session(drv, sid, tokens=tokens_at(10), prompts=("build the parser",)):
    drv.transcript(sid).assistant(tokens)
    assert drv.hook("SessionStart", sid, source="startup") is None
    for p in prompts:
        drv.hook("UserPromptSubmit", sid, prompt=p)


def request_handoff(drv, sid, percent=65):
    """Cross the rotate level and end the turn: the Stop hook blocks with the handoff path."""
    drv.transcript(sid).assistant(tokens_at(percent), "Step finished.")
    out = drv.hook("Stop", sid)
    assert out and out["decision"] == "block", out
    assert drv.last_wire == "additionalContext", "a 2.1.328 transcript: no 'reported a problem' footer"
    m = re.search(r"Handoff file \(absolute path\): (\S+)", out["reason"])
    assert m, out["reason"]
    assert drv.state(sid)["state"] == session.HANDOFF_REQUESTED
    return m.group(1), out["reason"]


def user_git_state(drv):
    """Everything of the user's git state that a snapshot must leave byte for byte alone."""
    gd = os.path.join(drv.root, ".git")
    out = {}
    for rel in ("HEAD", "index", "packed-refs", "ORIG_HEAD", "config"):
        p = os.path.join(gd, rel)
        out[rel] = open(p, "rb").read() if os.path.exists(p) else None
    out["index_mtime"] = os.stat(os.path.join(gd, "index")).st_mtime_ns
    out["refs"] = drv.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags",
                          "refs/stash")
    return out


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def bootstrap_of(out):
    assert out and out["hookSpecificOutput"]["hookEventName"] == "SessionStart", out
    return out["hookSpecificOutput"]["additionalContext"]


def history(drv):
    return json.loads(drv.cli("history", "--json").stdout)


def assert_verified_ledgers(drv):
    res = drv.cli("verify", "--json", check=False)
    doc = json.loads(res.stdout)
    assert res.returncode == 0 and doc["ok"], doc
    assert doc["ledgers"], "no ledgers found"


# -- (a) no tmux: the user types /clear ---------------------------------------------------------
def test_manual_rotation_end_to_end(drv):
    long_prompt = "refactor the tokenizer so that " + "every branch is covered " * 60
    start_session(drv, S1, prompts=("build the parser", long_prompt))
    # The user's work in progress: a staged change, a further unstaged edit, an untracked file.
    write(os.path.join(drv.root, "src/util.py"), "X = 2\n")
    drv.git("add", "src/util.py")
    write(os.path.join(drv.root, "src/util.py"), "X = 3  # unstaged\n")
    write(os.path.join(drv.root, "src/app.py"), "print('v2')\n")
    write(os.path.join(drv.root, "notes.txt"), "untracked notes\n")
    head = drv.git("rev-parse", "HEAD").decode().strip()
    before = user_git_state(drv)

    todos = [{"content": "write the parser", "status": "completed", "activeForm": "Writing the parser"},
             {"content": "add parser tests", "status": "in_progress", "activeForm": "Adding parser tests"},
             {"content": "update the docs", "status": "pending", "activeForm": "Updating the docs"}]
    drv.transcript(S1).todo_write(todos, tokens_at(65))
    note = drv.hook("PostToolUse", S1, tool_name="TodoWrite", tool_input={"todos": todos})
    assert "rotate level" in note["hookSpecificOutput"]["additionalContext"]

    path, reason = request_handoff(drv, S1, 65)
    assert os.path.isabs(path) and path == drv.handoff_path(S1)
    assert "## Next steps" in reason and "65.0%" in reason

    snap = drv.checkpoint_file("snapshot.json", S1)
    g = snap["git"]
    assert g["git"] is True and g["branch"] == "main" and g["head"] == head
    assert {d["path"] for d in g["dirty"]} == {"src/app.py", "src/util.py", "notes.txt"}
    assert g["recent_commits"][0]["subject"] == "initial"
    texts = [p["text"] for p in snap["prompts"]]
    assert texts[0] == "build the parser"
    assert texts[1] == long_prompt.strip()[:500] + "…"
    assert all(len(t) <= 501 for t in texts)
    assert snap["todos"] == [{"status": "in_progress", "content": "add parser tests"},
                             {"status": "pending", "content": "update the docs"}]
    assert snap["reading"]["tokens"] == tokens_at(65) and snap["reading"]["percent"] == 65.0

    # The user types while the agent writes the handoff; that must reach the successor.
    drv.hook("UserPromptSubmit", S1, prompt="LATE-PROMPT also handle empty input")
    allow = drv.hook("PreToolUse", S1, tool_name="Write", tool_input={"file_path": path, "content": "x"})
    assert allow["hookSpecificOutput"]["permissionDecision"] == "allow"

    # Invalid: sections missing / empty, too short, a path that does not exist, a token.
    write(path, "# Handoff\n## Goal\nFix `src/missing_module.py`; the CI token is %s\n"
                "## Done so far\n<text>\n" % FAKE_TOKEN)
    out = drv.hook("Stop", S1, stop_hook_active=True)
    assert out["decision"] == "block"
    why = out["reason"]
    for name in ("Current state", "Next steps", "Decisions and constraints", "Open questions",
                 "Files touched", "How to verify"):
        assert 'section "## %s" is missing' % name in why
    assert 'section "## Done so far" is empty' in why
    assert "the minimum is 400" in why
    assert "src/missing_module.py" in why
    assert "github-pat" in why
    for where in (why, open(session.ledger_path(drv.sdir(S1))).read(), open(drv.log_path).read()):
        assert FAKE_TOKEN not in where and FAKE_TOKEN[4:20] not in where

    write(path, valid_handoff())
    out = drv.hook("Stop", S1, stop_hook_active=True)
    assert set(out) == {"systemMessage"} and "Type /clear" in out["systemMessage"], out
    rec = drv.state(S1)
    assert rec["state"] == session.AWAITING_MANUAL_CLEAR and rec["checkpoint"]["id"] == "cp-001"

    # The work tree is in a commit under refs/continuity/…; nothing the user owns moved.
    ref = "refs/continuity/%s/cp-001" % drv.project.key
    assert drv.checkpoint_file("manifest.json", S1)["git"]["ref"] == ref
    commit = drv.git("rev-parse", "--verify", ref).decode().strip()
    assert drv.git("show", ref + ":src/app.py") == b"print('v2')\n"
    assert drv.git("show", ref + ":src/util.py") == b"X = 3  # unstaged\n"
    assert drv.git("show", ref + ":notes.txt") == b"untracked notes\n"
    assert drv.git("show", ":src/util.py") == b"X = 2\n"  # the user's staged blob is still staged
    assert user_git_state(drv) == before
    manifest = drv.checkpoint_file("manifest.json", S1)
    assert manifest["handoff"]["sha256"] == sha256_file(path)
    assert manifest["git"]["ref"] == ref and manifest["git"]["commit"] == commit
    assert manifest["degraded"] is False and manifest["handoff"]["validation"] == "valid"

    assert "type /clear to rotate" in drv.statusline(S1, percent=65)
    again = drv.hook("Stop", S1)  # the user answered something instead of /clear
    assert "Type /clear" in again["systemMessage"]

    assert drv.hook("SessionEnd", S1, reason="clear") is None
    text = bootstrap_of(drv.hook("SessionStart", S2, source="clear"))
    assert text.startswith("Continuing from cp-001 (proj-002).")
    assert "MARKER-HANDOFF-7f3a" in text and "LATE-PROMPT also handle empty input" in text
    assert "add parser tests" in text and ref in text
    assert len(text) <= 2500 * 4 and len(text) < 10_000
    out = drv.hook("UserPromptSubmit", S2, prompt="thanks, go on")
    assert out["hookSpecificOutput"]["sessionTitle"] == "proj-002"

    old, new = drv.state(S1), drv.state(S2)
    assert old["state"] == session.ROTATED and old["successor"] == new["number"] == 2
    assert new["state"] == session.ACTIVE and new["predecessor"] == 1
    hist = history(drv)
    assert hist["rotations"] == 1
    row = hist["sessions"][0]
    assert row["checkpoint"] == "cp-001" and row["trigger_percent"] == 65.0 and row["validation"] == "valid"
    assert row["trigger_tokens"] == tokens_at(65) and row["rotation_ms"] is not None
    assert_verified_ledgers(drv)


# -- (b) tmux: the real rotator types /clear and the continuation --------------------------------
def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.03)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def rotator_steps(drv, sid):
    return [r["step"] for r in drv.ledger(sid, ev="rotator")]


def tmux_driver(tmp_path, server, *fake_args):
    run = server.start_fake(str(tmp_path / "fake"), *fake_args)
    pid = server.tmux("display-message", "-p", "#{pid}").strip()
    # CLAUDE_PID is the program in the pane, as with the real Claude Code (the rotator checks it).
    drv = HookDriver(tmp_path / "proj", files=FILES, claude_pid=run.pid(),
                     tmux="%s,%s,0" % (server.socket, pid), tmux_pane=run.pane_id)
    drv.config(rotator_idle_timeout_s=20, rotator_marker_timeout_s=20, rotator_delivery_timeout_s=10,
               rotator_retries=1)
    return drv, run


def verified_in_tmux(drv):
    start_session(drv, S1)
    path, _ = request_handoff(drv, S1, 66)
    write(path, valid_handoff())
    assert drv.hook("Stop", S1, stop_hook_active=True) is None  # the rotator takes it from here
    rec = drv.state(S1)
    assert rec["state"] == session.ROTATING and rec["tmux_pane"] == drv.tmux_pane
    spawned = drv.ledger(S1, ev="rotator_spawned")
    assert len(spawned) == 1 and spawned[0]["successor"] == "proj-002"
    return spawned[0]["pid"]


def kill_if_alive(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_tmux_rotation_end_to_end(tmp_path, server):
    drv, run = tmux_driver(tmp_path, server)
    pid = verified_in_tmux(drv)
    try:
        # Play Claude Code: /clear arrives in the pane -> SessionEnd(clear) + SessionStart(clear).
        wait_until(lambda: run.submitted(), 40, "/clear typed by the rotator")
        assert run.submitted() == ["/clear"]
        assert drv.hook("SessionEnd", S1, reason="clear") is None
        text = bootstrap_of(drv.hook("SessionStart", S2, source="clear"))
        assert text.startswith("Continuing from cp-001 (proj-002).")
        # The rotator sees the started-marker, waits for idle and types the continuation.
        lines = wait_until(lambda: run.submitted() if len(run.submitted()) >= 2 else None, 40, "continuation")
        expected = texts.continuation_prompt("cp-001", "proj-002")
        assert lines == ["/clear", expected]
        assert drv.hook("UserPromptSubmit", S2, prompt=lines[1])["hookSpecificOutput"]["sessionTitle"] == "proj-002"
        wait_until(lambda: {"renamed", "failed"} & set(rotator_steps(drv, S1)), 40, "the rotator to finish")
    finally:
        kill_if_alive(pid)
    steps = rotator_steps(drv, S1)
    assert "failed" not in steps and steps[-1] == "renamed", steps
    it = iter(steps)
    assert all(step in it for step in HAPPY_STEPS), steps  # in this order (retries may add steps)
    assert steps.count("clear_sent") == 1 and run.events("swallowed") == []
    assert run.raw_bytes().endswith(expected.encode() + b"\r")  # typed literally, then Enter
    old, new = drv.state(S1), drv.state(S2)
    assert old["state"] == session.ROTATED and old["successor"] == 2
    assert new["state"] == session.ACTIVE and new["predecessor"] == 1 and new["pid"] == run.pid()
    assert drv.ledger(S2, ev="prompt")[-1]["text"] == expected
    names = server.tmux("display-message", "-p", "-t", run.pane_id, "#{session_name}|#{window_name}").strip()
    assert names == "proj-002|proj-002"
    hist = history(drv)
    assert hist["rotations"] == 1 and hist["sessions"][0]["trigger_percent"] == 66.0
    assert_verified_ledgers(drv)


# -- the handoff retry bound and the machine fallback ---------------------------------------------
def test_three_invalid_handoffs_fall_back_to_a_degraded_machine_handoff(drv):
    start_session(drv, S1, prompts=("port the exporter to the new API",))
    write(os.path.join(drv.root, "src/app.py"), "print('dirty')\n")
    path, _ = request_handoff(drv, S1)
    blocks = 1
    outs = []
    for attempt in range(3):
        if attempt:  # the first check finds no file at all
            write(path, "# Handoff\n## Goal\ntoo short, attempt %d\n" % attempt)
        outs.append(drv.hook("Stop", S1, stop_hook_active=True))
    blocks += sum(1 for o in outs if o and o.get("decision") == "block")
    assert blocks == 3  # request + 2 retries; the third invalid check does not block again
    assert "does not exist yet" in outs[0]["reason"] and "check 1 of 3" in outs[0]["reason"]
    assert "check 2 of 3" in outs[1]["reason"]
    assert set(outs[2]) == {"systemMessage"}
    text = open(path, encoding="utf-8").read()
    assert text.startswith("# Handoff (machine-written)")
    assert "port the exporter to the new API" in text and "src/app.py" in text
    manifest = drv.checkpoint_file("manifest.json", S1)
    assert manifest["degraded"] is True and manifest["handoff"]["validation"] == "degraded"
    assert manifest["handoff"]["tries"] == 3 and manifest["handoff"]["problems"]
    assert manifest["handoff"]["sha256"] == sha256_file(path)
    assert drv.git("rev-parse", "--verify", "refs/continuity/%s/cp-001" % drv.project.key)
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    assert drv.hook("SessionEnd", S1, reason="clear") is None
    boot = bootstrap_of(drv.hook("SessionStart", S2, source="clear"))
    assert boot.startswith("Continuing from cp-001") and "degraded" in boot
    row = history(drv)["sessions"][0]
    assert row["degraded"] is True and row["validation"] == "degraded"


def test_big_handoff_is_named_by_path_in_a_bounded_bootstrap(drv):
    drv.config(handoff_max_chars=40_000)
    start_session(drv, S1)
    path, _ = request_handoff(drv, S1)
    filler = "The lexer keeps line numbers; see `src/app.py` for the entry point. " * 60
    big = handoff_text(SECTIONS, body=filler)
    big += "\n" + "Appendix line about the tokenizer state machine.\n" * ((30_000 - len(big)) // 50 + 1)
    assert len(big) >= 30_000
    write(path, big)
    drv.hook("Stop", S1, stop_hook_active=True)
    assert drv.state(S1)["checkpoint"]["handoff_chars"] == len(big)
    drv.hook("SessionEnd", S1, reason="clear")
    text = bootstrap_of(drv.hook("SessionStart", S2, source="clear"))
    assert text.startswith("Continuing from cp-001")
    assert len(text) <= 2500 * 4 and len(text) < 10_000
    assert path in text and "read it first" in text
    assert "Appendix line" not in text  # the bulk stays in the file


# -- the hard ceiling ----------------------------------------------------------------------------
def test_hard_ceiling_denies_every_tool_but_the_handoff_and_our_status(drv):
    start_session(drv, S1)
    drv.transcript(S1).assistant(tokens_at(75))
    note = drv.hook("PostToolUse", S1, tool_name="Read", tool_input={"file_path": drv.root + "/README.md"})
    assert "hard ceiling" in note["hookSpecificOutput"]["additionalContext"]
    hpath = drv.handoff_path(S1)

    def pre(tool, **tin):
        return drv.hook("PreToolUse", S1, tool_name=tool, tool_input=tin)

    for tool, tin in (("Read", {"file_path": drv.root + "/README.md"}), ("Bash", {"command": "ls"}),
                      ("Grep", {"pattern": "x"}), ("Write", {"file_path": drv.root + "/handoff.md", "content": "x"}),
                      ("Edit", {"file_path": hpath + ".bak", "old_string": "a", "new_string": "b"}),
                      ("Bash", {"command": "cc-continuity status; rm -rf x"}),
                      ("Bash", {"command": "cc-continuity status && rm -rf x"}),
                      ("Bash", {"command": "cc-continuity status $(rm -rf x)"}),
                      ("Bash", {"command": "./cc-continuity status"}),  # a repository's file of that name
                      ("Bash", {"command": drv.root + "/bin/cc-continuity status"})):
        out = pre(tool, **tin)
        hso = out["hookSpecificOutput"]
        assert hso["permissionDecision"] == "deny", (tool, tin)
        assert "hard ceiling" in hso["permissionDecisionReason"] and hpath in hso["permissionDecisionReason"]
    assert os.path.exists(drv.root + "/README.md")
    for tool in ("Write", "Edit"):
        out = pre(tool, file_path=hpath, content="# Handoff")
        assert out["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert os.path.isdir(os.path.dirname(hpath))
    assert pre("Bash", command="cc-continuity status") is None
    assert pre("Bash", command="cc-continuity status --json") is None
    launcher = os.path.join(os.environ["CC_CONTINUITY_HOME"], "bin", "cc-continuity")
    assert pre("Bash", command=launcher + " status") is None  # what a settings install's skills run
    plugin_env = drv.env(S1, CLAUDE_PLUGIN_ROOT="/opt/plugins/cc-continuity/0.1.0")
    out = drv.hook("PreToolUse", S1, env=plugin_env, tool_name="Bash",
                   tool_input={"command": "/opt/plugins/cc-continuity/0.1.0/bin/cc-continuity status"})
    assert out is None  # the plugin's own bin/


def test_pre_tool_use_sees_the_crossing_response_itself(drv):
    """The tools of the response that crossed the ceiling are denied, before any PostToolUse ran."""
    start_session(drv, S1)
    drv.transcript(S1).assistant(tokens_at(40))
    assert drv.hook("PreToolUse", S1, tool_name="Bash", tool_input={"command": "ls"}) is None  # below: allowed
    assert drv.state(S1)["levels_notified"] == []
    drv.transcript(S1).assistant(tokens_at(76), tool_uses=[("Bash", {"command": "cat big.log"})])
    out = drv.hook("PreToolUse", S1, tool_name="Bash", tool_input={"command": "cat big.log"})
    hso = out["hookSpecificOutput"]
    assert hso["permissionDecision"] == "deny" and "hard ceiling" in hso["permissionDecisionReason"]
    rec = drv.state(S1)
    assert "hard" in rec["levels_notified"] and rec["state"] == session.ROTATION_PENDING  # recorded once
    levels = [e for e in drv.ledger(S1) if e["ev"] == "level"]
    drv.hook("PreToolUse", S1, tool_name="Read", tool_input={"file_path": "x"})
    assert [e for e in drv.ledger(S1) if e["ev"] == "level"] == levels  # not again


# -- PreCompact ----------------------------------------------------------------------------------
def test_auto_compaction_past_rotate_is_blocked_and_rotation_follows(drv):
    start_session(drv, S1)
    drv.transcript(S1).assistant(tokens_at(64))
    drv.hook("PostToolUse", S1)
    out = drv.hook("PreCompact", S1, trigger="auto")
    assert out["decision"] == "block" and "hands off" in out["reason"]
    assert drv.state(S1)["rotate_requested"] is True
    # Even if the reading drops below rotate again, the requested rotation happens at the next Stop.
    drv.transcript(S1).assistant(tokens_at(30))
    out = drv.hook("Stop", S1)
    assert out["decision"] == "block" and drv.handoff_path(S1) in out["reason"]
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED


def test_compaction_below_rotate_writes_an_emergency_snapshot_silently(drv):
    start_session(drv, S1, prompts=("keep going with the migration",))
    drv.transcript(S1).assistant(tokens_at(40))
    assert drv.hook("PreCompact", S1, trigger="auto") is None
    snap = json.load(open(os.path.join(drv.sdir(S1), "emergency", "snapshot.json")))
    assert snap["git"]["branch"] == "main" and snap["reading"]["percent"] == 40.0
    assert [p["text"] for p in snap["prompts"]] == ["keep going with the migration"]
    rec = drv.state(S1)
    assert rec["state"] == session.ACTIVE and not rec.get("rotate_requested")
    assert drv.ledger(S1, ev="emergency_checkpoint")


# -- manual trigger, non-git project -------------------------------------------------------------
def test_cli_rotate_requests_a_handoff_at_a_low_ratio(drv):
    start_session(drv, S1)
    drv.transcript(S1).assistant(tokens_at(12))
    assert drv.hook("Stop", S1) is None  # nothing to do at 12%
    res = drv.cli("rotate", session_id=S1)
    assert "proj-001 will hand off" in res.stdout
    out = drv.hook("Stop", S1)
    assert out["decision"] == "block" and drv.handoff_path(S1) in out["reason"]
    assert "12.0%" in out["reason"]
    assert drv.state(S1)["state"] == session.HANDOFF_REQUESTED
    assert [r["why"] for r in drv.ledger(S1, ev="transition")][-1] == "manual rotate"


def test_rotation_in_a_non_git_project(tmp_path):
    drv = HookDriver(tmp_path / "plain", git=False, files=FILES)
    start_session(drv, S1)
    path, _ = request_handoff(drv, S1)
    assert drv.checkpoint_file("snapshot.json", S1)["git"]["git"] is False
    write(path, valid_handoff())
    assert "Type /clear" in drv.hook("Stop", S1, stop_hook_active=True)["systemMessage"]
    manifest = drv.checkpoint_file("manifest.json", S1)
    assert manifest["git"]["git"] is False and manifest["degraded"] is False
    assert not os.path.exists(os.path.join(drv.root, ".git"))
    drv.hook("SessionEnd", S1, reason="clear")
    text = bootstrap_of(drv.hook("SessionStart", S2, source="clear"))
    assert text.startswith("Continuing from cp-001 (plain-002).") and "not a git repository" in text
    assert drv.state(S1)["state"] == session.ROTATED


def test_the_gate_holds_when_the_card_goes_stale_while_it_is_rebuilt(drv, monkeypatch):
    """A file the card depends on may change right after it was rebuilt (the status line noting
    the window): the gate must use the card it built, not skip the check (2.1.328, 1 run in 10)."""
    from cc_continuity import card
    from cc_continuity.hosts.claude import hooks

    start_session(drv, S1)
    drv.transcript(S1).assistant(tokens_at(76), tool_uses=[("Bash", {"command": "touch burst-1.txt"})])
    monkeypatch.setattr(card, "load", lambda session_id: None)  # stale at every read
    payload = drv.payload("PreToolUse", S1, tool_name="Bash", tool_input={"command": "touch burst-1.txt"})
    out, outcome, _sid, _ = hooks.dispatch("PreToolUse", json.dumps(payload).encode(), drv.env(S1))
    assert outcome == "denied at hard ceiling", outcome
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
