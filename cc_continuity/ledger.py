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


# -- the action record ------------------------------------------------------------------------------
# A ``tool`` line carries ``target`` (the file path, the URL or pattern, or the first line of a shell
# command, at most TARGET_MAX characters), for both hosts' tool hooks.  Here, in a module every tool
# call loads anyway: a module more on that path costs ~0.5 M instructions (about a sixth of what the
# whole call adds to the interpreter's start).  The path cannot afford ``redact`` (~100 regular
# expressions), so ``mask`` hides what plainly carries a secret with string operations alone:
# NAME=value where the name says secret, the word after --password/Bearer-like words, URL userinfo,
# known token prefixes, long random-looking words.  Every reader that quotes a target (the
# successor's bootstrap) runs the full redactor over it too; which actions reached outside the work
# tree is decided there (``revalidation.side_effect``).

TARGET_MAX = 200
MASK = "[REDACTED]"

_PATH_KEYS = ("file_path", "notebook_path", "path", "url", "pattern", "query", "description", "prompt")
_SECRET_WORDS = ("pass", "pwd", "token", "secret", "apikey", "api_key", "api-key", "auth", "cred",
                 "private_key", "privatekey", "access_key", "signature", "cookie", "session_key")
_SECRET_FLAGS = frozenset(("--password", "--pass", "--passwd", "--token", "--api-key", "--apikey", "--secret",
                           "--auth", "--auth-token", "--access-token", "--client-secret", "--otp", "-password",
                           "bearer", "basic", "token", "authorization:", "x-api-key:", "--header-token",
                           "sshpass", "--registry-token", "--npm-token"))
_TOKEN_PREFIXES = ("sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
                   "xoxb-", "xoxp-", "xoxa-", "xapp-", "akia", "asia", "aiza", "npm_", "pypi-", "hf_", "dop_v1_",
                   "sq0", "shpat_", "eyj")


def target(tool_input: "object") -> "str | None":
    """The action's target, masked and cut to ``TARGET_MAX`` (None when the call names none)."""
    if not isinstance(tool_input, dict):
        return None
    cmd = tool_input.get("command")
    if isinstance(cmd, str):
        line = cmd.strip().split("\n", 1)[0].strip()
        more = "\n" in cmd.strip()
        text = mask(line)  # the whole first line, then the cut: no secret is cut in two before it is masked
        return _cut(text + (" …" if more else ""))
    for key in _PATH_KEYS:
        v = tool_input.get(key)
        if isinstance(v, str) and v:
            return _cut(mask(v.split("\n", 1)[0]))
    return None


def _cut(text: "str") -> "str":
    """At most TARGET_MAX characters; a cut never leaves a quote open (it goes back to before that quote).

    Readers run the full redactor over the cut text: half a quoted value would read as a bare one.
    """
    if len(text) <= TARGET_MAX:
        return text
    kept = text[:TARGET_MAX - 1]
    opened = -1
    for i, c in enumerate(kept):
        if c == "'" or c == '"':
            if opened < 0:
                opened = i
            elif kept[opened] == c:
                opened = -1
    return (kept[:opened].rstrip() if opened >= 0 else kept) + "…"


def _secret_name(name: "str") -> "bool":
    low = name.lower().lstrip("-$").rstrip(":")
    if not low or low.endswith(("_file", "_path", "file", "_len", "_count", "_url", "_id", "_name", "tokens")) \
            or low.startswith(("max", "min", "num")):
        return False  # about a secret (where it is, how long), not one
    return any(w in low for w in _SECRET_WORDS)


def _random_looking(word: "str") -> "bool":
    w = word.strip("'\"`,;()[]{}")
    if len(w) < 24 or "/" in w or "." in w[:-1] and w.count(".") != 2:  # paths, hosts, dotted names (a JWT: 2 dots)
        return False
    digits = sum(1 for c in w if c.isdigit())
    upper = sum(1 for c in w if c.isupper())
    lower = sum(1 for c in w if c.islower())
    if digits == len(w) or all(c in "0123456789abcdefABCDEF-" for c in w):
        return False  # numbers, hashes, UUIDs
    return digits >= 2 and (upper >= 2 and lower >= 2 or digits >= 6 and upper + lower >= 6)


def _masked_word(word: "str") -> "str":
    low = word.lower().strip("'\"")
    if "://" in word and "@" in word.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = word.split("://", 1)
        host = rest.split("@", 1)[1]
        return scheme + "://" + MASK + "@" + host
    if "=" in word:
        name, _, value = word.partition("=")
        if value and _secret_name(name) and not value.isdigit():
            return name + "=" + MASK
        if value and _masked_word(value) != value:
            return name + "=" + _masked_word(value)
    if len(low) >= 16 and low.startswith(_TOKEN_PREFIXES):
        return MASK
    if _random_looking(word):
        return MASK
    return word


def mask(text: "str") -> "str":
    """``text`` with what plainly carries a secret masked (a first pass; the full redactor follows on output)."""
    if not text:
        return text
    words = text.split(" ")
    out: list[str] = []
    hide_next = False
    quote = ""  # a masked value's quote still open: the words up to its close are part of it
    for w in words:
        if quote:
            if w.endswith(quote):
                quote = ""
            continue
        if not w:
            out.append(w)
            continue
        if hide_next and (w in ("-p", "-P", "-a", "-w") or w.lower().strip("'\"") in ("bearer", "basic", "token")):
            # sshpass -p X, Authorization: Bearer X: the value comes after the flag or the scheme
            out.append(w)
            continue
        if hide_next:
            out.append(MASK)
            hide_next = False
            quote = _open_quote(w)
            continue
        low = w.lower().strip("'\"")
        if low in _SECRET_FLAGS or (low.startswith("-") and _secret_name(low) and "=" not in low):
            out.append(w)
            hide_next = True
            continue
        if low in ("-u", "--user") and len(out) and out[0].lower() in ("curl", "wget"):
            out.append(w)
            hide_next = True
            continue
        if w.startswith(("-p'", '-p"')):  # mysql -p'pass phrase'
            out.append("-p" + MASK)
            quote = _open_quote(w[2:])
            continue
        masked = _masked_word(w)
        if masked != w and "=" in w:
            quote = _open_quote(w.partition("=")[2])
        out.append(masked)
    return " ".join(out)


def _open_quote(value: "str") -> "str":
    """The quote ``value`` opens and does not close ("" when none)."""
    q = value[:1]
    if q not in ("'", '"') or (len(value) > 1 and value.endswith(q)):
        return ""
    return q
