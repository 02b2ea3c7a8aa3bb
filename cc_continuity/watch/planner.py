"""What the watchdog plans about what it sees: the :class:`Brain` (no I/O), its actions and their words.

:class:`Brain` is the planner: ``cycle(now, probe, sessions)`` feeds the probe
result to the server state machine, classifies every session and returns the
:class:`Action` list for this cycle.  It does no I/O, so tests drive it with
made-up times.  :mod:`.executor` carries an action out and reports ``(outcome,
detail)``, which goes back through :meth:`Brain.record` so the caps and backoffs
count it.

Per session, each kind of action has a cap (``watchdog_max_actions``; one
push for a dead session) and an exponential backoff (``watchdog_backoff_s``,
doubling after each use).  The counters are saved with the daemon's state,
so neither a crash loop nor a restart by the service manager can repeat an
action past its cap.  On top of the caps, each action is tied to the
*episode* it answers (this failed turn, this outage, this frozen turn, this
stay in ROTATING): once it is carried out, the same episode never gets it
again -- one nudge per outage.  An action that finds the prompt box busy or
holding the user's text is *deferred*: nothing was done, nothing is counted,
it is tried again next cycle.
"""


import dataclasses
import os
import time
from dataclasses import dataclass


from .. import config, session
from . import Settings, fleet
from .liveness import (ACTIVE, DEAD, EXIT_HUNG, FAILED, LIMITED, RETRY_ERRORS, STALLED, Scanner,
                       classify)
from .probe import DEGRADED, DOWN, UNKNOWN, UP, ServerState


NUDGE = "nudge"
ESCALATE = "escalate"
TERMINATE = "terminate"
KILL = "kill"
PUSH_DEAD = "push_dead"
PUSH_SERVER = "push_server"
POWER_CYCLE = "power_cycle"
PUSH_FAILED = "push_failed"        # a turn died on an API error (or a limit)
PUSH_NOTICE = "push_notice"        # Claude Code's usage-limit news (quota_auto_resume_*), forwarded
ROTATION_STUCK = "rotation_stuck"  # ROTATING / AWAITING_MANUAL_CLEAR too long: push, retry once where safe
# The actions that can follow from each class (for "next allowed action" in status).
FOLLOW_UPS = {STALLED: (NUDGE, ESCALATE), FAILED: (NUDGE,), EXIT_HUNG: (TERMINATE, KILL), DEAD: (PUSH_DEAD,)}
# Pushes that go out once per episode, outside the caps and backoffs (they only inform;
# watchdog_max_actions 0 still silences them).
ONCE = frozenset((PUSH_FAILED, PUSH_NOTICE))
ROTATION_STATES = frozenset((session.ROTATING, session.AWAITING_MANUAL_CLEAR))  # a rotation under way, past its checkpoint
PREFIX = "[cc-continuity watchdog]"
INTERRUPT_KEY = "Escape"
TYPED_MAX = 780             # Claude Code shows more than 800 characters arriving at once as "[Pasted text #1]"
DAY = 86400.0
FORGET_AFTER = DAY          # memory of a session no longer registered
NEWS_MAX_AGE = DAY          # a failure or notice older than this (seen at start-up) is not acted on
HANDLED_KEEP = 8            # episodes remembered per action kind and session
NOTICES = {
    "quota_auto_resume_fired": "usage limit reset: Claude Code is continuing the task by itself",
    "quota_auto_resume_stale": "usage limit reset while the machine slept: press Enter in the session to continue",
    "quota_auto_resume_disabled": "automatic continue stopped: the task will not resume on its own",
}


@dataclass
class Action:
    kind: str
    why: str
    session: str = None          # SessionObs.key
    name: str = None
    slug: str = None
    number: int = None
    pid: int = None
    registered_at: float = None
    pane: tuple = None
    host: str = "claude"         # the agent the session runs in: the watchdog types into Claude Code's TUI only
    text: str = None             # typed into the pane (nudge / escalate) or pushed (server)
    event: str = None            # push event (server changes)
    episode: str = None          # what this answers ("fail:<ts>", "outage:<ts>", ...): once done, never again
    turn: float = None           # the turn (its prompt's time) a pane action is about
    prompt_text: str = None      # that turn's prompt, as the ledger keeps it (what Escape puts back)
    prompt_chars: int = None
    interrupted: bool = False    # the watchdog already pressed Escape on this turn
    escaped: bool = False        # set by the executor: it pressed Escape now
    state: str = None            # the session record's state (rotation_stuck)
    sdir: str = None
    rotator_pid: int = None

    _PRIVATE = ("registered_at", "slug", "prompt_text", "prompt_chars", "sdir", "escaped", "interrupted")

    def to_json(self):
        out = {k: v for k, v in self.__dict__.items() if v is not None and k not in self._PRIVATE}
        if self.escaped:
            out["escaped"] = True
        return out


