"""The rotation protocol (DESIGN §4–5), one function per step, in-process.

Each hook adapter turns a Claude Code call into a :class:`Context` and calls
one step here; the step reads and writes the session's state (under the
project lock where it changes it) and returns what the hook prints.  The
steps, in the order a rotation meets them:

* :func:`session_started`  - register (or refresh) the session, claim a waiting
  checkpoint (or a crashed predecessor's machine handoff) for its bootstrap;
* :func:`prompt_submitted` - record the prompt; a successor's first prompt
  makes it ACTIVE; parked level notes and a claim cut short are delivered;
* :func:`tool_used`        - a level change seen after a tool call;
* :func:`turn_ended`       - the gate at Stop: record the level, request the
  handoff at *rotate*, check it on the following Stops, fall back to a
  machine handoff, verify (snapshot + manifest) and start the hand-over;
* :func:`late_turn_end`    - a second look at a turn's end whose reading lagged;
* :func:`before_compact`   - an unwanted auto-compaction: rotate instead;
* :func:`session_ended`    - ENDED, or the /clear that starts a successor.

Effects outside the state directory go through three methods an adapter
overrides (:meth:`Context.deliver`, :meth:`Context.can_drive`,
:meth:`Context.start_rotator`); the plain :class:`Context` collects pushes
in ``pushes`` and has no tmux, so the whole protocol runs in a test process.
"""

from __future__ import annotations

import os
import time

from .. import atomic, card, config, fastjson, faults, ledger, meter, once, paths, safefile, session
from . import checkpoint, claim, claims, effects, revalidation, handover
from ..procs import pid_alive
from ..project import Project, launch_dir

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from collections.abc import Iterator, Mapping
    from typing import Any

    from .handoff import Validation

    Env = Mapping[str, str]
    from ..session import Record  # a session record: every key declared there
    Reading = dict[str, Any]  # a meter reading (meter.reading)
    Output = dict[str, Any]  # what a hook prints (JSON)
    Push = dict[str, Any]  # the keywords of one notify.emit
    Started = tuple[int, str, Record]  # (session number, session dir, record)

STOP_WAIT_S = 3.0  # Stop waits this long for the transcript to hold the turn's last reply
LATE_WAIT_S = 30.0  # the late Stop (async: nobody waits for it) waits this long for a reading
LATE_SYNC_WAIT_S = 10.0  # and this long for the Stop hook's ledger line of the same turn end
PROMPT_KEEP = 4000  # characters of each prompt kept in the ledger (carried over by a rotation)
CLAIM_SOURCES = ("clear", "startup", "resume")  # SessionStart sources that claim a checkpoint
STATE_FOR_LEVEL = {"warn": session.WARNED, "rotate": session.ROTATION_PENDING, "hard": session.ROTATION_PENDING}
COMPACT_SKIP = "cc-continuity: rotating to a fresh session instead of compacting"
REVALIDATE_S = 6.0  # the claim's comparison with the work tree, inside SessionStart's 12 s: past it, not compared
NOT_COMPARED = ("## Since the checkpoint\nNot compared: took too long (over %g s). Check `git status` and `git log` "
                "before relying on the handoff's picture of the work tree.")


class Context:
    """What the protocol knows of the call it is run for, and the ports it acts through.

    Plain facts: the event, its payload, the environment (the Claude process, its
    tmux pane, a window override) and the session id.  The project and config are
    resolved on first use, so a step pays only for what it reads.
    """

    def __init__(self, event: str, payload: object, env: Env | None = None) -> None:
        self.event = event
        self.payload = payload if isinstance(payload, dict) else {}
        self.env = os.environ if env is None else env
        sid = self.payload.get("session_id")
        self.session_id = sid if card.valid_session_id(sid) else None
        self.outcome = "ok"  # one line for the hook log: what this call did
        self.claude_version: str | None = None  # Claude Code's version, when a transcript row named it
        self.pushes: list[Push] = []  # every push this call asked for, in order
        self.after_output: list[Any] = []  # run once the hook's answer is written (a callable each, no argument)
        self._project: Project | None = None
        self._cfg: config.Config | None = None

    # -- ports: an adapter overrides these ---------------------------------------------------
    def deliver(self, push: Push) -> None:
        """Send one push (``notify.emit`` keywords); the plain context only collects them."""

    def can_drive(self, rec: Record) -> bool:
        """Can a tmux rotator drive this session?  (The plain context has no tmux.)"""
        return False

    def start_rotator(self, rec: Record, sdir: str, successor_name: str, project_lock: str | None,
                      standby_s: float | None) -> int:
        """Spawn the tmux rotator for a verified checkpoint; its pid."""
        raise RuntimeError("no tmux rotator in this context")

    # -- lazily resolved facts ------------------------------------------------------------------
    @property
    def project(self) -> Project:
        if self._project is None:
            self._project = Project.discover(launch_dir(self.payload, self.env))
        return self._project

    @property
    def cfg(self) -> config.Config:
        if self._cfg is None:
            self._cfg = config.load(self.project.root, self.env)
        return self._cfg

    def claude_pid(self) -> int | None:
        raw = self.env.get("CLAUDE_PID", "")
        return int(raw) if raw.isdigit() else None

    def tmux(self) -> tuple[str | None, str | None]:
        """(socket, pane) when Claude Code runs inside tmux, else (None, None)."""
        tmux, pane = self.env.get("TMUX", ""), self.env.get("TMUX_PANE", "")
        if tmux and pane:
            return tmux.split(",", 1)[0], pane
        return None, None

    def number(self) -> int | None:
        return self.project.lookup(self.session_id) if self.session_id else None

    def session_dir(self, number: int) -> str:
        return self.project.session_dir(number)

    def load_session(self) -> Started:
        """(number, dir, record) for this session, registering it if unknown."""
        n = self.number()
        if n is not None:
            sdir = self.session_dir(n)
            try:
                return n, sdir, session.load(sdir)
            except (OSError, ValueError):
                pass  # missing or corrupt: re-register below (never lose the hook)
        return register(self, source=None)

    def log(self, sdir: str, record: dict[str, Any]) -> Any:
        return ledger.append(session.ledger_path(sdir), record)

    def push(self, rec: Record, event: str, text: str = "", reading: Reading | None = None) -> None:
        """Ask for a push about ``rec`` (never raises, never waits: the adapter spools it)."""
        ratio = None
        r = reading or rec.get("last_reading") or {}
        if r.get("tokens") is not None and r.get("window"):
            ratio = r["tokens"] / float(r["window"])
        item = {"event": event, "slug": rec.get("slug"), "session": rec.get("number"), "ratio": ratio,
                "text": text, "project_root": self.project.root}
        self.pushes.append(item)
        try:
            self.deliver(item)
        except Exception as e:  # a push is never worth a failed hook
            self.outcome += " (notify failed: %s)" % type(e).__name__


def begin(ctx: Context) -> Started | None:
    """(n, sdir, rec) for this session of an enabled project (registered if new), or None when disabled."""
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    return ctx.load_session()


def known(ctx: Context) -> tuple[int, str] | None:
    """(n, sdir) of an already registered session of an enabled project, else None (with the outcome set)."""
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    return n, ctx.session_dir(n)


# -- registration -----------------------------------------------------------------------------
def register(ctx: Context, source: str | None) -> Started:
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
                if source == "resume" and rec["state"] == session.ROTATED:
                    return _resumed(ctx, n, rec, sock, pane)
                rec.update(_live_fields(ctx, sock, pane))  # type: ignore[typeddict-item]  # Record keys
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
        pred = _predecessor_by_pid(proj, ctx.claude_pid()) if source in ("clear", None) else None
        if pred is not None:
            rec["predecessor"] = pred
        if source in CLAIM_SOURCES or (source is None and pred is not None):  # (None: its SessionStart died)
            rec["claim_pending"] = source or "clear"
        session.save(sdir, rec)
        proj.link(ctx.session_id, n)
        _remember_pid(proj, ctx.claude_pid(), n, None)
        ctx.log(sdir, {"ev": "session_start", "source": source, "session_id": ctx.session_id,
                       "name": rec["name"], "predecessor": pred, "pid": rec.get("pid"), "pane": pane})
        refresh_card(ctx, n, sdir, rec)
        return n, sdir, rec


