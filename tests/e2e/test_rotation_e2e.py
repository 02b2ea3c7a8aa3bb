"""The whole product against the real Claude Code: rotations end to end.

Each test gets a sandbox (temp HOME seeded per the live observations, temp git
repo, private tmux server, scripted model), runs ``cc-continuity install
--no-wrapper`` for real into it, starts claude interactively and types the
first prompt.  After that no key comes from the test (scenario 2 types the
manual ``/clear`` it is about; scenario 5 restarts claude after killing it):
the hooks, the rotator and the scripted model do the rest, and the tests read
the outcome from files, git refs, ledgers and the model's request log.

Figures P4 (rotation overhead) and P5 (bootstrap size) are measured in
scenario 1; they are printed and, with ``CC_E2E_METRICS=<file>``, appended to
that file as JSON lines.
"""

import hashlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import pytest

from cc_continuity.install import settings as install_settings
from cc_continuity.rehearse import HANDOFF_REQUEST, handoff_text, rotation_scenario

from . import scenarios
from .common import (SLUG, Continuity, assert_clean_successor, bootstrap_of, first_request, git, git_state,
                     installed_sandbox, prompt, report_metrics)
from .harness import REPO_ROOT

pytestmark = pytest.mark.e2e


# -- 1. a chain of three rotations -----------------------------------------------

TASK_CHAIN = "Chain task: keep a work log"


