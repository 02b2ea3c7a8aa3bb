"""Append-only, hash-chained JSONL ledgers.

Each line is one JSON object carrying ``n`` (its 1-based position) and
``prev`` (sha256 of the previous line's bytes; 64 zeros for the first).
Editing, reordering or cutting lines from the front breaks the chain.  A
small ``<ledger>.head`` file remembers the count and the last line's hash, so
cutting lines from the *end* is caught too.

Appends take a POSIX record lock (``lockf``) on the ledger itself, so
concurrent hook processes interleave whole lines; the lock dies with its
process.  Uses the ``posix`` builtin, not ``os``: this runs on every tool call.

A write that runs out of disk leaves a torn final line (no newline).  The next
append repairs it: the head is set back to the last complete line, the torn
bytes are cut off and a ``ledger_repaired`` record (their size and sha256) is
chained in before the new one, so ``verify`` can tell a repaired tail from an
edit.  Each step leaves a ledger that verifies if the process dies right there.
"""

import posix
import time

from . import fastjson

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from _hashlib import HASH


def sha256(data: "bytes") -> "HASH":  # noqa: F811 - replaced by the real one on first use
    """The builtin SHA-256 (digest.py), loaded on first use: the per-tool-call path imports this module
    (through session) but writes no ledger line, and on some builds ``_sha256`` is a shared
    object whose loading costs a few percent of the interpreter's start."""
    global sha256
    from .digest import sha256 as real

    sha256 = real  # type: ignore[assignment]  # same positional use; only the parameter name differs
    return real(data)

GENESIS = "0" * 64
REPAIRED = "ledger_repaired"
_CHUNK = 8192


def _last_line(fd: "int", size: "int") -> "tuple[bytes, bool]":
    """(bytes of the last complete line, ends_with_newline) read backwards."""
    if size == 0:
        return b"", True
    end = size
    last = posix.pread(fd, 1, size - 1)
    clean = last == b"\n"
    if clean:
        end -= 1
    buf = b""
    pos = end
    while pos > 0:
        step = min(_CHUNK, pos)
        pos -= step
        buf = posix.pread(fd, step, pos) + buf
        i = buf.rfind(b"\n")
        if i != -1:
            return buf[i + 1:], clean
    return buf, clean


def append(path: "str", record: "dict[str, Any]") -> "dict[str, Any]":
    """Append ``record`` (a dict) and return what was written (with n/prev/ts)."""
    fd = posix.open(path, posix.O_RDWR | posix.O_CREAT | posix.O_APPEND | posix.O_CLOEXEC, 0o600)
    try:
        posix.lockf(fd, posix.F_LOCK, 0)
        size = posix.fstat(fd).st_size
        last, clean = _last_line(fd, size)
        if not clean:
            last, n = _repair(path, fd, size, last)
        elif last:
            n = _line_number(last) + 1
        else:
            n = 1
        prev = sha256(last).hexdigest() if last else GENESIS
        rec: "dict[str, Any]" = {"n": n, "ts": round(time.time(), 3)}
        rec.update(record)
        rec["n"] = n
        rec["prev"] = prev
        line = fastjson.dumps(rec).encode("ascii")
        _write_line(path, fd, line)
        _write_head(path, n, sha256(line).hexdigest())
        return rec
    finally:
        posix.close(fd)


def _write_line(path: "str", fd: "int", line: "bytes") -> "None":
    """One ``write(2)`` per record (a kill cannot tear it); a short write (disk full) is an error."""
    data = line + b"\n"
    done = posix.write(fd, data)
    if done != len(data):
        raise OSError(28, "short write to %s (%d of %d bytes): disk full?" % (path, done, len(data)))


