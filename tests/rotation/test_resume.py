"""Issue 14: a resume you can trust — real hook processes on real git repositories.

Revalidation at claim (fresh / drifted / stale, the files and commits named), the
actions after the checkpoint (side effects marked, secrets masked), and a crash before
any checkpoint (a machine handoff, claimed exactly once).
"""

import json
import os
import subprocess
import sys

from helpers import ladder
from helpers.hookdriver import HookDriver, dead_pid, tokens_at, wait_for_snapshot_jobs
from helpers.ladder import S1, S2
from helpers import REPO

S3 = "c3c3c3c3-0000-4000-8000-0000000000e3"
FILES = ladder.FILES  # {"README.md", "src/app.py", "src/util.py"}; the handoff names src/app.py and src/util.py


def context(out):
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""


def claim(verified, source="clear"):
    """The successor's SessionStart claims cp-001 (after S1's /clear when ``source`` is clear)."""
    if source == "clear":
        verified.clear()
    else:
        verified.said(S2, tokens_at(3))
        verified.bootstrap = context(verified.start(S2, source=source))
    text, drv = verified.bootstrap, verified.drv
    assert text.startswith("Continuing from cp-001"), text[:300]
    return text, drv.state(S2)["revalidation"]


def write(drv, rel, data):
    with open(os.path.join(drv.root, rel), "w") as f:
        f.write(data)


def test_nothing_changed_is_fresh(verified):
    drv = verified.drv
    text, rv = claim(verified)
    assert rv["verdict"] == "fresh", rv
    assert rv["changed"] == [] and rv["commits_since"] == 0 and rv["missing_named"] == []
    assert "## Since the checkpoint: fresh" in text
    assert "work tree: identical to the snapshot" in text
    assert rv["process"] == "same process (cleared)"
    # the verdict is in the ledger and in status / history --json
    assert [r["verdict"] for r in drv.ledger(S2, ev="revalidation")] == ["fresh"]
    status = json.loads(drv.cli("status", "--json").stdout)
    assert [s["revalidation"]["verdict"] for s in status["sessions"] if s["name"].endswith("002")] == ["fresh"]
    hist = json.loads(drv.cli("history", "--json").stdout)
    assert [r["revalidation"] for r in hist["sessions"] if r["number"] == 2][0]["verdict"] == "fresh"
    # the section sits before the handoff, inside the budget
    assert text.index("## Since the checkpoint") < text.index("## Handoff (cp-001)")
    assert len(text) <= 2500 * 4


def test_a_commit_by_hand_is_drifted_and_names_commit_and_file(verified):
    drv = verified.drv
    write(drv, "README.md", "hello, edited by hand\n")
    drv.git("commit", "-qam", "docs: say hello properly")
    text, rv = claim(verified)
    assert rv["verdict"] == "drifted", rv
    assert rv["commits_since"] == 1
    assert rv["changed"] == ["README.md"]
    assert "docs: say hello properly" in text
    assert "  - README.md (modified)" in text


def test_a_file_edited_by_hand_is_drifted(verified):
    drv = verified.drv
    write(drv, "src/util.py", "y = 3\n")
    write(drv, "notes.txt", "new\n")
    # an edit changed back is no change
    write(drv, "README.md", "other\n")
    write(drv, "README.md", "hello\n")
    text, rv = claim(verified)
    assert rv["verdict"] == "drifted", rv
    assert rv["commits_since"] == 0
    assert rv["changed"] == ["notes.txt", "src/util.py"]
    assert "  - src/util.py (modified)" in text and "  - notes.txt (added)" in text
    assert "README.md (" not in text.split("## Handoff")[0]
    # the user's index is untouched: nothing staged
    assert drv.git("diff", "--cached", "--name-only") == b""


def test_a_file_named_in_the_handoff_deleted_is_drifted(verified):
    drv = verified.drv
    os.unlink(os.path.join(drv.root, "src/app.py"))
    text, rv = claim(verified)
    assert rv["verdict"] == "drifted", rv
    assert rv["missing_named"] == ["src/app.py"]
    assert rv["changed"] == ["src/app.py"]
    assert "files the handoff names that no longer exist: `src/app.py`" in text
    assert "src/app.py (deleted)" in text


