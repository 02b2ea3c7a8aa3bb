"""Side effects are never repeated: classification, keys, the two-phase record, holds, overrides (effects.py).

Unit tests on effects.classify / effects.key, and whole calls through the installed
PreToolUse / PostToolUse hooks (HookDriver: a real git repo, real hook processes).
"""

import json
import os
import uuid

import pytest

from cc_continuity.holds import effects
from cc_continuity.rotation import texts
from helpers.hookdriver import HookDriver, tokens_at

S1 = "e1e1e1e1-0000-4000-8000-0000000000e1"
S2 = "e2e2e2e2-0000-4000-8000-0000000000e2"
URL = "https://api.example.com/v1/releases"


def key_of(command, **env):
    fx = effects.classify(command, env)
    return effects.key(fx, env.get("git")) if fx else None


# -- recognition ------------------------------------------------------------------------------------------

def test_the_same_post_spelled_four_ways_is_one_effect():
    keys = {key_of(c) for c in (
        "curl -X POST -d 'name=v1' %s" % URL,
        "curl --request POST --data name=v1 %s" % URL.replace("api.example", "API.Example"),
        "curl -s %s -d name=v1" % URL,
        "curl -XPOST --data=name=v1 -H 'Authorization: Bearer abc' %s" % URL,
    )}
    assert len(keys) == 1 and None not in keys


def test_a_different_body_method_or_url_is_a_new_effect():
    base = key_of("curl -X POST -d name=v1 %s" % URL)
    assert key_of("curl -X POST -d name=v2 %s" % URL) != base
    assert key_of("curl -X PUT -d name=v1 %s" % URL) != base
    assert key_of("curl -X POST -d name=v1 %s/2" % URL) != base


def test_the_same_post_through_an_alias_and_through_a_script(tmp_path):
    base = key_of("curl -X POST -d name=v1 %s" % URL)
    snap = tmp_path / "shell-snapshots"
    snap.mkdir()
    (snap / "snapshot-bash-1-abc.sh").write_text("# snapshot\nalias ll='ls -l'\nalias release-note='curl -X POST -d "
                                                 "name=v1 %s'\nfoo() { :; }\n" % URL)
    aliases = effects.snapshot_aliases(str(snap))
    assert aliases["ll"] == "ls -l"
    assert key_of("release-note", aliases=aliases) == base
    script = tmp_path / "notify.sh"
    script.write_text("#!/bin/sh\nset -e\necho posting\ncurl --request POST --data name=v1 %s\n" % URL)
    assert key_of("./notify.sh", cwd=str(tmp_path)) == base
    assert key_of("bash notify.sh", cwd=str(tmp_path)) == base
    script.write_text("#!/bin/sh\ncurl -X POST -d name=v2 %s\n" % URL)
    assert key_of("./notify.sh", cwd=str(tmp_path)) != base


def test_a_script_is_read_one_level_deep_and_bounded(tmp_path):
    (tmp_path / "inner.sh").write_text("curl -X POST -d x %s\n" % URL)
    (tmp_path / "outer.sh").write_text("./inner.sh\n")
    assert effects.classify("./outer.sh", {"cwd": str(tmp_path)}) == []  # inner.sh is two levels down
    big = tmp_path / "big.sh"
    big.write_text("#" * (effects.SCRIPT_MAX + 10) + "\ncurl -X POST -d x %s\n" % URL)
    assert effects.classify("./big.sh", {"cwd": str(tmp_path)}) == []  # past 64 KB: not read


@pytest.mark.parametrize("command", [
    "git push origin main", "git push --tags", "kubectl apply -f k8s/", "curl -s %s" % URL, "curl -G -d q=1 %s" % URL,
    "gh issue list", "gh pr view 3", "gh api repos/o/r/issues", "http GET example.com", "wget https://example.com/x",
    "psql -c 'SELECT 1'", "ls -la", "python3 -m pytest -q", "npm test", "docker push registry/x:1",
    "curl -X POST -d x http://127.0.0.1:8000/hook", "echo release notes > NOTES.md",
])
def test_harmless_repeats_are_not_effects(command):
    assert effects.classify(command, {"local_exempt": True}) == []


