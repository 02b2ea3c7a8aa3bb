"""What every hook handler needs: the project, config, session record, meter.

Everything is computed lazily so the per-tool-call path pays only for what it
uses.  Registration and level changes take the project lock; the plain
"nothing changed" path takes none.
"""

import os
import time

from .. import card, config, fastjson, ledger, meter, paths, session
from ..project import Project, launch_dir


class HookContext:
    """The slow path's view of a :class:`~cc_continuity.hooks.Call`: project, config, record."""

    def __init__(self, call):
        self.call = call
        self.event = call.event
        self.payload = call.payload
        self.env = os.environ if call.env is None else call.env
        self.session_id = call.session_id
        self._project = None
        self._cfg = None

    @property
    def outcome(self):
        return self.call.outcome

    @outcome.setter
    def outcome(self, value):
        self.call.outcome = value

    # -- lazily resolved facts ----------------------------------------------
    @property
    def project(self):
        if self._project is None:
            self._project = Project.discover(launch_dir(self.payload, self.env))
        return self._project

    @property
    def cfg(self):
        if self._cfg is None:
            self._cfg = config.load(self.project.root, self.env)
        return self._cfg

    def claude_pid(self):
        raw = self.env.get("CLAUDE_PID", "")
        return int(raw) if raw.isdigit() else None

    def tmux(self):
        """(socket, pane) when Claude Code runs inside tmux, else (None, None)."""
        tmux, pane = self.env.get("TMUX", ""), self.env.get("TMUX_PANE", "")
        if tmux and pane:
            return tmux.split(",", 1)[0], pane
        return None, None

    # -- session record -------------------------------------------------------
    def number(self):
        return self.project.lookup(self.session_id) if self.session_id else None

    def session_dir(self, number):
        return self.project.session_dir(number)

    def load_session(self):
        """(number, dir, record) for this session, registering it if unknown."""
        n = self.number()
        if n is not None:
            sdir = self.session_dir(n)
            try:
                return n, sdir, session.load(sdir)
            except (OSError, ValueError):
                pass  # missing or corrupt: re-register below (never lose the hook)
        return register(self, source=None)

    def log(self, sdir, record):
        return ledger.append(session.ledger_path(sdir), record)


def begin(call):
    """(ctx, n, sdir, rec) for a hook of an enabled project, or None when it is disabled."""
    ctx = HookContext(call)
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    n, sdir, rec = ctx.load_session()
    return ctx, n, sdir, rec


def register(ctx, source):
    """Create (or refresh) the record for ``ctx.session_id``.  Returns (n, dir, rec)."""
    if not ctx.session_id:
        raise ValueError("hook payload has no usable session_id")
    proj = ctx.project
    cfg = ctx.cfg  # a broken config stops here, before a session number is spent
    proj.ensure()
    sock, pane = ctx.tmux()
    with proj.lock():
        proj.ensure_open_index()
        n = proj.lookup(ctx.session_id)
        if n is not None:
            sdir = proj.session_dir(n)
            try:
                rec = session.load(sdir)
                rec.update(_live_fields(ctx, sock, pane))
                if source == "resume" and rec["state"] == session.ENDED:
                    rec.pop("ended", None)
                    session.transition(sdir, rec, session.ACTIVE, "resumed")
                else:
                    session.save(sdir, rec)
                ctx.log(sdir, {"ev": "session_start", "source": source, "again": True})
                refresh_card(ctx, n, sdir, rec)
                return n, sdir, rec
            except (OSError, ValueError):
                pass  # corrupt record: fall through and start a fresh one
        n = proj.allocate_number()
        sdir = proj.session_dir(n)
        rec = session.new_record(
            n, proj.session_name(n), ctx.session_id,
            project_root=proj.root, project_key=proj.key, slug=proj.slug,
            launch_dir=launch_dir(ctx.payload, ctx.env), source=source,
            unattended=bool(cfg["unattended"]),
            **_live_fields(ctx, sock, pane),
        )
        pred = _predecessor_by_pid(proj, ctx.claude_pid()) if source == "clear" else None
        if pred is not None:
            rec["predecessor"] = pred
        session.save(sdir, rec)
        proj.link(ctx.session_id, n)
        _remember_pid(proj, ctx.claude_pid(), n, None)
        ctx.log(sdir, {"ev": "session_start", "source": source, "session_id": ctx.session_id,
                       "name": rec["name"], "predecessor": pred, "pid": rec.get("pid"), "pane": pane})
        refresh_card(ctx, n, sdir, rec)
        return n, sdir, rec