def _resumed(ctx: Context, old_n: int, old: Record, sock: str | None, pane: str | None) -> Started:
    """``claude --resume`` of a conversation that was rotated away from: a new record (its own number,
    ``resumed_from``), so the chain of rotations stays as it was.  Call under the project lock."""
    proj = ctx.project
    n = proj.allocate_number()
    sdir = proj.session_dir(n)
    sid = ctx.session_id or ""
    rec = session.new_record(n, proj.session_name(n), sid, project_root=proj.root, project_key=proj.key,
                             slug=proj.slug, launch_dir=launch_dir(ctx.payload, ctx.env), source="resume",
                             unattended=bool(ctx.cfg["unattended"]), resumed_from=old_n, resume_grace=True,
                             **_live_fields(ctx, sock, pane))
    session.save(sdir, rec)
    proj.link(sid, n)
    _remember_pid(proj, ctx.claude_pid(), n, None)
    ctx.log(sdir, {"ev": "session_start", "source": "resume", "session_id": sid, "name": rec["name"],
                   "resumed_from": old_n, "pid": rec.get("pid")})
    ctx.log(proj.session_dir(old_n), {"ev": "resumed_as", "number": n})
    refresh_card(ctx, n, sdir, rec)
    return n, sdir, rec


def resume_notice(ctx: Context, n: int, rec: Record) -> str | None:
    """What a resumed conversation that was rotated away from is told at its start."""
    old_n = rec.get("resumed_from")
    if not isinstance(old_n, int):
        return None
    proj = ctx.project
    try:
        old = session.load(proj.session_dir(old_n))
    except (OSError, ValueError):
        return None
    cid = (old.get("checkpoint") or {}).get("id")
    succ = old.get("successor")
    lines = ["cc-continuity: this conversation (%s) was rotated away from: its checkpoint %s was handed to %s." % (
        old.get("name"), cid or "?", proj.session_name(succ) if isinstance(succ, int) else "a successor")]
    if isinstance(succ, int):
        try:
            srec = session.load(proj.session_dir(succ))
            where = "still running" if pid_alive(srec.get("pid")) else "its process is gone"
            lines.append("The work went on there (%s, %s; `claude --resume %s` opens it)." % (
                srec.get("name"), where, srec.get("session_id")))
        except (OSError, ValueError):
            pass
    lines.append("It continues here as a session of its own, %s; nothing of the chain is taken over." % rec["name"])
    tokens = ctx.payload.get("context_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        window, _ = meter.resolve_window(ctx.cfg["window"], None, rec.get("model"), ctx.env)
        level = meter.level(tokens, window, ctx.cfg)
        if level in ("rotate", "hard"):
            lines.append("It is at %d%% of its context window already: no tool is held back before this turn "
                         "ends, and at its end it hands off to a fresh session." % (100 * tokens // max(window, 1)))
    return " ".join(lines)


def refresh_card(ctx: Context, n: int, sdir: str, rec: Record) -> dict[str, Any]:
    """Rebuild this session's card (the hot path's cache of project + config); the card built."""
    proj = ctx.project
    sl = session.statusline_path(sdir)
    snaps = effects.snapshots_dir(ctx.env)  # a new shell snapshot may bring new aliases
    deps = card.snapshot(config.layer_files(proj.root) + [sl, snaps])
    cfg = config.load(proj.root, ctx.env)
    slw = meter.reported_window(sdir)
    window, wsrc = meter.resolve_window(cfg["window"], slw, rec.get("model"), ctx.env)
    sid = ctx.session_id
    if sid is None:
        raise ValueError("hook payload has no usable session_id")
    built = card.build(sid, sdir, rec, cfg, window, wsrc, deps, slw,
                       effects.card_words(cfg["effects_harmful"], effects.snapshot_aliases(snaps)))
    card.save(sid, built)
    return built


def _live_fields(ctx: Context, sock: str | None, pane: str | None) -> dict[str, Any]:
    p = ctx.payload
    out = {"pid": ctx.claude_pid(), "tmux_socket": sock, "tmux_pane": pane}
    if isinstance(p.get("transcript_path"), str):
        out["transcript"] = p["transcript_path"]
    if isinstance(p.get("model"), str):
        out["model"] = p["model"]
    return out


def _pid_file(proj: Project, pid: int) -> str:
    return os.path.join(proj.dir, "pids", str(pid))


def _remember_pid(proj: Project, pid: int | None, number: int, cleared: float | None) -> None:
    """Which session a Claude process runs now (for /clear pairing)."""
    if not pid:
        return
    paths.ensure_dir(os.path.join(proj.dir, "pids"))
    atomic.write_text(_pid_file(proj, pid), fastjson.dumps({"number": number, "cleared": cleared}), fsync=False)


def _predecessor_by_pid(proj: Project, pid: int | None) -> int | None:
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


def remember_clear(ctx: Context, number: int) -> None:
    _remember_pid(ctx.project, ctx.claude_pid(), number, round(time.time(), 3))


def session_reading(sdir: str, rec: Record, cfg: config.Config, transcript: str | None = None,
                    env: Env | None = None) -> Reading:
    """A session's meter reading now, from its transcript's tail; the one way to take one.

    The window is the one that applies to this session (config, else the window
    the status line reported, else the model's, else CLAUDE_CODE_MAX_CONTEXT_TOKENS):
    the hooks, ``status`` and ``checkpoint`` agree on a session's percent.
    """
    path = transcript or rec.get("transcript")
    got: dict[str, Any] = {"tokens": None, "model": None, "source": "none"}
    if isinstance(path, str) and path:
        try:
            got = meter.read_transcript(path)
        except OSError:
            got = {"tokens": None, "model": None, "source": "transcript missing"}
    return reading_for(sdir, rec, cfg, got["tokens"], got["source"], got.get("model"), env)


def reading_for(sdir: str, rec: Record, cfg: config.Config, tokens: int | None, source: str | None,
                model: str | None = None, env: Env | None = None) -> Reading:
    """A full reading (window, ratio, level) for ``tokens`` in this session."""
    window, wsrc = meter.resolve_window(cfg["window"], meter.reported_window(sdir), rec.get("model") or model, env)
    reading: Reading = meter.reading(tokens, window, wsrc, cfg, source)
    return reading


def measure(ctx: Context, sdir: str, rec: Record) -> Reading:
    """This call's session reading (the payload's transcript first)."""
    return session_reading(sdir, rec, ctx.cfg, ctx.payload.get("transcript_path"), ctx.env)


def reading_of(ctx: Context, sdir: str, rec: Record, tokens: int | None, source: str | None,
               model: str | None = None) -> Reading:
    """A full reading for ``tokens`` in this call's session."""
    return reading_for(sdir, rec, ctx.cfg, tokens, source, model, ctx.env)


def measure_turn_end(ctx: Context, sdir: str, rec: Record, bound_s: float,
                     since: float) -> tuple[Reading, bool, int]:
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
    ctx.claude_version = version  # how a Stop asks for more (hooks.stop_wire)
    reading = reading_of(ctx, sdir, rec, got.get("tokens"), got.get("source"), got.get("model"))
    return reading, ok, int((now - t0) * 1000)


def tool_used(ctx: Context, n: int, sdir: str, rec: Record,
              reading: Reading) -> tuple[str | None, Record]:
    """A reading taken around a tool call: a level change is recorded once.  (note to show or None, rec)."""
    if not needs_level_change(rec, reading):
        return None, rec
    return apply_level(ctx, n, sdir, reading)


def needs_level_change(rec: Record, reading: Reading) -> bool:
    return bool(meter.level_index(reading["level"]) != meter.notified_index(rec))


def level_note(reading: Reading, cfg: config.Config) -> str | None:
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


def apply_level(ctx: Context, n: int, sdir: str, reading: Reading) -> tuple[str | None, Record]:
    """Record a level change (under the project lock).  Returns the note to show, once."""
    with ctx.project.edit(sdir) as rec:
        lvl = reading["level"]
        idx = meter.level_index(lvl)
        have = meter.notified_index(rec)
        if idx == have:
            return None, rec
        state = rec["state"]
        if idx < have:
            # Context shrank (compaction): step back down, and allow notes again.
            rec["levels_notified"] = [x for x in rec.get("levels_notified") or () if meter.level_index(x) <= idx]
            target = {meter.OK: session.ACTIVE, meter.WARN: session.WARNED}.get(idx, state)
            if state in (session.WARNED, session.ROTATION_PENDING) and target != state and session.is_allowed(state, target):
                session.transition(sdir, rec, target, "context shrank to %s" % lvl)
            return None, rec
        rec["levels_notified"] = meter.notified_through(idx)
        rec["last_reading"] = {k: reading[k] for k in ("tokens", "window", "percent", "level")}
        target = STATE_FOR_LEVEL.get(lvl, state)  # no state of its own: stays
        if target and target != state and session.is_allowed(state, target):
            session.transition(sdir, rec, target, "context %s%% >= %s" % (reading["percent"], lvl))
        ctx.log(sdir, {"ev": "level", "level": lvl, "tokens": reading["tokens"], "window": reading["window"],
                       "percent": reading["percent"]})
    if lvl == "warn":
        ctx.push(rec, "context-warning", "context at warn level", reading)
    return level_note(reading, ctx.cfg), rec




# -- the turn's end: request, check, fall back, verify, hand over ----------------------------------
def turn_ended(ctx: Context, wait_s: float | None = None) -> Output | None:
    """Stop: the rotation gate at the end of each turn; the hook's output (a block continues the turn).

    Below *rotate* the level is recorded (a warn note is parked for the next
    prompt: Stop output would make the turn go on); at *rotate* the handoff is
    requested, on the following Stops checked, and once valid (or replaced by
    a machine handoff) verified and handed over.  A reading that is not caught
    up with the turn's last reply is never acted on (:func:`measure_turn_end`).
    """
    since = time.time()
    started = begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    problem = _state_dirs_problem(sdir)
    if problem is not None:  # no rotation writes into a directory that is not ours; said once
        ctx.outcome = "state directory not ours: %s" % problem
        if not problem.startswith("the state directory %s " % sdir):  # (its own dir: nothing written there)
            if any(r.get("ev") == "state_dir_not_ours" for r in ledger.tail(session.ledger_path(sdir), 200)):
                return None
            ctx.log(sdir, {"ev": "state_dir_not_ours", "problem": problem[:300]})
        return {"systemMessage": "cc-continuity: %s." % problem}
    if rec.get("resume_grace"):  # a resumed conversation's first turn is over: the gates apply from now on
        with ctx.project.edit(sdir) as rec:
            rec.pop("resume_grace", None)
    reading, caught, waited = measure_turn_end(ctx, sdir, rec, STOP_WAIT_S if wait_s is None else wait_s, since)
    ctx.log(sdir, {"ev": "stop", "tokens": reading["tokens"], "percent": reading["percent"],
                   "level": reading["level"], "stop_hook_active": bool(ctx.payload.get("stop_hook_active")),
                   "caught_up": caught, "waited_ms": waited, "source": reading["source"],
                   "prompt_id": ctx.payload.get("prompt_id")})
    if os.path.exists(ctx.project.leases_path):  # remote leases held for this work: renewed hourly, by a detached job
        from . import lease

        try:
            lease.renew_due(ctx.project)
        except OSError as e:
            ctx.log(sdir, {"ev": "lease_renewal_failed", "error": str(e)[:200]})
    state = rec["state"]
    due = None
    if (rec.get("claim_pending") is not None or rec.get("claiming") is not None) and not rec.get("predecessor_claimed"):
        due = claim_for(ctx, n, sdir, rec, cleared=rec.get("claim_pending") in ("clear", None))  # its hooks all died
        rec = session.load(sdir)
        state = rec["state"]
    if due is None and rec.get("bootstrap"):
        due = bootstrap_due(ctx, sdir, rec)
    if due:  # its SessionStart and first prompt both lost it: the turn goes on with it
        ctx.outcome = "bootstrap delivered late (Stop)"
        return {"decision": "block", "reason": due}
    if state == session.HANDOFF_REQUESTED:
        return check_handoff(ctx, n, sdir)
    if state == session.AWAITING_MANUAL_CLEAR:
        return _ask_for_clear(rec)
    if state == session.ROTATING and not _rotator_alive(rec):
        with ctx.project.edit(sdir) as rec:
            if rec["state"] != session.ROTATING:
                return None
            session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator %s is gone" % rec.get("rotator_pid"))
        ctx.push(rec, "lifecycle-failed", "rotator stopped; /clear needed")
        return _ask_for_clear(rec)
    if state in session.CLAIMABLE or state in session.TERMINAL:
        return None
    if rec.get("loop_stopped"):
        return None  # told once: this checkout's fixed context alone is past rotate; no more rotations here
    if caught and reading["level"] in ("rotate", "hard") and rec.get("predecessor_claimed") and state in session.WORKING \
            and _first_turn_without_tools(sdir) and _first_request_past_rotate(ctx, rec, reading):
        return _stop_loop(ctx, sdir, reading)
    out = decide(ctx, n, sdir, rec, reading, caught, waited)
    if out is None and ctx.cfg["turn_snapshots"]:
        _turn_snapshot(ctx, n, sdir, rec)
    return out


def _first_turn_without_tools(sdir: str) -> bool:
    lines = ledger.read(session.ledger_path(sdir))
    return sum(r.get("ev") == "stop" for r in lines) <= 1 and not any(r.get("ev") == "tool" for r in lines)


def _first_request_past_rotate(ctx: Context, rec: Record, reading: Reading) -> bool:
    """Was the session's very first model request (its start alone: the bootstrap and fixed context) past rotate?"""
    tpath = ctx.payload.get("transcript_path") or rec.get("transcript")
    if not isinstance(tpath, str):
        return False
    try:
        with open(tpath, "rb") as f:
            data = f.read(1 << 23)
    except OSError:
        return False
    for line in data.splitlines():
        if b'"assistant"' not in line:
            continue
        try:
            row = fastjson.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict) or row.get("type") != "assistant" or row.get("isSidechain"):
            continue
        u = (row.get("message") or {}).get("usage") or {}
        tokens = sum(u.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                     if isinstance(u.get(k), int))
        return meter.level(tokens, reading.get("window") or 0, ctx.cfg) in ("rotate", "hard")
    return False


def _stop_loop(ctx: Context, sdir: str, reading: Reading) -> Output:
    """A successor past *rotate* before any tool: another rotation would start the same way (a loop)."""
    with ctx.project.edit(sdir) as rec:
        rec["loop_stopped"] = True
    ctx.log(sdir, {"ev": "rotation_loop_stopped", "percent": reading["percent"], "tokens": reading["tokens"]})
    ctx.push(rec, "lifecycle-failed", "rotation loop stopped at %s%%" % reading["percent"])
    ctx.outcome = "rotation loop stopped"
    return {"systemMessage": "cc-continuity: this session is at %s%% of its context window after its first reply, "
                             "before any tool ran: its start alone is past the rotate level (%g%%), so a rotation "
                             "would only start the next session the same way. It will not rotate; raise `rotate` or "
                             "`window`, or lower `bootstrap_max_tokens` (`cc-continuity configure`)." % (
                                 reading["percent"], ctx.cfg["rotate"])}


def _state_dirs_problem(sdir: str) -> str | None:
    """The state directories a rotation writes into, checked (and made private) at this turn's end."""
    from ..errors import StateDirError

    try:
        for d in (sdir, session.checkpoint_dir(sdir), paths.runtime_dir(), handover.handover_dir()):
            if d == sdir or os.path.lexists(d):
                safefile.private_dir(d)
    except StateDirError as e:
        return str(e)
    return None


def _turn_snapshot(ctx: Context, n: int, sdir: str, rec: Record) -> None:
    """The rolling turn-end snapshot (a crash before any checkpoint then loses at most this turn's tree)."""
    from ..snapshot import job  # subprocess and git: loaded by the steps that snapshot, not by every hook (the mod)

    try:
        proc = job.start_turn(ctx.project.root, sdir, ctx.project.key, n, rec.get("name"), ctx.cfg)
    except (OSError, ValueError) as e:
        ctx.log(sdir, {"ev": "turn_snapshot_failed", "error": str(e)[:200]})
        return
    if proc is not None:
        ctx.outcome += "; turn snapshot started"


def decide(ctx: Context, n: int, sdir: str, rec: Record, reading: Reading, caught: bool,
           waited: int) -> Output | None:
    """Act on a turn-end reading: record its level, request the handoff at *rotate*.

    A reading that is not ``caught`` up is never acted on (it could undo a
    level, or miss one); only what is already known from earlier (a level
    recorded after a tool, a manual ``rotate``) still requests the handoff.
    """
    if caught and needs_level_change(rec, reading):
        note, rec = apply_level(ctx, n, sdir, reading)
        if note and reading["level"] in ("warn",):
            _park_note(ctx, sdir, note)
    if ((caught and meter.at_least(reading["level"], "rotate")) or rec.get("rotate_requested")
            or rec["state"] == session.ROTATION_PENDING):
        if not caught and rec.get("last_reading"):
            reading = dict(reading, **rec["last_reading"])  # what was known, not the stale tail
        return request_handoff(ctx, n, sdir, reading)
    if not caught:
        ctx.outcome = "transcript behind after %d ms; left to the late Stop" % waited
    return None


def _park_note(ctx: Context, sdir: str, note: str) -> None:
    with ctx.project.edit(sdir) as rec:
        rec["pending_note"] = note


def request_handoff(ctx: Context, n: int, sdir: str, reading: Reading) -> Output | None:
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    with ctx.project.edit(sdir) as rec:
        if rec["state"] not in session.WORKING:
            return None
        snap = checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg)
        rec.pop("pending_note", None)
        session.transition(sdir, rec, session.HANDOFF_REQUESTED,
                           "manual rotate" if rec.get("rotate_requested") else "context %s%%" % reading["percent"],
                           handoff_tries=0, handoff_requested_at=snap["requested_at"], rotate_requested=False)
    ctx.push(rec, "rotation-pending", "handoff requested", reading)
    path = checkpoint.handoff_path(sdir)
    if os.path.exists(path):
        # Written already (e.g. during the hard-ceiling gate): accept it now if it is valid.
        check = handoff.validate(path, ctx.project.root, ctx.cfg)
        if check.ok:
            return verified(ctx, n, sdir, check, degraded=False, tries=1)
    ctx.outcome = "handoff requested"
    return {"decision": "block", "reason": request_text(reading, path, ctx.cfg)}


def request_text(reading: Reading, path: str, cfg: config.Config) -> str:
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    win = reading.get("window")
    return (
        "cc-continuity: this session's context is at %s%% of its %s-token window (rotate level %g%%). The work "
        "continues in a fresh session that starts from a handoff file, so the handoff needs to be written before "
        "this turn can end.\n\n"
        "Handoff file (absolute path): %s\n\n"
        "Write it with the Write tool using the template below. Every section must be present and non-empty "
        "(write \"none\" where there is nothing), %d-%d characters, no secrets or tokens, and every file path it names "
        "must exist (relative to the project root, in backticks). In \"Current state\" and \"How to verify\", give "
        "each claim a source the next session can re-check: a file with a line or symbol (`src/app.py:42`, "
        "`src/app.py:parse`), a commit, or a command with the exit code it had (`pytest -q` (exit 1))%s. Git state, "
        "the recent user prompts and the todo list are recorded automatically. Once the file is written, ending the "
        "turn completes the hand-over; the next session continues from it without the user having to re-explain "
        "anything.\n\n%s"
        % (reading.get("percent"), "{:,}".format(win) if win else "?", cfg["rotate"], path,
           cfg["handoff_min_chars"], cfg["handoff_max_chars"],
           "; a claim without one is sent back" if cfg.get("handoff_require_sources") else "",
           handoff.template(cfg["handoff_sections"]))
    )


def check_handoff(ctx: Context, n: int, sdir: str) -> Output | None:
    from . import handoff, sources  # their patterns load re: only the steps that read a handoff pay for it

    path = checkpoint.handoff_path(sdir)
    if not os.path.exists(path):
        # Nothing written yet (or the request never reached the model): ask again, in full.
        reading = checkpoint.snapshot_facts(sdir).get("reading") or {}
        tries = _count_try(ctx, sdir)
        if tries < ctx.cfg["handoff_max_tries"]:
            ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": False, "problems": ["missing"]})
            ctx.outcome = "handoff missing (try %d)" % tries
            return {"decision": "block", "reason": "The handoff file does not exist yet (check %d of %d).\n\n%s" % (
                tries, ctx.cfg["handoff_max_tries"], request_text(reading, path, ctx.cfg))}
        return fall_back(ctx, n, sdir, handoff.validate(path, ctx.project.root, ctx.cfg).problems, tries)
    check = handoff.validate(path, ctx.project.root, ctx.cfg)
    sources.apply(check, path, ctx.project.root, sdir, ctx.cfg)
    tries = _count_try(ctx, sdir)
    ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": check.ok, "problems": check.problems[:10],
                   "chars": check.chars, "sha256": check.sha256, "sources": check.sources})
    if check.ok:
        held = _claims_contradicted(ctx, sdir, path, check, tries)
        if held is not None:
            return held
        return verified(ctx, n, sdir, check, degraded=False, tries=tries)
    if tries < ctx.cfg["handoff_max_tries"]:
        ctx.outcome = "handoff invalid (try %d)" % tries
        return {"decision": "block", "reason": (
            "cc-continuity: the handoff at %s is not complete yet (check %d of %d). What is wrong:\n%s\n\n"
            "Fix these in the file, then end the turn." % (
                path, tries, ctx.cfg["handoff_max_tries"], "\n".join("- " + p for p in check.problems)))}
    return fall_back(ctx, n, sdir, check.problems, tries)


