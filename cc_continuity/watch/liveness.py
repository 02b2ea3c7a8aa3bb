"""What each registered session is doing, seen from outside Claude Code.

Three independent witnesses, none of which needs the session's cooperation:

* the process table (``psutil``): is the recorded Claude process still there,
  and is it really *that* process -- a pid is only trusted when the process
  started before the session registered it and looks like Claude;
* the transcript: growth is reported by filesystem events (the ``watchdog``
  package's Observer on the transcript directories), not by polling;
* the session ledger, followed incrementally: a ``prompt`` newer than the last
  ``stop`` (or ``stop_failure``: the turn died on an API error) is a turn in
  flight; ``tool`` lines are progress.

:func:`classify` turns one :class:`SessionObs` into a class: ``active``,
``waiting`` (for the user), ``failed`` (the last turn died on an API error the
session can be nudged past), ``limited`` (it died on a rate or usage limit:
Claude Code waits that out by itself, so it is left alone), ``stalled``
(mid-turn, no progress), ``dead`` (process gone mid-turn), ``exit_hung``
(alive after SessionEnd) or ``done``.
It is pure; :class:`Scanner` gathers the observations, cheaply enough to run
every few seconds over hundreds of sessions (a stat per file when nothing
changed).
"""

import os
import threading
import time
from dataclasses import dataclass

from .. import fastjson, log, session
from ..rotation import start
from ..project import all_projects
from . import LOG

ACTIVE = "active"
WAITING = "waiting"
FAILED = "failed"
LIMITED = "limited"
STALLED = "stalled"
DEAD = "dead"
EXIT_HUNG = "exit_hung"
DONE = "done"
CLASSES = (ACTIVE, WAITING, FAILED, LIMITED, STALLED, DEAD, EXIT_HUNG, DONE)

# StopFailure kinds that mean "a limit": Claude Code resumes by itself when it resets
# (quota_auto_resume_*), or the user must act (a plan's usage limit).  Never nudged.
LIMIT_ERRORS = frozenset(("rate_limit", "billing_error"))
# Kinds a nudge can get past once the server answers again (a dead, overloaded or erroring
# server; "unknown" is how a dropped connection can surface).  Anything else (a rejected
# request, a login, a missing model, max_output_tokens) is pushed, never typed at.
RETRY_ERRORS = frozenset(("server_error", "overloaded", "unknown"))

# Process start times are compared with wall-clock registration times; after the Linux
# correction below they agree to a few clock ticks.
CREATE_SLACK = 0.5
_READ_CHUNK = 1 << 20


@dataclass
class SessionObs:
    key: str                     # "<project key>/<NNN>": stable id for the watchdog's memory
    name: str                    # "<slug>-<NNN>"
    slug: str = None
    number: int = None
    state: str = None            # the session record's state
    pid: int = None
    alive: bool = None           # None: no pid recorded, nothing to check
    registered_at: float = None  # the latest time a process (re)registered this record
    mid_turn: bool = False
    turn_started: float = None   # the latest prompt
    last_progress: float = None  # latest prompt, tool, stop or transcript growth
    ended_at: float = None       # SessionEnd of the current life
    ended_reason: str = None
    resumed: bool = False        # ``claude --resume`` started a new life after the record ended
    shared_pid: bool = False     # another live record uses the same process (after /clear)
    tool_running: bool = False   # a child process started during this turn is still running
    pane: tuple = None           # (tmux socket, pane id)
    transcript: str = None
    failed_at: float = None      # StopFailure that ended the latest turn (None: it did not fail)
    failed_error: str = None     # its error kind (server_error, rate_limit, ...)
    prompt_text: str = None      # the latest prompt as the ledger keeps it (what Escape puts back)
    prompt_chars: int = None     # its full length
    notice_at: float = None      # the latest usage-limit notification (quota_auto_resume_*)
    notice: str = None           # its type
    state_since: float = None    # when the record entered its current state (ledger transition)
    percent: float = None        # context fill at the latest reading
    sdir: str = None             # the session's directory
    rotator_pid: int = None      # the tmux rotator spawned for its checkpoint
    driver: str = None           # what drives its rotations: the record's own word, else tmux / manual
    host: str = "claude"         # the agent it runs in (the record's "host"; older records are Claude Code's)
    flags: tuple = ()            # the record's flags (needs_human, done: `cc-continuity signal`)

    @property
    def finished(self):
        """This record's process life is over (SessionEnd seen, or ended/rotated and not resumed since)."""
        return self.ended_at is not None or (self.state in session.TERMINAL and not self.resumed)