def refresh_card(ctx, n, sdir, rec):
    """Rebuild this session's card (the hot path's cache of project + config); the card built."""
    proj = ctx.project
    sl = sdir + "/statusline.json"
    deps = card.snapshot(config.layer_files(proj.root) + [sl])
    cfg = config.load(proj.root, ctx.env)
    slw = meter.reported_window(sdir)
    window, wsrc = meter.resolve_window(cfg["window"], slw, rec.get("model"), ctx.env)
    built = card.build(ctx.session_id, sdir, rec, cfg, window, wsrc, deps, slw)
    card.save(ctx.session_id, built)
    return built


def _live_fields(ctx, sock, pane):
    p = ctx.payload
    out = {"pid": ctx.claude_pid(), "tmux_socket": sock, "tmux_pane": pane}
    if isinstance(p.get("transcript_path"), str):
        out["transcript"] = p["transcript_path"]
    if isinstance(p.get("model"), str):
        out["model"] = p["model"]
    return out


def _pid_file(proj, pid):
    return os.path.join(proj.dir, "pids", str(pid))


def _remember_pid(proj, pid, number, cleared):
    """Which session a Claude process runs now (for /clear pairing)."""
    if not pid:
        return
    from .. import atomic

    paths.ensure_dir(os.path.join(proj.dir, "pids"))
    atomic.write_text(_pid_file(proj, pid), fastjson.dumps({"number": number, "cleared": cleared}), fsync=False)


def _predecessor_by_pid(proj, pid):
    """The session this Claude process just cleared, if its SessionEnd(clear) was seen."""
    if not pid:
        return None
    try:
        with open(_pid_file(proj, pid), "rb") as f:
            info = fastjson.loads(f.read())
    except (OSError, ValueError):
        return None
    if isinstance(info, dict) and info.get("cleared"):
        return info.get("number")
    return None


def remember_clear(ctx, number):
    _remember_pid(ctx.project, ctx.claude_pid(), number, round(time.time(), 3))


# -- the meter ---------------------------------------------------------------
def measure(ctx, sdir, rec):
    """The current meter reading for this session (from the transcript tail)."""
    path = ctx.payload.get("transcript_path") or rec.get("transcript")
    got = {"tokens": None, "model": None, "source": "none"}
    if isinstance(path, str) and path:
        try:
            got = meter.read_transcript(path)
        except OSError:
            got = {"tokens": None, "model": None, "source": "transcript missing"}
    return reading_of(ctx, sdir, rec, got["tokens"], got["source"], got.get("model"))


def reading_of(ctx, sdir, rec, tokens, source, model=None):
    """A full reading (window, ratio, level) for ``tokens`` in this session."""
    model = rec.get("model") or model
    window, wsrc = meter.resolve_window(ctx.cfg["window"], meter.reported_window(sdir), model, ctx.env)
    return meter.reading(tokens, window, wsrc, ctx.cfg, source)


def measure_turn_end(ctx, sdir, rec, bound_s, since):
    """``(reading, caught_up, waited_ms)`` for the reply that ended the turn.

    The transcript can lag the turn's last reply (seen on 2.1.328: the Stop
    hook read 20 % while the reply had taken the context to 63 %), so this
    waits, up to ``bound_s``, until either the transcript holds the reply the
    payload names (``last_assistant_message``) or the status line has left a
    reading of this session taken after ``since`` (Claude Code computes that
    one itself).  When neither comes in time, ``caught_up`` is False and the
    reading is the stale one - not to be acted on.
    """
    path = ctx.payload.get("transcript_path") or rec.get("transcript")
    last = ctx.payload.get("last_assistant_message")
    t0 = time.monotonic()
    deadline = t0 + bound_s
    version = None
    while True:
        ok, got = False, None
        if isinstance(path, str) and path:
            try:
                ok, got = meter.reply_reading(path, last)
            except OSError:
                ok, got = False, None
        version = (got or {}).get("cc_version") or version  # a stale row still names the Claude Code
        if not ok:
            st = meter.load_status_reading(sdir)
            if (st and st.get("session_id") == ctx.session_id and isinstance(st.get("at"), (int, float))
                    and st["at"] >= since and isinstance(st.get("tokens"), int)):
                ok, got = True, {"tokens": st["tokens"], "model": None, "source": "statusline"}
                version = version or (st.get("version") if isinstance(st.get("version"), str) else None)
        now = time.monotonic()
        if ok or now >= deadline:
            break
        time.sleep(0.02)
    got = got or {"tokens": None, "model": None, "source": "none"}
    ctx.call.claude_version = version  # how a Stop asks for more (hooks.stop_wire)
    reading = reading_of(ctx, sdir, rec, got.get("tokens"), got.get("source"), got.get("model"))
    return reading, ok, int((now - t0) * 1000)


