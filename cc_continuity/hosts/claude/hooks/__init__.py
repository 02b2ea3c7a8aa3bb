"""The hook entry: read stdin once, route to one module per event, fail open.

(The router lives in the package itself: every hook call imports this
package anyway, and on the per-tool-call path each module costs ~0.2 ms.)

Whatever happens inside — malformed stdin, a corrupt state file, a full disk,
a bug — the process exits 0 with nothing on stdout and one line in
``logs/hooks.log``.  Only a handler that finished cleanly may print, and it
prints exactly one JSON object.  A per-event budget (SIGALRM) guarantees no
hook outlives its settings.json timeout.  The budget, the bounded stdin read and
the fail-open are the runner's (``cc_continuity.hosts.run_hook``), the same for
Codex's entry (``hosts/codex/hooks.py``).

One exception to "always exit 0", and only for the async hooks installed with
``asyncRewake`` (``REWAKE``): a handler that finished cleanly and set
``call.rewake`` exits 2 with that text on stderr, which wakes the model.  An
async hook cannot block anything; any error still means exit 0.

The first argument names the handler: a Claude Code event, a name of ours for a
second handler of the same event (``StopLate`` runs on Stop), or a call of the
plugin's mod (``Mod*``, see ``hooks/mod.py``).

A call reaches its handler once even when Claude Code delivers it twice (a plugin and
settings.json both wiring us: :func:`first`, below; twins are a matter of Claude Code's two
wirings, so they are told apart here, not by the rotation).
"""

import posix

from .... import fastjson, hosts, paths
from ....card import valid_session_id

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

# Claude Code event -> handler module (cc_continuity.hosts.claude.hooks.<module>).
HANDLERS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use",
    "PostToolUseFailure": "post_tool_use",
    "Stop": "stop",
    "StopLate": "stop_late",
    "PreCompact": "pre_compact",
    "ModHello": "mod",
    "ModTurnEnd": "mod",
    "ModCompact": "mod",
    "ModDone": "mod",
    "SessionEnd": "session_end",
    "StopFailure": "stop_failure",
    "Notification": "notification",
}

# Seconds; each below the timeout written into settings.json for that event.
BUDGET = {
    "SessionStart": 12.0,
    "UserPromptSubmit": 8.0,
    "PreToolUse": 4.0,
    "PostToolUse": 4.0,
    "PostToolUseFailure": 4.0,
    "Stop": 50.0,
    "StopLate": 55.0,
    "PreCompact": 25.0,
    "ModHello": 8.0,
    "ModTurnEnd": 15.0,
    "ModCompact": 15.0,
    "ModDone": 8.0,
    "SessionEnd": 8.0,
    "StopFailure": 4.0,
    "Notification": 4.0,
}

# Handlers installed as async hooks with asyncRewake: only these may exit 2.
REWAKE = frozenset(("StopLate",))
# Our second handlers of an event, by the Claude Code event they run on.
EVENT_OF = {"StopLate": "Stop"}

_answered: "Call | None" = None  # the call whose handler finished (main runs its after_output)


class Call:
    """One hook invocation: the event, its payload, and where the answer goes."""

    def __init__(self, event: "str", payload: "dict[str, Any]", env: "Mapping[str, str] | None" = None) -> None:
        self.event = event
        self.payload = payload
        self.env = env  # None: the process environment
        sid = payload.get("session_id")
        self.session_id = sid if valid_session_id(sid) else None
        self.outcome = "ok"
        self.rewake: "str | None" = None  # text that wakes the model (REWAKE handlers only)
        self.claude_version: "str | None" = None  # "2.1.332", when a handler learned it (the transcript row's)
        self.after_output: "list[Any]" = []  # callables run once the answer is on stdout (rotation.context.Context's)

    def getenv(self, name: "str") -> "str | None":
        if self.env is not None:
            return self.env.get(name)
        v = posix.environ.get(name.encode())
        return None if v is None else v.decode("utf-8", "surrogateescape")


def run(event: "str | None", raw: "bytes", env: "Mapping[str, str] | None" = None) -> "tuple[str | None, str, object]":
    """Route one hook call.  Returns (stdout_text_or_None, outcome, session_id)."""
    out, outcome, sid, _ = dispatch(event, raw, env)
    return out, outcome, sid