def test_a_branch_switch_is_stale(verified):
    drv = verified.drv
    drv.git("checkout", "-q", "-b", "experiment")
    write(drv, "src/app.py", "x = 99\n")
    text, rv = claim(verified)
    assert rv["verdict"] == "stale", rv
    assert "the branch is experiment now, it was main" in rv["reason"]
    assert rv["changed"] == ["src/app.py"]
    assert "## Since the checkpoint: stale" in text and "branch main then, experiment now" in text


def test_a_pending_snapshot_is_said_not_compared(verified):
    drv = verified.drv
    mpath = os.path.join(drv.sdir(S1), "checkpoint", "manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    m["git"] = {"git": None, "pending": True, "job": "x", "pid": 0, "ref": m["git"]["ref"],
                "result": os.path.join(drv.sdir(S1), "checkpoint", "snapshot-never.json"),
                "started_at": m["verified_at"], "until": m["verified_at"] + 600}
    with open(mpath, "w") as f:
        json.dump(m, f)
    write(drv, "src/util.py", "y = 3\n")
    text, rv = claim(verified)
    assert rv["verdict"] == "fresh" and rv["snapshot"] == "pending", rv
    assert "not compared yet" in text


def test_actions_after_the_checkpoint_are_listed_marked_and_redacted(verified):
    drv = verified.drv  # no tmux: AWAITING_MANUAL_CLEAR, and the session works on
    burst = [("Bash", {"command": "git push origin main"}),
             ("Edit", {"file_path": os.path.join(drv.root, "src/app.py"), "old_string": "x", "new_string": "z"}),
             ("Bash", {"command": "curl -X POST -H 'Authorization: Bearer sk-live-9fQ2xLm4Zt8Rk1Vb7Nc3Hd5J' https://api.example.com/deploy"}),
             ("Bash", {"command": "export NPM_TOKEN=npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34 && npm publish"}),
             ("Bash", {"command": "pytest -q"})]
    for tool, inp in burst:
        drv.inproc("PostToolUse", S1, tool_name=tool, tool_input=inp, tool_response={"stdout": "", "stderr": "",
                                                                                      "interrupted": False})
    drv.inproc("PostToolUseFailure", S1, tool_name="Bash", tool_input={"command": "pip install -e ."},
             error="Exit code 1", is_interrupt=False)
    # S1's process is gone (kill -9): a new `claude` (another process) claims the waiting checkpoint
    drv.claude_pid = verified.host.pid = dead_pid(1)
    text, rv = claim(verified, source="startup")
    assert rv["process"] == "gone"
    section = text[text.index("## Actions after the checkpoint"):]
    section = section[:section.index("\n\n")] if "\n\n" in section else section
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(items) == 6, section
    assert items[0].startswith("- Bash `git push origin main` — OUTSIDE the work tree: git push")
    assert items[1] == "- Edit `%s`" % os.path.join(drv.root, "src/app.py")
    assert "OUTSIDE the work tree: network: POST (curl)" in items[2]
    assert "OUTSIDE the work tree: npm publish" in items[3]
    assert items[4] == "- Bash `pytest -q`"
    assert items[5] == "- Bash `pip install -e .` — failed, exit 1; OUTSIDE the work tree: pip install"
    assert "4 reached outside the work tree" in section
    for secret in ("sk-live-9fQ2xLm4Zt8Rk1Vb7Nc3Hd5J", "npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34"):
        assert secret not in text
        for rec in drv.ledger(S1, ev="tool"):  # masked on the hot path already
            assert secret not in json.dumps(rec)
    # actions before the checkpoint are not listed
    assert "rewrite the parser" not in section


def crashed(tmp_path):
    """S1 works (prompts, todos, tool calls, a reply) and dies: no checkpoint."""
    drv = HookDriver(tmp_path / "proj", files=FILES)
    t = drv.transcript(S1)
    t.assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("UserPromptSubmit", S1, prompt="add a --verbose flag to the CLI")
    t.todo_write([{"content": "parse the flag", "status": "completed", "activeForm": "x"},
                  {"content": "print the details", "status": "in_progress", "activeForm": "y"}], tokens_at(12))
    drv.hook("PostToolUse", S1, tool_name="Edit", tool_input={"file_path": os.path.join(drv.root, "src/app.py")})
    drv.hook("UserPromptSubmit", S1, prompt="also document it in the README")
    drv.hook("PostToolUse", S1, tool_name="Bash", tool_input={"command": "git push origin HEAD"})
    t.assistant(tokens_at(14), "The flag parses; printing is next.")
    drv.hook("Stop", S1)  # the turn-end snapshot starts in the background
    wait_for_snapshot_jobs(drv.cc_home)
    write(drv, "src/app.py", "x = 1\nverbose = True\n")  # its last, unfinished turn
    return drv


