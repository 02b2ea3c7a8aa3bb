"""The real Codex CLI 0.171.0, unattended: ``cc-continuity run --agent codex`` rotates with no typing.

Our hooks are written into the sandbox's ``$CODEX_HOME/hooks.json`` as install renders them for
Codex (the checkout as the app).  ``--dangerously-bypass-hook-trust`` goes to every ``codex exec``
here only because the sandbox is ours and its hooks are ours: ``run`` itself never passes it (it
would trust a repository's ``.codex/`` hooks too).  The scripted Responses API decides every reply
and the usage Codex records, so the context crosses *rotate* exactly where the scenario says.
CI: ``CC_CONTINUITY_CODEX_BIN=<.ci/install-codex.sh> python3 -m pytest -m 'e2e and codex'``.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

from cc_continuity import config, ledger, session
from cc_continuity.rotation import handoff
from cc_continuity.hosts.codex import hooks as codex_hooks
from cc_continuity.hosts.codex import wire
from cc_continuity.install import settings
from cc_continuity.project import Project
from helpers.codex import CodexSandbox
from helpers.hookdriver import REPO, handoff_text
from helpers.responses_model import ResponsesModel

pytestmark = [pytest.mark.codex, pytest.mark.e2e]
WINDOW = 100_000          # configured; Codex reports 95 000 (its effective window)
OVER = 60_000             # 63 % of 95 000: past rotate (62 %), below hard (72 %) and Codex's own compaction (90 000)
UNDER = 20_000
HANDOFF = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `README.md` (read)"})


def install_ours(box):
    """Our Codex hooks in the sandbox's hooks.json, as install renders them (the checkout is the app)."""
    table = {}
    for event in codex_hooks.EVENTS:
        cmd = shlex.join([sys.executable, "-S", "-c", settings.boot_code(REPO, codex_hooks.HOOK_MARK), event])
        table[event] = [{"hooks": [{"type": "command", "command": cmd, "timeout": codex_hooks.TIMEOUTS[event]}]}]
    with open(box.hooks_path, "w") as f:
        json.dump({"hooks": table}, f, indent=2)


def scenario(rotations):
    """The task crosses rotate; each successor starts small (its bootstrap), runs a tool, and but the last
    crosses again; the last finishes.  Each handoff is its own (the same one twice in a row stops a run).  (A successor already past rotate at its first request is a loop the
    rotation stops: its start alone would be the next one's.)"""
    rules = [{"name": "handoff", "when": {"latest_contains": "Handoff file (absolute path):"},
              "extract": {"path": r"Handoff file \(absolute path\): (\S+)"},
              "reply": [{"type": "exec_command", "cmd": "cat > {path} <<'EOF'\n{handoff}\nRotation marker {n}.\nEOF"}],
              "then": ["Handoff written."], "usage": {"input_tokens": OVER + 500}}]
    for k in range(1, rotations):
        rules.append({"name": "cont-%d" % k, "when": {"latest_contains": "Continuing from cp-%03d" % k},
                      "reply": [{"type": "exec_command", "cmd": "echo step-%d-ran" % k}],
                      "usage": {"input_tokens": UNDER}})
        rules.append({"name": "crossed-%d" % k, "when": {"latest_contains": "step-%d-ran" % k},
                      "reply": "Worked on from cp-%03d; more to do." % k, "usage": {"input_tokens": OVER}})
    rules.append({"name": "last", "when": {"latest_contains": "Continuing from cp-%03d" % rotations},
                  "reply": "All done.", "usage": {"input_tokens": UNDER}})
    return {"rules": rules, "default": {"reply": "Step one done.", "usage": {"input_tokens": OVER}},
            "vars": {"handoff": HANDOFF}, "title": "Scripted title"}


def _run(codex_bin, model, tmp_path, outside, sandbox):
    """A git work tree with our hooks, and ``run --agent codex`` in it under ``sandbox``: (box, state dir, result)."""
    box = CodexSandbox(codex_bin, model, tmp_path / "box", window=WINDOW)
    install_ours(box)
    os.makedirs(os.path.join(box.work, "src"))
    for name, text in (("README.md", "hello\n"), ("src/app.py", "print(1)\n")):  # the files the handoff names
        with open(os.path.join(box.work, name), "w") as f:
            f.write(text)
    subprocess.run(["git", "-C", box.work, "add", "."], check=True)
    subprocess.run(["git", "-C", box.work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   check=True)
    state = os.path.join(outside, "state") if outside else str(tmp_path / "state")
    env = box.env(CC_CONTINUITY_HOME=state, PYTHONPATH=REPO, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                  GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "run", "--agent", "codex", "--codex", codex_bin,
                          "--same-tree", "0",  # (its steps change no file: the same tree at each checkpoint)
                          "build the parser", "--", "--dangerously-bypass-hook-trust", "--sandbox", sandbox],
                         cwd=box.work, env=env, capture_output=True, text=True, timeout=300)
    return box, state, res