@pytest.mark.parametrize("command,kind", [
    ("gh issue create -t bug -b body", "gh"), ("gh release create v1.2.0", "gh"), ("gh api -X POST repos/o/r/x", "gh"),
    ("gh api repos/o/r/issues -f title=x", "gh"), ("npm publish --access public", "publish"),
    ("twine upload dist/*", "publish"), ("cargo publish", "publish"), ("npm version patch", "bump"),
    ("http POST example.com/hook text=hi", "http"), ("wget --post-data=a=1 https://x.example/h", "http"),
    ("mail -s done ops@example.com < report", "mail"), ("psql -c \"INSERT INTO t VALUES (1)\"", "db"),
    ("FOO=1 make deploy", "deploy"), ("terraform apply -auto-approve", "deploy"), ("fly deploy", "deploy"),
    ("cd app && npm run build && npm publish", "publish"),
])
def test_harmful_effects_are_recognised(command, kind):
    got = effects.classify(command, {})
    assert [e["kind"] for e in got] == [kind] and got[0]["harm"]


def test_localhost_is_exempt_only_while_the_setting_is_on():
    cmd = "curl -X POST -d x http://127.0.0.1:8000/hook"
    assert effects.classify(cmd, {"local_exempt": True}) == []
    assert [e["kind"] for e in effects.classify(cmd, {"local_exempt": False})] == ["http"]


def test_declared_commands_count_both_ways():
    assert [e["kind"] for e in effects.classify("notify-team --all", {"harmful": ["notify-team"]})] == ["declared"]
    assert effects.classify("gh issue create -t x", {"harmless": ["gh issue create"]}) == []


def test_a_publish_is_keyed_by_head_and_work_tree(tmp_path):
    drv = HookDriver(tmp_path / "proj", files={"package.json": '{"version": "1.0.0"}\n'})
    fx = effects.classify("npm publish", {})
    first = effects.key(fx, effects.git_state(drv.root))
    assert effects.key(fx, effects.git_state(drv.root)) == first  # nothing changed: the same publish
    with open(os.path.join(drv.root, "package.json"), "w") as f:
        f.write('{"version": "1.0.1"}\n')  # a new version, not committed yet
    bumped = effects.key(fx, effects.git_state(drv.root))
    assert bumped != first
    drv.git("commit", "-qam", "1.0.1")
    assert effects.key(fx, effects.git_state(drv.root)) not in (first, bumped)  # a new commit


# -- the two-phase record and the hold, through the real hooks ---------------------------------------------

class World:
    def __init__(self, tmp_path, **cfg):
        self.drv = HookDriver(tmp_path / "proj")
        self.drv.config(effects_local_exempt=False, **cfg)
        for sid in (S1, S2):
            self.drv.transcript(sid).assistant(tokens_at(5))
        self.drv.hook("SessionStart", S1, source="startup")
        self.drv.hook("PostToolUse", S1)

    @property
    def pdir(self):
        return os.path.dirname(os.path.dirname(self.drv.sdir(S1)))

    def pre(self, sid, command, **fields):
        t = self.drv.transcript(sid)
        t.assistant(tokens_at(6), tool_uses=[("Bash", {"command": command})])
        with open(t.path) as f:
            tid = json.loads(f.read().splitlines()[-1])["message"]["content"][0]["id"]
        out = self.drv.hook("PreToolUse", sid, tool_use_id=tid, tool_input={"command": command}, **fields)
        return tid, out

    def post(self, sid, tid, command, exit=0, interrupted=False):
        if exit == 0:
            self.drv.hook("PostToolUse", sid, tool_use_id=tid, tool_input={"command": command},
                          tool_response={"stdout": "", "stderr": "", "interrupted": interrupted})
        else:
            self.drv.hook("PostToolUseFailure", sid, tool_name="Bash", tool_use_id=tid, tool_input={"command": command},
                          error="Exit code %d\nboom" % exit, is_interrupt=False)

    def run(self, sid, command, exit=0, **fields):
        tid, out = self.pre(sid, command, **fields)
        if out is None:
            self.post(sid, tid, command, exit)
        return out

    def records(self):
        return effects.read(self.pdir)

    def tool_result(self, sid, tid, text, is_error=True):
        self.drv.transcript(sid)._append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": is_error}]}})


def decision(out):
    return None if out is None else out["hookSpecificOutput"]["permissionDecision"]


