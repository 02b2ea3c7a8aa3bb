"""Side effects outside the work tree: which calls have one, whether repeating it would harm, and their records.

A call that reached outside the work tree (a POST to an API, a release, a
publish, a message sent, a database write) must not happen twice because a
session restarted, rotated or recovered a crashed one.  Three parts:

- :func:`classify` — the effects of one Bash command (:mod:`cc_continuity.holds.classify`, on the
  shell reading of :mod:`cc_continuity.holds.shell`).
- :func:`key` — a SHA-256 of the normalised harmful effects (never their text:
  commands carry secrets).
- The two-phase record, in the project's ``effects.jsonl`` (shared by every session
  of the project, so a restart, a successor and a recovering session all see it):
  ``intent`` (PreToolUse, before the call runs), ``done`` (PostToolUse /
  PostToolUseFailure, with the exit code), ``override`` (the user's own prompt lets
  one repeat through).  An intent with no outcome is *uncertain* unless the
  transcript shows the call never ran (denied by a hook, declined at the prompt).

:func:`decide` puts it together for PreToolUse: None (run, nothing to say), or a
hold — ``deny`` when no one is there to answer, else ``ask`` — with a reason that
names when and in which session the effect happened and what to say to do it anyway.

Only calls PreToolUse's pre-filter (``card.may_have_effect``) lets through come
here; nothing is written for a call with no harmful effect.
"""

import posix
import time

