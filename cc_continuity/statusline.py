"""The status line: ``ctx 58% ▮▮▮▯▯ warn · myproj-003 · ⛔ BLOCKED``.

One short-lived process per refresh (Claude Code cancels a slow one): stdlib
only, no network, and the only subprocess is the user's own previous status
line, which is run with the same stdin, time-bounded, and printed first.
Always exits 0.

Our own part has one deadline (SIGALRM): :data:`OWN_BUDGET_S` (300 ms).  It
bounds everything that could block: reading a stdin that never closes (a whole
JSON object is not waited on past), opening a transcript that is a FIFO.  At the
deadline it prints what it has (``ctx ?`` at least) and exits 0.  Ours is drawn
before the user's chained status line is set up (a config import and a process
start, which under load alone can take our whole budget); the chain's setup has
its own :data:`OWN_BUDGET_S`, and the chain then runs for
``statusline_chain_timeout_ms`` (default 1 s); when it is slower its last output
is shown and it finishes in the background (bounded, then its whole process group
is killed), leaving its new output for the next render.

The user's status line comes from our own command line (``--chain JSON``, put
there by install, so it survives a lost install record), else from the record.
"""

import posix
import time

from . import card, fastjson, meter, paths, session

TYPE_CHECKING = False  # mypy takes this name as true; at run time only the else branch runs (hot path)
if TYPE_CHECKING:
    import signal as _signal  # the builtin _signal has no stubs: its public face has them
    from collections.abc import Callable, Mapping
    from subprocess import Popen
    from types import FrameType
    from typing import Any, NoReturn

    Facts = dict[str, Any]  # a card (card.load) or card-shaped facts (_slow_card)
else:
    import _signal

BAR = 5
COLORS = {"ok": "32", "warn": "33", "rotate": "35", "hard": "31"}

MARKS = {
    session.ROTATION_PENDING: "⟳ rotation pending",
    session.HANDOFF_REQUESTED: "✎ writing handoff",
    session.CHECKPOINT_VERIFIED: "✓ checkpoint verified",
    session.ROTATING: "⟳ rotating",
    session.AWAITING_MANUAL_CLEAR: "⚠ type /clear to rotate",
    session.BOOTSTRAPPING: "↻ resumed",
}


GUESSED = "window guessed: cc-continuity configure --window auto"


def bar(ratio: "float | None") -> "str":
    filled = 0 if ratio is None else max(0, min(BAR, int(round(ratio * BAR))))
    return "▮" * filled + "▯" * (BAR - filled)


def paint(text: "str", code: "str", color: "bool") -> "str":
    return "\x1b[%sm%s\x1b[0m" % (code, text) if color else text


def facts(payload: "object", env: "Mapping[str, str] | None" = None) -> "Facts | str":
    """The card for this payload's session (or card-shaped facts without one); a str is an error line."""
    if not isinstance(payload, dict):
        return "ctx ? · cc-continuity: bad status input"
    c = card.load(payload.get("session_id")) if env is None else None
    return _slow_card(payload, env) if c is None else c


