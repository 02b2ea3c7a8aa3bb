"""What the watchdog does about what it sees -- always bounded.

:class:`Brain` is the planner: ``cycle(now, probe, sessions)`` feeds the probe
result to the server state machine, classifies every session and returns the
:class:`Action` list for this cycle.  It does no I/O, so tests drive it with
made-up times.  :class:`Executor` carries an action out (tmux, signals,
pushes, the power-cycle command) and reports ``(outcome, detail)``, which goes
back through :meth:`Brain.record` so the caps and backoffs count it.

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

What is typed into a pane and when (:class:`Executor`): only into the pane that
holds the session's Claude process, only into an empty box of the main view,
only when no key came from an attached client for a moment, and each burst (the
text, the Enter, the Escape) only if still none came (tmux ``if-shell`` on
``session_activity``, as the rotator types).  Escape is pressed only on a
busy pane, once per attempt; what it puts back in the box (the interrupted
turn's prompt, byte-identical to typed text) is recognised because the
watchdog pressed it and the ledger holds the turn's prompt: Enter resubmits it.
"""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

import psutil

from .. import config, ledger, log, notify, paths, session
from ..rotation import handover
from ..project import RecordEdit
from ..procs import pid_alive
from ..redact import redact
from ..tmux import KEYS_PER_CALL, Pane, TmuxError, rotator
from . import LOG, Settings, fleet
from .liveness import (ACTIVE, DEAD, EXIT_HUNG, FAILED, LIMITED, RETRY_ERRORS, STALLED, ProcessTable, Scanner,
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
DIGEST_LINES = 8
DIGEST_CHARS = 300
TYPED_MAX = 780             # Claude Code shows more than 800 characters arriving at once as "[Pasted text #1]"
POWER_CYCLE_TIMEOUT = 1800.0
DAY = 86400.0
FORGET_AFTER = DAY          # memory of a session no longer registered
NEWS_MAX_AGE = DAY          # a failure or notice older than this (seen at start-up) is not acted on
HANDLED_KEEP = 8            # episodes remembered per action kind and session
SUBMIT_S = 1.0              # an Enter that took empties the box within this
KEY_BATCH_GAP_S = 0.05      # between two key batches (Claude Code drops batches that follow at once)
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


# -- wording -------------------------------------------------------------------

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


# -- the planner -------------------------------------------------------------------

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


# -- carrying actions out ---------------------------------------------------------

# The watchdog's push events and, for each, the notifier's names to use, best first: the
# first one :mod:`notify` knows wins, so an event it does not have (yet) still gets through
# under the closest one it does (an escalation as "blocked": urgent, needs you).
PUSH_EVENTS = {
    "server-down": ("server-down",),
    "server-up": ("server-up",),
    "server-degraded": ("server-degraded", "server-down"),
    "server-power-cycle": ("server-power-cycle", "lifecycle-failed", "failed"),
    "session-nudged": ("session-nudged", "nudged"),
    "session-escalated": ("session-escalated", "blocked"),
    "session-killed": ("session-killed", "killed"),
    "session-dead": ("session-dead", "dead"),
    "session-failed": ("session-failed", "session-stalled"),
    "session-limited": ("session-limited", "session-stalled"),
    "session-stuck": ("session-stuck", "lifecycle-failed", "blocked"),
}


def push_name(event, known):
    """The notifier's name for watchdog ``event`` given its ``known`` events, or None."""
    return next((n for n in PUSH_EVENTS.get(event, (event,)) if n in known), None)


def push(event, text="", slug=None, session=None):
    """One phone push through :func:`notify.emit`; never raises (False when not sent)."""
    try:
        name = push_name(event, notify.EVENTS)
        if name is None:
            log.write(LOG, "push %s skipped: the notifier knows no such event" % event)
            return False
        return bool(notify.emit(name, slug=slug, session=session, text=text))
    except Exception as e:
        log.write(LOG, "push %s failed: %s" % (event, type(e).__name__))
        return False


def run_capture(cmd, timeout):
    """``(exit code or None on timeout, combined output)`` of a shell command, whole group killed on timeout."""
    proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
        return None, out


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)")


def _clean_line(line):
    """One log line as plain words: colour codes dropped, other control characters spaced out."""
    line = _ANSI.sub("", line)
    return " ".join("".join(c if c.isprintable() else " " for c in line).split())


