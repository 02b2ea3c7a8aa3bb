"""PostToolUse (and PostToolUseFailure): the per-tool-call meter update and the action record.

The common case — a fresh session card and no level change — reads the card,
the state record and the transcript tail, appends one ledger line and
returns: no lock, no subprocess, no ``os``, no config parsing.  The ledger line
carries the action (``record`` below: tool, target, failed), so a successor
learns what was done after the checkpoint it resumes.  Anything else
(no card yet, a stale card, a level crossing) takes the slow path once.
"""

import posix

from .. import card, ledger, meter, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from . import Call

FAILURE = "PostToolUseFailure"


def handle(call: "Call") -> "dict[str, Any] | None":
    c = card.load(call.session_id)
    if c is None:
        return slow(call)
    if not c["enabled"]:
        call.outcome = "project disabled"
        return None
    try:
        rec = session.load(c["sdir"])
    except (OSError, ValueError):
        return slow(call)
    path = call.payload.get("transcript_path") or c["transcript"]
    try:
        tokens = meter.read_transcript(path)["tokens"] if isinstance(path, str) and path else None
    except OSError:
        tokens = None
    lvl = meter.level(tokens, c["window"], c)
    line = _line(call, tokens, None if tokens is None else round(100.0 * tokens / c["window"], 1))
    ledger.append(c["ledger"], line)
    if line.get("tool") == "Bash":
        _effect_outcome(call, c, line.get("exit"))
    if meter.level_index(lvl) == meter.notified_index(rec):
        return None
    return slow(call, logged=True)


def slow(call: "Call", logged: "bool" = False) -> "dict[str, Any] | None":
    """Register or refresh the session, then record a level change if there is one."""
    from ..rotation import context, turn
    from ..hosts.claude.host import HookContext

    ctx = HookContext(call)
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    built = context.refresh_card(ctx, n, sdir, rec)
    reading = ctx.reading(sdir, rec)
    if not logged:
        line = _line(call, reading["tokens"], reading["percent"])
        ctx.log(sdir, line)
        if line.get("tool") == "Bash":
            _effect_outcome(call, built, line.get("exit"))
    if not turn.needs_level_change(rec, reading):
        ctx.outcome = "card refreshed"
        return None
    note, rec = turn.tool_used(ctx, n, sdir, rec, reading)
    ctx.outcome = "level %s" % reading["level"]
    if not note:
        return None
    return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": note}}


def _effect_outcome(call: "Call", c: "dict[str, Any]", code: "int | None") -> None:
    """A Bash call whose intent PreToolUse recorded (its marker is there): record the outcome (effects.outcome).

    One ``access`` otherwise: no pre-filter here, no exception (P1 counts every instruction of this path)."""
    tid = call.payload.get("tool_use_id")
    pdir = c["sdir"].rstrip("/").rsplit("/", 2)[0]
    if isinstance(tid, str) and tid and "/" not in tid and posix.access(pdir + "/effects.pending/" + tid, posix.F_OK):
        from ..rotation import effects

        effects.outcome(pdir, call.payload, code, call.session_id)


def _line(call: "Call", tokens: "int | None", percent: "float | None") -> "dict[str, Any]":
    """The ``tool`` ledger line: the meter reading and the action (tool, target, failed)."""
    tool = call.payload.get("tool_name")
    rec = {"ev": "tool", "tool": tool if isinstance(tool, str) else None, "tokens": tokens, "percent": percent}
    rec.update(record(call.payload, failed=call.event == FAILURE))
    return rec


# -- the action record ------------------------------------------------------------------------------
# The ``tool`` line carries ``target`` (the file path, the URL or pattern, or the first line of a
# shell command, at most TARGET_MAX characters) and ``failed``: no extra file, no extra write.  Here,
# not in a module of its own: every module the per-tool-call path imports costs ~0.5 M instructions
# (about a sixth of what the whole call adds to the interpreter's start).  This path cannot afford
# ``redact`` (~100 regular expressions), so ``mask`` hides what plainly carries a secret with string
# operations alone: NAME=value where the name says secret, the word after --password/Bearer-like
# words, URL userinfo, known token prefixes, long random-looking words.  Every reader that quotes a
# target (the successor's bootstrap) runs the full redactor over it too; which actions reached
# outside the work tree is decided there (``resume.side_effect``).

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


def target(tool: "str | None", tool_input: "object") -> "str | None":
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


def record(payload: "dict[str, Any]", failed: "bool" = False) -> "dict[str, Any]":
    """The action fields of a ``tool`` ledger line for one PostToolUse/PostToolUseFailure payload."""
    tool = payload.get("tool_name")
    tool = tool if isinstance(tool, str) else None
    out: "dict[str, Any]" = {"target": target(tool, payload.get("tool_input"))}
    resp = payload.get("tool_response")
    if failed or (isinstance(resp, dict) and (resp.get("interrupted") is True or resp.get("is_error") is True)):
        out["failed"] = True
    if tool == "Bash":
        out["exit"] = exit_code(payload, failed)
    return out


def exit_code(payload: "dict[str, Any]", failed: "bool") -> "int | None":
    """A Bash call's exit code: 0 after PostToolUse, the number PostToolUseFailure's ``error`` starts with
    ("Exit code 3"); None when it was interrupted or the error names none."""
    if not failed:
        resp = payload.get("tool_response")
        return None if isinstance(resp, dict) and resp.get("interrupted") is True else 0
    err = payload.get("error")
    if not isinstance(err, str) or not err.startswith("Exit code "):
        return None
    num = err[10:].split(None, 1)[0] if err[10:].strip() else ""
    return int(num) if num.isdigit() else None