def _claims_contradicted(ctx: Context, sdir: str, path: str, check: Validation, tries: int) -> Output | None:
    """A valid handoff whose claims ("tests pass", "pushed" …) the ledger contradicts: shown once to its writer.

    Once per handoff version (its sha256), and only while a try is left: the writer may fix
    the handoff or leave it; either way the successor is told what was not confirmed.
    """
    try:
        text = checkpoint.read_handoff(sdir).decode("utf-8", "replace")
    except OSError:
        return None
    found = claims.problems(claims.check(text, claims.tool_lines(ledger.read(session.ledger_path(sdir))), path))
    if not found or tries >= ctx.cfg["handoff_max_tries"]:
        return None
    with ctx.project.edit(sdir) as rec:
        if rec.get("claims_shown") == check.sha256:
            return None
        rec["claims_shown"] = check.sha256 or ""
    ctx.log(sdir, {"ev": "claims_contradicted", "try": tries, "problems": found[:10]})
    ctx.outcome = "handoff claims contradicted (try %d)" % tries
    return {"decision": "block", "reason": (
        "cc-continuity: the handoff at %s is complete, but the tool record does not confirm what it says:\n%s\n\n"
        "Correct those statements (or run the check again and update the handoff), then end the turn. Whatever "
        "stays is shown to the next session as \"claimed, not confirmed\"." % (
            path, "\n".join("- " + p for p in found)))}


