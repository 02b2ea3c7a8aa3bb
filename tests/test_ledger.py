"""ledger: append-only hash-chained JSONL; every kind of tampering is caught at the right line."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cc_continuity import ledger, paths


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cc_continuity", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


@pytest.fixture
def led(tmp_path):
    """A ledger with 10 lines under $CC_CONTINUITY_HOME (where `verify` looks)."""
    d = paths.ensure_dir(os.path.join(paths.home(), "projects", "p-0123456789", "sessions", "001"))
    path = os.path.join(d, "ledger.jsonl")
    for i in range(1, 11):
        ledger.append(path, {"ev": "tool", "tool": "Bash", "i": i, "text": "caf\u00e9 %d" % i})
    return path


def lines_of(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")[:-1]


def write_lines(path, lines, trailing=True):
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + (b"\n" if trailing else b""))


def test_append_read_round_trip(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    a = ledger.append(path, {"ev": "session_start", "source": "startup", "text": "naïve \u65e5\u672c"})
    b = ledger.append(path, {"ev": "prompt", "text": "x" * 5000, "n": 999, "prev": "forged"})
    assert a["n"] == 1 and a["prev"] == ledger.GENESIS
    assert b["n"] == 2, "callers cannot forge n"
    assert b["prev"] != "forged" and len(b["prev"]) == 64
    recs = ledger.read(path)
    assert [r["ev"] for r in recs] == ["session_start", "prompt"]
    assert recs[0]["text"] == "naïve \u65e5\u672c"
    assert recs == [a, b]
    assert ledger.tail(path, 1) == [b]
    raw = open(path, "rb").read()
    assert raw.count(b"\n") == 2 and raw.isascii(), "one ASCII line per record"
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    assert oct(os.stat(path + ".head").st_mode & 0o777) == oct(0o600)
    assert ledger.verify(path) == (True, None, "2 lines ok")


def test_read_and_verify_missing_ledger(tmp_path):
    path = str(tmp_path / "none.jsonl")
    assert ledger.read(path) == []
    assert ledger.verify(path)[0] is True


def test_verify_ok(led):
    ok, line, reason = ledger.verify(led)
    assert ok and line is None and "10 lines" in reason


def test_edit_byte_in_middle_line(led):
    """Line 5's content changes: line 6's ``prev`` no longer matches; verify names 6 and says why."""
    lines = lines_of(led)
    assert b"caf\\u00e9 5" in lines[4]
    lines[4] = lines[4].replace(b"caf\\u00e9 5", b"caf\\u00e9 6")
    write_lines(led, lines)
    ok, line, reason = ledger.verify(led)
    assert not ok
    assert line == 6
    assert "previous line" in reason


def test_edit_that_breaks_json_names_that_line(led):
    lines = lines_of(led)
    lines[4] = lines[4][:-1]  # drop the closing brace
    write_lines(led, lines)
    assert ledger.verify(led)[:2] == (False, 5)


def test_edit_of_last_line_caught_by_head(led):
    lines = lines_of(led)
    lines[9] = lines[9].replace(b'"i":10', b'"i":11')
    write_lines(led, lines)
    ok, line, reason = ledger.verify(led)
    assert (ok, line) == (False, 10)
    assert "head" in reason


def test_delete_middle_line(led):
    lines = lines_of(led)
    del lines[4]
    write_lines(led, lines)
    assert ledger.verify(led)[:2] == (False, 5)


def test_swap_two_lines(led):
    lines = lines_of(led)
    lines[3], lines[4] = lines[4], lines[3]
    write_lines(led, lines)
    assert ledger.verify(led)[:2] == (False, 4)


def test_cut_first_line(led):
    write_lines(led, lines_of(led)[1:])
    assert ledger.verify(led)[:2] == (False, 1)


def test_cut_last_line_caught_by_head(led):
    write_lines(led, lines_of(led)[:-1])
    ok, line, reason = ledger.verify(led)
    assert (ok, line) == (False, 10)
    assert "truncated" in reason


def test_cut_last_two_lines(led):
    write_lines(led, lines_of(led)[:-2])
    assert ledger.verify(led)[:2] == (False, 9)


def test_torn_last_line(led):
    lines = lines_of(led)
    lines[9] = lines[9][:40]
    write_lines(led, lines, trailing=False)
    ok, line, reason = ledger.verify(led)
    assert (ok, line) == (False, 10)
    assert "torn" in reason


def test_append_after_torn_line_keeps_it_visible(led):
    with open(led, "ab") as f:
        f.write(b'{"n":11,"ev":"half')
    ledger.append(led, {"ev": "after crash"})
    raw = open(led, "rb").read()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 12
    assert ledger.read(led)[-1]["ev"] == "after crash"
    assert ledger.verify(led)[:2] == (False, 11)


def test_head_one_behind_after_crash_is_accepted(led):
    """A crash between writing a line and updating the head leaves the head one line behind."""
    head = open(led + ".head", "rb").read()
    ledger.append(led, {"ev": "x"})
    with open(led + ".head", "wb") as f:
        f.write(head)
    assert ledger.verify(led)[0] is True


def test_concurrent_appends_from_processes(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    code = textwrap.dedent("""
        import sys
        from cc_continuity import ledger
        for i in range(25):
            ledger.append(sys.argv[1], {"ev": "tool", "who": sys.argv[2], "i": i, "pad": "x" * 3000})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, path, str(w)]) for w in range(8)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    recs = ledger.read(path)
    assert [r["n"] for r in recs] == list(range(1, 201))
    assert sorted((r["who"], r["i"]) for r in recs) == sorted((str(w), i) for w in range(8) for i in range(25))
    assert ledger.verify(path) == (True, None, "200 lines ok")


# -- the CLI --------------------------------------------------------------------
def test_cli_verify_ok_then_bad_line_named(led, tmp_path, capsys, monkeypatch):
    res = cli("verify", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 ledgers, 0 bad" in res.stdout

    lines = lines_of(led)
    del lines[6]
    write_lines(led, lines)
    res = cli("verify", cwd=tmp_path)
    assert res.returncode == 1
    assert "line 7" in res.stdout
    assert led in res.stdout

    from cc_continuity import cli as cli_mod

    monkeypatch.chdir(tmp_path)
    assert cli_mod.main(["verify", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert [(r["ledger"], r["line"], r["ok"]) for r in doc["ledgers"]] == [(led, 7, False)]
