"""The status line: ``ctx 58% ▮▮▮▯▯ warn · myproj-003 · ⛔ BLOCKED``.

One short-lived process per refresh (Claude Code cancels a slow one): stdlib
only, no network, and the only subprocess is the user's own previous status
line, which is run with the same stdin, time-bounded, and printed first.
Always exits 0.
"""

import os
import sys

from . import config, fastjson, meter, paths, session
from .project import Project, launch_dir, valid_session_id

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


def bar(ratio):
    filled = 0 if ratio is None else max(0, min(BAR, int(round(ratio * BAR))))
    return "▮" * filled + "▯" * (BAR - filled)


def paint(text, code, color):
    return "\x1b[%sm%s\x1b[0m" % (code, text) if color else text


def render(payload, env=None):
    """Our segment for one status-line payload (never raises for bad input)."""
    env = os.environ if env is None else env
    if not isinstance(payload, dict):
        return "ctx ? · cc-continuity: bad status input"
    proj = Project.discover(launch_dir(payload, env))
    try:
        cfg = config.load(proj.root, env)
    except config.ConfigError as e:
        return "ctx ? · cc-continuity config error: %s (run cc-continuity doctor)" % (e.key or os.path.basename(e.file))
    color = bool(cfg["statusline_color"]) and not env.get("NO_COLOR")
    sid = payload.get("session_id")
    rec, sdir = None, None
    if valid_session_id(sid):
        n = proj.lookup(sid)
        if n is not None:
            sdir = proj.session_dir(n)
            try:
                rec = session.load(sdir)
            except (OSError, ValueError):
                rec = None
    tokens, sl_window = meter.from_statusline(payload)
    source = "statusline"
    if tokens is None and isinstance(payload.get("transcript_path"), str):
        try:
            tokens = meter.read_transcript(payload["transcript_path"])["tokens"]
            source = "transcript"
        except OSError:
            pass
    model = payload.get("model", {}).get("id") if isinstance(payload.get("model"), dict) else None
    window, _ = meter.resolve_window(cfg["window"], sl_window, model, env)
    r = meter.reading(tokens, window, None, cfg, source)
    if sdir and sl_window:
        _remember_window(sdir, sl_window)
    pct = "?" if r["percent"] is None else "%d%%" % int(r["percent"])
    lvl = r["level"]
    parts = [paint("ctx %s %s %s" % (pct, bar(r["ratio"]), lvl), COLORS[lvl], color)]
    if not cfg["enabled"]:
        parts.append("continuity off")
    if rec:
        parts.append(rec.get("name") or "")
        mark = MARKS.get(rec.get("state"))
        if mark:
            parts.append(paint(mark, "35" if "clear" not in mark else "33;1", color))
        flags = rec.get("flags") or {}
        if "needs_human" in flags:
            parts.append(paint("⛔ BLOCKED", "31;1", color))
        if "done" in flags:
            parts.append(paint("✓ DONE", "32;1", color))
    return " · ".join(p for p in parts if p)


def _remember_window(sdir, window):
    """Hooks don't see the window; leave it where they can read it (only on change)."""
    path = os.path.join(sdir, "statusline.json")
    try:
        with open(path, "rb") as f:
            if fastjson.loads(f.read()).get("window") == window:
                return
    except (OSError, ValueError, AttributeError):
        pass
    try:
        from . import atomic

        atomic.write_text(path, fastjson.dumps({"window": window}), fsync=False)
    except OSError:
        pass


def chained_command():
    """The user's previous status line command, remembered by install."""
    try:
        with open(os.path.join(paths.home(), "install.json"), "rb") as f:
            chain = fastjson.loads(f.read()).get("statusline_chain")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(chain, dict) and isinstance(chain.get("command"), str) and chain["command"].strip():
        return chain["command"]
    return None


def run_chained(command, raw, timeout_ms):
    """Run the user's status line with our stdin; its output, or '' if it fails or is slow."""
    import subprocess

    try:
        p = subprocess.run(command, shell=True, input=raw, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=timeout_ms / 1000.0, start_new_session=True)
    except (subprocess.TimeoutExpired, OSError):
        return ""
    if p.returncode != 0:
        return ""
    return p.stdout.decode("utf-8", "replace").strip("\n")


def main():
    out = []
    try:
        raw = sys.stdin.buffer.read()
        try:
            payload = fastjson.loads(raw)
        except (ValueError, UnicodeDecodeError):
            payload = None
        chain = chained_command()
        if chain:
            timeout = 1000
            try:
                timeout = config.load(None)["statusline_chain_timeout_ms"]
            except config.ConfigError:
                pass
            theirs = run_chained(chain, raw, timeout)
            if theirs:
                out.append(theirs)
        out.append(render(payload))
    except BaseException:
        out.append("ctx ?")
    try:
        os.write(1, ("\n".join(out) + "\n").encode("utf-8"))
    except OSError:
        pass
    os._exit(0)