def test_under_read_only_the_handoff_degrades_and_the_run_says_so(codex_bin, tmp_path, monkeypatch):
    """``--sandbox read-only``: Codex ignores ``--add-dir`` and the model's handoff write fails ("Read-only file
    system"); the Stop's tries run out, a machine handoff goes on (degraded), the successor claims it and the
    run ends done, naming the degraded checkpoint."""
    model = ResponsesModel(scenario(1), log_path=tmp_path / "model.jsonl").start()
    outside = tempfile.mkdtemp(prefix="cc-codex-state-", dir="/var/tmp")
    try:
        box, state, res = _run(codex_bin, model, tmp_path, outside, "read-only")
        assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
        assert res.stderr.count("handed over cp-001") == 1 and "1 handoff degraded (cp-001)" in res.stderr, res.stderr
        monkeypatch.setenv("CC_CONTINUITY_HOME", state)
        proj = Project.discover(box.work)
        first, second = (session.load(proj.session_dir(n)) for n in (1, 2))
        assert (first["state"], first["driver"], first["checkpoint"]["degraded"]) == (session.ROTATED, "headless", True)
        assert second.get("checkpoint_from") == "cp-001"
    finally:
        model.stop()
        shutil.rmtree(outside, ignore_errors=True)


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
def test_the_headless_chain_rotates_three_times_with_no_typing(codex_bin, tmp_path, sandbox, monkeypatch):
    """Under ``workspace-write`` (Codex's default in a trusted folder) the handoff's folder is outside the
    workspace: ``run`` adds it (``--add-dir``), so the model's write goes through and no checkpoint degrades.
    The state dir is kept out of /tmp there (workspace-write lets every command write /tmp)."""
    model = ResponsesModel(scenario(3), log_path=tmp_path / "model.jsonl").start()
    outside = tempfile.mkdtemp(prefix="cc-codex-state-", dir="/var/tmp") if sandbox == "workspace-write" else None
    try:
        box, state, res = _run(codex_bin, model, tmp_path, outside, sandbox)
        assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
        assert res.stderr.count("handed over cp-") == 3, res.stderr

        # Four threads, each a fresh context: the successors' first requests carry the bootstrap.
        mains = model.requests("main")
        threads = list(dict.fromkeys(r.thread_id for r in mains))
        assert len(threads) == 4, [(r.thread_id, r.rule) for r in mains]
        sizes = []
        for k, tid in enumerate(threads[1:], 1):
            first = model.requests("main", thread_id=tid)[0]
            [boot] = [m for m in first.messages("developer") if "Continuing from cp-%03d" % k in m]
            assert "truncated" not in boot, boot[-300:]  # whole: within Codex's cut
            sizes.append(len(boot.encode("utf-8")))
            assert "Step one done." not in first.text  # nothing of the old thread came along
        print("bootstrap bytes: %s (Codex cuts at %d)" % (sizes, wire.INJECT_LIMIT_TOKENS * wire.BYTES_PER_TOKEN))
        assert not model.requests("compaction"), "Codex never compacted: the rotation came first"

        # The chain: each checkpoint claimed exactly once, by the next session; the last one still open.
        monkeypatch.setenv("CC_CONTINUITY_HOME", state)
        proj = Project.discover(box.work)
        recs = [session.load(proj.session_dir(n)) for n in range(1, 5)]
        assert [r["state"] for r in recs[:3]] == [session.ROTATED] * 3, [r["state"] for r in recs]
        assert [r.get("successor") for r in recs[:3]] == [2, 3, 4]
        assert [r.get("driver") for r in recs[:3]] == ["headless"] * 3
        assert [r["checkpoint"]["degraded"] for r in recs[:3]] == [False] * 3  # the model's handoff, validated
        assert [r.get("host") for r in recs] == ["codex"] * 4
        assert [r.get("checkpoint_from") for r in recs[1:]] == ["cp-001", "cp-002", "cp-003"]
        for n in range(1, 5):
            ok, why = ledger.verify(session.ledger_path(proj.session_dir(n)))[:2]
            assert ok, why
        # Each shell call's exit code: from the rollout, settled at its turn's end.
        ran = [r for n in (2, 3) for r in handoff.tool_lines(ledger.read(session.ledger_path(proj.session_dir(n))))
               if r["target"].startswith("echo ")]
        assert [(r["target"], r["exit"]) for r in ran] == [("echo step-1-ran", 0), ("echo step-2-ran", 0)], ran
        # P4 per rotation: the predecessor's last model request -> the successor's first.
        p4 = []
        for a, b in zip(threads, threads[1:]):
            p4.append(model.requests("main", thread_id=b)[0].time - model.requests("main", thread_id=a)[-1].time)
        print("P4 headless (s): %s" % ", ".join("%.2f" % x for x in p4))
        assert "degraded" not in res.stderr
    finally:
        model.stop()
        if outside:
            shutil.rmtree(outside, ignore_errors=True)


def test_a_usage_limit_ends_the_run_with_its_own_status_and_the_reset_codex_recorded(codex_bin, tmp_path):
    """Issue 40's lab replayed: the successor's request answered with Codex's usage limit (``usage_limit_reached``
    and the ``x-codex-primary-*`` headers, a reset two hours ahead); Codex does not retry it, the rollout has
    the reset, and the run ends 6 saying it."""
    import time

    at = int(time.time()) + 2 * 3600
    limited = scenario(1)
    limited["rules"].insert(0, {"name": "limit", "when": {"latest_contains": "Continuing from cp-001"},
                                "error": {"status": 429, "body": {"error": {
                                    "type": "usage_limit_reached", "message": "The usage limit has been reached",
                                    "plan_type": "plus", "resets_at": at, "resets_in_seconds": 7200}},
                                    "headers": {"x-codex-primary-used-percent": "100",
                                                "x-codex-primary-window-minutes": "300",
                                                "x-codex-primary-reset-at": str(at),
                                                "x-codex-primary-reset-after-seconds": "7200"}}})
    with ResponsesModel(limited) as model:
        _box, _state, res = _run(codex_bin, model, tmp_path, None, "workspace-write")
        limits_hit = [r for r in model.requests("main") if r.rule == "limit"]
    assert res.returncode == 6, (res.returncode, res.stderr[-3000:])
    assert "stopped on a rate or usage limit" in res.stderr and "it resets at" in res.stderr, res.stderr[-2000:]
    assert "run stopped on a limit: 2 sessions, 1 rotation" in res.stderr, res.stderr[-2000:]
    assert len(limits_hit) == 1, "Codex retries a usage limit: %d requests" % len(limits_hit)
