"""The run loop's rules (rotation/run.py): when a session of a run must hand over ``headless`` rather than rotate
in-process (its caps), which session of a chain waits, why a run ended; and the verb's argument checks.  The
loop itself drives the real agents: tests/e2e/test_gemini_run_e2e.py, test_codex_headless_e2e.py."""

import os

import pytest

from cc_continuity import session
from cc_continuity.cli import main
from cc_continuity.hosts import runs
from cc_continuity.rotation import run

RUN = {run.HEADLESS_ENV: "1"}


@pytest.mark.parametrize("env, done, now, want", [
    ({}, 99, 0, None),  # not under run: never capped
    (dict(RUN, **{run.ROTATIONS_ENV: "2"}), 1, 0, None),
    (dict(RUN, **{run.ROTATIONS_ENV: "2"}), 2, 0, "its run's --max-rotations"),
    (dict(RUN, **{run.ROTATIONS_ENV: "0"}), 0, 0, "its run's --max-rotations"),
    (dict(RUN, **{run.DEADLINE_ENV: "100.5"}), 0, 100.0, None),
    (dict(RUN, **{run.DEADLINE_ENV: "100.5"}), 0, 100.5, "its run's --max-time"),
    (dict(RUN, **{run.DEADLINE_ENV: "soon", run.ROTATIONS_ENV: "x"}), 5, 1e12, None),  # unreadable: no cap
])
def test_a_session_of_a_run_hands_over_headless_at_its_caps(env, done, now, want):
    assert run.at_cap(env, done, now) == want


def test_the_token_budget_is_asked_only_under_a_budget():
    asked = []

    def spent(n):
        return lambda: asked.append(n) or n

    assert run.at_cap(RUN, 0, spent=spent(10**9)) is None and asked == []  # no budget: never read
    budget = dict(RUN, **{run.TOKENS_ENV: "5000"})
    assert run.at_cap(budget, 0, spent=spent(4999)) is None
    assert run.at_cap(budget, 0, spent=spent(5000)) == "its run's --max-tokens"
    assert run.at_cap(budget, 0, spent=lambda: None) is None and run.at_cap(budget, 0) is None  # unknown: no cap
    assert asked == [4999, 5000]


def test_the_waiting_session_is_the_newest_verified_and_unclaimed():
    cp = {"id": "cp-002"}
    chain = [(1, {"state": session.ROTATED, "checkpoint": {"id": "cp-001"}, "successor": 2}),
             (2, {"state": session.ROTATING, "checkpoint": cp}),
             (3, {"state": session.ACTIVE})]
    assert run.waiting(chain) == (2, chain[1][1])
    assert run.waiting(chain[:1]) is None and run.waiting([]) is None


def test_a_session_flagged_anywhere_in_the_chain_stops_the_run():
    assert run._flagged([(1, {"name": "p-001", "state": session.ENDED})]) is None
    chain = [(1, {"name": "p-001", "state": session.ROTATED, "flags": {"needs_human": {"text": "held: repeat ab12cd34"}}}),
             (2, {"name": "p-002", "state": session.ROTATING, "checkpoint": {"id": "cp-002"}})]
    assert run._flagged(chain) == ("p-001", "held: repeat ab12cd34")
    assert run._flagged([(1, {"name": "p-001", "flags": {"done": {"text": "x"}}})]) is None


def test_a_session_that_said_done_ends_the_run_even_with_a_checkpoint_after_it():
    said = []
    chain = [(1, {"name": "p-001", "state": session.ROTATING, "checkpoint": {"id": "cp-001"},
                  "flags": {"done": {"text": "all tests pass"}}})]
    facts = {"agent_exit": 0, "rotations": 0, "tokens": 0}
    caps = run.Caps(10, None, None, 3)
    assert run._stops(run.Backend(), chain, facts, [], caps, said.append) == "done"
    assert said == ["cc-continuity: p-001 said the task is done: all tests pass"]
    chain[0][1]["flags"] = {}
    assert run._stops(run.Backend(), chain, facts, [], caps, said.append) is None  # the checkpoint goes on
    held = {"flags": {"needs_human": {"text": "held: this POST already had its effect; repeat ab12cd34"}}}
    assert run._held(held) and not run._held({"flags": {"needs_human": {"text": "stuck on a password"}}})


def test_exit_statuses_are_distinct():
    assert run.EXIT == {"done": 0, "cap": 3, "needs a person": 4, "agent failed": 5, "nothing to resume": 2,
                        "limit": 6, "model server": 7}
    assert len(set(run.EXIT.values())) == len(run.EXIT)


def test_every_host_that_runs_headless_has_its_backend():
    assert runs.AGENTS == ("claude", "codex", "gemini")
    for name, piece in runs.PIECES.items():
        assert isinstance(piece.BACKEND, run.Backend) and piece.BACKEND.name == name and piece.NO_BINARY
    assert runs.PIECES["gemini"].BACKEND.command("g", "do it", ["--yolo"]) == ["g", "--yolo", "-p", "do it"]
    assert runs.PIECES["codex"].BACKEND.command("c", "do it", ["-m", "x"]) == ["c", "exec", "-m", "x", "do it"]
    from cc_continuity.project import Project

    proj = Project.discover(os.getcwd())
    assert runs.PIECES["codex"].BACKEND.session_args(proj) == ["--add-dir", proj.dir] and os.path.isdir(proj.dir)
    assert runs.PIECES["gemini"].BACKEND.session_args(proj) == []
    assert runs.PIECES["claude"].BACKEND.command("cl", "do it", ["--allowedTools", "Write"]) == \
        ["cl", "-p", "do it", "--allowedTools", "Write"]


