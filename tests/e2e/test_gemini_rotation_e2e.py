"""Rotations inside one ``gemini -p``: the Gemini host's hook entry against the real Gemini CLI 0.61.

Installed as a user installs it (``cc-continuity install --agent gemini``: the app copy, our hooks in
``~/.gemini/settings.json``, the policy rule), the scripted model answers the rehearsal's rotation script
with Gemini's tools (``write_file``), and nothing is typed: the verifying AfterAgent clears and continues
(the ``native`` driver), the successor claims at its first BeforeAgent.  No ``--yolo``: the handoff's write
goes through by our policy rule, the work steps' writes by the user's own rule (``USER_RULE``), and a write
neither allows is refused as headless Gemini refuses it.
"""

import json
import os
import re
import subprocess

import pytest

from cc_continuity import ledger
from cc_continuity.rehearse import CONTINUATION, HANDOFF_REQUEST, WINDOW, WORK_MARK, rotation_scenario

pytestmark = pytest.mark.gemini

TASK = "Gemini chain task: keep a work log"
# What a user who runs headless writes for their work (or they pass --yolo): the project's work-<n>.txt only.
USER_RULE = ("[[rule]]\ntoolName = \"write_file\"\n"
             "argsPattern = '\\x00\"file_path\":\"%s/work-[0-9]+\\.txt\"\\x00'\ndecision = \"allow\"\npriority = 50\n")
ROTATIONS = 3


def _gemini_tools(node):
    """The rehearsal's script with Gemini's file tool (Claude Code's Write is write_file there)."""
    if isinstance(node, dict):
        return {k: ("write_file" if k == "name" and v == "Write" else _gemini_tools(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_gemini_tools(v) for v in node]
    return node


@pytest.fixture(scope="module")
def chain(gemini_box):
    box = gemini_box()
    box.model.set_scenario(_gemini_tools(rotation_scenario(box.project, rotations=ROTATIONS, task=TASK)))
    cc_home = os.path.join(box.root, "cchome")
    said = box.install_ours(cc_home, config={"window": WINDOW})  # no payload carries the window: ours says it
    assert "policies/cc-continuity.toml written" in said
    with open(os.path.join(box.gemini_dir, "policies", "user-work.toml"), "w") as f:
        f.write(USER_RULE % re.escape(box.project))  # the user's own rule for the work (theirs, not ours)
    run = box.run_print(TASK, timeout=240, env={"CC_CONTINUITY_HOME": cc_home})  # no --yolo: the policy rule
    return box, run, cc_home


def _sessions(cc_home):
    (proj,) = [os.path.join(cc_home, "projects", d) for d in os.listdir(os.path.join(cc_home, "projects"))]
    out = {}
    for name in sorted(os.listdir(os.path.join(proj, "sessions"))):
        sdir = os.path.join(proj, "sessions", name)
        with open(os.path.join(sdir, "state.json")) as f:
            out[int(name)] = (sdir, json.load(f), ledger.read(os.path.join(sdir, "ledger.jsonl")))
    return out


def test_three_rotations_in_one_gemini_p_each_claimed_once(chain):
    box, run, cc_home = chain
    assert run.returncode == 0, run
    sessions = _sessions(cc_home)
    assert sorted(sessions) == list(range(1, ROTATIONS + 2)), {n: s[1]["state"] for n, s in sessions.items()}
    gemini_ids = {s[1]["session_id"].split("_g")[0] for s in sessions.values()}
    assert len(gemini_ids) == 1, gemini_ids  # one Gemini session, a generation of ours per rotation
    (gid,) = gemini_ids
    for n in range(1, ROTATIONS + 1):
        sdir, rec, led = sessions[n]
        assert (rec["state"], rec["driver"], rec["successor"]) == ("ROTATED", "native", n + 1), rec
        assert [r["ev"] for r in led if r["ev"] in ("handoff_taken", "checkpoint", "generation")] == \
            ["handoff_taken", "checkpoint", "generation"], led
        assert not [r for r in led if r["ev"] == "rotator_spawned"]
        _, succ, sled = sessions[n + 1]
        assert succ["session_id"] == "%s_g%d" % (gid, n + 1)
        assert succ["predecessor"] == n and succ["predecessor_claimed"]
        claims = [r for m in sessions for r in sessions[m][2] if r["ev"] == "claim" and r.get("predecessor") == n]
        assert len(claims) == 1, claims
    last = sessions[ROTATIONS + 1][1]
    assert (last["state"], last["ended"]["reason"]) == ("ENDED", "exit")  # `gemini -p` ended: SessionEnd(exit)
    assert [r for r in sessions[ROTATIONS + 1][2] if r["ev"] == "session_end"] and \
        all(not [r for r in sessions[n][2] if r["ev"] == "session_end"] for n in range(1, ROTATIONS + 1))


def test_each_successors_first_request_is_a_fresh_context_with_its_bootstrap(chain):
    box, _run, cc_home = chain
    requests = box.model.main_requests()
    firsts = [r for r in requests if len(r.contents) == 1 and CONTINUATION in r.text]
    assert len(firsts) == ROTATIONS, [(r.rule, len(r.contents)) for r in requests]
    for k, req in enumerate(firsts, start=1):
        (parts,) = [c["parts"] for c in req.contents]
        texts = [p.get("text", "") for p in parts]
        assert texts[0].startswith("<session_context>")
        assert texts[1].startswith("Continuing from cp-%03d (project-%03d)." % (k, k + 1))  # the clear's reason
        assert texts[2].startswith("<hook_context>Continuing from cp-%03d (project-%03d)." % (k, k + 1))  # bootstrap
        inner = texts[2][len("<hook_context>"):-len("</hook_context>")]
        assert "## Next steps" in inner and texts[2].endswith("</hook_context>")  # the handoff itself, whole
        assert "<" not in inner and "&lt;path&gt;" in inner  # Gemini escapes additionalContext
        for marker in (HANDOFF_REQUEST, WORK_MARK, "Handoff written; ending the turn"):
            assert marker not in req.text, (k, marker)  # nothing of the conversation before the clear
    assert requests[-1].rule == "finish"


def test_the_work_tree_is_snapshotted_and_nothing_of_the_users_moved(chain):
    box, _run, cc_home = chain
    git = lambda *a: subprocess.run(["git", "-C", box.project, *a], capture_output=True, text=True, check=True).stdout
    refs = git("for-each-ref", "--format=%(refname)", "refs/continuity").split()
    assert len([r for r in refs if "/cp-" in r]) == ROTATIONS, refs
    assert git("rev-list", "--count", "HEAD").strip() == "1"  # the user's one commit, HEAD unmoved
    assert git("status", "--porcelain").count("work-") >= ROTATIONS  # the work files, untracked, still there
    temp = os.path.dirname(os.path.dirname(box.session_files()[0]))
    assert not [f for f in os.listdir(temp) if f.startswith("continuity-handoff-")]  # every draft taken