def _count_try(ctx: Context, sdir: str) -> int:
    """One more check of the handoff, recorded under the project lock; its number."""
    with ctx.project.edit(sdir) as rec:
        tries = int(rec.get("handoff_tries") or 0) + 1
        rec["handoff_tries"] = tries
    return tries


def fall_back(ctx: Context, n: int, sdir: str, problems: list[str], tries: int,
              driver: str | None = None) -> Output | None:
    """No valid handoff from the model in time: write one from machine facts (degraded) and verify it."""
    snap = checkpoint.snapshot_facts(sdir)
    aside = checkpoint.move_aside_non_file(sdir)
    if aside:
        ctx.log(sdir, {"ev": "handoff_path_not_a_file", "moved_to": aside})
    machine = checkpoint.write_machine_handoff(sdir, snap, ctx.cfg, problems)
    machine.problems = problems  # kept in the manifest: why it is degraded
    out = verified(ctx, n, sdir, machine, degraded=True, tries=tries, driver=driver)
    if aside:  # said once: this is the one fall-back of this checkpoint
        note = ("cc-continuity: the handoff path %s was a directory, not a file; it is kept whole at %s, and a "
                "machine handoff took its place." % (checkpoint.handoff_path(sdir), aside))
        out = dict(out or {})
        out["systemMessage"] = (out["systemMessage"] + "\n" + note) if out.get("systemMessage") else note
    return out