def test_each_host_hands_over_headless_under_run_and_chooses_otherwise():
    from cc_continuity.hosts.claude.host import HookContext
    from cc_continuity.hosts.codex.host import CodexContext
    from cc_continuity.hosts.gemini.host import GeminiContext

    class Call:
        event, payload, outcome, claude_version = "Stop", {"session_id": "s"}, "", None
        after_output = []

        def __init__(self, env):
            self.env = env

    assert HookContext(Call({run.HEADLESS_ENV: "1"})).own_driver() == "headless"
    assert HookContext(Call({})).own_driver() is None
    assert CodexContext("Stop", {"session_id": "s"}, {run.HEADLESS_ENV: "1"}).own_driver() == "headless"
    sid = "9e9e9e9e-0000-4000-8000-0000000000e9"
    gem = lambda env: GeminiContext("AfterAgent", {"session_id": sid}, env).own_driver()  # noqa: E731
    assert gem({}) == "native" and gem(dict(RUN, **{run.ROTATIONS_ENV: "5"})) == "native"
    assert gem(dict(RUN, **{run.ROTATIONS_ENV: "0"})) == "headless"


def test_a_gemini_process_past_its_runs_token_budget_hands_over_headless(tmp_path):
    """One ``gemini -p`` rotates in-process: its session file's tokens (every generation's) against the budget
    its run left it."""
    import json

    from cc_continuity.hosts.gemini.host import GeminiContext

    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps({"id": "m%d" % k, "type": "gemini", "tokens": {"input": 30_000, "output": 100,
                                                                                    "total": 30_100}}) + "\n"
                            for k in range(3)))
    sid = "9e9e9e9e-0000-4000-8000-0000000000e9"

    def gem(budget):
        env = dict(RUN, **{run.TOKENS_ENV: str(budget)})
        return GeminiContext("AfterAgent", {"session_id": sid, "transcript_path": str(path)}, env).own_driver()

    assert (gem(90_301), gem(90_300), gem(1)) == ("native", "headless", "headless")


@pytest.mark.parametrize("argv, says", [
    (["--agent", "gemini", "--max-rotations", "-1", "t"], "--max-rotations must be 0 or more"),
    (["--agent", "gemini", "--max-time", "0", "t"], "--max-time must be more than 0 seconds"),
    (["--agent", "gemini", "--codex", "/bin/true", "t"], "--codex: not for --agent gemini"),
    (["--agent", "gemini", "--gemini", "", "t"], "no gemini executable"),
    (["--agent", "gemini", "--resume", "t"], "give a TASK, or --resume"),
    (["--agent", "gemini"], "give a TASK, or --resume"),
    (["--agent", "gemini", "--same-tree", "-1", "t"], "--same-tree must be 0 or more"),
    (["--agent", "gemini", "--max-tokens", "0", "t"], "expected a positive whole number of tokens"),
    (["--agent", "gemini", "--max-tokens", "lots", "t"], "expected a token count like 200000"),
])
def test_bad_arguments_are_refused_before_anything_runs(argv, says, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SystemExit) as e:
        main(["run", *argv])
    assert e.value.code == 2 and says in capsys.readouterr().err


def test_a_chain_going_round_is_seen_between_two_sessions():
    assert run._looping([("cp-001", "a", "t1"), ("cp-002", "b", "t2")], 3) is None
    assert "cp-002's handoff is cp-001's again" in run._looping([("cp-001", "a", "t1"), ("cp-002", "a", "t2")], 3)
    assert run._looping([("cp-001", None, "t1"), ("cp-002", None, "t2")], 3) is None  # machine handoffs say nothing
    same = [("cp-%03d" % k, str(k), "t") for k in (1, 2, 3)]
    assert "the work tree is the same at the last 3 checkpoints" in run._looping(same, 3)
    assert run._looping(same[:2], 3) is None and run._looping(same, 0) is None
    assert run._looping([(c, h, None) for c, h, _ in same], 3) is None  # no snapshot to compare


def test_a_handoffs_digest_is_its_sections_and_a_machine_handoff_has_none(tmp_path):
    from cc_continuity import session as s

    sdir = str(tmp_path)
    path = s.handoff_path(sdir)
    os = __import__("os")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("# Handoff\n\n## Goal\nship it\n\n## Next steps\n- test\n")
    one = run._handoff_digest(sdir, {"checkpoint": {"degraded": False}})
    with open(path, "w") as f:
        f.write("# Handoff\n## Next steps\n- test\n## Goal\nship it\n")  # the same sections, moved about
    assert run._handoff_digest(sdir, {"checkpoint": {"degraded": False}}) == one and len(one) == 64
    with open(path, "a") as f:
        f.write("## Done so far\nmore\n")
    assert run._handoff_digest(sdir, {"checkpoint": {"degraded": False}}) != one
    assert run._handoff_digest(sdir, {"checkpoint": {"degraded": True}}) is None


def test_the_progress_line_says_the_session_its_context_the_runs_rotations_time_and_last_tool():
    rec = {"name": "proj-004", "last_reading": {"percent": 63.6}}
    assert run.progress(rec, "Bash npm test", 3, 125.4) == "proj-004 · ctx 64% · 3 rotations · 2m05s · Bash npm test"
    assert run.progress({"name": "proj-001"}, None, 1, 3) == "proj-001 · ctx - · 1 rotation · 0m03s"