from .. import digest, fastjson, gitrun
from ..holds.classify import SCRIPT_MAX as SCRIPT_MAX, classify as classify, read_file  # (where callers look)
from ..holds.shell import split

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (PreToolUse's slow path)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

STORE_TAIL = 1 << 20  # the newest MiB of effects.jsonl is what a hold looks at
ALIAS_MAX = 512 * 1024
CODE_LEN = 8
WATCHDOG_PREFIX = "[cc-continuity watchdog]"  # (watch/planner.PREFIX: a watchdog nudge is not the user's word)


def aliases(text: str) -> "dict[str, str]":
    """``alias name='expansion'`` lines of a shell snapshot, as a dict."""
    out: "dict[str, str]" = {}
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("alias "):
            continue
        body = line[6:].strip()
        if body.startswith("-- "):
            body = body[3:]
        name, eq, value = body.partition("=")
        if not eq or not name or any(c in name for c in " \t'\"$"):
            continue
        parts = split(value)
        if len(parts) == 1:
            out[name] = parts[0]
    return out


def snapshots_dir(env: "Mapping[str, str]") -> str:
    """Where Claude Code keeps its shell snapshots (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then ``shell-snapshots``)."""
    base = env.get("CLAUDE_CONFIG_DIR") or (env.get("HOME") or "") + "/.claude"
    return base.rstrip("/") + "/shell-snapshots"


def snapshot_aliases(d: str) -> "dict[str, str]":
    """The aliases of the newest shell snapshot Claude Code wrote in ``d`` (each Bash call sources one)."""
    try:
        names = [n for n in posix.listdir(d) if n.startswith("snapshot-")]
    except OSError:
        return {}
    best, best_m = None, -1
    for n in names:
        try:
            m = posix.stat(d + "/" + n).st_mtime_ns
        except OSError:
            continue
        if m > best_m:
            best, best_m = n, m
    if best is None:
        return {}
    data = read_file(d + "/" + best, None, ALIAS_MAX)
    return aliases(data.decode("utf-8", "replace")) if data else {}


def card_words(harmful: "list[str]", alias_map: "Mapping[str, str]") -> "list[str]":
    """What the session card adds to PreToolUse's pre-filter: each alias whose expansion has a harmful effect,
    and the first word of each command the user declared harmful."""
    words = {p.split()[0] for p in harmful if p.split()}
    words |= {n for n, x in alias_map.items() if classify(x, {"local_exempt": False, "harmful": list(harmful)})}
    return sorted(words)


# -- the identity of an effect ---------------------------------------------------------------------------

def git_state(root: str) -> "str | None":
    """HEAD and the state of the work tree (each changed path with its size and mtime), as one digest; None: no git.

    On the snapshot's profile (gitrun.SNAPSHOT): no optional lock, no hook, no fsmonitor, no filter or other
    program the repository names; read with ``posix_spawnp`` (gitrun.read: no ``subprocess`` on a tool call)."""
    out = gitrun.read(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], root)
    if out is None:
        return None
    parts = []
    for ent in out.split(b"\0"):
        if not ent:
            continue
        if ent.startswith(b"# branch.oid"):
            parts.append(ent)
            continue
        if ent.startswith(b"#"):
            continue
        path = ent.rsplit(b" ", 1)[-1] if ent[:1] in b"12u" else ent[2:]
        try:
            st = posix.stat(root.encode() + b"/" + path)
            parts.append(ent + b" %d %d" % (st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append(ent + b" gone")
    return digest.sha256(b"\n".join(sorted(parts))).hexdigest()


def key(effects: "list[dict[str, Any]]", git: "str | None") -> str:
    """The identity of a call's harmful effects: a digest, never their text."""
    norm = [[e["kind"], e["norm"]] + ([git] if e["git"] else []) for e in effects]
    return digest.sha256(fastjson.dumps(sorted(norm, key=fastjson.dumps)).encode()).hexdigest()


# -- the two-phase record --------------------------------------------------------------------------------

def store_path(pdir: str) -> str:
    return pdir.rstrip("/") + "/effects.jsonl"


def pending_dir(pdir: str) -> str:
    """Markers ``<tool_use_id>``: an intent waiting for its outcome (PostToolUse looks for one with a stat)."""
    return pdir.rstrip("/") + "/effects.pending"


def append(pdir: str, line: "dict[str, Any]") -> None:
    line.setdefault("ts", round(time.time(), 3))
    data = (fastjson.dumps(line) + "\n").encode()
    fd = posix.open(store_path(pdir), posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
    try:
        posix.write(fd, data)
    finally:
        posix.close(fd)


def _tail(path: str, nbytes: int) -> "tuple[bytes, int] | None":
    """The last ``nbytes`` of ``path`` and the offset they start at; None when it cannot be read."""
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        start = max(0, posix.fstat(fd).st_size - nbytes)
        posix.lseek(fd, start, 0)
        chunks = []
        while True:
            b = posix.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        posix.close(fd)
    return b"".join(chunks), start


def read(pdir: str) -> "list[dict[str, Any]]":
    """The newest ``STORE_TAIL`` bytes of the project's records (a torn or foreign line is skipped)."""
    got = _tail(store_path(pdir), STORE_TAIL)
    if got is None:
        return []
    raw, start = got
    if start:
        raw = raw.split(b"\n", 1)[-1]
    out = []
    for ln in raw.split(b"\n"):
        if not ln.strip():
            continue
        try:
            r = fastjson.loads(ln)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(r, dict):
            out.append(r)
    return out


def mark_pending(pdir: str, tool_use_id: str, k: str) -> None:
    d = pending_dir(pdir)
    try:
        posix.mkdir(d, 0o700)
    except FileExistsError:
        pass
    fd = posix.open(d + "/" + tool_use_id, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_CLOEXEC, 0o600)
    try:
        posix.write(fd, k.encode())
    finally:
        posix.close(fd)


def outcome(pdir: str, payload: "Mapping[str, Any]", code: "int | None", sid: str | None = None) -> "dict[str, Any] | None":
    """PostToolUse / PostToolUseFailure of a call whose intent is pending: record its outcome and exit code
    (``code``: the tool line's, hooks/post_tool_use.exit_code; None when the host does not say, which counts as
    done).  None: no intent pending."""
    tid = payload.get("tool_use_id")
    if not isinstance(tid, str) or not tid or "/" in tid:
        return None
    marker = pending_dir(pdir) + "/" + tid
    try:
        fd = posix.open(marker, posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        k = posix.read(fd, 128).decode("ascii", "replace")
    finally:
        posix.close(fd)
    resp = payload.get("tool_response")
    interrupted = payload.get("is_interrupt") is True or (isinstance(resp, dict) and resp.get("interrupted") is True)
    # An exit the host does not report (Codex's comes after its hook, Gemini's only as text a command's output can
    # imitate) counts as success: the call ran, so a repeat is held (the user can let it through), never let by.
    line: "dict[str, Any]" = {"ph": "done", "k": k, "tu": tid, "exit": code,
                              "ok": code in (0, None) and not interrupted, "sid": sid}
    if interrupted:
        line["interrupted"] = True
    append(pdir, line)
    try:
        posix.unlink(marker)
    except OSError:
        pass
    return line


def _words(text: str) -> "set[str]":
    """The lower-cased words of ``text`` (letters, digits and ``_``)."""
    return set("".join(c if c.isalnum() or c == "_" else " " for c in text.lower()).split())


def override_codes(prompt: str) -> "set[str]":
    """The codes of ``repeat <code>`` in a prompt (a code: ``CODE_LEN`` lower-case hex digits)."""
    out = set()
    parts = prompt.split("repeat ")
    for i, rest in enumerate(parts[1:], 1):
        before = parts[i - 1][-1:]
        code = rest[:CODE_LEN]
        after = rest[CODE_LEN:CODE_LEN + 1]
        if (not before or not before.isalnum()) and len(code) == CODE_LEN and all(c in "0123456789abcdef" for c in code) \
                and not (after.isalnum() or after == "_"):
            out.add(code)
    return out


def record_override(pdir: str, prompt: str, sid: str | None, name: str | None) -> "list[str]":
    """The user's prompt said ``repeat <code>``: record it (each code lets one repeat through).  The codes seen."""
    codes = sorted(override_codes(prompt))
    for c in codes:
        append(pdir, {"ph": "override", "code": c, "sid": sid, "n": name})
    return codes


# -- a repeat, held -----------------------------------------------------------------------------------------

def history(pdir: str, k: str, transcripts: "Mapping[str, str] | None" = None,
            ran: "Callable[[str | None, str], str | None] | None" = None) -> "dict[str, Any]":
    """What the records say of effect ``k``: the last achieved or uncertain run, and an unused override.

    ``ran`` (the host's :meth:`~.host.Host.call_ran`) settles an intent with no recorded outcome from
    the agent's transcript: a call that never ran is not held against a repeat."""
    recs = read(pdir)
    code = k[:CODE_LEN]
    intents: "dict[str, dict[str, Any]]" = {}
    last_intent = -1  # where the last intent of this effect is in the record: an override counts only after it
    for at, r in enumerate(recs):
        if r.get("k") == k and r.get("ph") == "intent" and isinstance(r.get("tu"), str):
            intents[r["tu"]] = dict(r, state="uncertain", at=at)
            last_intent = at
        elif r.get("k") == k and r.get("ph") in ("done", "not_run") and r.get("tu") in intents:
            i = intents[r["tu"]]
            if r["ph"] == "not_run":
                i["state"] = "not run"
            elif r.get("interrupted"):
                i["state"] = "uncertain"
                i["evidence"] = "it was interrupted while running"
            else:
                i["state"] = "done" if r.get("ok") else "failed"
                i["exit"] = r.get("exit")
    # In record order, never by the clock: a clock stepped back or ahead neither lets more repeats through
    # nor swallows the user's override (each code lets exactly one repeat through).
    override = any(r.get("ph") == "override" and r.get("code") == code and at > last_intent for at, r in enumerate(recs))
    achieved = None
    for i in sorted(intents.values(), key=lambda r: r["at"]):
        if i["state"] == "uncertain" and "evidence" not in i:
            seen = ran((transcripts or {}).get(i.get("sid") or "") or i.get("tr"), i["tu"]) if ran else None
            if seen == "not run":
                i["state"] = "not run"
            elif seen == "ran":
                i["state"] = "done"
                i["evidence"] = "the transcript has its result, but no outcome was recorded"
            else:
                i["evidence"] = "its intent was recorded, then nothing: the process died or the call was cut short"
        if i["state"] in ("done", "uncertain"):
            achieved = i
    return {"last": achieved, "override": override, "code": code}


def unattended(payload: "Mapping[str, Any]", env_unattended: bool) -> bool:
    """No one to answer a question: ``--dangerously-skip-permissions``, ``dontAsk``, or started unattended."""
    return env_unattended or payload.get("permission_mode") in ("bypassPermissions", "dontAsk")


def _when(ts: "object") -> str:
    if not isinstance(ts, (int, float)):
        return "at an unknown time"
    return time.strftime("at %Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def hold_reason(h: "dict[str, Any]", what: str) -> str:
    last = h["last"]
    who = last.get("n") or last.get("sid") or "an earlier session"
    if last["state"] == "uncertain":
        head = ("cc-continuity: this call (%s) may already have had its effect: the same call was started %s in session "
                "%s, and its outcome is unknown (%s)." % (what, _when(last.get("ts")), who, last.get("evidence")))
        check = " Check whether it took effect (the remote, the API, the registry) before running it again."
    else:
        head = ("cc-continuity: this call (%s) already had its effect: the same call ran %s in session %s%s." % (
            what, _when(last.get("ts")), who,
            "" if last.get("exit") is None else " and exited %s" % last["exit"]))
        check = " Repeating it would do it twice (a second post, release, message or publish)."
    return head + check + (" To do it anyway, the user can type \"repeat %s\" in a prompt of their own; that lets "
                           "exactly one repeat through." % h["code"])


def decide(pdir: str, command: str, env: "dict[str, Any]", payload: "Mapping[str, Any]", sid: str | None,
           name: str | None, root: str | None, env_unattended: bool,
           ran: "Callable[[str | None, str], str | None] | None" = None) -> "tuple[str, dict[str, Any] | None]":
    """PreToolUse for a Bash call: (what happened, the hook output or None to let it run).

    Records the intent (and the pending marker) of a harmful effect that runs; records
    nothing for a call with none, or one that is held (a held call never runs).
    """
    effects = classify(command, env)
    if not effects:
        return "no harmful effect", None
    state = git_state(root) if root and any(e["git"] for e in effects) else None
    k = key(effects, state)
    tr = payload.get("transcript_path")
    h = history(pdir, k, {sid: tr} if sid and isinstance(tr, str) else None, ran)
    what = "; ".join(dict.fromkeys(e["what"] for e in effects))[:200]
    tid = payload.get("tool_use_id")
    intent = {"ph": "intent", "k": k, "tu": tid, "sid": sid, "n": name, "what": what,
              "tr": tr if isinstance(tr, str) else None}
    if h["last"] is not None and not h["override"]:
        reason = hold_reason(h, what)
        if unattended(payload, env_unattended):
            return "held (%s, denied)" % h["last"]["state"], {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}
        intent["asked"] = True  # the user may let it run: the intent is on record, a decline resolves to not run
        _write_intent(pdir, intent)
        return "held (%s, asked)" % h["last"]["state"], {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}}
    if h["override"]:
        intent["override"] = h["code"]
    _write_intent(pdir, intent)
    return ("repeat let through by the user's override" if h["override"] else "intent recorded"), None


def _write_intent(pdir: str, intent: "dict[str, Any]") -> None:
    if not isinstance(intent.get("tu"), str) or not intent["tu"] or "/" in intent["tu"]:
        intent["tu"] = "none-%d" % time.time_ns()
    append(pdir, intent)
    mark_pending(pdir, intent["tu"], intent["k"])