def dispatch(event: "str | None", raw: "bytes",
             env: "Mapping[str, str] | None" = None) -> "tuple[str | None, str, object, str | None]":
    """Route one hook call.  Returns (stdout_text_or_None, outcome, session_id, rewake_text_or_None)."""
    try:
        payload = fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return None, "bad-stdin: %s" % (str(e)[:80] or type(e).__name__), None, None
    if not isinstance(payload, dict):
        return None, "bad-stdin: not a JSON object", None, None
    event = event or payload.get("hook_event_name")
    sid = payload.get("session_id")
    if not isinstance(event, str):
        return None, "no-event", sid, None
    call = Call(event, payload, env)
    if call.getenv("CC_CONTINUITY") == "0":
        return None, "disabled", sid, None
    modname = HANDLERS.get(event)
    if modname is None:
        return None, "ignored", sid, None
    if call.session_id is None:
        return None, "no usable session_id", sid, None
    if not first(event, call.session_id, payload, raw, call.getenv("CLAUDE_PLUGIN_ROOT") or "settings"):
        return None, "duplicate: its twin handles it (a plugin and settings.json both wire our hooks?)", sid, None
    mod = __import__("cc_continuity.hosts.claude.hooks." + modname, fromlist=["handle"])
    result = mod.handle(call)
    rewake = call.rewake if event in REWAKE and isinstance(call.rewake, str) and call.rewake else None
    global _answered
    _answered = call
    if result is None:
        return None, call.outcome, sid, rewake
    if event == "Stop":
        result = stop_wire(result, call.claude_version)
    return fastjson.dumps(result), call.outcome, sid, rewake


# A Stop hook's ``hookSpecificOutput.additionalContext`` makes Claude Code carry on
# with the turn exactly as ``decision: block`` does (the text reaches the model,
# stop_hook_active is true on the next Stop, the block cap counts it, `claude -p`
# too) but without the footer ``stop hook reported a problem · ctrl+o to see``
# that a block shows, which reads like a failure during every handoff request.
# Seen so on 2.1.328 and 2.1.332 (tests/e2e/test_stop_shape_e2e.py); a Claude Code
# older than that, or one we cannot tell, gets the block.
STOP_CONTEXT_SINCE = (2, 1, 328)


