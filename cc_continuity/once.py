"""Each hook call handled once, when Claude Code delivers it twice.

A plugin's hooks and settings.json hooks are not deduplicated by Claude Code:
with both installed, every event reaches us twice, at the same moment, once per
*wiring*.  ``install`` and ``doctor`` catch the double wiring itself; this keeps
an unnoticed one from doubling prompts in the ledger, blocks at Stop, or
bootstraps.

* Tool calls carry their own id (``tool_use_id``): the first copy to create the
  marker named by it (``O_CREAT | O_EXCL``, atomic) handles the call; one id is
  one call, however late the twin comes.  A prompt's ``prompt_id`` is not such
  an id: a prompt the user submits while a turn runs arrives with the running
  turn's ``prompt_id`` (seen on 2.1.332: keyed on it, 3 of 10 such prompts were
  dropped as twins), so prompts are counted like the events below.
* The other events (Stop, SessionStart, ...) have none, and a genuine repeat
  can carry the very same bytes as the one before (the model answering "Done."
  again after a block, within a second on a fast local model).  What tells a twin
  from a repeat is where it came from: a twin arrives through the *other*
  wiring (a plugin hook has ``CLAUDE_PLUGIN_ROOT``, a settings hook does not).
  Under a lock, each wiring counts the calls with these bytes; the n-th call of
  a wiring is handled only when no other wiring has already had its n-th.

Standard library and one syscall on the per-tool-call path; markers older than
``KEEP_S`` are swept by :func:`sweep` (SessionStart, off the hot path).
"""

import posix

from . import fastjson, paths

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
    from .digest import sha256  # only unkeyed events count digests; a keyed PreToolUse has no use for SHA-256

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