def test_chain_of_three_rotations(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, rotations=3, task=TASK_CHAIN))
    cont = Continuity(sb)
    before = git_state(sb)
    sb.start_claude()
    prompt(sb, TASK_CHAIN)  # the only key the test sends

    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=120)
    sb.wait_idle()
    cont.wait_event(3, "rotator", step="renamed")  # the last rotator's last step

    # Four sessions, each rotated into the next.
    assert cont.numbers() == [1, 2, 3, 4]
    recs = {n: cont.record(n) for n in (1, 2, 3, 4)}
    assert [recs[n]["name"] for n in (1, 2, 3, 4)] == ["%s-%03d" % (SLUG, n) for n in (1, 2, 3, 4)]
    for n in (1, 2, 3):
        assert recs[n]["state"] == "ROTATED" and recs[n]["successor"] == n + 1
        assert recs[n]["checkpoint"]["id"] == "cp-%03d" % n and recs[n]["checkpoint"]["validation"] == "valid"
        assert recs[n + 1]["predecessor"] == n and recs[n + 1]["predecessor_claimed"]
        steps = [r["step"] for r in cont.events(n, "rotator")]
        assert "failed" not in steps and steps[-1] == "renamed", steps
        assert {"clear_sent", "started", "continuation_sent", "delivered"} <= set(steps), steps
    assert recs[4]["state"] == "ACTIVE" and done.session_id == recs[4]["session_id"]
    assert len(sb.model.session_ids()) == 4  # one claude process, four conversations

    # Each successor started clean: bootstrap in, previous conversation out.
    figures = []
    for n in (1, 2, 3):
        req = first_request(sb, recs[n + 1]["session_id"])
        assert_clean_successor(req, n, n + 1, TASK_CHAIN)
        assert req.contains("Continuing from cp-%03d (%s-%03d). The handoff" % (n, SLUG, n + 1))  # the typed prompt
        checkpoint_ts = cont.events(n, "checkpoint")[0]["ts"]
        boot_ledger = cont.events(n + 1, "bootstrap")[0]
        boot_seen = bootstrap_of(req)
        assert len(boot_seen) == boot_ledger["chars"]  # the whole bootstrap arrived, unchanged in size
        model_time = 0.0  # no rule has a `delay`: the model answers at once, nothing to subtract
        figures.append({"rotation": "cp-%03d" % n,
                        "overhead_ms": round((req.time - checkpoint_ts - model_time) * 1000),
                        "bootstrap_chars": boot_ledger["chars"], "bootstrap_tokens": len(boot_seen) // 4})

    # Snapshots under refs/continuity, the user's git state untouched.
    refs = git(sb, "for-each-ref", "--format=%(refname)", "refs/continuity").split()
    key = os.path.basename(cont.project_dir())  # refs are named by the project key (slug + hash)
    assert key.startswith(SLUG + "-")
    cps = [r for r in refs if "/cp-" in r]
    assert cps == ["refs/continuity/%s/cp-%03d" % (key, n) for n in (1, 2, 3)]
    # Besides the checkpoints, at most one rolling turn-end snapshot per session (issue 14).
    assert all(re.fullmatch(r"refs/continuity/%s/(cp|turn)-\d{3}" % re.escape(key), r) for r in refs), refs
    trees = [set(git(sb, "ls-tree", "-r", "--name-only", ref).split()) for ref in cps]
    for n, tree in enumerate(trees, 1):
        work = sorted(f for f in tree if f.startswith("work-"))
        assert len(work) == n and "README.md" in tree, tree  # each snapshot holds the work so far
    assert trees[0] < trees[1] < trees[2]
    assert git_state(sb) == before
    status = git(sb, "status", "--porcelain").split("\n")
    assert sorted(line for line in status if line) == sorted("?? " + f for f in trees[2] if f.startswith("work-"))

    verify = cont.cli("verify")
    assert verify.returncode == 0 and "0 bad" in verify.stdout, verify.stdout + verify.stderr
    history = json.loads(cont.cli("history", "--json").stdout)
    assert history["rotations"] == 3
    assert [r["checkpoint"] for r in history["sessions"]] == ["cp-001", "cp-002", "cp-003", None]
    assert "%s-004" % SLUG in sb.screen()  # status line (and tmux session name) follow the chain

    overheads = [f["overhead_ms"] for f in figures]
    report_metrics("P4", {"per_rotation_ms": overheads, "median_ms": statistics.median(overheads)})
    report_metrics("P5", {"per_rotation": [{k: f[k] for k in ("rotation", "bootstrap_chars", "bootstrap_tokens")}
                                           for f in figures]})
    assert all(f["bootstrap_tokens"] <= 2500 for f in figures), figures  # P5 goal
    assert statistics.median(overheads) <= 3000, overheads  # P4 goal


# -- 2. no tmux for the rotation: the user types /clear ---------------------------

TASK_MANUAL = "Manual task: keep a work log"


def test_manual_clear_when_tmux_is_disabled(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, task=TASK_MANUAL))
    cfg = sb.run([sys.executable, "-c", "from cc_continuity import config; config.update_global({'tmux': False})"],
                 env={"PYTHONPATH": REPO_ROOT})
    assert cfg.returncode == 0, cfg.stderr
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_MANUAL)

    cont.wait_event(1, "transition", to="AWAITING_MANUAL_CLEAR")
    screen = sb.wait_for_text("Type /clear to continue", timeout=20)
    assert "handoff cp-001 is verified" in screen
    screen = sb.wait_for_text("type /clear to rotate", timeout=20)  # the status line says so too
    assert re.search(r"ctx \d+% [▮▯]{5} rotate · " + SLUG + "-001 · ⚠ type /clear to rotate", screen), screen
    sb.wait_idle()
    time.sleep(1.0)  # nothing happens on its own: no rotator, no successor
    assert cont.numbers() == [1] and cont.record(1)["state"] == "AWAITING_MANUAL_CLEAR"
    assert not cont.events(1, "rotator_spawned") and not cont.events(1, "rotator")

    sb.submit("/clear")  # what the user is asked to do
    cont.wait_event(2, "transition", to="BOOTSTRAPPING")  # the claim's last step
    claim = cont.events(2, "claim")[0]
    assert claim["checkpoint"] == "cp-001" and claim["predecessor"] == 1
    pred = cont.record(1)
    assert pred["state"] == "ROTATED" and pred["successor"] == 2
    assert cont.record(2)["state"] == "BOOTSTRAPPING"
    sb.wait_idle()
    prompt(sb, "carry on")
    req = sb.model.wait_for(lambda r: r.kind == "main" and "carry on" in r.latest_text, timeout=30)
    assert req.session_id == cont.record(2)["session_id"]
    assert_clean_successor(req, 1, 2, TASK_MANUAL)
    sb.wait_for(lambda: cont.state(2) == "ACTIVE", 10, what="successor ACTIVE")