def classify(obs, now, stall, exit_hang):
    """The liveness class of one session (pure)."""
    if obs.finished:
        if (obs.alive and obs.ended_at is not None and obs.ended_reason != "clear"
                and not obs.shared_pid and now - obs.ended_at >= exit_hang):
            return EXIT_HUNG
        return DONE
    if obs.alive is False:
        return DEAD if obs.mid_turn else DONE
    if not obs.mid_turn:
        if obs.failed_error is not None:
            return LIMITED if obs.failed_error in LIMIT_ERRORS else FAILED
        return WAITING
    if obs.tool_running:
        return ACTIVE
    if obs.last_progress is not None and now - obs.last_progress >= stall:
        return STALLED
    return ACTIVE


# -- the ledger ----------------------------------------------------------------

class LedgerFollower:
    """Reads only what was appended to a session ledger since the last call."""

    __slots__ = ("path", "ino", "offset", "partial", "prompt", "stop", "tool", "start", "end", "end_reason",
                 "failed", "failed_error", "prompt_text", "prompt_chars", "notice", "notice_type",
                 "transition", "percent")

    def __init__(self, path):
        self.path = path
        self.ino = None
        self._reset()

    def _reset(self):
        self.offset = 0
        self.partial = b""
        self.prompt = self.stop = self.tool = self.start = self.end = None
        self.end_reason = None
        self.failed = self.failed_error = self.prompt_text = self.prompt_chars = None
        self.notice = self.notice_type = self.transition = self.percent = None

    def update(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if st.st_ino != self.ino or st.st_size < self.offset:
            self.ino = st.st_ino
            self._reset()
        if st.st_size == self.offset:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(min(st.st_size - self.offset, _READ_CHUNK))
        except OSError:
            return
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            if line:
                self._line(line)

    def _line(self, raw):
        try:
            rec = fastjson.loads(raw)
            ev, ts = rec.get("ev"), rec.get("ts")
        except Exception:
            return
        if not isinstance(ts, (int, float)):
            return
        if ev == "prompt":
            self.prompt = ts
            text = rec.get("text")
            self.prompt_text = text[:start.PROMPT_KEEP] if isinstance(text, str) else None
            chars = rec.get("chars")
            self.prompt_chars = chars if isinstance(chars, int) and not isinstance(chars, bool) else None
        elif ev == "stop":
            self.stop = ts
            self._percent(rec)
        elif ev == "stop_failure":
            self.failed = ts
            kind = rec.get("error")
            self.failed_error = kind if isinstance(kind, str) and kind else "unknown"
        elif ev == "tool":
            self.tool = ts
            self._percent(rec)
        elif ev == "notification":
            kind = rec.get("type")
            if isinstance(kind, str) and kind.startswith("quota_auto_resume"):
                self.notice, self.notice_type = ts, kind
        elif ev == "transition":
            self.transition = ts
        elif ev == "session_start":
            self.start = ts
        elif ev == "session_end":
            self.end = ts
            self.end_reason = rec.get("reason") if isinstance(rec.get("reason"), str) else None

    def _percent(self, rec):
        pct = rec.get("percent")
        if isinstance(pct, (int, float)) and not isinstance(pct, bool):
            self.percent = pct

    @property
    def turn_end(self):
        """The latest end of a turn: a Stop or a StopFailure (None: none yet)."""
        ends = [t for t in (self.stop, self.failed) if t is not None]
        return max(ends) if ends else None

    @property
    def mid_turn(self):
        end = self.turn_end
        return self.prompt is not None and (end is None or self.prompt > end)

    @property
    def turn_failed(self):
        """The latest turn ended on an API error (a StopFailure after its prompt and the last Stop)."""
        return (self.failed is not None and (self.prompt is None or self.failed >= self.prompt)
                and (self.stop is None or self.failed > self.stop))


# -- processes ----------------------------------------------------------------

def looks_like_claude(name, cmdline):
    """True when the process name or its program says Claude (``claude``, ``claude.exe``,
    or a JavaScript runtime running the ``claude-code`` package)."""
    argv = list(cmdline or [])
    words = [name or ""] + [os.path.basename(argv[0] or "")] if argv else [name or ""]
    if len(argv) > 1 and os.path.basename(argv[0] or "") in _JS_RUNTIMES:
        words.append(argv[1] or "")
    return any("claude" in w.lower() for w in words)


_JS_RUNTIMES = frozenset(("node", "nodejs", "bun", "deno"))


def create_time_skew():
    """Seconds to add to psutil's ``create_time`` to get true wall-clock start times.

    On Linux psutil adds ticks-since-boot to ``btime``, which the kernel rounds
    down to a whole second, so every start time is early by up to a second --
    enough to mistake a pid recycled right after registration for the
    original.  The true boot time is ``time() - CLOCK_BOOTTIME``.  Elsewhere
    (macOS reports start times directly) there is nothing to correct.
    """
    # lazy: `status` loads this module (via fleet) and must run without psutil (a plugin's bin/
    # runs PATH's python3); ~11 ms
    import psutil

    if not hasattr(time, "CLOCK_BOOTTIME"):
        return 0.0
    try:
        return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME) - psutil.boot_time()
    except (OSError, psutil.Error):
        return 0.0


