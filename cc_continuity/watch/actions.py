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
action past its cap.  A nudge that finds the prompt box busy or half-typed is
*deferred*: nothing was done, nothing is counted, it is tried again next cycle.
"""

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

from .. import log, paths
from ..redact import redact
from . import LOG
from .liveness import ACTIVE, DEAD, EXIT_HUNG, STALLED, ProcessTable, classify
from .probe import DEGRADED, DOWN, UNKNOWN, UP, ServerState

NUDGE = "nudge"
ESCALATE = "escalate"
TERMINATE = "terminate"
KILL = "kill"
PUSH_DEAD = "push_dead"
PUSH_SERVER = "push_server"
POWER_CYCLE = "power_cycle"

# The actions that can follow from each class (for "next allowed action" in status).
FOLLOW_UPS = {STALLED: (NUDGE, ESCALATE), EXIT_HUNG: (TERMINATE, KILL), DEAD: (PUSH_DEAD,)}

PREFIX = "[cc-continuity watchdog]"
INTERRUPT_KEY = "Escape"
DIGEST_LINES = 8
DIGEST_CHARS = 300
POWER_CYCLE_TIMEOUT = 1800.0
DAY = 86400.0
FORGET_AFTER = DAY          # memory of a session no longer registered


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
    text: str = None             # typed into the pane (nudge / escalate) or pushed (server)
    event: str = None            # push event (server changes)

    def to_json(self):
        return {k: v for k, v in self.__dict__.items() if v is not None and k not in ("registered_at", "slug")}


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


def with_digest(text, digest_text):
    """The typed text plus the redacted log digest, when there is one."""
    return text + (" Server log: %s" % digest_text if digest_text else "")


# -- the planner -------------------------------------------------------------------

def _is_time(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _clean_memory(mem):
    """A session's saved memory with anything malformed dropped (the file may have been edited)."""
    gates = mem.get("gates") if isinstance(mem.get("gates"), dict) else {}
    mem["gates"] = {k: [g[0], g[1]] for k, g in gates.items()
                    if isinstance(g, list) and len(g) == 2 and isinstance(g[0], int) and not isinstance(g[0], bool)
                    and (g[1] is None or _is_time(g[1]))}
    for key in ("since", "seen", "terminated_at"):
        if not _is_time(mem.get(key)):
            mem[key] = None
    if not isinstance(mem.get("last_action"), dict):
        mem["last_action"] = None
    return mem


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
            cls = classify(obs, now, self.settings.stall, self.settings.exit_hang)
            outage = self._outage_behind(obs, now) if cls in (ACTIVE, STALLED) else None
            if outage is not None:
                cls = STALLED
            if mem.get("class") != cls:
                self.changes.append({"ev": "class", "session": obs.name, "key": obs.key,
                                     "from": mem.get("class"), "to": cls})
                mem["class"], mem["since"] = cls, now
            if cls != EXIT_HUNG:
                mem["terminated_at"] = None
            actions.extend(self._plan(obs, mem, cls, outage, now))
        actions.extend(self._power_cycle(now))
        for key in [k for k, m in self.sessions.items() if k not in seen and now - (m.get("seen") or 0) > FORGET_AFTER]:
            del self.sessions[key]
        return actions

    def _memory(self, obs, now):
        mem = self.sessions.get(obs.key)
        if mem is None:
            mem = self.sessions[obs.key] = {"name": obs.name, "class": None, "since": now, "gates": {},
                                            "last_action": None, "terminated_at": None}
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
                      pid=obs.pid, registered_at=obs.registered_at, pane=obs.pane, **kw)

    def _plan(self, obs, mem, cls, outage, now):
        s = self.settings
        key = obs.key
        if cls == STALLED:
            if outage is not None and self.allowed(key, NUDGE, now):
                why = "turn stopped while the model server was %s" % outage_text(outage[0], outage[1])
                return [self._action(NUDGE, obs, why, text=nudge_text(outage[0], outage[1]))]
            server_up = not s.probing or self.server.state == UP
            if not server_up:
                return []   # the server is the problem: wait for it, then nudge
            marks = [t for t in (obs.last_progress, obs.turn_started) if t is not None]
            quiet_from = max(marks) if marks else now
            if s.probing:
                quiet_from = max(quiet_from, self.server.since or now)
            quiet = now - quiet_from
            if quiet >= s.stall and self.allowed(key, ESCALATE, now):
                why = "no progress for %s with the model server up" % fmt_span(quiet)
                return [self._action(ESCALATE, obs, why, text=escalate_text(quiet))]
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
        last = mem.get("last_action") or {}
        if outcome == "deferred":
            news = not (last.get("kind") == action.kind and last.get("outcome") == "deferred"
                        and last.get("detail") == detail)
            mem["last_action"] = entry
            return news
        gate = mem.setdefault("gates", {}).setdefault(action.kind, [0, None])
        gate[0] += 1
        gate[1] = now
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
        rows = []
        for key, mem in sorted(self.sessions.items(), key=lambda kv: kv[1].get("name") or kv[0]):
            if self.last_cycle is not None and mem.get("seen") != self.last_cycle:
                continue   # no longer registered (remembered a while for its counters only)
            cls = mem.get("class")
            nxt = {}
            for kind in FOLLOW_UPS.get(cls, ()):
                when = self.next_allowed(key, kind, now)
                nxt[kind] = None if when is None else max(when, now)
            rows.append({"key": key, "name": mem.get("name"), "class": cls, "since": mem.get("since"),
                         "pid": mem.get("pid"), "last_action": mem.get("last_action"), "next": nxt,
                         "counts": {k: v[0] for k, v in (mem.get("gates") or {}).items()}})
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
}