# -- 3. an invalid handoff first, then a valid one -----------------------------------

TASK_INVALID = "Invalid-first task: keep a work log"


def test_invalid_handoff_is_answered_with_exact_problems(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.invalid_then_valid(p, TASK_INVALID))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_INVALID)

    fix = sb.model.wait_for(lambda r: r.rule == "handoff-fix", timeout=60)
    told = fix.latest_text
    hpath = os.path.join(cont.sdir(1), "checkpoint", "handoff.md")
    assert "the handoff at %s is not complete yet (check 1 of 3)" % hpath in told
    expected = ["- it is %d characters; the minimum is 400" % len(scenarios.BAD_HANDOFF)]
    expected += ['- section "## %s" is missing' % s for s in ("Done so far", "Current state",
                                                             "Decisions and constraints", "Open questions",
                                                             "Files touched", "How to verify")]
    expected.append("- these named paths do not exist (relative to %s): src/missing_module.py" % sb.project)
    for line in expected:
        assert line in told, "missing from what the model was told: %r\n---\n%s" % (line, told)
    assert '"## Goal"' not in told and '"## Next steps"' not in told  # present sections are not reported

    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=60)
    checks = cont.events(1, "handoff_check")
    assert [(c["try"], c["ok"]) for c in checks] == [(1, False), (2, True)]
    manifest = cont.manifest(1)
    assert manifest["handoff"]["tries"] == 2 and manifest["handoff"]["validation"] == "valid"
    assert not manifest["degraded"]
    with open(hpath, encoding="utf-8") as f:
        assert f.read() == handoff_text()
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_INVALID)


# -- 4. the hard ceiling during a burst of tool calls ----------------------------------

TASK_HARD = "Hard-ceiling task: run the burst"


def test_hard_ceiling_denies_the_burst_and_the_handoff_still_gets_written(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.hard_ceiling_burst(p, TASK_HARD))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_HARD)

    answer = sb.model.wait_for(lambda r: r.rule == "hard-handoff", timeout=60)
    hpath = os.path.join(cont.sdir(1), "checkpoint", "handoff.md")
    blocks = [b for m in answer.messages if isinstance(m.get("content"), list) for b in m["content"]]
    burst = {b["id"]: b["name"] for b in blocks if b.get("type") == "tool_use"
             and ("burst-2" in json.dumps(b.get("input")) or "burst-3" in json.dumps(b.get("input")))}
    assert sorted(burst.values()) == ["Bash", "Write"], blocks
    results = [b for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") in burst]
    for r in results:  # each tool of the burst was refused by our PreToolUse, with the reason
        text = json.dumps(r)
        assert r.get("is_error") and "PreToolUse:%s hook error" % burst[r["tool_use_id"]] in text, results
        assert "past the hard ceiling of 72%" in text and hpath in text, results
    assert len(results) == 2, results
    # burst-1 came in the very response that crossed the ceiling: denied too (0.1.0 let it run).
    assert not os.path.exists(os.path.join(sb.project, "burst-1.txt"))
    assert not os.path.exists(os.path.join(sb.project, "burst-2.txt"))  # denied Bash
    assert not os.path.exists(os.path.join(sb.project, "burst-3.txt"))  # denied Write
    assert cont.hooks_log().count("denied at hard ceiling") == 3

    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=60)
    with open(hpath, encoding="utf-8") as f:
        assert f.read() == handoff_text()  # the Write of the handoff itself was allowed
    manifest = cont.manifest(1)
    assert manifest["handoff"]["validation"] == "valid" and manifest["handoff"]["tries"] == 1
    assert not sb.model.any_contains(HANDOFF_REQUEST)  # written already: the Stop did not need to ask
    assert [e["level"] for e in cont.events(1, "level")] == ["hard"]
    assert cont.record(1)["state"] == "ROTATED"
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_HARD)


