"""The session card: the resolved facts the per-tool-call path needs, in one file.

PreToolUse, PostToolUse and the status line run on every tool call.  Instead
of re-deriving the project and loading and validating layered config each
time, they read ``runtime/cards/<session_id>.json`` — a cache built by the
slow path: session dir, thresholds, window, enabled.  The card lists the
files it was derived from (the config layers, the status line's window note)
with their mtimes; if any changed, the card is stale and the caller takes the
slow path, which rebuilds it.  The session *state* is not cached: it changes
often and is always read fresh from ``state.json``.

Uses ``posix``, not ``os`` (hot path).
"""

import posix

from . import fastjson, paths

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeGuard

    from .config import Config
    from .session import Record

VERSION = 2

def valid_session_id(sid: "object") -> "TypeGuard[str]":
    """Session ids come from stdin: accept only safe file-name characters."""
    if not isinstance(sid, str) or not (0 < len(sid) <= 128):
        return False
    for ch in sid:
        if not (ch.isascii() and (ch.isalnum() or ch in "-_")):
            return False
    return True


def card_path(session_id: "str") -> "str":
    return paths.cards_dir() + "/" + session_id + ".json"


def mtime(path: "str") -> "str | int":
    """A change signature (mtime ns, size, inode), or -1 when the file does not exist.

    mtime alone can miss two writes within one coarse clock tick; an atomic
    replace also changes the inode, and most edits the size.
    """
    try:
        st = posix.stat(path)
    except OSError:
        return -1
    return "%d:%d:%d" % (st.st_mtime_ns, st.st_size, st.st_ino)


def load(session_id: "object") -> "dict[str, Any] | None":
    """The card for ``session_id`` if it exists and is fresh, else None."""
    if not valid_session_id(session_id):
        return None
    try:
        fd = posix.open(card_path(session_id), posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = posix.read(fd, 1 << 16)
    finally:
        posix.close(fd)
    try:
        c = fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(c, dict) or c.get("v") != VERSION:
        return None
    deps = c.get("deps")
    if not isinstance(deps, list):
        return None
    for dep in deps:
        if not isinstance(dep, list) or len(dep) != 2 or mtime(dep[0]) != dep[1]:
            return None
    return c


def snapshot(files: "list[str]") -> "list[list[str | int]]":
    """[[path, mtime]] for ``files`` — take it *before* reading them."""
    return [[p, mtime(p)] for p in files]


def build(session_id: "str", sdir: "str", rec: "Record", cfg: "Config | Mapping[str, Any]", window: "int", window_source: "str",
          deps: "list[list[str | int]]", sl_window: "int | None" = None,
          effect_words: "list[str] | None" = None) -> "dict[str, Any]":
    """The card's content.  ``deps``: a :func:`snapshot` taken before reading the sources.

    ``effect_words``: words beyond PreToolUse's own that send a Bash call to the side-effect
    check (aliases whose expansion has one, the user's declared commands: ``effects.card_words``).
    """
    from . import session  # the layout's owner; here, not at the top: a card hit on StopFailure's path never loads it

    fx = {"hold": bool(cfg["effects_hold"]), "local_exempt": bool(cfg["effects_local_exempt"]),
          "harmful": list(cfg["effects_harmful"]), "harmless": list(cfg["effects_harmless"]),
          "words": list(effect_words or ())}

    return {
        "v": VERSION,
        "session_id": session_id,
        "sdir": sdir,
        "ledger": session.ledger_path(sdir),
        "state_file": session.state_path(sdir),
        "transcript": rec.get("transcript"),
        "window": window,
        "window_source": window_source,
        "sl_window": sl_window,
        "warn": cfg["warn"],
        "rotate": cfg["rotate"],
        "hard": cfg["hard"],
        "rotate_tokens": cfg["rotate_tokens"],
        "enabled": bool(cfg["enabled"]),
        "color": bool(cfg["statusline_color"]),
        "fx": fx,
        "deps": deps,
    }


def save(session_id: "str", content: "dict[str, Any]") -> "None":
    """Write the card (no fsync: it is a cache, rebuilt whenever in doubt)."""
    from . import atomic

    paths.ensure_dir(paths.cards_dir())
    atomic.write_text(card_path(session_id), fastjson.dumps(content), fsync=False)


def drop(session_id: "str") -> "None":
    try:
        posix.unlink(card_path(session_id))
    except OSError:
        pass


# -- the side-effect pre-filter (both hosts' PreToolUse) -------------------------------------------
# A Bash command with none of these (lower-cased) cannot have a side effect that
# effects.classify would hold, so this hook goes no further for it:
# string tests only, nothing read, nothing written.  A word here only sends the call
# to the slow path, which decides (a GET, a push, `kubectl apply` run without a word).
EFFECT_WORDS = ("curl", "wget", "http", "xh ", "gh ", "publish", "deploy", "release", "upload", "mail", "psql",
                "mysql", "mariadb", "sqlite3", "mongo", "redis-cli", "cqlsh", "clickhouse", "kubectl", "helm",
                "terraform", "pulumi", "version", "bump", "fly", "vercel", "netlify", "firebase", "wrangler", "heroku",
                "aws ", "gcloud", "az ", "ansible", "./", ".sh", "sh ", "npm", "yarn", "pnpm", "bun ", "twine", "cargo",
                "gem ", "mvn", "gradle", "dotnet", "yank", "effects.")


SHELL_TOOLS = ("Bash", "run_shell_command")  # the shell tool: Claude Code's and Codex CLI's, Gemini CLI's


def may_have_effect(c: "dict[str, Any]", tool: "object", tool_input: "object") -> "bool":
    """Could this call have a side effect a repeat of which is held?  (False: it is not looked at again.)"""
    if tool not in SHELL_TOOLS or not isinstance(tool_input, dict):
        return False
    cmd = tool_input.get("command")
    fx = c.get("fx")
    if not isinstance(cmd, str) or not isinstance(fx, dict) or not fx.get("hold"):
        return False
    low = cmd.lower()
    for w in EFFECT_WORDS:
        if w in low:
            return True
    first = cmd.lstrip().split(None, 1)[0] if cmd.strip() else ""
    if "/" in first:
        return True  # a script named as the command
    for w in fx.get("words") or ():
        if w in cmd:
            return True  # an alias, or a command the user declared
    return False