def stop_wire(result: "object", claude_version: "str | None") -> "object":
    """The Stop handler's ``{"decision": "block", "reason": ...}`` as this Claude Code takes it best."""
    if not (isinstance(result, dict) and result.get("decision") == "block" and isinstance(result.get("reason"), str)):
        return result
    if claude_version is None:
        return result  # (a version we cannot tell)
    try:
        version = tuple(int(x) for x in claude_version.split("-")[0].split("."))
    except (AttributeError, ValueError):
        return result
    if version < STOP_CONTEXT_SINCE:
        return result
    return {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": result["reason"]}}


def main(argv: "list[str]") -> "NoReturn":
    """Entry for the installed bootstrap (``install.settings.BOOT``) and ``cc-continuity hook``; always exits 0
    (2 for a REWAKE handler's wake): the runner (hosts.run_hook) is the same for every host."""
    event = argv[0] if argv else None
    hosts.run_hook(event or "?", BUDGET.get(event or "", 5.0), lambda raw: _answer(event, raw), session_of=_session_of)


def _answer(event: "str | None", raw: "bytes") -> "hosts.Answer":
    out, outcome, sid, rewake = dispatch(event, raw)
    return out, outcome, sid, _answered.after_output if _answered is not None else (), rewake


def _session_of(raw: "bytes") -> "object":
    try:
        payload = fastjson.loads(raw)
    except BaseException:
        return None
    return payload.get("session_id") if isinstance(payload, dict) else None


# -- Each hook call handled once, when Claude Code delivers it twice
#
# A plugin's hooks and settings.json hooks are not deduplicated by Claude Code:
# with both installed, every event reaches us twice, at the same moment, once per
# *wiring*.  ``install`` and ``doctor`` catch the double wiring itself; this keeps
# an unnoticed one from doubling prompts in the ledger, blocks at Stop, or
# bootstraps.
#
# * Tool calls carry their own id (``tool_use_id``): the first copy to create the
#   marker named by it (``O_CREAT | O_EXCL``, atomic) handles the call; one id is
#   one call, however late the twin comes.  A prompt's ``prompt_id`` is not such
#   an id: a prompt the user submits while a turn runs arrives with the running
#   turn's ``prompt_id`` (seen on 2.1.332: keyed on it, 3 of 10 such prompts were
#   dropped as twins), so prompts are counted like the events below.
# * The other events (Stop, SessionStart, ...) have none, and a genuine repeat
#   can carry the very same bytes as the one before (the model answering "Done."
#   again after a block, within a second on a fast local model).  What tells a twin
#   from a repeat is where it came from: a twin arrives through the *other*
#   wiring (a plugin hook has ``CLAUDE_PLUGIN_ROOT``, a settings hook does not).
#   Under a lock, each wiring counts the calls with these bytes; the n-th call of
#   a wiring is handled only when no other wiring has already had its n-th.
#
# Standard library and one syscall on the per-tool-call path; markers older than
# ``KEEP_S`` are swept by :func:`sweep` (a startup's registration: the port HookContext.tidy_at_startup, given it by SessionStart).

KEYED = {"PreToolUse": "tool_use_id", "PostToolUse": "tool_use_id", "PostToolUseFailure": "tool_use_id"}
ONLY_ONE_WIRING = frozenset(("ModHello", "ModTurnEnd", "ModCompact", "ModDone"))  # the mod calls once
KEEP_S = 6 * 3600
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def once_dir() -> "str":
    return paths.runtime_dir() + "/once"


def _safe(text: "object") -> "bool":
    return isinstance(text, str) and 0 < len(text) <= 128 and all(c in _SAFE for c in text.encode("ascii", "replace"))


def first(event: "str", session_id: "str", payload: "dict[str, object]", raw: "bytes", wiring: "str" = "settings") -> "bool":
    """True when this call is the first of its twins (or cannot be told apart: then it runs)."""
    if event in ONLY_ONE_WIRING:
        return True
    field = KEYED.get(event)
    ident = payload.get(field) if field else None
    if _safe(ident):
        return _claim("%s.%s.%s" % (event, session_id, ident))
    from ....digest import sha256  # only unkeyed events count digests; a keyed PreToolUse has no use for SHA-256

    return _counted("%s.%s.%s" % (event, session_id, sha256(raw).hexdigest()[:24]), wiring)


def _counted(name: "str", wiring: "str") -> "bool":
    import fcntl

    path = once_dir() + "/" + name
    try:
        try:
            fd = posix.open(path, posix.O_RDWR | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            paths.ensure_dir(once_dir())
            fd = posix.open(path, posix.O_RDWR | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
    except OSError:
        return True  # cannot tell (a full disk, a read-only home): handling twice beats handling never
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            counts = fastjson.loads(posix.read(fd, 65536) or b"{}")
        except (ValueError, UnicodeDecodeError):
            counts = {}
        if not isinstance(counts, dict):
            counts = {}
        prior = counts.get(wiring)
        mine = (prior if isinstance(prior, int) else 0) + 1
        counts[wiring] = mine
        data = fastjson.dumps(counts).encode("utf-8")
        posix.lseek(fd, 0, 0)
        posix.ftruncate(fd, 0)
        posix.write(fd, data)
        others = [v for k, v in counts.items() if k != wiring and isinstance(v, int)]
        return mine > max(others, default=0)
    except OSError:
        return True
    finally:
        posix.close(fd)


def _claim(name: "str") -> "bool":
    path = once_dir() + "/" + name
    flags = posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_CLOEXEC
    for first in (True, False):
        try:
            posix.close(posix.open(path, flags, 0o600))
            return True
        except FileExistsError:
            return False
        except FileNotFoundError:
            if not first:
                return True
        except OSError:
            return True  # cannot tell (a full disk, a read-only home): handling twice beats handling never
        try:
            paths.ensure_dir(once_dir())  # (the first call after a fresh install or a sweep)
        except OSError:
            return True
    return True


def sweep(now: "float | None" = None, keep_s: "float" = KEEP_S) -> "int":
    """Remove markers older than ``keep_s``; returns how many."""
    return paths.remove_older(once_dir(), keep_s, now)