# -- 5. claude killed after the checkpoint; a fresh claude claims it --------------------

TASK_KILL = "Crash task: keep a work log"


def test_kill_after_checkpoint_then_fresh_claude_claims(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, task=TASK_KILL))
    cont = Continuity(sb)
    sb.start_claude()
    first_pid = sb.claude_pid
    prompt(sb, TASK_KILL)

    cont.wait_event(1, "checkpoint", timeout=60)
    os.kill(first_pid, signal.SIGKILL)  # before the rotator can type anything: it waits for an idle pane
    sb.wait_for(lambda: not sb.claude_alive(), 10, what="claude to die")
    # Let the (orphaned) Stop hook and a rotator it may have started finish.
    sb.wait_for(lambda: "checkpoint cp-001 verified" in cont.hooks_log(), 20, what="Stop hook end")
    if cont.events(1, "rotator_spawned"):
        failed = cont.wait_event(1, "rotator", step="failed", timeout=30)
        assert "exited" in failed["reason"] or "gone" in failed["reason"], failed
    rec = cont.record(1)
    assert rec["state"] in ("CHECKPOINT_VERIFIED", "ROTATING", "AWAITING_MANUAL_CLEAR") and not rec.get("successor")
    assert cont.numbers() == [1]

    sb.start_claude()  # a fresh claude in the same project
    assert sb.claude_pid != first_pid
    claim = cont.wait_event(2, "claim")
    assert claim["checkpoint"] == "cp-001" and claim["predecessor"] == 1
    assert cont.record(2)["source"] == "startup"
    prompt(sb, "continue")
    req = sb.model.wait_for(lambda r: r.kind == "main" and "continue" in r.latest_text
                            and r.session_id == cont.record(2)["session_id"], timeout=30)
    assert_clean_successor(req, 1, 2, TASK_KILL)
    pred = cont.record(1)
    assert pred["state"] == "ROTATED" and pred["successor"] == 2
    assert cont.numbers() == [1, 2]


# -- 6. the status line -----------------------------------------------------------------

def test_status_line_shows_our_segment(sandbox_factory):
    sb = installed_sandbox(sandbox_factory, lambda p: scenarios.status_probe("probe the status"))
    sb.start_claude()
    # Before any reply there is no reading yet (and the first render may precede SessionStart).
    sb.wait_for_text("ctx ? ▯▯▯▯▯ ok", timeout=15)
    prompt(sb, "probe the status")
    screen = sb.wait_for(lambda: (lambda s: s if "ctx 57%" in s else None)(sb.screen()), 20, what="ctx 57%")
    assert re.search(r"ctx 57% ▮▮▮▯▯ warn · " + SLUG + "-001", screen), screen


# -- cc-continuity rehearse, for real ---------------------------------------------------