def push_name(event, known):
    """The notifier's name for watchdog ``event`` given its ``known`` events, or None."""
    return next((n for n in PUSH_EVENTS.get(event, (event,)) if n in known), None)


def push(event, text="", slug=None, session=None):
    """One phone push through :func:`notify.emit`; never raises (False when not sent)."""
    try:
        from .. import notify

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
    import shutil

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
        from ..tmux import Pane

        if not action.pane:
            return None, "no tmux pane recorded"
        sock, pane_id = action.pane
        try:
            pane = Pane(sock, pane_id)
        except ValueError as e:
            return None, str(e)
        holder = pane_pid(sock, pane_id)
        if holder is None:
            return None, "tmux pane %s is gone" % pane_id
        proc = self.procs.find(action.pid, action.registered_at)
        if proc is None:
            return None, "Claude process %s is gone" % action.pid
        try:
            family = {proc.pid} | {p.pid for p in proc.parents()}
        except Exception:
            family = {proc.pid}
        if holder not in family:
            return None, "tmux pane %s does not hold pid %s" % (pane_id, action.pid)
        return pane, None

    def _wait_input(self, pane, want_empty, timeout=2.0):
        deadline = time.monotonic() + timeout
        while True:
            text = pane.input_text(pane.capture())
            if (text == "") == want_empty or time.monotonic() >= deadline:
                return text
            time.sleep(0.05)

    def _type_and_submit(self, pane, text):
        """Type ``text`` literally, then Enter (once more if the first Enter got lost)."""
        sent = pane.type_literal(text)
        self._wait_input(pane, want_empty=False)
        pane.press("Enter")
        if self._wait_input(pane, want_empty=True):
            pane.press("Enter")
        return sent

    def _with_digest(self, text):
        return with_digest(text, digest(self.settings))

    def _nudge(self, action, now):
        from ..tmux import Pane, TmuxError

        pane, why = self._pane(action)
        if pane is None:
            return "failed", why
        try:
            screen = pane.capture()
            if not Pane.is_idle(screen):
                return "deferred", "prompt box busy"
            if Pane.input_text(screen):
                return "deferred", "text typed in the prompt box"
            sent = self._type_and_submit(pane, self._with_digest(action.text))
        except TmuxError as e:
            return "failed", str(e)[:200]
        self.push("session-nudged", text=action.why, slug=action.slug, session=action.number)
        return "done", "typed %d chars: %s" % (len(sent), sent[:120])

    def _escalate(self, action, now):
        from ..tmux import Pane, TmuxError

        pane, why = self._pane(action)
        detail = why
        if pane is not None:
            try:
                pane.press(INTERRUPT_KEY)
                wait = min(5.0, max(0.5, 10 * self.settings.interval))
                if not pane.wait_idle(timeout=wait, poll=0.05, settle=min(0.3, wait / 3)):
                    detail = "interrupted; still busy, nothing typed"
                elif Pane.input_text(pane.capture()):
                    detail = "interrupted; text typed in the prompt box left alone"
                else:
                    sent = self._type_and_submit(pane, self._with_digest(action.text))
                    detail = "interrupted and typed %d chars" % len(sent)
            except TmuxError as e:
                detail = "tmux: %s" % str(e)[:200]
        self.push("session-escalated", text="frozen turn: %s; %s" % (action.why, detail), slug=action.slug,
                  session=action.number)
        return "done", detail

    # -- processes ---------------------------------------------------------

    def _signal(self, action, signum, label):
        import psutil

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