def verified(ctx: Context, n: int, sdir: str, check: Validation, degraded: bool, tries: int,
             driver: str | None = None) -> Output | None:
    """Snapshot + manifest, CHECKPOINT_VERIFIED, then start the hand-over by one driver.

    ``driver`` (mod, tmux or manual) is chosen here unless given: the plugin's
    mod when this Claude process's mod is alive (it hands over at the turn's end,
    in-process; a tmux rotator stands by in case it does not), else the tmux
    rotator, else the user's own /clear.  The ledger and the record say which.
    """
    snap = checkpoint.snapshot_facts(sdir)
    proj = ctx.project
    with proj.edit(sdir) as rec:
        summary = checkpoint.finalize(proj.root, proj.slug, sdir, rec, check, ctx.cfg, degraded, tries, snap)
        session.transition(sdir, rec, session.CHECKPOINT_VERIFIED,
                           "handoff %s after %d tries" % ("degraded" if degraded else "valid", tries),
                           checkpoint=summary)
        if ctx.cfg["share_remote"]:  # a detached job publishes it (never waited for); here: subprocess only then
            from . import share

            share.after_verified(proj, n, ctx.cfg)
        try:
            claim.prepare(proj, n, rec, ctx.cfg["bootstrap_max_tokens"])  # the claim then only adds what is new
        except (OSError, ValueError) as e:
            ctx.log(sdir, {"ev": "bootstrap_prepare_failed", "error": str(e)[:200]})
        successor_name = proj.session_name(proj.peek_next_number())
        tmux_ok = ctx.can_drive(rec)
        driver = driver or handover.choose_driver(rec, ctx.cfg, tmux_ok)
        use_tmux = driver != "manual" and tmux_ok
        why = {"mod": "the mod hands over in-process", "tmux": "tmux pane %s" % rec.get("tmux_pane"),
               "manual": "no tmux: manual /clear"}[driver]
        session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR if driver == "manual" else session.ROTATING,
                           why, driver=driver)
        if driver == "mod" and ctx.session_id:  # left where the mod reads it at the turn's end, without starting a process
            bound = handover.offer_binding(ctx.claude_pid(), ctx.payload.get("prompt_id"), summary["id"],
                                           session.state_path(sdir))
            handover.offer_handover(ctx.session_id, handover.handover(rec, sdir, successor_name, proj.root), bound)
            rec["handover_bound"] = {"pid": bound["pid"], "pid_ticks": bound["pid_ticks"]}
        ctx.log(sdir, {"ev": "driver", "driver": driver, "checkpoint": summary["id"]})
    ctx.push(rec, "checkpoint-verified", "%s %s" % (summary["id"], "degraded" if degraded else "valid"))
    ctx.outcome = "checkpoint %s verified%s, driver %s" % (summary["id"], " (degraded)" if degraded else "", driver)
    if use_tmux:
        try:
            standby = ctx.cfg["mod_standby_s"] if driver == "mod" else None
            pid = ctx.start_rotator(rec, sdir, successor_name, proj.lock_path, standby)
            with proj.edit(sdir) as rec:
                rec["rotator_pid"] = pid
            ctx.log(sdir, {"ev": "rotator_spawned", "pid": pid, "successor": successor_name,
                           "standby": bool(standby)})
            return None
        except Exception as e:  # the rotator could not start: fall back to a manual /clear
            ctx.log(sdir, {"ev": "rotator_failed", "error": str(e)[:300]})
            if driver == "mod":
                return None  # the mod still hands over; it just has no tmux behind it
            with proj.edit(sdir) as rec:
                session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator failed to start")
            ctx.push(rec, "lifecycle-failed", "rotator did not start: %s" % type(e).__name__)
    if driver == "mod":
        return None
    return _ask_for_clear(rec)


def _ask_for_clear(rec: Record) -> Output:
    cid = (rec.get("checkpoint") or {}).get("id", "the checkpoint")
    return {"systemMessage": "cc-continuity: handoff %s is verified. Type /clear to continue in a fresh session; "
                             "it picks up the handoff automatically." % cid}


def _rotator_alive(rec: Record) -> bool:
    """Is the rotator spawned for this checkpoint still running?  (Unknown counts as alive.)"""
    pid = rec.get("rotator_pid")
    if not isinstance(pid, int):
        return True
    if not pid_alive(pid):
        return False
    return handover.runs_rotator(pid) is not False  # a recycled pid is not our rotator; unreadable: alive


# -- a session starts: register, claim, recover ----------------------------------------------------
def session_started(ctx: Context) -> Output | None:
    """SessionStart: register the session, then claim what waits for it; the hook's output.

    After ``/clear`` the same Claude process starts a new session id; the
    SessionEnd(clear) seen just before names the predecessor.  On clear, startup
    and resume the best claimable checkpoint is claimed (exactly once, under the
    project lock) and its bootstrap returned as ``additionalContext``; at startup
    with none, a crashed predecessor's machine handoff.
    """
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    source = ctx.payload.get("source")
    source = source if isinstance(source, str) else None
    from ..errors import StateDirError

    try:
        n, sdir, rec = register(ctx, source)
    except StateDirError as e:  # nothing is written there; the user is told, once per session start
        ctx.outcome = "state directory not ours: %s" % e
        return {"systemMessage": "cc-continuity: %s." % e}
    ctx.outcome = "registered %s (%s)" % (rec["name"], source)
    if source == "resume" and ctx.session_id and handover.withdraw_offer(ctx.session_id):
        ctx.log(sdir, {"ev": "offer_withdrawn", "why": "resumed in a new process"})  # never for this process
    if source == "startup":
        ctx.push(rec, "session-started", source)
        _sweep()
    warning = _boundary_warning(ctx) if source == "startup" else None
    text = None
    if source == "resume" and rec.get("resumed_from") is not None and rec.get("source") == "resume" \
            and not rec.get("predecessor_claimed"):
        notice = resume_notice(ctx, n, rec)
        ctx.outcome = "resumed %s as %s" % (rec.get("resumed_from"), rec["name"])
        _settled(sdir)
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": notice}} if notice else None
    if source in CLAIM_SOURCES:
        text = claim_for(ctx, n, sdir, rec, cleared=source == "clear")
        if text is None:
            text = bootstrap_due(ctx, sdir, session.load(sdir))  # claimed earlier, never delivered
        if text is None and source == "startup":
            text = crash_notice(ctx, n)
    out: Output = {}
    if text is not None:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": text}
    if warning:
        out["systemMessage"] = warning
    return out or None


