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
    assert "torn" in reason and "next append repairs it" in reason


def test_append_after_a_torn_line_repairs_it_and_records_the_repair(led):
    with open(led, "ab") as f:
        f.write(b'{"n":11,"ev":"half')
    before = lines_of(led)
    rec = ledger.append(led, {"ev": "after crash"})
    raw = open(led, "rb").read()
    assert raw.endswith(b"\n") and b'"ev":"half' not in raw
    recs = ledger.read(led)
    assert [r["n"] for r in recs] == list(range(1, 13))
    repair = recs[10]
    assert repair["ev"] == ledger.REPAIRED and repair["torn_bytes"] == len(b'{"n":11,"ev":"half')
    assert repair["at_byte"] == sum(len(x) + 1 for x in before)
    assert rec["n"] == 12 and recs[-1] == rec
    ok, line, reason = ledger.verify(led)
    assert ok and "torn tail (18 bytes) was cut off and recorded at line 11" in reason
    # A second append does not repair again.
    ledger.append(led, {"ev": "later"})
    assert [r["ev"] for r in ledger.read(led)].count(ledger.REPAIRED) == 1


@pytest.mark.parametrize("tamper", ["edit before", "edit after", "delete the repair line", "forge a repair"])
def test_after_a_repair_tampering_still_fails(led, tamper):
    with open(led, "ab") as f:
        f.write(b'{"n":11,"ev":"ha')
    for i in range(3):
        ledger.append(led, {"ev": "tool", "i": 100 + i})
    lines = lines_of(led)  # 10 old, the repair at 11, then 12..14
    if tamper == "edit before":
        lines[4] = lines[4].replace(b'"i":5', b'"i":6')
    elif tamper == "edit after":
        lines[12] = lines[12].replace(b'"i":101', b'"i":102')
    elif tamper == "delete the repair line":
        del lines[10]
    else:  # a "repair" record inserted to hide a deleted line
        forged = json.dumps({"n": 7, "ts": 1, "ev": ledger.REPAIRED, "torn_bytes": 5, "prev": "0" * 64},
                            separators=(",", ":")).encode()
        lines[6] = forged
    write_lines(led, lines)
    ok, line, reason = ledger.verify(led)
    assert not ok, reason
    assert line == {"edit before": 6, "edit after": 14, "delete the repair line": 11, "forge a repair": 7}[tamper]


_FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    from cc_continuity import ledger
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # a write past the limit fails with EFBIG instead
    size = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, size + 40))
    try:
        ledger.append(sys.argv[1], {"ev": "prompt", "text": "x" * 500})
    except OSError as e:
        print("append failed:", e)
""")


def test_a_real_short_write_tears_the_line_and_the_next_append_repairs_it(led):
    """The kernel cuts the write at RLIMIT_FSIZE, as a full disk would: a torn line, the head unmoved."""
    head = open(led + ".head", "rb").read()
    size = os.path.getsize(led)
    res = subprocess.run([sys.executable, "-c", _FULL_DISK, led, str(size)], capture_output=True, text=True,
                         timeout=60)
    assert "append failed" in res.stdout and "short write" in res.stdout, (res.stdout, res.stderr)
    assert os.path.getsize(led) == size + 40  # 40 bytes of the line landed, the rest did not
    assert open(led + ".head", "rb").read() == head  # the head never claims the torn line
    ok, line, reason = ledger.verify(led)
    assert (ok, line) == (False, 11) and "torn" in reason
    ledger.append(led, {"ev": "disk has room again"})
    ok, line, reason = ledger.verify(led)
    assert ok, reason
    assert "torn tail (40 bytes)" in reason
    res = cli("verify", cwd=os.path.dirname(led))
    assert res.returncode == 0 and "torn tail (40 bytes)" in res.stdout, res.stdout


def test_a_torn_tail_met_by_concurrent_appenders_is_repaired_once(led):
    with open(led, "ab") as f:
        f.write(b'{"n":11,"ev":"torn by a full disk","text":"xxxxxxxx')
    code = textwrap.dedent("""
        import sys
        from cc_continuity import ledger
        for i in range(10):
            ledger.append(sys.argv[1], {"ev": "tool", "who": sys.argv[2], "i": i})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, led, str(w)]) for w in range(6)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    recs = ledger.read(led)
    assert [r["n"] for r in recs] == list(range(1, 72))
    assert [r["ev"] for r in recs].count(ledger.REPAIRED) == 1
    assert ledger.verify(led)[0] is True


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