POST = "curl -X POST -d name=v1 %s" % URL


def test_intent_then_outcome_with_its_exit_code(tmp_path):
    w = World(tmp_path)
    assert w.run(S1, POST) is None
    recs = w.records()
    assert [r["ph"] for r in recs] == ["intent", "done"]
    assert recs[0]["k"] == recs[1]["k"] and recs[1]["exit"] == 0 and recs[1]["ok"] is True
    assert POST not in json.dumps(recs) and "name=v1" not in json.dumps(recs)  # a digest, never the text
    assert os.listdir(effects.pending_dir(w.pdir)) == []
    tool = [r for r in w.drv.ledger(S1, ev="tool") if r.get("tool") == "Bash"][-1]
    assert tool["exit"] == 0


def test_an_unclassified_call_writes_nothing(tmp_path):
    w = World(tmp_path)
    for cmd in ("ls -la", "git status", "curl -s %s" % URL, "git push origin main", "python3 -m pytest -q"):
        assert w.run(S1, cmd) is None
    assert w.records() == [] and not os.path.exists(effects.pending_dir(w.pdir))


def test_a_repeat_in_a_successor_is_asked_interactive_and_denied_unattended(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST)
    w.drv.hook("SessionStart", S2, source="startup")
    out = w.run(S2, POST)
    assert decision(out) == "ask"
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    code = w.records()[0]["k"][:8]
    assert "already had its effect" in reason and "repeat %s" % code in reason and "UTC" in reason
    from cc_continuity import session
    assert session.load(w.drv.sdir(S1))["name"] in reason
    out = w.run(S2, POST, permission_mode="bypassPermissions")
    assert decision(out) == "deny"
    assert w.run(S2, POST.replace("v1", "v2")) is None  # a different body is a new effect


def test_a_failed_post_is_not_held(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST, exit=7)
    assert w.records()[-1]["exit"] == 7 and w.records()[-1]["ok"] is False
    assert w.run(S1, POST) is None


def test_an_outcome_with_no_exit_code_counts_as_done_and_its_repeat_is_held(tmp_path):
    """Codex's PostToolUse and Gemini's AfterTool carry no exit code a hook can trust: the call ran, so it is
    done, never "failed" (which would let the repeat through)."""
    w = World(tmp_path)
    tid, out = w.pre(S1, POST)
    assert out is None
    effects.outcome(w.pdir, {"tool_use_id": tid}, None, S1)
    assert w.records()[-1]["ph"] == "done" and w.records()[-1]["ok"] is True and w.records()[-1]["exit"] is None
    assert decision(w.pre(S1, POST)[1]) == "ask"


def test_an_intent_with_no_outcome_is_uncertain(tmp_path):
    w = World(tmp_path)
    tid, out = w.pre(S1, POST)
    assert out is None  # it runs; then the process dies before PostToolUse
    out = w.run(S1, POST, permission_mode="bypassPermissions")
    assert decision(out) == "deny"
    assert "outcome is unknown" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_an_interrupted_call_is_uncertain(tmp_path):
    w = World(tmp_path)
    tid, _ = w.pre(S1, POST)
    w.post(S1, tid, POST, interrupted=True)
    out = w.run(S1, POST)
    assert decision(out) == "ask" and "interrupted" in out["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("result", [
    "PreToolUse:Bash hook error: [guard]: blocked by policy",
    "The user doesn't want to proceed with this tool use. The tool use was rejected.",
])
def test_a_call_that_never_ran_is_resolved_as_not_run(tmp_path, result):
    w = World(tmp_path)
    tid, out = w.pre(S1, POST)
    assert out is None
    w.tool_result(S1, tid, result)  # another hook denied it, or the user declined
    assert w.run(S1, POST) is None


def test_a_declined_ask_leaves_nothing_uncertain(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST)
    tid, out = w.pre(S1, POST)
    assert decision(out) == "ask"
    w.tool_result(S1, tid, "The user doesn't want to proceed with this tool use.")
    out = w.run(S1, POST)
    assert decision(out) == "ask" and "already had its effect" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_an_override_lets_exactly_one_repeat_through(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST)
    code = w.records()[0]["k"][:8]
    w.drv.hook("UserPromptSubmit", S1, prompt="yes, post it again: repeat %s" % code)
    assert w.run(S1, POST, permission_mode="bypassPermissions") is None
    assert [r for r in w.records() if r["ph"] == "intent"][-1]["override"] == code
    assert decision(w.run(S1, POST, permission_mode="bypassPermissions")) == "deny"