def fmt_time(t, with_date=True):
    return time.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S", time.gmtime(t))


def fmt_span(seconds):
    s = max(0, int(round(seconds)))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


def outage_text(start, end):
    """``down from 2025-11-30 14:02:10 to 14:09:55 UTC (7m45s)``."""
    same_day = time.gmtime(start)[:3] == time.gmtime(end)[:3]
    return "down from %s to %s UTC (%s)" % (fmt_time(start), fmt_time(end, not same_day), fmt_span(end - start))


def nudge_text(start, end):
    """What is typed into a pane whose turn died with the model server."""
    return ("%s Your last turn stopped because the model server was %s. It is back up now, "
            "so please continue where you left off." % (PREFIX, outage_text(start, end)))


def escalate_text(quiet_for):
    """What is typed after interrupting a turn frozen while the server was up."""
    return ("%s This turn made no progress for %s while the model server was up, so it was "
            "interrupted. Please continue where you left off." % (PREFIX, fmt_span(quiet_for)))


def failure_text(kind, at, probing=True):
    """What is typed into a pane whose turn died on an API error (no outage seen around it)."""
    tail = "The model server answers again, so please continue" if probing else "Please continue"
    return "%s Your last turn stopped on an API error (%s) at %s UTC. %s where you left off." % (
        PREFIX, kind, fmt_time(at, False), tail)


def with_digest(text, digest_text):
    """The typed text plus the redacted log digest, when there is one (cut to what types as text)."""
    if not digest_text:
        return text
    room = TYPED_MAX - len(text) - len(" Server log: ")
    if room < 20:
        return text
    if len(digest_text) > room:
        digest_text = "…" + digest_text[-(room - 1):]
    return text + " Server log: " + digest_text