def _sweep() -> None:
    """Markers of calls long handled and hand-overs long done (at startup, never on a rotation's path)."""
    once.sweep()
    handover.sweep_handovers()


def _boundary_warning(ctx: Context) -> str | None:
    """The user sees it when a repository tried to set a key only their own config may set, or one out of
    bounds: once per version of that file and key (they cannot remove what the repository committed)."""
    import hashlib

    ignored = ctx.cfg.ignored
    if not ignored:
        return None
    store = os.path.join(ctx.project.dir, "repo-warned.json")
    try:
        with open(store, "rb") as f:
            warned = set(fastjson.loads(f.read()))
    except (OSError, ValueError, TypeError):
        warned = set()
    new: list[tuple[str, str]] = []
    for path, key, _ in ignored:
        try:
            version = hashlib.sha256(safefile.read_regular(path, 1 << 20)).hexdigest()[:16]
        except OSError:
            version = "?"
        if "%s:%s" % (version, key) not in warned:
            new.append((path, key))
            warned.add("%s:%s" % (version, key))
    if not new:
        return None
    try:
        atomic.write_text(store, fastjson.dumps(sorted(warned)[-200:]), fsync=False, follow=False)
    except OSError:
        pass
    keys = sorted({k for _, k in new})
    return "cc-continuity: %s tries to set %s, which a repository may not (a key only your own config may set, or " \
           "a value out of bounds), so %s ignored (`cc-continuity config show` explains; said once per version " \
           "of the file)." % (new[0][0], ", ".join(keys), "it is" if len(keys) == 1 else "they are")