STATE_FOR_LEVEL = {"warn": session.WARNED, "rotate": session.ROTATION_PENDING, "hard": session.ROTATION_PENDING}


def needs_level_change(rec, reading):
    return meter.level_index(reading["level"]) != session.notified_index(rec)


def level_note(reading, cfg):
    pct = reading["percent"]
    win = reading["window"]
    lvl = reading["level"]
    size = "%dk" % (win // 1000) if win else "unknown"
    if lvl == "warn":
        return ("cc-continuity: context is at %.0f%% of the %s-token window. At %g%% this session will be asked "
                "to write a handoff and continue in a fresh context; plan to reach a clean stopping point."
                % (pct, size, cfg["rotate"]))
    if lvl == "rotate":
        return ("cc-continuity: context is at %.0f%% of the %s-token window (rotate level %g%%). When this turn "
                "ends, a handoff will be requested so the work continues in a fresh session. Finish the current "
                "step; avoid starting large new reads." % (pct, size, cfg["rotate"]))
    if lvl == "hard":
        return ("cc-continuity: context is at %.0f%% of the %s-token window, past the hard ceiling of %g%%. Tool "
                "calls other than writing the handoff are now denied; end the turn so the handoff can be written."
                % (pct, size, cfg["hard"]))
    return None


def apply_level(ctx, n, sdir, reading):
    """Record a level change (under the project lock).  Returns the note to show, once."""
    with ctx.project.lock():
        rec = session.load(sdir)
        lvl = reading["level"]
        idx = meter.level_index(lvl)
        have = session.notified_index(rec)
        if idx == have:
            return None, rec
        state = rec["state"]
        if idx < have:
            # Context shrank (compaction): step back down, and allow notes again.
            rec["levels_notified"] = [x for x in rec.get("levels_notified") or () if meter.level_index(x) <= idx]
            target = {0: session.ACTIVE, 1: session.WARNED}.get(idx, state)
            if state in (session.WARNED, session.ROTATION_PENDING) and target != state and session.is_allowed(state, target):
                session.transition(sdir, rec, target, "context shrank to %s" % lvl)
            else:
                session.save(sdir, rec)
            return None, rec
        rec["levels_notified"] = [x for x in meter.LEVELS[1:idx + 1]]
        rec["last_reading"] = {k: reading[k] for k in ("tokens", "window", "percent", "level")}
        target = STATE_FOR_LEVEL.get(lvl)
        if target and target != state and session.is_allowed(state, target):
            session.transition(sdir, rec, target, "context %s%% >= %s" % (reading["percent"], lvl))
        else:
            session.save(sdir, rec)
        ctx.log(sdir, {"ev": "level", "level": lvl, "tokens": reading["tokens"], "window": reading["window"],
                       "percent": reading["percent"]})
    if lvl == "warn":
        notify(ctx, rec, "context-warning", "context at warn level", reading)
    return level_note(reading, ctx.cfg), rec


def notify(ctx, rec, event, text="", reading=None):
    """Hand a push to the notifier (spool + detached flusher); never raises, never waits."""
    try:
        from .. import notify as notifier

        ratio = None
        r = reading or rec.get("last_reading") or {}
        if r.get("tokens") is not None and r.get("window"):
            ratio = r["tokens"] / float(r["window"])
        notifier.emit(event, slug=rec.get("slug"), session=rec.get("number"), ratio=ratio, text=text,
                      project_root=ctx.project.root)
    except Exception as e:  # a push is never worth a failed hook
        ctx.outcome += " (notify failed: %s)" % type(e).__name__