class ProcessTable:
    """psutil lookups with identity checks; one cached ``Process`` per pid."""

    def __init__(self):
        self._cache = {}   # pid -> (Process, create_time, looks_like_claude)
        self.skew = create_time_skew()

    def _entry(self, pid):
        import psutil  # lazy: optional (see create_time_skew)

        ent = self._cache.get(pid)
        if ent is not None:
            try:
                if ent[0].is_running() and ent[0].status() != psutil.STATUS_ZOMBIE:
                    return ent
            except psutil.Error:
                pass
            del self._cache[pid]
            return None
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    return None
                ent = (proc, proc.create_time() + self.skew, looks_like_claude(proc.name(), proc.cmdline()))
        except psutil.AccessDenied:
            return None  # not ours to watch, let alone signal
        except psutil.Error:
            return None
        self._cache[pid] = ent
        return ent

    def find(self, pid, registered_at):
        """The live ``psutil.Process`` of a session, or None when it is gone or not that process.

        It must have started before the session was (re)registered -- a pid
        recycled since then belongs to someone else -- and look like Claude.
        """
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
            return None
        ent = self._entry(pid)
        if ent is None:
            return None
        proc, created, claude = ent
        if not claude:
            return None
        if registered_at is not None and created > registered_at + CREATE_SLACK:
            return None
        return proc

    def tool_running(self, proc, since):
        """Does ``proc`` have a child that started at or after ``since`` (a tool of this turn)?"""
        import psutil  # lazy: optional (see create_time_skew)

        try:
            for child in proc.children():
                try:
                    if child.create_time() + self.skew >= since - CREATE_SLACK \
                            and child.status() != psutil.STATUS_ZOMBIE:
                        return True
                except psutil.Error:
                    continue
        except psutil.Error:
            return False
        return False

    def forget_except(self, pids):
        for pid in [p for p in self._cache if p not in pids]:
            del self._cache[pid]


# -- transcripts ----------------------------------------------------------------