def test_turn_snapshots_off_leave_no_turn_ref(tmp_path):
    drv = HookDriver(tmp_path / "proj", files=FILES)
    drv.config(turn_snapshots=False)
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("UserPromptSubmit", S1, prompt="go")
    drv.hook("Stop", S1)
    wait_for_snapshot_jobs(drv.cc_home)
    assert drv.git("for-each-ref", "refs/continuity/") == b""


def test_a_crash_before_any_checkpoint_gets_a_machine_handoff_exactly_once(tmp_path):
    drv = crashed(tmp_path)
    drv.claude_pid = dead_pid(1)
    drv.transcript(S2).assistant(tokens_at(3))
    text = context(drv.hook("SessionStart", S2, source="startup"))
    assert "died mid-work" in text and "degraded" in text
    assert "claude --resume %s" % S1 in text
    assert "add a --verbose flag to the CLI" in text and "also document it in the README" in text
    assert "[in_progress] print the details" in text and "parse the flag" not in text
    assert "The flag parses; printing is next." in text
    assert "Bash `git push origin HEAD` — OUTSIDE the work tree: git push" in text
    turn = drv.git("rev-parse", "refs/continuity/%s/turn-001" % drv.project.key).decode().strip()
    assert "work tree at its last turn end: refs/continuity/%s/turn-001 (commit %s" % (drv.project.key, turn[:12]) in text
    assert "changed after that turn end (its last, unfinished turn): src/app.py (modified)" in text
    assert drv.state(S1)["state"] == "ENDED" and drv.state(S1)["recovered_by"] == drv.number(S2)
    assert drv.state(S2)["recovery"]["resume"] == "claude --resume %s" % S1
    status = drv.cli("status").stdout
    assert "claude --resume %s" % S1 in status
    # S2 ends; a third session gets nothing
    drv.hook("SessionEnd", S2, reason="prompt_input_exit")
    drv.claude_pid = dead_pid(2)
    drv.transcript(S3).assistant(tokens_at(3))
    assert context(drv.hook("SessionStart", S3, source="startup")) == ""


def test_post_tool_use_stays_on_the_fast_path_with_the_action_record(tmp_path):
    """A card hit imports nothing beyond the per-tool-call builtins; the action module is pure str work."""
    drv = HookDriver(tmp_path / "proj", files=FILES)
    drv.transcript(S1).assistant(tokens_at(10))
    drv.hook("SessionStart", S1, source="startup")
    drv.hook("PostToolUse", S1)  # the card is built
    code = ("import sys, posix\n"
            "sys.path.insert(0, %r)\n"
            "before = set(sys.modules)\n"
            "import cc_continuity.hosts.claude.hooks as h\n"
            "out = h.dispatch('PostToolUse', posix.read(0, 1 << 20))\n"
            "sys.stdout.write(repr((out[1], sorted(set(sys.modules) - before))))\n"
            % REPO)
    payload = drv.payload("PostToolUse", S1, tool_input={"command": "git push --token s3cr3tT0kenValue123 x"})
    res = subprocess.run([sys.executable, "-S", "-c", code], input=json.dumps(payload).encode(),
                         env=drv.env(S1), capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    import ast

    outcome, new = ast.literal_eval(res.stdout.decode())
    assert outcome == "ok", outcome
    outside = {m for m in new if m != "cc_continuity" and not m.startswith("cc_continuity.")}
    assert outside <= {"posix", "_json", "_sha256", "_sha2", "time", "_signal"}, outside
    assert set(new) - outside <= {"cc_continuity", "cc_continuity.hosts", "cc_continuity.hosts.claude",
                                  "cc_continuity.hosts.claude.hooks",
                                  "cc_continuity.hosts.claude.hooks.post_tool_use",
                                  "cc_continuity.fastjson", "cc_continuity.card", "cc_continuity.ledger",
                                  "cc_continuity.paths", "cc_continuity.digest",
                                  "cc_continuity.meter", "cc_continuity.session"}, new
    last = drv.ledger(S1, ev="tool")[-1]
    assert last["target"] == "git push --token [REDACTED] x"