def render(payload: "Any", env: "Mapping[str, str] | None" = None, c: "Facts | str | None" = None) -> "str":
    """Our segment for one status-line payload (never raises for bad input); ``c``: its :func:`facts`.

    ``payload`` is any parsed JSON: when it is not an object, :func:`facts` gives the error line.
    """
    c = facts(payload, env) if c is None else c
    if isinstance(c, str):
        return c
    sid = payload.get("session_id")
    no_color = (env.get("NO_COLOR") if env is not None else paths.getenv("NO_COLOR"))
    color = c["color"] and not no_color
    rec = None
    if c.get("sdir"):
        try:
            rec = session.load(c["sdir"])
        except (OSError, ValueError):
            rec = None
    tokens, sl_window = meter.from_statusline(payload)
    if tokens is not None and c.get("sdir") and card.valid_session_id(sid):
        version = payload.get("version")  # Claude Code's own, for the Stop hook's output shape
        meter.save_status_reading(c["sdir"], sid, tokens, sl_window,
                                  version=version if isinstance(version, str) and len(version) < 40 else None)
    if tokens is None and isinstance(payload.get("transcript_path"), str):
        try:
            tokens = meter.read_transcript(payload["transcript_path"])["tokens"]
        except OSError:
            pass
    window = c["window"] if c.get("window_source") == "config" else (sl_window or c["window"])
    if c.get("sdir") and sl_window and sl_window != c.get("sl_window"):
        _remember_window(c["sdir"], sl_window)
    r = meter.reading(tokens, window, None, c, "statusline")
    pct = "?" if r["percent"] is None else "%d%%" % int(r["percent"])
    lvl = r["level"]
    parts = [paint("ctx %s %s %s" % (pct, bar(r["ratio"]), lvl), COLORS[lvl], color)]
    model = payload.get("model")
    limit = "CLAUDE_CODE_MAX_CONTEXT_TOKENS"
    if meter.window_guessed(c.get("window_source"), model.get("id") if isinstance(model, dict) else None,
                            env.get(limit) if env is not None else paths.getenv(limit)):
        parts.append(paint(GUESSED, "33", color))  # a local model with no window given: a percentage of a guess
    if not c["enabled"]:
        parts.append("continuity off")
    if rec:
        parts.append(rec.get("name") or "")
        mark = MARKS.get(rec["state"])  # (load checked the state)
        if mark:
            parts.append(paint(mark, "35" if "clear" not in mark else "33;1", color))
        flags = rec.get("flags") or {}
        if "needs_human" in flags:
            parts.append(paint("⛔ BLOCKED", "31;1", color))
        if "done" in flags:
            parts.append(paint("✓ DONE", "32;1", color))
    return " · ".join(p for p in parts if p)


def _slow_card(payload: "dict[str, Any]", env: "Mapping[str, str] | None") -> "Facts | str":
    """Card-shaped facts without a card: unknown session, stale card, or tests with ``env``."""
    import os

    from . import config
    from .project import Project, launch_dir

    env = os.environ if env is None else env
    proj = Project.discover(launch_dir(payload, env))
    try:
        cfg = config.load(proj.root, env)
    except config.ConfigError as e:
        return "ctx ? · cc-continuity config error: %s (run cc-continuity doctor)" % (e.key or os.path.basename(e.file))
    sid = payload.get("session_id")
    n = proj.lookup(sid) if card.valid_session_id(sid) else None
    sdir = proj.session_dir(n) if n is not None else None
    model = payload.get("model", {}).get("id") if isinstance(payload.get("model"), dict) else None
    sl = meter.reported_window(sdir) if sdir else None
    window, wsrc = meter.resolve_window(cfg["window"], sl, model, env)
    return {"sdir": sdir, "window": window, "window_source": wsrc, "sl_window": sl, "enabled": bool(cfg["enabled"]),
            "color": bool(cfg["statusline_color"]), "warn": cfg["warn"], "rotate": cfg["rotate"],
            "hard": cfg["hard"], "rotate_tokens": cfg["rotate_tokens"]}


def _remember_window(sdir: "str", window: "int") -> "None":
    """Hooks don't see the window; leave it where they can read it (only on change)."""
    path = session.statusline_path(sdir)
    try:
        if fastjson.loads(session.read_file(path)).get("window") == window:
            return
    except (OSError, ValueError, AttributeError):
        pass
    try:
        from . import atomic

        atomic.write_text(path, fastjson.dumps({"window": window}), fsync=False)
    except OSError:
        pass


def chained_command() -> "dict[str, Any] | None":
    """The user's previous status line (its statusLine object), remembered by install."""
    try:
        chain = fastjson.loads(session.read_file(paths.home() + "/install.json")).get("statusline_chain")
    except (OSError, ValueError, AttributeError):
        return None
    return _usable_chain(chain)