class TranscriptWatch:
    """Remembers when each tracked transcript last grew, from filesystem events.

    One non-recursive watch per transcript directory; events for files we do
    not track are dropped in O(1).  Before the first event the file's mtime
    stands in.  The Observer thread only ever assigns into a dict.
    """

    def __init__(self, clock=time.time):
        self.clock = clock
        self._growth = {}     # path -> last growth time (None: no file yet)
        self._dirs = {}       # dir -> watch handle
        self._observer = None
        self._lock = threading.Lock()

    def start(self):
        from watchdog.observers import Observer  # lazy: optional, the daemon's only; ~14 ms

        if self._observer is None:
            self._observer = Observer()
            self._observer.daemon = True
            self._observer.start()
        return self

    def stop(self):
        obs, self._observer = self._observer, None
        if obs is not None:
            obs.stop()
            obs.join(timeout=5)
        self._dirs.clear()

    def _handler(self):
        from watchdog.events import FileSystemEventHandler  # lazy: optional (see start)

        watch = self

        class Growth(FileSystemEventHandler):
            def on_any_event(self, event):
                if event.event_type not in ("modified", "created", "closed", "moved"):
                    return
                path = getattr(event, "dest_path", None) if event.event_type == "moved" else event.src_path
                if isinstance(path, bytes):
                    path = os.fsdecode(path)
                if path in watch._growth:
                    watch._growth[path] = watch.clock()

        return Growth()

    def sync(self, paths):
        """Track exactly ``paths``: watch new directories, drop the ones no longer needed."""
        wanted = {os.path.normpath(p) for p in paths if p}
        with self._lock:
            for p in [p for p in self._growth if p not in wanted]:
                del self._growth[p]
            for p in wanted:
                if p not in self._growth:
                    try:
                        self._growth[p] = os.stat(p).st_mtime
                    except OSError:
                        self._growth[p] = None
            dirs = {os.path.dirname(p) for p in wanted}
            if self._observer is None:
                return
            for d in [d for d in self._dirs if d not in dirs]:
                try:
                    self._observer.unschedule(self._dirs.pop(d))
                except (KeyError, OSError, ValueError):
                    pass
            for d in dirs:
                if d not in self._dirs and os.path.isdir(d):
                    try:
                        self._dirs[d] = self._observer.schedule(self._handler(), d, recursive=False)
                    except OSError as e:
                        log.write(LOG, "cannot watch %s: %s" % (d, e))

    def last_growth(self, path):
        return self._growth.get(os.path.normpath(path)) if path else None

    @property
    def watched_dirs(self):
        return sorted(self._dirs)


# -- scanning the registry -------------------------------------------------------

class _Entry:
    __slots__ = ("mtime", "rec", "follower", "gone")

    def __init__(self, ledger_path):
        self.mtime = None
        self.rec = None
        self.follower = LedgerFollower(ledger_path)
        self.gone = False   # the process was seen gone; sticky until state.json changes


