"""Hostile hook stdin: whatever arrives, the hook exits 0, prints nothing (or one valid JSON object), and logs.

Most examples run ``dispatch.main`` in a forked child (real process semantics — exit status,
fd 1, ``_exit`` — at fork speed); a smaller sample runs the installed command itself.
"""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cc_continuity import paths
from cc_continuity.card import valid_session_id
from cc_continuity.hosts.claude import hooks as dispatch
from helpers.transcripts import REPO, Transcript, hook_command

EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact", "SessionEnd",
          "Notification", "PostToolBatch", ""]
SIDS = ["f1695fac-1b2c-4d5e-8f90-123456789abc", "c0eac917-0000-4000-8000-000000000002"]
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


@pytest.fixture
def world(git_repo, tmp_path, monkeypatch):
    """A project, a low-usage transcript, a directory and a missing path for payloads to point at."""
    t = Transcript()
    t.turn(20_000)
    transcript = t.write(str(tmp_path / "t.jsonl"))
    (tmp_path / "adir").mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(git_repo))
    return {"repo": str(git_repo), "transcript": transcript, "dir": str(tmp_path / "adir"),
            "missing": str(tmp_path / "missing.jsonl"), "tmp": str(tmp_path)}


def log_lines():
    try:
        with open(os.path.join(paths.logs_dir(), "hooks.log"), "rb") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def fork_main(tmp, event, raw):
    """Run dispatch.main([event]) in a forked child with ``raw`` on fd 0; (exit code, stdout, stderr)."""
    files = {k: os.path.join(tmp, "fuzz." + k) for k in ("in", "out", "err")}
    with open(files["in"], "wb") as f:
        f.write(raw)
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.dup2(os.open(files["in"], os.O_RDONLY), 0)
            os.dup2(os.open(files["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
            os.dup2(os.open(files["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
            dispatch.main([event])
        finally:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    with open(files["out"], "rb") as f:
        out = f.read()
    with open(files["err"], "rb") as f:
        err = f.read()
    return os.waitstatus_to_exitcode(status), out, err


def run_real(event, raw, timeout=60):
    res = subprocess.run(hook_command(event), input=raw, capture_output=True,
                         timeout=timeout)
    return res.returncode, res.stdout, res.stderr


def check(runner, event, raw):
    """The fail-open contract for one invocation."""
    before = len(log_lines())
    code, out, err = runner(event, raw)
    assert code == 0
    assert b"Traceback" not in err
    if out:
        # Only a handler that finished cleanly may print, exactly one JSON object, for a real session.
        payload = _maybe_dict(raw)
        assert payload is not None and valid_session_id(payload.get("session_id")), out[:300]
        doc = json.loads(out)
        assert isinstance(doc, dict) and set(doc) & {"hookSpecificOutput", "decision", "systemMessage"}
    lines = log_lines()
    assert len(lines) == before + 1, "exactly one hooks.log line per run"
    assert lines[-1].split(b" ")[1] == (event or "?").encode()


def _maybe_dict(raw):
    try:
        v = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return v if isinstance(v, dict) else None


# -- strategies ----------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)


def payloads(world):
    """Dicts with Claude Code's field names and both plausible and wrong-typed values."""
    path_values = st.sampled_from([world["transcript"], world["dir"], world["missing"], "", "/", "relative.jsonl",
                                   "/dev/null"]) | json_values
    fields = {
        "session_id": st.sampled_from(SIDS + ["../x", "a/b", "", "x" * 200, "caf\u00e9"]) | json_values,
        "transcript_path": path_values,
        "cwd": st.sampled_from([world["repo"], world["dir"], "/nonexistent", ""]) | json_values,
        "hook_event_name": st.sampled_from(EVENTS) | json_values,
        "source": st.sampled_from(["startup", "resume", "clear", "compact"]) | json_values,
        "reason": st.sampled_from(["clear", "other", "prompt_input_exit"]) | json_values,
        "prompt": st.text(max_size=200) | json_values,
        "prompt_id": json_values,
        "tool_name": st.sampled_from(["Bash", "Write", "Read"]) | json_values,
        "tool_input": json_values,
        "tool_response": json_values,
        "model": st.sampled_from(["claude-sonnet-4-5", "claude-opus-5-5[1m]", "qwen"]) | json_values,
        "trigger": st.sampled_from(["auto", "manual"]) | json_values,
        "stop_hook_active": json_values,
        "workspace": json_values,
    }
    return st.fixed_dictionaries({}, optional=fields)


def encoded_payloads(world):
    return payloads(world).map(lambda d: json.dumps(d).encode())


@st.composite
def truncated(draw, world):
    raw = draw(encoded_payloads(world))
    return raw[:draw(st.integers(0, max(0, len(raw) - 1)))]


@st.composite
def deep(draw):
    depth = draw(st.integers(100, 200_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    closed = draw(st.booleans())
    return opener * depth + (b"1" + closer * depth if closed else b"")


def raw_inputs(world):
    return st.one_of(
        encoded_payloads(world),
        encoded_payloads(world),
        json_values.map(lambda v: json.dumps(v).encode()),
        truncated(world),
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")),
        deep(),
    )


# -- the properties ---------------------------------------------------------------------------
def test_fork_fuzz_fail_open(world):
    @settings(FUZZ, max_examples=160)
    @given(event=st.sampled_from(EVENTS), raw=raw_inputs(world))
    def prop(event, raw):
        check(lambda e, r: fork_main(world["tmp"], e, r), event, raw)

    prop()


def test_real_command_fuzz_fail_open(world):
    @settings(FUZZ, max_examples=20)
    @given(event=st.sampled_from(EVENTS), raw=raw_inputs(world))
    def prop(event, raw):
        check(run_real, event, raw)

    prop()


def test_huge_inputs(world):
    """1-5 MB strings in a field, as garbage, and as a (truncated) document."""
    @settings(FUZZ, max_examples=6)
    @given(event=st.sampled_from(["PostToolUse", "UserPromptSubmit", "SessionStart"]),
           size=st.integers(1_000_000, 5_000_000), kind=st.sampled_from(["prompt", "tool_response", "raw", "cut"]),
           sid=st.sampled_from(SIDS))
    def prop(event, size, kind, sid):
        base = {"session_id": sid, "transcript_path": world["transcript"], "cwd": world["repo"],
                "hook_event_name": event}
        if kind == "raw":
            raw = b"\xfe" * size
        else:
            base[kind if kind != "cut" else "prompt"] = "\u00e9x" * (size // 3)
            raw = json.dumps(base, ensure_ascii=False).encode()
            if kind == "cut":
                raw = raw[:-5]
        assert len(raw) >= 900_000
        check(lambda e, r: fork_main(world["tmp"], e, r), event, raw)

    prop()
    code, out, err = run_real("PostToolUse", b'{"session_id":"%s","prompt":"%s"}' % (SIDS[0].encode(), b"y" * 5_000_000))
    assert (code, out) == (0, b"")


def test_huge_prompt_is_recorded_capped(world):
    raw = json.dumps({"session_id": SIDS[0], "transcript_path": world["transcript"], "cwd": world["repo"],
                      "hook_event_name": "UserPromptSubmit", "prompt": "z" * 3_000_000}).encode()
    code, out, err = run_real("UserPromptSubmit", raw)
    assert (code, out) == (0, b"")
    from cc_continuity import ledger, session
    from cc_continuity.project import Project

    proj = Project.discover(world["repo"])
    recs = ledger.read(session.ledger_path(proj.session_dir(proj.lookup(SIDS[0]))))
    prompt = [r for r in recs if r["ev"] == "prompt"][-1]
    assert prompt["chars"] == 3_000_000 and len(prompt["text"]) <= 10_000


# -- `run` itself must not raise: main() is the last line of defence, not the first ------------
def test_run_survives_wrong_field_types_with_a_real_session(world, monkeypatch):
    from cc_continuity.rotation import turn
    from cc_continuity.hosts.claude.hooks import pre_tool_use

    # What is fuzzed is the shape of the input, not the waits for a transcript that never
    # catches up (3 s per Stop naming a reply that is not there): those have their own tests.
    monkeypatch.setattr(turn, "STOP_WAIT_S", 0.05)
    monkeypatch.setattr(pre_tool_use, "WAIT_S", 0.05)

    @settings(FUZZ, max_examples=120)
    @given(event=st.sampled_from(EVENTS[:7]), payload=payloads(world), sid=st.sampled_from(SIDS))
    def prop(event, payload, sid):
        payload["session_id"] = sid
        out, outcome, got_sid = dispatch.run(event, json.dumps(payload).encode(), dict(os.environ))
        assert got_sid == sid
        assert out is None or isinstance(json.loads(out), dict)

    prop()


@pytest.mark.parametrize("raw", [b"", b"null", b"[1,2]", b'"str"', b"\xff\xfe", b'{"session_id":"x'])
def test_run_reports_bad_stdin(raw):
    out, outcome, sid = dispatch.run("PostToolUse", raw, {})
    assert out is None and outcome.startswith("bad-stdin")


@pytest.mark.parametrize("payload", [{}, {"session_id": 5}, {"session_id": ["a"]}, {"session_id": "../x"}])
def test_run_without_session_id_returns_outcome(world, payload):
    out, outcome, sid = dispatch.run("PostToolUse", json.dumps(payload).encode(), dict(os.environ))
    assert out is None and outcome


def test_run_deep_nesting_is_bad_stdin():
    out, outcome, sid = dispatch.run("PostToolUse", b"[" * 100_000, {})
    assert out is None and outcome.startswith("bad-stdin")


RUN_IN_HOOK_PROCESS = """
import sys
sys.path[0] = sys.argv[1]
from cc_continuity.hosts.claude import hooks as dispatch
out, outcome, sid = dispatch.run("PostToolUse", sys.argv[2].encode(), {})
print(outcome)
"""


@pytest.mark.parametrize("raw", ['{"session_id":"abc', "{", '{"a" 1}'])
def test_run_malformed_json_in_hook_process_is_bad_stdin(raw):
    parent = REPO
    res = subprocess.run([sys.executable, "-S", "-c", RUN_IN_HOOK_PROCESS, parent, raw], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout.startswith("bad-stdin")


def test_malformed_stdin_logged_by_real_hook(world):
    code, out, err = run_real("PostToolUse", b'{"session_id":"' + SIDS[0].encode())
    assert (code, out) == (0, b"")
    assert b"PostToolUse" in log_lines()[-1]