def _usable_chain(chain: "object") -> "dict[str, Any] | None":
    """``chain`` if it is a statusLine object with a command to run, else None."""
    if isinstance(chain, dict) and isinstance(chain.get("command"), str) and chain["command"].strip():
        return chain
    return None


def chained_output(chain: "dict[str, Any]", raw: "bytes", c: "object", timeout_ms: "float",
                   started: "Callable[[], None] | None" = None) -> "str":
    """The user's status line output for this stdin.

    Ours re-runs every :data:`REFRESH_S` seconds (install sets ``refreshInterval``)
    so that a state change with no new message (a verified checkpoint waiting for
    ``/clear``) shows.  A user's status line that asked for no timer of its own is
    not made to run on ours: when the stdin is byte-identical to the last run's,
    its last output is shown again.  ``started`` is called once it is running (or
    its cached output is chosen): the caller's setup deadline ends there.  When it is
    slower than ``timeout_ms`` its last output is shown and it is left to finish in
    the background (:func:`_finish_later`), which keeps its new output for the next
    render.
    """
    sdir = c.get("sdir") if isinstance(c, dict) else None
    cache = session.chain_cache_path(sdir) if sdir else None
    text = raw.decode("utf-8", "replace")
    last: "dict[str, Any]" = {}
    if cache:
        try:
            got = fastjson.loads(session.read_file(cache))
            last = got if isinstance(got, dict) else {}
        except (OSError, ValueError):
            pass
    cached: "str" = last["out"] if isinstance(last.get("out"), str) else ""
    if not chain.get("refreshInterval") and last.get("stdin") == text and cached:
        if started is not None:
            started()
        return cached
    p = start_chained(chain["command"], raw)
    t0 = time.monotonic()
    if started is not None:
        started()
    if p is None:
        return ""
    out = wait_chained(p, max(0.001, timeout_ms / 1000.0 - (time.monotonic() - t0)))
    if out is None:  # too slow: the last output now, the new one for the next render
        _finish_later(p, cache, text, timeout_ms)
        return cached
    if cache and out:
        _keep(cache, text, out)
    return out


def _keep(cache: "str", text: "str", out: "str") -> "None":
    try:
        from . import atomic

        atomic.write_text(cache, fastjson.dumps({"stdin": text, "out": out}), fsync=False)
    except OSError:
        pass


OWN_BUDGET_S = 0.3  # our part of a status line run: stdin, card, state, transcript tail, output
CHAIN_FLAG = "--chain"
REFRESH_S = 10  # our statusLine's refreshInterval: a state change shows within this, messages or not
# A chained status line left to finish in the background gets this many times its budget
# (at least BACKGROUND_MIN_S, at most BACKGROUND_MAX_S) before its process group is killed.
BACKGROUND_FACTOR, BACKGROUND_MIN_S, BACKGROUND_MAX_S = 10, 2.0, 30.0


class Deadline(BaseException):
    """The status line's overall deadline passed (raised by SIGALRM wherever it blocks)."""


def _on_alarm(signum: "int", frame: "FrameType | None") -> "NoReturn":
    raise Deadline()


def _arm(deadline: "float") -> "None":
    """Let SIGALRM fire at ``deadline`` (monotonic); at once when it has passed."""
    _signal.setitimer(_signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))


def _disarm() -> "None":
    _signal.setitimer(_signal.ITIMER_REAL, 0)


def _chain_from_argv(argv: "list[str]") -> "dict[str, Any] | None":
    """The user's statusLine object carried in ours (``--chain '<statusLine JSON>'``), or None."""
    if CHAIN_FLAG not in argv[:-1]:
        return None
    try:
        return _usable_chain(fastjson.loads(argv[argv.index(CHAIN_FLAG) + 1]))
    except (ValueError, UnicodeDecodeError):
        return None