class Scanner:
    """Builds a :class:`SessionObs` for every registered session, reading only what changed."""

    def __init__(self, procs=None, transcripts=None, stall=600.0, dirs=None):
        self.procs = procs or ProcessTable()
        self.dirs = dirs     # a callable giving the sessions to look at (default: every registered one)
        self.transcripts = transcripts
        self.stall = stall
        self._entries = {}   # session dir -> _Entry
        self._bad = set()    # dirs already reported unreadable

    def session_dirs(self):
        """``[(project, number, dir)]`` for every registered session (or what ``dirs`` gives)."""
        if self.dirs is not None:
            return self.dirs()
        out = []
        for proj in all_projects():
            for n in proj.numbers():
                out.append((proj, n, proj.session_dir(n)))
        return out

    def scan(self, now=None):
        now = time.time() if now is None else now
        found = []
        seen = set()
        for proj, n, sdir in self.session_dirs():
            seen.add(sdir)
            obs = self._observe(proj, n, sdir, now)
            if obs is not None:
                found.append(obs)
        for sdir in [d for d in self._entries if d not in seen]:
            del self._entries[sdir]
        self._bad &= seen
        live_pids = {}
        for o in found:
            if o.alive and not o.finished:
                live_pids.setdefault(o.pid, []).append(o.key)
        for o in found:
            if o.alive and o.finished and o.pid in live_pids:
                o.shared_pid = True
        self.procs.forget_except({o.pid for o in found if o.alive})
        if self.transcripts is not None:
            self.transcripts.sync([o.transcript for o in found if o.transcript and o.alive is not False
                                   and not o.finished])
            for o in found:
                grew = self.transcripts.last_growth(o.transcript)
                if grew is not None:
                    o.last_progress = max(o.last_progress or 0.0, grew)
        for o in found:  # only a quiet turn is worth a (costly) look at the children
            if o.alive and o.mid_turn and not o.finished and o.last_progress is not None \
                    and now - o.last_progress >= self.stall:
                proc = self.procs.find(o.pid, o.registered_at)
                o.tool_running = bool(proc and self.procs.tool_running(proc, o.turn_started or o.last_progress))
        return found

    def _observe(self, proj, n, sdir, now):
        ent = self._entries.get(sdir)
        if ent is None:
            ent = self._entries[sdir] = _Entry(session.ledger_path(sdir))
        try:
            mtime = os.stat(session.state_path(sdir)).st_mtime_ns
        except OSError:
            return None
        if mtime != ent.mtime:
            try:
                ent.rec = session.load(sdir)
            except (OSError, ValueError) as e:
                if sdir not in self._bad:
                    self._bad.add(sdir)
                    log.write(LOG, "skipping unreadable session %s: %s" % (sdir, e))
                ent.rec = None
                ent.mtime = mtime
                return None
            self._bad.discard(sdir)
            ent.mtime = mtime
            ent.gone = False
        rec = ent.rec
        if rec is None:
            return None
        f = ent.follower
        f.update()
        created = rec.get("created") if isinstance(rec.get("created"), (int, float)) else None
        registered = max([t for t in (created, f.start) if t is not None], default=None)
        ended = rec.get("ended") if isinstance(rec.get("ended"), dict) else None
        ended_at = ended.get("at") if ended and isinstance(ended.get("at"), (int, float)) else None
        ended_reason = ended.get("reason") if ended else None
        if ended_at is None and f.end is not None:
            ended_at, ended_reason = f.end, f.end_reason
        resumed = ended_at is not None and f.start is not None and f.start > ended_at
        if resumed:
            ended_at = ended_reason = None   # that end belongs to an earlier life
        pid = rec.get("pid") if isinstance(rec.get("pid"), int) and not isinstance(rec.get("pid"), bool) else None
        if pid is None:
            alive = None
        elif ent.gone:
            alive = False
        else:
            alive = self.procs.find(pid, registered) is not None
            ent.gone = not alive
        progress = [t for t in (f.prompt, f.tool, f.stop, f.failed, f.start) if t is not None]
        sock, pane_id = rec.get("tmux_socket"), rec.get("tmux_pane")
        failed = f.turn_failed
        rotator = rec.get("rotator_pid")
        return SessionObs(
            key="%s/%03d" % (proj.key, n),
            name=rec.get("name") if isinstance(rec.get("name"), str) else proj.session_name(n),
            slug=proj.slug, number=n, state=rec.get("state"), pid=pid, alive=alive,
            registered_at=registered, mid_turn=f.mid_turn, turn_started=f.prompt,
            last_progress=max(progress) if progress else None,
            ended_at=ended_at, ended_reason=ended_reason, resumed=resumed,
            pane=(sock, pane_id) if isinstance(sock, str) and isinstance(pane_id, str) else None,
            transcript=rec.get("transcript") if isinstance(rec.get("transcript"), str) else None,
            failed_at=f.failed if failed else None, failed_error=f.failed_error if failed else None,
            prompt_text=f.prompt_text, prompt_chars=f.prompt_chars,
            notice_at=f.notice, notice=f.notice_type, state_since=f.transition or created,
            percent=f.percent, sdir=sdir,
            rotator_pid=rotator if isinstance(rotator, int) and not isinstance(rotator, bool) else None,
            driver=rec.get("driver") if isinstance(rec.get("driver"), str) else
            ("tmux" if isinstance(pane_id, str) and pane_id else "manual"),
            host=rec.get("host") if isinstance(rec.get("host"), str) else "claude",
            flags=tuple(sorted(k for k in rec["flags"] if isinstance(k, str))) if isinstance(rec.get("flags"), dict)
            else (),
        )