def tree_digest(root):
    """Every path under ``root`` with its type, mode and content (or link target) hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[p] = ("dir", st.st_mode)
            else:
                with open(p, "rb") as f:
                    out[p] = ("file", st.st_mode, hashlib.sha256(f.read()).hexdigest())
    return out


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def test_rehearse_runs_one_rotation_and_touches_nothing(claude_bin):
    # The autouse fixture made HOME and CC_CONTINUITY_HOME temp dirs: install "for real" there.
    home, cc_home = os.environ["HOME"], os.environ["CC_CONTINUITY_HOME"]
    inst = subprocess.run([sys.executable, "-m", "cc_continuity", "install", "--no-wrapper"],
                          capture_output=True, text=True, timeout=120)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    before = {**tree_digest(home), **tree_digest(cc_home)}

    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cc_continuity", "rehearse", "--claude", claude_bin, "--json",
                           "--timeout", "90"], capture_output=True, text=True, timeout=150)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] and result["verdict"].startswith("PASS"), result
    assert [s["step"] for s in result["steps"] if s["at_ms"] is None] == []
    at = [s["at_ms"] for s in result["steps"]]
    assert at == sorted(at)  # the steps happened in protocol order
    assert 0 < result["rotation_overhead_ms"] < 10000 and result["bootstrap_chars"] > 400
    assert result["model_url"].startswith("http://127.0.0.1:")
    assert result["settings"] == os.path.join(home, ".claude", "settings.json")

    assert {**tree_digest(home), **tree_digest(cc_home)} == before  # not one byte of the user's files
    assert not os.path.exists(result["sandbox"])  # throwaway removed
    assert processes_mentioning(result["sandbox"]) == []  # tmux server, claude, rotator: all gone
    report_metrics("rehearse", {"seconds": round(took, 1), "overhead_ms": result["rotation_overhead_ms"]})


def test_rehearse_prints_each_step_as_it_happens_and_records_the_pane(claude_bin, tmp_path):
    """The steps arrive while it runs (not all at the end); --record writes a valid v2 cast of the
    real pane in which the /clear and then the continuation appear."""
    from helpers.cast import plain_text, read_cast

    inst = subprocess.run([sys.executable, "-m", "cc_continuity", "install", "--no-wrapper"],
                          capture_output=True, text=True, timeout=120)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    cast = str(tmp_path / "rotation.cast")
    proc = subprocess.Popen([sys.executable, "-m", "cc_continuity", "rehearse", "--claude", claude_bin,
                             "--timeout", "90", "--record", cast], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    arrived = []
    for line in proc.stdout:
        arrived.append((time.monotonic(), line))
    proc.wait(timeout=150)
    done = time.monotonic()
    out = "".join(l for _, l in arrived)
    assert proc.returncode == 0, out + proc.stderr.read()
    ready = next(t for t, l in arrived if re.match(r"^  \[\s*\d+\.\ds\] claude started, input box idle$", l))
    clear = next(t for t, l in arrived if re.match(r"^  \[\s*\d+\.\ds\] /clear typed by the rotator$", l))
    assert done - ready > 2.0 and ready < clear < done, out          # printed as it happened
    assert "PASS: one full rotation" in out and ("recording: %s" % cast) in out
    header, events = read_cast(cast)
    assert (header["width"], header["height"]) == (200, 50)
    text = plain_text(events)
    clear_at = text.index("/clear")
    assert text.index("Continuing from cp-001", clear_at) > clear_at, text[-2000:]


# -- the rotator with an interpreter that has no third-party packages ---------------------

def test_rotation_when_the_hook_interpreter_has_no_site_packages(sandbox_factory, tmp_path):
    """Hooks run the *base* interpreter, which may have none of our packages (a pipx/venv install's base
    Python): the rotation needs none (the tmux driver is the standard library).  A venv made without pip
    stands in for such an interpreter: same stdlib, empty site-packages."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    bare = str(venv / "bin" / "python")
    for mod in ("libtmux", "psutil", "requests"):
        assert subprocess.run([bare, "-c", "import " + mod], capture_output=True).returncode != 0, mod

    task = "Bare-interpreter task: keep a work log"
    sb = installed_sandbox(sandbox_factory, lambda p: rotation_scenario(p, task=task))
    doc = sb.settings()
    for groups in doc["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                if install_settings.is_our_handler(handler):
                    handler["command"] = bare
    sb.write_settings(doc)
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, task)

    spawned = cont.wait_event(1, "rotator_spawned", timeout=60)
    sb.wait_for(lambda: not processes_mentioning("cc_continuity.tmux.rotator") or
                spawned["pid"] not in processes_mentioning("cc_continuity.tmux.rotator"), 60, what="rotator to finish")
    steps = [r["step"] for r in cont.events(1, "rotator")]
    assert steps and steps[-1] == "renamed", steps
    assert cont.record(1)["state"] == "ROTATED"