def digest(settings, timeout=None):
    """A short, redacted, one-line tail of the configured log file or command (None: not configured)."""
    raw = None
    if settings.digest_command:
        code, out = run_capture(settings.digest_command, timeout or min(settings.probe_timeout, 10.0))
        raw = out.decode("utf-8", "replace")
        if code is None:
            raw += "\n(digest command timed out)"
    elif settings.digest_file:
        try:
            path = paths.normalize(settings.digest_file)
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 16384))
                raw = f.read().decode("utf-8", "replace")
        except OSError as e:
            raw = "(cannot read %s: %s)" % (settings.digest_file, e.strerror)
    if raw is None:
        return None
    lines = [_clean_line(x) for x in raw.splitlines()]
    text = redact(" | ".join([x for x in lines if x][-DIGEST_LINES:]))
    if len(text) > DIGEST_CHARS:
        text = "…" + text[-(DIGEST_CHARS - 1):]
    return text or None


def pane_pid(socket, pane_id, timeout=5.0):
    """The pid of the program tmux started in the pane, or None."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    try:
        res = subprocess.run([tmux, "-S", socket, "display-message", "-p", "-t", pane_id, "#{pane_pid}"],
                             capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = res.stdout.strip()
    return int(out) if res.returncode == 0 and out.isdigit() else None


class _Gone(Exception):
    """The pane no longer holds the session's Claude process: stop typing."""


def _squash(text):
    return "".join((text or "").split())


def _is_prompt(box, action):
    """Does the box hold exactly the turn's prompt (as the ledger kept it, whole)?"""
    text = action.prompt_text
    if not text or (action.prompt_chars is not None and action.prompt_chars != len(text)):
        return False
    return _squash(box) == _squash(text)


def _is_rotator(pid):
    """Is ``pid`` a live cc-continuity rotator process?"""
    if not isinstance(pid, int) or isinstance(pid, bool) or not pid_alive(pid):
        return False
    seen = handover.runs_rotator(pid)
    if seen is not None:
        return seen
    try:  # no /proc (macOS)
        return any(handover.ROTATOR_MODULE in a for a in psutil.Process(pid).cmdline())
    except Exception:
        return True   # alive and unreadable: assume it is ours, never start a second one


def _since_state(ledger_path):
    """``(used, retried)``: a prompt came after the session's latest state change; the watchdog
    already re-spawned its rotator once."""
    last_transition = last_prompt = None
    retried = False
    for rec in ledger.read(ledger_path):
        ev = rec.get("ev")
        if ev == "transition":
            last_transition = rec.get("ts")
        elif ev == "prompt":
            last_prompt = rec.get("ts")
        elif ev == "watchdog_retry_rotation":
            retried = True
    used = (isinstance(last_prompt, (int, float)) and isinstance(last_transition, (int, float))
            and last_prompt > last_transition)
    return used, retried


