"""Claude Code's transcript as a run counts it (hosts/claude/host.py ``tokens_spent``): every request's usage once,
though Claude Code writes a reply as one row per content block, each with the reply's whole usage."""

from cc_continuity.hosts.claude import host
from helpers.transcripts import Transcript


def _total(u):
    return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] + u["output_tokens"]


def test_each_request_counts_once_subagents_included(tmp_path):
    t = Transcript()
    t.user("build the parser")
    replies = [t.assistant(20_000, blocks=3), t.assistant(31_000, blocks=1), t.assistant(5_000, sidechain=True),
               t.assistant(40_000, blocks=2, output=700)]
    t.noise(kb=64)
    path = str(tmp_path / "t.jsonl")
    t.write(path)
    assert sum(len(r) for r in replies) == 8  # eight rows, four requests
    want = sum(_total(r[0]["message"]["usage"]) for r in replies)
    assert host.tokens_spent(path) == want == host.CLAUDE.tokens_spent(path)
    assert want == 20_000 + 31_000 + 5_000 + 40_000 + 50 * 3 + 700


def test_no_request_or_no_file_is_unknown(tmp_path):
    t = Transcript()
    t.user("hello")
    path = str(tmp_path / "t.jsonl")
    t.write(path)
    assert host.tokens_spent(path) is None
    assert host.tokens_spent(str(tmp_path / "missing.jsonl")) is None
    with open(path, "a") as f:
        f.write('{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":5,"output_tokens":"x"}}}\n')
        f.write('{"type":"assistant","message":{"id":"m2","usage":{"input_tokens":9')  # torn: being written
    assert host.tokens_spent(path) == 5
