"""The one shell reading (holds/shell.py): tree-sitter's where it can be imported, the tokenizer of our own
where it cannot; both where the tree has errors; bounded in size and time."""

import pytest

from cc_continuity.holds import classify, shell


def words(text):
    return [c.words for c in shell.read(text).commands]


def proven(text):
    return [c.words for c in shell.read(text).proven]


@pytest.fixture
def no_tree_sitter(monkeypatch):
    monkeypatch.setattr(shell, "_parser", None)
    monkeypatch.setattr(shell, "PROBLEM", "ModuleNotFoundError: No module named 'tree_sitter'")


def test_every_simple_command_wherever_it_is_nested():
    assert words("for i in 1; do a $i; done; if b; then c; fi; { d; }; ! e; f `g` $(h)") == [
        ["a", "$i"], ["b"], ["c"], ["d"], ["e"], ["f", "`g`", "$(h)"], ["g"], ["h"]]
    assert words("echo \"a b\" 'c d' e\\ f") == [["echo", "a b", "c d", "e f"]]


def test_wrappers_come_off_with_their_options_and_strings_are_read_again():
    assert words("sudo -u deploy nice -n 10 timeout -s KILL 5 env -i A=1 stdbuf -oL make deploy") == [["make", "deploy"]]
    assert words("bash -c 'a && b'") == [["a"], ["b"]]
    assert words("eval 'x; y'") == [["x"], ["y"]]
    assert words("ssh -p 22 host 'make deploy'") == [["make", "deploy"]]
    assert words("command -v curl") == []
    r = shell.read("echo u | xargs -I{} curl -X POST {}")
    assert [c.fed for c in r.commands] == [False, True]


def test_a_string_is_read_again_only_so_deep():
    nested = "eval \"eval 'eval \\\"eval x\\\"'\""
    assert words(nested) == []  # four levels: past MAX_DEPTH (3), nothing more is read


def test_here_documents_and_here_strings_are_the_commands_stdin():
    r = shell.read("psql <<EOF\nDELETE FROM t;\nEOF\nsqlite3 db <<< 'select 1'")
    assert [(c.words, c.stdin) for c in r.commands] == [(["psql"], "DELETE FROM t;\n"), (["sqlite3", "db"], "select 1")]


@pytest.mark.parametrize("text, want", [
    ("pytest -q", [["pytest", "-q"]]),
    ("cd x && pytest", [["cd", "x"], ["pytest"]]),
    ("pytest || true", []),
    ("pytest | tail -3", [["tail", "-3"]]),
    ("set -o pipefail; pytest | tail -3", [["pytest"], ["tail", "-3"]]),
    ("set -euo pipefail\nnpm ci\npytest", [["set", "-euo", "pipefail"], ["npm", "ci"], ["pytest"]]),
    ("pytest; echo done", [["echo", "done"]]),
    ("! pytest", []),
    ("if pytest; then :; fi", []),
    ("x=$(pytest)", []),
])
def test_what_an_exit_status_of_zero_proves(text, want):
    assert proven(text) == want


def test_the_files_its_redirections_write():
    assert shell.read("a > out 2>&1; b >> log; c 2>/dev/null; d &> all").writes == ["out", "log", "all"]
    assert not shell.changes_files(shell.read("git status && git log | head; pytest -q 2>/dev/null"))
    for text in ("sed -i s/a/b/ f", "git stash pop", "echo x > f", "python3 gen.py", "npm run lint -- --fix"):
        assert shell.changes_files(shell.read(text)), text


def test_without_tree_sitter_the_tokenizer_reads_and_says_why(no_tree_sitter):
    r = shell.read("nice -n 10 curl -X POST https://h/x && echo ok")
    assert r.how == "tokenizer" and "No module named 'tree_sitter'" in r.problem
    assert [c.words for c in r.commands] == [["curl", "-X", "POST", "https://h/x"], ["echo", "ok"]]
    assert classify.classify("timeout -s KILL 5 curl -sX DELETE https://h/1")  # unwrapping is shared
    r = shell.read("psql <<EOF\nDELETE FROM t;\nEOF")
    assert [(c.words, c.stdin) for c in r.commands] == [(["psql"], "DELETE FROM t;\n")]
    assert classify.classify("psql <<EOF\nDELETE FROM t;\nEOF")


def test_a_tree_with_errors_counts_both_readings_and_proves_nothing():
    text = "curl -X POST https://h/x; for ((i=0;i<2;i++)) { curl -X DELETE https://h/$i }"  # zsh's short for
    r = shell.read(text)
    assert r.how == "both" and r.problem == "the tree has errors" and r.proven == []
    assert ["curl", "-X", "POST", "https://h/x"] in [c.words for c in r.commands]


def test_a_text_past_the_cap_is_read_by_the_tokenizer():
    text = "curl -X POST https://h/x\n" + "# filler\n" * (shell.MAX_INPUT // 9)
    r = shell.read(text)
    assert r.how == "tokenizer" and "longer than" in r.problem
    assert classify.classify(text)


def test_the_parse_is_bounded_in_time(monkeypatch):
    monkeypatch.setattr(shell, "PARSE_BUDGET_S", 0.0)
    r = shell.read("echo " + "a " * 20000)
    assert r.how == "tokenizer" and "ran past" in r.problem