class _Typer:
    """Typing into one pane the rotator's way: quiet first, each burst only if still quiet."""

    def __init__(self, executor, pane, action):
        self.ex, self.pane, self.action = executor, pane, action

    def check(self):
        why = self.ex._holder_problem(self.action, self.pane.socket_path, self.pane.pane_id)
        if why:
            raise _Gone(why)

    def quiet(self):
        """tmux's activity stamp when no client key came for ``watchdog_quiet_s``, else None."""
        stamp = self.pane.activity()
        # The stamp has whole seconds: a key at stamp + 0.99 still has the same stamp.
        return stamp if time.time() >= stamp + 1 + self.ex.settings.quiet else None

    def box(self):
        return self.pane.input_text(self.pane.capture())

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def take_back(self, sent):
        """Remove our text from the front of the box (the user typed behind it); theirs stays.

        In batches of a few keys, a pause between them: observed on 2.1.332, back-to-back
        batches of ``C-a DC×8 C-e`` removed the first 8 characters of 470 and nothing more;
        50 ms apart they removed exactly ours (``C-a`` goes to the start of the logical line,
        not of the wrapped row)."""
        left = len(sent)
        while left > 0:
            n = min(KEYS_PER_CALL - 2, left)
            self.check()
            self.pane.press("C-a", *["DC"] * n, "C-e")
            left -= n
            time.sleep(KEY_BATCH_GAP_S)

    def entered(self, sent, stamp):
        """After our Enter: True once the box no longer starts with ``sent``; None when the user's
        keys joined it (the Enter did not take); False when it is still there alone after
        ``SUBMIT_S`` (Enter pressed once more meanwhile, if still quiet)."""
        deadline = time.monotonic() + SUBMIT_S
        again = True
        while time.monotonic() < deadline:
            box = _squash(self.box())
            if not box.startswith(_squash(sent)):
                return True
            if box != _squash(sent):
                return None
            if again and time.monotonic() > deadline - SUBMIT_S / 2:
                again = False
                self.check()
                self.pane.press_if_quiet(stamp, "Enter")
            time.sleep(0.02)
        return False

    def submit(self, text, verb):
        """Type ``text`` into the empty box and Enter it: ``(outcome, detail)``."""
        stamp = self.quiet()
        if stamp is None:
            return "deferred", "keys from the user a moment ago"
        if self.box():
            return "deferred", "text typed in the prompt box"
        self.check()
        # Text and Enter in one tmux step (see Pane.submit_if_quiet): the user's keys land
        # wholly before it (nothing sent) or after our Enter, never between.
        sent = self.pane.submit_if_quiet(text, stamp, bracketed=not text.startswith("/"))
        if sent is None:
            return "deferred", "a key arrived"
        took = self.entered(sent, stamp)
        if took is None:
            self.take_back(sent)
            return "deferred", "the user typed behind our text: ours taken back"
        if not took:
            self.take_back(sent)
            return "failed", "Enter did not take: ours taken back"
        return "done", "%s %d chars: %s" % (verb, len(sent), sent[:120])

    def resubmit(self, box):
        """Enter the turn's prompt that our Escape put back in the box."""
        stamp = self.quiet()
        if stamp is None:
            return "deferred", "keys from the user a moment ago"
        self.check()
        if not self.pane.press_if_quiet(stamp, "Enter"):
            return "deferred", "a key arrived"
        took = self.entered(box, stamp)
        if took:
            return "done", "interrupted and resubmitted the turn's prompt (%d chars)" % len(box)
        if took is None:
            return "idle", "interrupted; the user typed after the turn's prompt: left alone"
        return "failed", "interrupted; Enter on the turn's prompt did not take"