def claim_for(ctx: Context, n: int, sdir: str, rec: Record, cleared: bool = False) -> str | None:
    """Claim the best checkpoint for session ``n``; the bootstrap text, or None.

    ``cleared``: this session follows a ``/clear`` of the same Claude process.
    """
    proj = ctx.project
    faults.point("claim:before_lock")
    gate = None  # a published checkpoint's claim asks the remote first (lease.py), outside the lock
    while True:
        with proj.lock():  # (not an edit of one record: the claim writes both records itself)
            rec = session.load(sdir)
            if rec.get("predecessor_claimed"):
                return None
            cands = claim.candidates(proj, ctx.claude_pid(), rec.get("predecessor"), me=n, cleared=cleared,
                                     intent=rec.get("claiming"))
            if ctx.payload.get("source") == "resume":  # a resumed conversation never takes a newer one's checkpoint
                cands = [c for c in cands if c < n]
            ask = None
            if gate is not None or any(os.path.exists(session.share_status_path(proj.session_dir(c))) for c in cands):
                from . import lease

                gate = gate or lease.Gate(proj, n, rec["name"])
                gate.refuse()
                ask = gate.pick(cands)
                cands = gate.allowed(cands)
            if ask is None:
                pred_n, prec = claim.claim(proj, n, sdir, cands)
                if pred_n is None or prec is None:
                    claim.drop_intent(sdir)  # a claim cut short whose checkpoint went elsewhere: rolled back
                    _settled(sdir)
                    if gate is None:
                        return None
                    text = gate.notice(sdir, ctx.cfg)
                    if text:
                        ctx.outcome = "not claimed: %s" % ", ".join(sorted({o for o, _ in gate.asked.values()}))
                    return text
                if gate is not None:
                    gate.settle(pred_n, prec)
                rec = claim.finish(proj, n, sdir, pred_n, prec)
                rec = _settled(sdir)
                break
        assert gate is not None  # (ask is only set with it)
        gate.ask(ask)
    faults.point("claim:after_claim")
    pdir = proj.session_dir(pred_n)
    try:
        atomic.write_text(session.started_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
    except OSError:
        pass
    text = _build_bootstrap(ctx, sdir, rec, pred_n, prec)
    ctx.outcome = "claimed %s for %s" % (rec["checkpoint_from"], rec["name"])
    return text


def _settled(sdir: str) -> Record:
    """This session's claim was looked for to the end (a SessionStart cut before it leaves it pending)."""
    rec = session.load(sdir)
    if rec.pop("claim_pending", None) is not None:
        session.save(sdir, rec)
    return rec


def _build_bootstrap(ctx: Context, sdir: str, rec: Record, pred_n: int, prec: Record) -> str:
    """The bootstrap of the claimed ``pred_n`` (revalidated within its own budget), kept until delivered."""
    proj = ctx.project
    since, reval = _revalidate(ctx, sdir, proj.session_dir(pred_n), prec)
    text = claim.bootstrap_text(proj, pred_n, prec, rec["name"], ctx.cfg["bootstrap_max_tokens"], since=since)
    ctx.log(sdir, {"ev": "bootstrap", "checkpoint": rec["checkpoint_from"], "chars": len(text),
                   "tokens_est": len(text) // 4, "verdict": reval.get("verdict"), "by": ctx.event})
    try:
        atomic.write_text(session.bootstrap_due_path(sdir), text, fsync=False)  # a later hook can deliver it as is
    except OSError:
        pass
    _send(ctx, sdir)
    return text


def _send(ctx: Context, sdir: str) -> None:
    """Once this hook's answer (carrying the bootstrap) is written: the bootstrap was sent, by this event."""
    def sent() -> None:
        with ctx.project.edit(sdir) as rec:
            b = rec.get("bootstrap")
            if isinstance(b, dict) and not b.get("delivered_at"):
                b["sent"], b["sent_at"] = ctx.event, round(time.time(), 3)
    ctx.after_output.append(sent)


def bootstrap_due(ctx: Context, sdir: str, rec: Record) -> str | None:
    """A claimed bootstrap the successor's transcript does not hold yet: the text to add now (else None).

    Delivered means the transcript holds it (Claude Code writes a hook's context as a
    ``hook_additional_context`` attachment).  Before the first prompt of a fresh process
    there is no transcript yet: a bootstrap whose hook wrote its answer (``sent``) counts
    as delivered then.  Anything else - the hook died or ran out of time before its
    answer was out, or Claude Code recorded the hooks but not our context - is added
    by this hook, and confirmed by the next.
    """
    b = rec.get("bootstrap")
    if not isinstance(b, dict) or b.get("delivered_at") or not rec.get("predecessor_claimed"):
        return None
    tpath = ctx.payload.get("transcript_path") or rec.get("transcript")
    held = transcript_holds(tpath if isinstance(tpath, str) else None, b.get("needle"))
    if held or (held is None and b.get("sent")):
        _delivered(ctx, sdir, "transcript" if held else str(b.get("sent")))
        return None
    text = None
    try:
        with open(session.bootstrap_due_path(sdir), encoding="utf-8") as f:
            text = f.read(claim.SPILL_LIMIT + 1000)
    except OSError:
        pass
    pred_n = rec.get("predecessor")
    if not text and isinstance(pred_n, int):
        text = _build_bootstrap(ctx, sdir, rec, pred_n, session.load(ctx.project.session_dir(pred_n)))
    elif text:
        _send(ctx, sdir)
    if text:
        ctx.log(sdir, {"ev": "bootstrap_redelivered", "checkpoint": b.get("checkpoint"), "by": ctx.event,
                       "sent_before": b.get("sent"), "transcript": held})
    return text


def transcript_holds(path: str | None, needle: object, limit: int = 1 << 23) -> bool | None:
    """Does the transcript hold ``needle`` as hook context?  None: no transcript, or no hook recorded in it yet."""
    if not path or not isinstance(needle, str):
        return None
    want = fastjson.dumps(needle)[1:-1].encode("utf-8")
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return None
    if b'"attachment"' not in data:
        return None
    return any(b'"hook_additional_context"' in line and want in line for line in data.splitlines())


def _delivered(ctx: Context, sdir: str, via: str) -> None:
    with ctx.project.edit(sdir) as rec:
        b = rec.get("bootstrap")
        if not isinstance(b, dict) or b.get("delivered_at"):
            return
        b["delivered_at"], b["via"] = round(time.time(), 3), via
    ctx.log(sdir, {"ev": "bootstrap_delivered", "checkpoint": b.get("checkpoint"), "via": via})
    pred = rec.get("predecessor")
    ctx.push(rec, "rotation-complete", "%s -> %s" % (
        ctx.project.session_name(pred) if isinstance(pred, int) else "?", rec.get("name")))
    try:
        os.unlink(session.bootstrap_due_path(sdir))
    except OSError:
        pass


def _revalidate(ctx: Context, sdir: str, pdir: str, prec: Record) -> tuple[str, dict[str, Any]]:
    """Compare the claimed checkpoint with the world now: (bootstrap section, summary); recorded in the
    successor's record and ledger.  A failure costs only the section (logged), never the claim; past its
    own budget (:data:`REVALIDATE_S`) it says "not compared: took too long" and the bootstrap goes out."""
    try:
        with faults.within(REVALIDATE_S):
            res, since = revalidation.since_text(ctx.project.root, pdir, prec, ctx.cfg, ctx.claude_pid())
    except faults.TookTooLong:
        res, since = {"verdict": None, "problems": ["not compared: took too long"]}, NOT_COMPARED % REVALIDATE_S
    except Exception as e:  # noqa: BLE001 - the handoff still goes through
        ctx.log(sdir, {"ev": "revalidation_failed", "error": "%s: %s" % (type(e).__name__, str(e)[:200])})
        return "", {}
    if res.get("verdict") is None:
        summ: dict[str, Any] = {"verdict": None, "reason": "not compared: took too long", "budget_s": REVALIDATE_S}
        with ctx.project.edit(sdir) as rec:
            rec["revalidation"] = summ
        ctx.log(sdir, dict(summ, ev="revalidation"))
        return since, summ
    summ = revalidation.summary(res)
    summ.update(actions=res.get("actions"), actions_outside=res.get("actions_outside"))
    with ctx.project.edit(sdir) as rec:
        rec["revalidation"] = summ
    ctx.log(sdir, dict(summ, ev="revalidation"))
    return since, summ


def crash_notice(ctx: Context, n: int) -> str | None:
    """A previous session died mid-work with no checkpoint: its machine handoff, claimed exactly once.

    The dead session is marked (``recovered_by``) and ENDED under the project lock, so a
    third session gets nothing.  Older notice (no recovery possible): what is known."""
    proj = ctx.project
    with proj.lock():
        found = _dead_without_checkpoint(proj, n)
        if found is None:
            return None
        m, prev = found
        mdir = proj.session_dir(m)
        prev["recovered_by"] = n
        prev["ended"] = {"reason": "crashed (process gone, no checkpoint); recovered by %s" % proj.session_name(n),
                         "at": round(time.time(), 3)}
        session.transition(mdir, prev, session.ENDED, "crashed; recovered by %s" % proj.session_name(n))
        sdir = proj.session_dir(n)
        rec = session.load(sdir)
        rec["recovered_from"] = m
        rec["recovery"] = {"from": prev.get("name"), "session_id": prev.get("session_id"),
                           "resume": "claude --resume %s" % prev.get("session_id"), "at": round(time.time(), 3)}
        session.save(sdir, rec)
    budget = min(ctx.cfg["bootstrap_max_tokens"] * 4, claim.SPILL_LIMIT)
    try:
        text, facts = revalidation.crash_handoff(proj.root, mdir, prev, ctx.cfg, budget)
    except Exception as e:  # noqa: BLE001 - the short notice still tells the user what happened
        facts = {"error": "%s: %s" % (type(e).__name__, str(e)[:200])}
        text = ("cc-continuity: the previous session %s in this project died mid-work before any checkpoint. "
                "Its conversation can be reopened with `claude --resume %s`." % (prev.get("name"),
                                                                                prev.get("session_id")))
    ctx.log(sdir, dict(facts, ev="crash_recovery", predecessor=m, chars=len(text), tokens_est=len(text) // 4,
                       degraded=True))
    ctx.log(mdir, {"ev": "recovered", "by": n})
    ctx.outcome = "recovered %s after a crash (machine handoff, degraded)" % prev.get("name")
    return text


def _dead_without_checkpoint(proj: Project, n: int) -> tuple[int, Record] | None:
    """(number, record) of the newest session that died live (process gone) and was never recovered."""
    for m in _newest_first(proj, n):
        try:
            prev = session.load(proj.session_dir(m))
        except (OSError, ValueError):
            continue
        if prev["state"] in session.LIVE and not pid_alive(prev.get("pid")) and not prev.get("ended") \
                and not prev.get("recovered_by") and _worked(proj.session_dir(m)):
            return m, prev
        return None
    return None


def _worked(sdir: str) -> bool:
    """Did the session get a prompt (one opened and closed unused leaves nothing to recover)?"""
    return any(r.get("ev") == "prompt" for r in ledger.read(session.ledger_path(sdir)))


def _newest_first(proj: Project, skip: int, below: int | None = None) -> Iterator[int]:
    """Existing session numbers, newest first, without listing the history (a stat per number)."""
    m = proj.newest_number() if below is None else below - 1
    while m > 0:
        if m != skip and os.path.isdir(proj.session_dir(m)):
            yield m
        m -= 1


# -- a prompt -------------------------------------------------------------------------------------
def prompt_submitted(ctx: Context) -> Output | None:
    """UserPromptSubmit: record the prompt; a successor's first prompt; flags and parked notes.

    Prompts are kept in the ledger so a rotation carries over anything typed after
    the handoff was requested.  The first prompt of a successor makes it ACTIVE,
    tells the rotator the continuation arrived and names the session
    (``sessionTitle``).  If SessionStart could not claim (it timed out, say), the
    continuation prompt claims here instead.
    """
    started = begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    prompt = ctx.payload.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    ctx.log(sdir, {"ev": "prompt", "text": prompt[:PROMPT_KEEP], "chars": len(prompt),
                   "prompt_id": ctx.payload.get("prompt_id")})
    if "repeat " in prompt and not handover.is_continuation(prompt) and not prompt.startswith(effects.WATCHDOG_PREFIX):
        # the user's own words (not our continuation, not a watchdog nudge) let one held repeat through
        for code in effects.record_override(ctx.project.dir, prompt, ctx.session_id, rec.get("name")):
            ctx.log(sdir, {"ev": "effect_override", "code": code})
    if ctx.session_id and handover.withdraw_offer(ctx.session_id):  # its turn is over: the next turn's end decides
        ctx.log(sdir, {"ev": "offer_withdrawn", "why": "a new prompt"})
    out = {}
    context = []
    continuation = handover.is_continuation(prompt) and rec["state"] == session.ACTIVE
    # a SessionStart killed mid-claim, or before it: complete, roll back, or claim now
    cut_short = rec.get("claiming") is not None or rec.get("claim_pending") is not None
    if (continuation or cut_short) and not rec.get("predecessor_claimed"):
        cleared = continuation or rec.get("claim_pending") in ("clear", None)
        text = claim_for(ctx, n, sdir, rec, cleared=cleared)  # fallback: the rotator's prompt follows a /clear
        if text:
            context.append(text)
    if not context:
        due = bootstrap_due(ctx, sdir, session.load(sdir))  # a claim whose bootstrap never reached the model
        if due:
            context.append(due)
    with ctx.project.edit(sdir) as rec:
        if rec.get("flags"):
            ctx.log(sdir, {"ev": "flags_cleared", "flags": sorted(rec["flags"])})
            rec["flags"] = {}
        note = rec.pop("pending_note", None)
        if note:
            context.append(note)
        first = rec["state"] == session.BOOTSTRAPPING
        if first:
            session.transition(sdir, rec, session.ACTIVE, "first prompt")
            out["sessionTitle"] = rec["name"]
    if first:
        ctx.push(rec, "successor-resumed", "continuing from %s" % rec.get("checkpoint_from"))
    pred_n = rec.get("predecessor")
    if first and pred_n is not None:
        pdir = ctx.project.session_dir(pred_n)
        try:
            atomic.write_text(session.delivered_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
        except OSError:
            pass
    if context:
        out["additionalContext"] = "\n\n".join(context)
    if not out:
        return None
    out["hookEventName"] = "UserPromptSubmit"
    return {"hookSpecificOutput": out}


# -- a session ends -------------------------------------------------------------------------------
def session_ended(ctx: Context) -> None:
    """SessionEnd: ENDED, or only the process's leaving for a session holding a verified checkpoint.

    On ``/clear`` the Claude process is remembered as having cleared this session,
    so the successor it starts next is paired with it.
    """
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    sdir = ctx.session_dir(n)
    reason = ctx.payload.get("reason")
    reason = reason if isinstance(reason, str) else "other"
    with ctx.project.edit(sdir) as rec:
        ctx.log(sdir, {"ev": "session_end", "reason": reason})
        rec["ended"] = {"reason": reason, "at": round(time.time(), 3)}
        if rec["state"] in session.LIVE:
            session.transition(sdir, rec, session.ENDED, "session_end:%s" % reason)
    if reason == "clear":
        remember_clear(ctx, n)
    else:
        ctx.push(rec, "session-ended", reason)
    return None


# -- compaction ------------------------------------------------------------------------------------
def before_compact(ctx: Context) -> Output | None:
    """PreCompact: at or past *rotate* an automatic compaction is blocked (configurable) and the handoff
    requested at this turn's end instead; otherwise an emergency machine checkpoint (facts only, not
    claimable) is written and compaction proceeds."""
    started = begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    trigger = ctx.payload.get("trigger")
    trigger = trigger if isinstance(trigger, str) else None
    level = meter.notified_index(rec)
    ctx.log(sdir, {"ev": "precompact", "trigger": trigger, "level_index": level})
    if trigger == "auto" and level >= meter.ROTATE and ctx.cfg["precompact_block"] and rec["state"] in session.LIVE:
        with ctx.project.edit(sdir) as rec:
            rec["rotate_requested"] = True
        ctx.outcome = "auto-compaction blocked; rotation requested"
        return {"decision": "block",
                "reason": "cc-continuity: the session is past its rotate level; it hands off to a fresh session "
                          "at the end of this turn instead of compacting."}
    reading = measure(ctx, sdir, rec)
    out = session.emergency_dir(sdir)
    checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg, out_dir=out)
    ctx.log(sdir, {"ev": "emergency_checkpoint", "trigger": trigger, "path": out + "/" + session.SNAPSHOT})
    ctx.outcome = "emergency checkpoint"
    return None


# -- the late Stop ---------------------------------------------------------------------------------
def late_turn_end(ctx: Context, wait_s: float | None = None, sync_wait_s: float | None = None) -> str | None:
    """A second look at a turn's end whose reading the Stop hook could not trust; the text to wake
    the model with (a handoff request), or None.

    It does nothing when the Stop hook saw a caught-up reading (the common case: one
    ledger read), when the session moved on (a new prompt or tool call), or when the
    reading never arrives.
    """
    since = time.time()
    found = known(ctx)
    if found is None:
        return None
    n, sdir = found
    seen = _sync_stop(sdir, ctx.payload.get("prompt_id"), since,
                      LATE_SYNC_WAIT_S if sync_wait_s is None else sync_wait_s)
    if seen is not None and seen.get("caught_up") is not False:
        ctx.outcome = "the Stop hook saw the turn's end"
        return None
    rec = session.load(sdir)
    if rec["state"] not in session.WORKING:
        ctx.outcome = "nothing to do in %s" % rec["state"]
        return None
    reading, caught, waited = measure_turn_end(ctx, sdir, rec, LATE_WAIT_S if wait_s is None else wait_s, since)
    if not caught:
        ctx.outcome = "transcript still behind after %d ms" % waited
        ctx.log(sdir, {"ev": "late_stop", "caught_up": False, "waited_ms": waited})
        return None
    if seen is not None and _moved_on(sdir, seen):
        ctx.outcome = "the session moved on"
        return None
    rec = session.load(sdir)
    if rec["state"] not in session.WORKING:
        return None
    ctx.log(sdir, {"ev": "late_stop", "caught_up": True, "waited_ms": waited, "tokens": reading["tokens"],
                   "percent": reading["percent"], "level": reading["level"], "source": reading["source"]})
    out = decide(ctx, n, sdir, rec, reading, True, waited)
    if isinstance(out, dict) and out.get("decision") == "block":
        ctx.outcome = "handoff requested late (after %d ms)" % waited
        return str(out["reason"])
    return None


def _sync_stop(sdir: str, prompt_id: object, since: float, timeout: float) -> dict[str, Any] | None:
    """The Stop hook's ledger line for this turn end, waiting for it (None if it never comes)."""
    deadline = time.monotonic() + timeout
    path = session.ledger_path(sdir)
    while True:
        for rec in reversed(ledger.tail(path, 40)):
            if rec.get("ev") != "stop" or rec.get("ts", 0) < since - 5:
                continue
            if prompt_id is None or rec.get("prompt_id") == prompt_id:
                line: dict[str, Any] = rec
                return line
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


_NEWER = ("prompt", "tool", "stop")  # ledger lines that say the session went on after a turn's end


def _moved_on(sdir: str, seen: dict[str, Any]) -> bool:
    """A prompt, tool call or another turn end after the Stop line ``seen``."""
    return any(r.get("n", 0) > seen.get("n", 0) and r.get("ev") in _NEWER
               for r in ledger.tail(session.ledger_path(sdir), 40))


def rotate_instead_of_compacting(ctx: Context, n: int, sdir: str, rec: Record) -> str | None:
    """An auto-compaction the mod skips: the window is full, so no turn is left for the model to write a
    handoff - the one it wrote, if valid, else a machine handoff (degraded), verified with the mod as
    driver.  ``"valid"`` or ``"degraded"``; None when the session is in no state to rotate."""
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    if rec["state"] not in session.LIVE:
        return None
    proj = ctx.project
    reading = measure(ctx, sdir, rec)
    with proj.edit(sdir) as rec:
        if rec["state"] in session.WORKING:
            snap = checkpoint.collect(proj.root, sdir, rec, reading, ctx.payload, ctx.cfg)
            session.transition(sdir, rec, session.HANDOFF_REQUESTED, "auto-compaction: rotating instead",
                               handoff_tries=0, handoff_requested_at=snap["requested_at"])
        elif rec["state"] != session.HANDOFF_REQUESTED:
            return None
    check = handoff.validate(checkpoint.handoff_path(sdir), proj.root, ctx.cfg)
    if check.ok:
        verified(ctx, n, sdir, check, degraded=False, tries=int(rec.get("handoff_tries") or 0) or 1, driver="mod")
        return "valid"
    fall_back(ctx, n, sdir, ["the context filled up (auto-compaction) before a valid handoff was written"], 0,
              driver="mod")
    return "degraded"