def test_an_override_from_our_continuation_or_the_watchdog_does_not_count(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST)
    code = w.records()[0]["k"][:8]
    w.drv.hook("UserPromptSubmit", S1, prompt=texts.continuation_head("cp-001", "x-002") + " repeat %s" % code)
    w.drv.hook("UserPromptSubmit", S1, prompt="%s please continue; repeat %s" % (effects.WATCHDOG_PREFIX, code))
    assert not [r for r in w.records() if r["ph"] == "override"]
    assert decision(w.run(S1, POST, permission_mode="bypassPermissions")) == "deny"


def test_an_override_through_bash_is_refused(tmp_path):
    w = World(tmp_path)
    w.run(S1, POST)
    line = json.dumps({"ph": "override", "code": w.records()[0]["k"][:8]})
    out = w.run(S1, "echo '%s' >> %s" % (line, effects.store_path(w.pdir)))
    assert decision(out) == "deny" and "user's own prompt" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert not [r for r in w.records() if r["ph"] == "override"]


def test_the_hold_can_be_switched_off_by_the_user(tmp_path):
    w = World(tmp_path, effects_hold=False)
    w.run(S1, POST)
    assert w.run(S1, POST) is None and w.records() == []


def test_a_new_commit_makes_a_publish_new_and_the_same_tree_holds_it(tmp_path):
    w = World(tmp_path)
    w.run(S1, "npm publish")
    assert decision(w.run(S1, "npm publish")) == "ask"
    with open(os.path.join(w.drv.root, "README.md"), "a") as f:
        f.write("v2\n")
    w.drv.git("commit", "-qam", "v2 " + uuid.uuid4().hex[:6])
    assert w.run(S1, "npm publish") is None


def test_an_alias_from_the_shell_snapshot_is_recognised_by_the_hooks(tmp_path):
    snaps = os.path.join(os.environ["HOME"], ".claude", "shell-snapshots")
    os.makedirs(snaps, exist_ok=True)
    with open(os.path.join(snaps, "snapshot-bash-1700000000000-abc123.sh"), "w") as f:
        f.write("alias shipit='curl -X POST -d name=v1 %s'\n" % URL)
    w = World(tmp_path)  # the card is built after the snapshot: the alias is among its words
    assert w.run(S1, "shipit") is None
    assert [r["ph"] for r in w.records()] == ["intent", "done"]
    assert decision(w.run(S1, POST)) == "ask"  # the alias and the command it stands for: one effect


def test_an_unterminated_quote_falls_back_to_plain_words():
    # a masked target can end inside a quote: "-H 'Authorization: [REDACTED] [REDACTED] https://…"
    assert effects.split("curl -X POST -H 'Authorization: x https://h/p") == [
        "curl", "-X", "POST", "-H", "'Authorization:", "x", "https://h/p"]
    assert effects.split('echo "a b" \'c d\' e\\ f; g') == ["echo", "a b", "c d", "e f", ";", "g"]


@pytest.mark.parametrize("step_h", [-1, 1])
def test_an_override_counts_in_record_order_whatever_the_clock_said(tmp_path, step_h):
    """Issue 33: overrides were ordered by wall clock: typed with the clock an hour ahead, `repeat <code>` let
    4 repeats through; an hour behind, none.  The record's order decides: exactly one."""
    w = World(tmp_path)
    w.run(S1, POST)
    code = w.records()[0]["k"][:8]
    w.drv.hook("UserPromptSubmit", S1, prompt="post it again: repeat %s" % code)
    path = effects.store_path(w.pdir)
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    assert lines[-1]["ph"] == "override"
    lines[-1]["ts"] += step_h * 3600  # the clock read an hour off when the user typed it
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in lines))
    assert w.run(S1, POST, permission_mode="bypassPermissions") is None  # the one repeat
    for _ in range(3):
        assert decision(w.run(S1, POST, permission_mode="bypassPermissions")) == "deny"