class Executor:
    """Carries out planned actions; each returns ``(outcome, detail)``.

    outcome: ``done``, ``deferred`` (nothing done, try again), ``failed`` or
    ``gone`` (the target vanished).  Anything but ``deferred`` is counted.
    """

    def __init__(self, settings, procs=None, push_fn=None):
        self.settings = settings
        self.procs = procs or ProcessTable()
        self.push = push if push_fn is None else push_fn
        self._power = None   # (Popen, started)

    def run(self, action, now=None):
        now = time.time() if now is None else now
        try:
            return getattr(self, "_" + action.kind)(action, now)
        except Exception as e:  # one bad action must not stop the daemon
            log.write(LOG, "action %s on %s crashed: %r" % (action.kind, action.name, e))
            return "failed", "%s: %s" % (type(e).__name__, str(e)[:200])

    # -- panes -------------------------------------------------------------

    def _pane(self, action):
        """The session's tmux Pane, checked to really hold its Claude process; (pane, why-not)."""
        if not action.pane:
            return None, "no tmux pane recorded"
        sock, pane_id = action.pane
        try:
            pane = Pane(sock, pane_id)
        except ValueError as e:
            return None, str(e)
        why = self._holder_problem(action, sock, pane_id)
        return (None, why) if why else (pane, None)

    def _holder_problem(self, action, sock, pane_id):
        """Why the pane is not (or no longer) the one to type into; None when it is."""
        holder = pane_pid(sock, pane_id)
        if holder is None:
            return "tmux pane %s is gone" % pane_id
        proc = self.procs.find(action.pid, action.registered_at)
        if proc is None:
            return "Claude process %s is gone" % action.pid
        try:
            family = {proc.pid} | {p.pid for p in proc.parents()}
        except Exception:
            family = {proc.pid}
        if holder not in family:
            return "tmux pane %s does not hold pid %s" % (pane_id, action.pid)
        return None

    def _with_digest(self, text):
        return with_digest(text, digest(self.settings))

    def _nudge(self, action, now):
        outcome, detail = self._bring_back(action, lambda: self._with_digest(action.text), interrupt=False)
        if outcome == "done":
            self.push("session-nudged", text=action.why, slug=action.slug, session=action.number)
        return outcome, detail

    def _escalate(self, action, now):
        outcome, detail = self._bring_back(action, lambda: self._with_digest(action.text), interrupt=True)
        if action.escaped or outcome == "failed":   # a pane found idle (the turn was not running) is no news
            self.push("session-escalated", text="frozen turn: %s; %s" % (action.why, detail), slug=action.slug,
                      session=action.number)
        return outcome, detail

    def _bring_back(self, action, text_fn, interrupt):
        """Get a stopped or frozen turn going again: ``(outcome, detail)``.

        * a busy pane: deferred, or (``interrupt``) one Escape, then as below;
        * after our Escape the box holds the turn's prompt (Claude Code puts it
          back when nothing had streamed yet): Enter resubmits it; any other text
          there is left alone; an empty box (``Interrupted``) gets ``text_fn()``;
        * an idle pane whose box holds text we did not put back: the user's,
          deferred; an idle empty box: ``text_fn()`` typed and submitted --
          except when we were to interrupt a running turn and it is not running
          (``idle``: nothing typed, the turn counts as over).
        """
        if action.host != "claude":  # (its screen, Escape and a resubmit are Claude Code's: nothing typed here)
            return "failed", "a %s session: the watchdog types into Claude Code's TUI only; look at it yourself" % (
                action.host)
        pane, why = self._pane(action)
        if pane is None:
            return "failed", why
        typer = _Typer(self, pane, action)
        try:
            screen = pane.capture()
            if not Pane.main_view(screen):
                return "deferred", "a subagent's view is in front"
            if not Pane.is_idle(screen):
                if not interrupt:
                    return "deferred", "prompt box busy"
                if Pane.input_text(screen):
                    return "deferred", "text typed in the prompt box while the turn runs"
                stamp = typer.quiet()
                if stamp is None:
                    return "deferred", "keys from the user a moment ago"
                typer.check()
                if not pane.press_if_quiet(stamp, "Escape"):
                    return "deferred", "a key arrived"
                action.escaped = action.interrupted = True
                wait = min(5.0, max(1.0, 10 * self.settings.interval))
                if not pane.wait_idle(timeout=wait, poll=0.05, settle=0.3, check=typer.check):
                    return "failed", "interrupted; still busy, nothing typed"
                screen = pane.capture()
            if interrupt and not action.interrupted:
                return "idle", "the pane is idle (the turn is not running): left alone"
            box = Pane.input_text(screen)
            if box and action.interrupted:
                if not _is_prompt(box, action):
                    return "idle", "interrupted; the box holds text that is not the turn's prompt: left alone"
                return typer.resubmit(box)
            if box:
                return "deferred", "text typed in the prompt box"
            return typer.submit(text_fn(), "interrupted and typed" if action.interrupted else "typed")
        except _Gone as e:
            return "gone", str(e)
        except TmuxError as e:
            return "failed", "tmux: %s" % str(e)[:200]

    # -- rotations -----------------------------------------------------------

    def _rotation_stuck(self, action, now):
        """Urgent push; re-spawn the rotator from its saved plan when that is safe (once per stay)."""
        retried, why = self._retry_rotation(action)
        if retried is None:
            outcome, detail = "skipped", "not retried: %s" % why
        else:
            outcome, detail = "done", "rotation retried (rotator pid %d)" % retried
        hint = "" if retried else "; type /clear in the session" if action.state == session.AWAITING_MANUAL_CLEAR else ""
        self.push("session-stuck", text="stuck in %s; %s%s" % (action.why, detail, hint), slug=action.slug,
                  session=action.number)
        return outcome, detail

    def _retry_rotation(self, action):
        """``(rotator pid, None)`` after a re-spawn, or ``(None, why not)``."""
        if not action.sdir:
            return None, "no session directory"
        plan_path = session.rotator_plan_path(action.sdir)
        try:
            with open(plan_path, encoding="utf-8") as f:
                plan = json.load(f)
        except (OSError, ValueError):
            return None, "no rotator plan (no tmux rotation to retry)"
        if not isinstance(plan, dict) or not plan.get("project_lock") or not plan.get("socket") \
                or not plan.get("pane"):
            return None, "the rotator plan is incomplete"
        if _is_rotator(action.rotator_pid):
            return None, "its rotator (pid %s) is still running" % action.rotator_pid
        if plan.get("claude_pid") != action.pid:
            return None, "the plan serves pid %s, the session runs pid %s" % (plan.get("claude_pid"), action.pid)
        why = self._holder_problem(action, plan["socket"], plan["pane"])
        if why:
            return None, why
        with RecordEdit(action.sdir, plan["project_lock"]) as rec:
            if rec.get("state") != action.state:
                return None, "it moved on (%s)" % rec.get("state")
            if _is_rotator(rec.get("rotator_pid")):
                return None, "its rotator (pid %s) is still running" % rec.get("rotator_pid")
            led = session.ledger_path(action.sdir)
            used, retried = _since_state(led)
            if retried:
                return None, "already retried once"
            if used:
                return None, "the session was used after the rotation stopped"
            if rec["state"] == session.AWAITING_MANUAL_CLEAR:
                session.transition(action.sdir, rec, session.ROTATING, "watchdog: retrying the rotation once")
            logf = os.path.join(paths.ensure_dir(paths.logs_dir()), "rotator.log")
            pid = rotator.spawn(plan_path, log_path=logf)
            rec["rotator_pid"] = pid
            session.save(action.sdir, rec)
        try:
            ledger.append(led, {"ev": "watchdog_retry_rotation", "rotator_pid": pid, "from": action.state})
        except OSError:
            pass
        return pid, None

    # -- processes ---------------------------------------------------------

    def _signal(self, action, signum, label):
        proc = self.procs.find(action.pid, action.registered_at)
        if proc is None:
            return "gone", "pid %s is gone or no longer that Claude process" % action.pid
        try:
            proc.send_signal(signum)   # psutil refuses a pid that was reused meanwhile
        except psutil.NoSuchProcess:
            return "gone", "pid %s exited" % action.pid
        except psutil.AccessDenied:
            return "failed", "not allowed to signal pid %s" % action.pid
        self.push("session-killed", text="%s: %s sent to pid %s" % (action.why, label, action.pid),
                  slug=action.slug, session=action.number)
        return "done", "%s to pid %s" % (label, action.pid)

    def _terminate(self, action, now):
        return self._signal(action, signal.SIGTERM, "SIGTERM")

    def _kill(self, action, now):
        return self._signal(action, signal.SIGKILL, "SIGKILL")

    # -- pushes and the power cycle ------------------------------------------

    def _push_dead(self, action, now):
        sent = self.push("session-dead", text=action.why, slug=action.slug, session=action.number)
        return "done", "pushed" if sent else "no push configured"

    def _push_server(self, action, now):
        sent = self.push(action.event, text=action.text)
        return "done", "pushed" if sent else "no push configured"

    def _push_failed(self, action, now):
        event = "session-limited" if action.event == LIMITED else "session-failed"
        sent = self.push(event, text=action.why, slug=action.slug, session=action.number)
        return "done", "pushed" if sent else "no push configured"

    def _push_notice(self, action, now):
        sent = self.push("session-limited", text=action.why, slug=action.slug, session=action.number)
        return "done", "pushed" if sent else "no push configured"

    def _power_cycle(self, action, now):
        if self._power is not None:
            return "deferred", "the previous power cycle is still running"
        logf = os.path.join(paths.ensure_dir(paths.logs_dir()), "watchdog-power-cycle.log")
        fd = os.open(logf, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, ("--- %s UTC: %s\n" % (fmt_time(now), action.why)).encode())
            proc = subprocess.Popen(["/bin/sh", "-c", self.settings.power_cycle_command], stdin=subprocess.DEVNULL,
                                    stdout=fd, stderr=fd, start_new_session=True, close_fds=True)
        finally:
            os.close(fd)
        self._power = (proc, now)
        self.push("server-power-cycle", text="%s: running the power-cycle command" % action.why)
        return "done", "started pid %d (output in logs/watchdog-power-cycle.log)" % proc.pid

    def tick(self, now):
        """Reap a finished power cycle (or kill one past its time); a ledger record or None."""
        if self._power is None:
            return None
        proc, started = self._power
        code = proc.poll()
        if code is None and now - started < POWER_CYCLE_TIMEOUT:
            return None
        if code is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            code = "killed after %s" % fmt_span(now - started)
        self._power = None
        return {"ev": "power_cycle_done", "pid": proc.pid, "exit": code, "took_s": round(now - started, 3)}

    def close(self):
        """On shutdown: leave a running power cycle alone (it is in its own session)."""
        self._power = None


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