def _is_time(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _clean_memory(mem):
    """A session's saved memory with anything malformed dropped (the file may have been edited)."""
    gates = mem.get("gates") if isinstance(mem.get("gates"), dict) else {}
    mem["gates"] = {k: [g[0], g[1]] for k, g in gates.items()
                    if isinstance(g, list) and len(g) == 2 and isinstance(g[0], int) and not isinstance(g[0], bool)
                    and (g[1] is None or _is_time(g[1]))}
    for key in ("since", "seen", "terminated_at", "turn_over", "interrupted"):
        if not _is_time(mem.get(key)):
            mem[key] = None
    if not isinstance(mem.get("last_action"), dict):
        mem["last_action"] = None
    handled = mem.get("handled") if isinstance(mem.get("handled"), dict) else {}
    mem["handled"] = {k: [e for e in v if isinstance(e, str)][-HANDLED_KEEP:] for k, v in handled.items()
                      if isinstance(k, str) and isinstance(v, list)}
    mem.pop("view", None)
    return mem


def _episode(what, at):
    return "%s:%.3f" % (what, at)


class Brain:
    """Server state, session classes and action budgets; plans, never acts."""

    def __init__(self, settings, doc=None):
        self.settings = settings
        doc = doc if isinstance(doc, dict) else {}
        self.server = ServerState.from_json(doc.get("server"), settings.fail_threshold)
        sessions = doc.get("sessions")
        self.sessions = {k: _clean_memory(v) for k, v in sessions.items() if isinstance(v, dict)} \
            if isinstance(sessions, dict) else {}
        power = doc.get("power_cycles")
        self.power = [t for t in power if isinstance(t, (int, float))] if isinstance(power, list) else []
        at = doc.get("degraded_pushed_at")
        self.degraded_pushed_at = at if isinstance(at, (int, float)) else None   # rate limit of DEGRADED pushes
        self.degraded_open = doc.get("degraded_open") is True                     # an all-clear is owed
        self.changes = []   # records for the ledger: server and class changes
        self.last_cycle = None
        self.views = {}     # session key -> its latest observation (for status)

    # -- budgets ---------------------------------------------------------

    def cap(self, kind):
        m = self.settings.max_actions
        return min(1, m) if kind == PUSH_DEAD else m

    def next_allowed(self, key, kind, now):
        """When ``kind`` may next run for session ``key``: a time (<= now: now), or None when capped."""
        mem = self.sessions.get(key) or {}
        count, last = (mem.get("gates") or {}).get(kind) or (0, None)
        if count >= self.cap(kind):
            return None
        if last is None or count == 0:
            return now
        return last + self.settings.backoff * 2 ** (count - 1)

    def allowed(self, key, kind, now):
        when = self.next_allowed(key, kind, now)
        return when is not None and when <= now

    # -- one cycle -------------------------------------------------------

    def cycle(self, now, probe, sessions):
        """Observe, classify, plan: the actions to run now (pure apart from self)."""
        actions = []
        self.last_cycle = now
        if probe is not None:
            actions.extend(self._server_change(probe, now))
        seen = set()
        for obs in sessions:
            seen.add(obs.key)
            mem = self._memory(obs, now)
            if obs.mid_turn and obs.turn_started is not None and mem.get("turn_over") == obs.turn_started:
                # Its pane was seen idle (after our Escape, or the user's): that turn is not running.
                obs = dataclasses.replace(obs, mid_turn=False)
            cls = classify(obs, now, self.settings.stall, self.settings.exit_hang)
            outage = self._outage_behind(obs, now) if cls in (ACTIVE, STALLED) else None
            if outage is not None:
                cls = STALLED
            stuck = self._stuck(obs, now) if cls not in (DEAD, EXIT_HUNG) else None
            if stuck is not None:
                cls = STALLED
            self.views[obs.key] = obs   # what the fleet view shows (not saved: the next cycle has it again)
            if mem.get("class") != cls:
                self.changes.append({"ev": "class", "session": obs.name, "key": obs.key,
                                     "from": mem.get("class"), "to": cls})
                mem["class"], mem["since"] = cls, now
            if cls != EXIT_HUNG:
                mem["terminated_at"] = None
            actions.extend(self._notices(obs, mem, now))
            actions.extend(self._plan(obs, mem, cls, outage, stuck, now))
        actions.extend(self._power_cycle(now))
        for key in [k for k, m in self.sessions.items() if k not in seen and now - (m.get("seen") or 0) > FORGET_AFTER]:
            del self.sessions[key]
        for key in [k for k in self.views if k not in seen]:
            del self.views[key]
        return actions

    def _memory(self, obs, now):
        mem = self.sessions.get(obs.key)
        if mem is None:
            mem = self.sessions[obs.key] = {"name": obs.name, "class": None, "since": now, "gates": {},
                                            "last_action": None, "terminated_at": None, "handled": {},
                                            "turn_over": None, "interrupted": None}
        mem["seen"] = now
        mem["pid"] = obs.pid
        mem["name"] = obs.name
        return mem

    def _server_change(self, probe, now):
        change = self.server.observe(probe)
        if change is None:
            return []
        old, new = change
        self.changes.append({"ev": "server", "from": old, "to": new, "why": probe.detail or None})
        s = self.settings
        event = text = None
        if new == DOWN:
            event = "server-down"
            text = "model server DOWN since %s UTC after %d failed probes: %s" % (
                fmt_time(self.server.failing_since or now), self.server.failures, probe.detail or "no answer")
        elif new == UP and old == DOWN:
            o = self.server.last_outage()
            event, text = "server-up", "model server back UP; it was %s" % outage_text(o[0], o[1])
            self.degraded_open = False
        elif new == DEGRADED and old in (UP, UNKNOWN):
            # A single failed probe is common; at most one such push per backoff period.
            if self.degraded_pushed_at is None or now - self.degraded_pushed_at >= s.backoff:
                event, text = "server-degraded", "model server DEGRADED: %s" % (probe.detail or "probe failed")
                self.degraded_pushed_at = now
                self.degraded_open = True
        elif new == UP and old == DEGRADED and self.degraded_open:
            event, text = "server-up", "model server UP again after being DEGRADED"
            self.degraded_open = False
        if event is None:
            return []
        return [Action(PUSH_SERVER, why=text, event=event, text=text)]

    def _outage_behind(self, obs, now):
        """The finished outage that froze this turn, once the server has been back for ``grace``."""
        if not self.settings.probing or self.server.state != UP or obs.alive is False or obs.tool_running:
            return None
        if now - self.server.since < self.settings.grace:
            return None
        o = self.server.last_outage()
        if o is None or obs.turn_started is None or obs.turn_started >= o[1]:
            return None
        if obs.last_progress is not None and obs.last_progress >= o[1]:
            return None   # it carried on by itself after the server came back
        if obs.last_progress is not None and obs.last_progress < o[0] - self.settings.stall:
            return None   # already frozen before the outage began: not the outage's doing
        return o

    def _action(self, kind, obs, why, **kw):
        return Action(kind, why=why, session=obs.key, name=obs.name, slug=obs.slug, number=obs.number,
                      pid=obs.pid, registered_at=obs.registered_at, pane=obs.pane, host=obs.host, **kw)

    def _pane_action(self, kind, obs, mem, why, episode, text):
        """A nudge or an escalation: the turn it is about, and whether we already interrupted it."""
        turn = obs.turn_started
        return self._action(kind, obs, why, text=text, episode=episode, turn=turn, prompt_text=obs.prompt_text,
                            prompt_chars=obs.prompt_chars,
                            interrupted=turn is not None and mem.get("interrupted") == turn)

    def _fresh(self, mem, kind, episode, now):
        """May ``kind`` run for ``episode`` now: not carried out for it yet, and within its cap and backoff."""
        if episode in mem["handled"].get(kind, ()):
            return False
        if kind in ONCE:
            return self.settings.max_actions > 0
        return self.allowed_mem(mem, kind, now)

    def allowed_mem(self, mem, kind, now):
        count, last = mem["gates"].get(kind) or (0, None)
        if count >= self.cap(kind):
            return False
        return last is None or count == 0 or last + self.settings.backoff * 2 ** (count - 1) <= now

    def _stuck(self, obs, now):
        """``(state, since)`` for a session in ROTATING / AWAITING_MANUAL_CLEAR past the threshold, else None."""
        limit = self.settings.rotation_stuck
        if (obs.state not in ROTATION_STATES or obs.finished or obs.alive is False or limit is None
                or obs.state_since is None or now - obs.state_since < limit):
            return None
        return obs.state, obs.state_since

    def _outage_around(self, at):
        """The finished outage a failure at ``at`` belongs to (it may precede the first failed probe)."""
        s = self.settings
        slack = s.interval + s.probe_timeout + 1.0
        for o in reversed(self.server.outages):
            if o[1] is not None and o[0] - slack <= at <= o[1]:
                return o
        return None

    def _failure_nudge(self, obs, now):
        """``(why, text)`` once a failed turn may be nudged (the server answers, for ``grace``), else None."""
        s = self.settings
        if obs.failed_error not in RETRY_ERRORS:
            return None
        if s.probing:
            if self.server.state != UP:
                return None
            back = max(self.server.since or now, obs.failed_at)
        else:
            back = obs.failed_at
        if now - back < s.grace:
            return None
        o = self._outage_around(obs.failed_at) if s.probing else None
        if o is not None:
            return ("turn failed (%s) while the model server was %s" % (obs.failed_error, outage_text(o[0], o[1])),
                    nudge_text(o[0], o[1]))
        return ("turn failed (%s) at %s UTC" % (obs.failed_error, fmt_time(obs.failed_at, False)),
                failure_text(obs.failed_error, obs.failed_at, s.probing))

    def _notices(self, obs, mem, now):
        """Claude Code's usage-limit news, forwarded once each."""
        if obs.notice not in NOTICES or obs.notice_at is None or now - obs.notice_at > NEWS_MAX_AGE:
            return []
        episode = _episode("notice", obs.notice_at)
        if not self._fresh(mem, PUSH_NOTICE, episode, now):
            return []
        return [self._action(PUSH_NOTICE, obs, NOTICES[obs.notice], episode=episode, event=obs.notice)]

    def _plan(self, obs, mem, cls, outage, stuck, now):
        s = self.settings
        key = obs.key
        if stuck is not None:
            state, since = stuck
            episode = _episode("stuck-" + state, since)
            if not self._fresh(mem, ROTATION_STUCK, episode, now):
                return []
            return [self._action(ROTATION_STUCK, obs, "%s for %s" % (state, fmt_span(now - since)), episode=episode,
                                 state=state, sdir=obs.sdir, rotator_pid=obs.rotator_pid, turn=obs.turn_started)]
        if cls in (FAILED, LIMITED):
            out = []
            episode = _episode("fail", obs.failed_at)
            if now - obs.failed_at > NEWS_MAX_AGE:
                return out
            if self._fresh(mem, PUSH_FAILED, episode, now):
                if cls == LIMITED:
                    why = "turn stopped on a limit (%s): left alone, Claude Code resumes by itself" % obs.failed_error
                elif obs.failed_error in RETRY_ERRORS:
                    why = "turn failed (%s): nudged once the model server answers" % obs.failed_error
                else:
                    why = "turn failed (%s): needs you" % obs.failed_error
                out.append(self._action(PUSH_FAILED, obs, why, episode=episode, event=cls))
            nudge = self._failure_nudge(obs, now) if cls == FAILED else None
            if nudge is not None and self._fresh(mem, NUDGE, episode, now):
                out.append(self._pane_action(NUDGE, obs, mem, nudge[0], episode, nudge[1]))
            return out
        if cls == STALLED:
            server_up = not s.probing or self.server.state == UP
            if not server_up:
                return []   # the server is the problem: wait for it, then nudge
            marks = [t for t in (obs.last_progress, obs.turn_started) if t is not None]
            quiet_from = max(marks) if marks else now
            if s.probing:
                quiet_from = max(quiet_from, self.server.since or now)
            quiet = now - quiet_from
            stall_episode = _episode("stall", obs.turn_started if obs.turn_started is not None else quiet_from)
            if quiet >= s.stall and self._fresh(mem, ESCALATE, stall_episode, now):
                why = "no progress for %s with the model server up" % fmt_span(quiet)
                return [self._pane_action(ESCALATE, obs, mem, why, stall_episode, escalate_text(quiet))]
            if outage is not None:
                episode = _episode("outage", outage[0])
                if self._fresh(mem, NUDGE, episode, now):
                    why = "turn stopped while the model server was %s" % outage_text(outage[0], outage[1])
                    return [self._pane_action(NUDGE, obs, mem, why, episode, nudge_text(outage[0], outage[1]))]
            return []
        if cls == EXIT_HUNG:
            if mem.get("terminated_at") is None:
                if self.allowed(key, TERMINATE, now):
                    why = "alive %s after SessionEnd (%s)" % (fmt_span(now - obs.ended_at), obs.ended_reason or "?")
                    return [self._action(TERMINATE, obs, why)]
            elif now - mem["terminated_at"] >= s.exit_hang and self.allowed(key, KILL, now):
                why = "still alive %s after SIGTERM" % fmt_span(now - mem["terminated_at"])
                return [self._action(KILL, obs, why)]
            return []
        if cls == DEAD and self.allowed(key, PUSH_DEAD, now):
            when = " (last prompt %s UTC)" % fmt_time(obs.turn_started) if obs.turn_started else ""
            return [self._action(PUSH_DEAD, obs, "Claude process %s gone mid-turn%s" % (obs.pid, when))]
        return []

    def _power_cycle(self, now):
        s = self.settings
        self.power = [t for t in self.power if now - t < DAY]
        if not (s.power_cycle_command and s.probing and self.server.state == DOWN):
            return []
        o = self.server.open_outage()
        if o is None or now - o[0] < s.power_cycle_after:
            return []
        if len(self.power) >= s.power_cycle_daily_cap:
            return []
        if self.power and now - self.power[-1] < s.power_cycle_cooldown:
            return []
        return [Action(POWER_CYCLE, why="model server DOWN for %s" % fmt_span(now - o[0]))]

    # -- outcomes ----------------------------------------------------------

    def record(self, action, outcome, now, detail=""):
        """Count a carried-out action; True when it is news worth a ledger line.

        ``deferred`` counts nothing (nothing was done) and is news only when it
        differs from the last deferral, so a busy pane cannot flood the ledger.
        """
        entry = {"kind": action.kind, "at": now, "outcome": outcome, "detail": detail}
        if action.kind == PUSH_SERVER:
            return True
        if action.kind == POWER_CYCLE:
            if outcome != "deferred":
                self.power.append(now)
            return True
        mem = self.sessions.get(action.session)
        if mem is None:
            return True
        if action.escaped and action.turn is not None:
            mem["interrupted"] = action.turn   # whatever follows: the box may now hold that turn's prompt
        last = mem.get("last_action") or {}
        if outcome == "deferred":
            news = not (last.get("kind") == action.kind and last.get("outcome") == "deferred"
                        and last.get("detail") == detail)
            mem["last_action"] = entry
            return news
        if action.kind not in ONCE:
            gate = mem.setdefault("gates", {}).setdefault(action.kind, [0, None])
            gate[0] += 1
            gate[1] = now
        if action.episode and outcome in ("done", "idle", "gone", "skipped"):
            done = mem.setdefault("handled", {}).setdefault(action.kind, [])
            if action.episode not in done:
                done.append(action.episode)
                del done[:-HANDLED_KEEP]
        if outcome == "idle" and action.turn is not None:
            mem["turn_over"] = action.turn   # the pane is idle: that turn is not running, do not escalate it
        if action.kind == TERMINATE:
            mem["terminated_at"] = now
        mem["last_action"] = entry
        return True

    def drain_changes(self):
        out, self.changes = self.changes, []
        return out

    # -- views -------------------------------------------------------------

    def to_json(self):
        return {"server": self.server.to_json(), "sessions": self.sessions, "power_cycles": self.power,
                "degraded_pushed_at": self.degraded_pushed_at, "degraded_open": self.degraded_open}

    def status(self, now):
        """What ``watchdog status`` shows: the fleet, sessions that need someone first."""
        rows = []
        for key, mem in sorted(self.sessions.items(), key=lambda kv: kv[1].get("name") or kv[0]):
            if self.last_cycle is not None and mem.get("seen") != self.last_cycle:
                continue   # no longer registered (remembered a while for its counters only)
            cls = mem.get("class")
            nxt = {}
            for kind in FOLLOW_UPS.get(cls, ()):
                when = self.next_allowed(key, kind, now)
                nxt[kind] = None if when is None else max(when, now)
            o = self.views.get(key)
            r = fleet.row(o, cls) if o is not None else {"key": key, "name": mem.get("name"), "class": cls}
            r.update({"since": mem.get("since"), "pid": mem.get("pid"), "last_action": mem.get("last_action"),
                      "next": nxt, "counts": {k: v[0] for k, v in (mem.get("gates") or {}).items()}})
            rows.append(r)
        rows.sort(key=fleet.sort_key)
        srv = self.server
        return {
            "server": {"probing": self.settings.probing, "url": self.settings.health_url,
                       "progress_url": self.settings.progress_url, "state": srv.state, "since": srv.since,
                       "failures": srv.failures, "last_probe": srv.last, "outages": srv.outages[-3:]},
            "power_cycles": self.power,
            "sessions": rows,
        }


def collect_fleet(now=None, settings=None, recent_s=fleet.RECENT_S, recent_max=fleet.RECENT_MAX,
                  tmux_timeout=fleet.TMUX_TIMEOUT_S):
    """The fleet rows, built from the records now and classified by the same :class:`Brain` as the daemon's
    (``status --all-projects``: no daemon needed; see :mod:`.fleet`)."""
    now = time.time() if now is None else now
    if settings is None:
        try:
            settings = Settings.load()
        except config.ConfigError:
            settings = Settings()
    dirs = fleet.session_dirs(now, recent_s, recent_max)
    found = Scanner(stall=settings.stall, dirs=lambda: dirs).scan(now)
    for o in found:   # no inotify here: a transcript's mtime is its latest growth
        if o.transcript and o.mid_turn and not o.finished:
            try:
                o.last_progress = max(o.last_progress or 0.0, os.stat(o.transcript).st_mtime)
            except OSError:
                pass
    brain = Brain(settings)
    brain.cycle(now, None, found)   # classification only: its plan is not carried out
    keep = ("next", "counts", "last_action", "since")
    rows = [{k: v for k, v in r.items() if k not in keep} for r in brain.status(now)["sessions"]]
    return fleet.pane_states(rows, timeout=tmux_timeout)