def start_chained(command: "str", raw: "bytes") -> "Popen[bytes] | None":
    """The user's status line started with our stdin, in a session (process group) of its own."""
    import subprocess

    try:
        p = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    try:
        if p.stdin is not None:
            p.stdin.write(raw)
            p.stdin.close()
    except OSError:
        pass  # (it did not read its stdin: its output still counts)
    p.stdin = None  # (communicate() then only reads)
    return p


def wait_chained(p: "Popen[bytes]", timeout_s: "float") -> "str | None":
    """Its output ('' when it failed), or None when it is still running after ``timeout_s``."""
    import subprocess

    try:
        out, _ = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    except BaseException:
        _kill_group(p)
        raise
    if p.returncode != 0:
        return ""
    return out.decode("utf-8", "replace").strip("\n")


def _finish_later(p: "Popen[bytes]", cache: "str | None", text: "str", timeout_ms: "float") -> "None":
    """Leave a slow chained status line running; a child of ours keeps its output when it ends.

    The child lets go of our stdout (Claude Code waits for it to close) and gives the
    command a bounded time; past it, its process group is killed.  Without a place to
    keep the output, or when forking fails, the command is killed now.
    """
    if cache is None:
        _kill_group(p)
        return
    try:
        pid = posix.fork()
    except OSError:
        _kill_group(p)
        return
    if pid:
        return  # (the child is reaped by init once we have exited)
    try:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        null = posix.open("/dev/null", posix.O_RDWR)
        for fd in (0, 1, 2):
            posix.dup2(null, fd)
        posix.setsid()
        left = min(BACKGROUND_MAX_S, max(BACKGROUND_MIN_S, BACKGROUND_FACTOR * timeout_ms / 1000.0))
        out = wait_chained(p, left)
        if out is None:
            _kill_group(p)
        elif out:
            _keep(cache, text, out)
    finally:
        posix._exit(0)


def _kill_group(p: "Popen[bytes]") -> "None":
    try:
        posix.killpg(p.pid, _signal.SIGKILL)
    except OSError:
        pass
    try:
        p.wait(0.5)
    except BaseException:
        pass


def main() -> "NoReturn":
    import sys  # (a builtin module: already loaded)

    started = time.monotonic()
    deadline = started + OWN_BUDGET_S
    out: "list[str]" = []
    mine: "list[str]" = []
    try:
        _signal.signal(_signal.SIGALRM, _on_alarm)
        _arm(deadline)
        chain = _chain_from_argv(sys.argv[1:]) or chained_command()
        raw = _read_stdin()
        try:
            payload = fastjson.loads(raw)
        except (ValueError, UnicodeDecodeError):
            payload = None
        c = facts(payload)
        try:
            mine.append(render(payload, c=c))
        except BaseException:
            mine.append("ctx ?")
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        if chain:  # ours is drawn; the chain's setup gets a budget of its own
            _arm(time.monotonic() + OWN_BUDGET_S)
            from . import config

            timeout = 1000
            try:
                timeout = config.load(None)["statusline_chain_timeout_ms"]
            except config.ConfigError:
                pass
            theirs = chained_output(chain, raw, c, timeout, _disarm)
            if theirs:
                out.append(theirs)
    except BaseException:
        pass
    try:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    except BaseException:
        pass
    out += mine or ["ctx ?"]
    try:
        posix.write(1, ("\n".join(out) + "\n").encode("utf-8"))
    except OSError:
        pass
    posix._exit(0)


def _read_stdin(limit: "int" = 1 << 22) -> "bytes":
    """All of stdin (at most ``limit`` bytes); a stdin that never closes ends at the deadline.

    A whole JSON object is enough: a stdin left open after one is not waited on.
    """
    chunks = []
    while limit > 0:
        b = posix.read(0, 65536)
        if not b:
            break
        chunks.append(b)
        limit -= len(b)
        if b.rstrip().endswith(b"}"):
            raw = b"".join(chunks)
            try:
                if isinstance(fastjson.loads(raw), dict):
                    return raw
            except (ValueError, UnicodeDecodeError, RecursionError):
                pass
    return b"".join(chunks)