def _repair(path: "str", fd: "int", size: "int", torn: "bytes") -> "tuple[bytes, int]":
    """Cut a torn final line off (lock held); returns (last complete line, the next record's n).

    Head first, then truncate, then the repair record: a process killed between any two
    steps leaves a ledger whose head matches its last complete line.
    """
    keep = size - len(torn)
    last, _ = _last_line(fd, keep)
    n = _line_number(last) if last else 0
    _write_head(path, n, sha256(last).hexdigest() if last else GENESIS)
    posix.ftruncate(fd, keep)
    rec = {"n": n + 1, "ts": round(time.time(), 3), "ev": REPAIRED, "torn_bytes": len(torn),
           "torn_sha256": sha256(torn).hexdigest(), "at_byte": keep,
           "prev": sha256(last).hexdigest() if last else GENESIS}
    line = fastjson.dumps(rec).encode("ascii")
    _write_line(path, fd, line)
    _write_head(path, n + 1, sha256(line).hexdigest())
    return line, n + 2


def _line_number(line: "bytes") -> "int":
    try:
        return int(fastjson.loads(line)["n"])
    except Exception:
        return 0


def _write_head(path: "str", n: "int", digest: "str") -> "None":
    try:
        hfd = posix.open(path + ".head", posix.O_WRONLY | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        posix.pwrite(hfd, b"%012d %s\n" % (n, digest.encode("ascii")), 0)
    finally:
        posix.close(hfd)


def read(path: "str") -> "list[Any]":
    """All records, in order; unparsable lines are skipped (use verify to see them)."""
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                raw = raw.rstrip(b"\n")
                if not raw:
                    continue
                try:
                    out.append(fastjson.loads(raw))
                except Exception:
                    continue
    except FileNotFoundError:
        pass
    return out


def tail(path: "str", n: "int" = 20) -> "list[Any]":
    """The last ``n`` records (reads the whole file; ledgers are small)."""
    return read(path)[-n:]


def verify(path: "str") -> "tuple[bool, int | None, str]":
    """Check the chain.  Returns (ok, bad_line_number_or_None, reason)."""
    prev = GENESIS
    count = 0
    last_digest = GENESIS
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return True, None, "no ledger"
    repaired = []
    with f:
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                return False, lineno, ("line %d is torn (no newline): a write was cut short (a full disk?); "
                                       "the next append repairs it" % lineno)
            raw = raw[:-1]
            try:
                rec = fastjson.loads(raw)
            except Exception:
                return False, lineno, "line %d is not valid JSON" % lineno
            if not isinstance(rec, dict):
                return False, lineno, "line %d is not a JSON object" % lineno
            if rec.get("n") != lineno:
                return False, lineno, "line %d says n=%r (lines missing or reordered)" % (lineno, rec.get("n"))
            if rec.get("prev") != prev:
                return False, lineno, "line %d: hash of the previous line does not match (edited, removed or reordered)" % lineno
            if rec.get("ev") == REPAIRED:
                repaired.append((lineno, rec.get("torn_bytes")))
            prev = last_digest = sha256(raw).hexdigest()
            count = lineno
    head = _read_head(path)
    if head is not None:
        hn, hd = head
        if hn > count:
            return False, count + 1, "ledger ends at line %d but its head records %d lines (truncated)" % (count, hn)
        if hn == count and hd != last_digest:
            return False, count, "line %d does not match the recorded head hash" % count
        if hn < count:
            # a crash between the line and its head update leaves head one behind; check that line
            ok_line = _digest_of_line(path, hn)
            if hn and ok_line != hd:
                return False, hn, "line %d does not match the recorded head hash" % hn
    if repaired:
        return True, None, "%d lines ok; %s" % (count, ", ".join(
            "a torn tail (%s bytes) was cut off and recorded at line %d" % (nbytes, at) for at, nbytes in repaired))
    return True, None, "%d lines ok" % count


def _read_head(path: "str") -> "tuple[int, str] | None":
    try:
        with open(path + ".head", "rb") as f:
            parts = f.read(200).split()
        return int(parts[0]), parts[1].decode("ascii")
    except (OSError, ValueError, IndexError):
        return None


def _digest_of_line(path: "str", n: "int") -> "str | None":
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == n:
                return sha256(raw.rstrip(b"\n")).hexdigest()
    return None
