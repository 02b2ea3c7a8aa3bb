"""The watchdog loop: one instance (flock), a cycle every ``watchdog_interval_s``, clean SIGTERM.

A cycle: probe the model server, scan the sessions, let :class:`Brain` plan,
let :class:`Executor` act, write every probe result, change and action to the
watchdog ledger, and save ``state.json`` (what ``watchdog status`` reads, and
the action counters a restart must not forget).  The config file is re-read
when it changes; a broken edit keeps the last good settings.

Started a second time, ``run`` sees the lock held, says who holds it and exits
0 -- so a service manager restarting it, or a user starting it by hand next to
the service, is harmless.
"""

import json
import os
import signal
import sys
import threading
import time

from .. import atomic, ledger, log, paths
from ..lock import Lock, LockTimeout, holder_pid
from . import LOG, Settings, ledger_path, pid_path, state_dir, state_path
from .executor import Executor, push
from .planner import Brain
from .liveness import ProcessTable, Scanner, TranscriptWatch
from . import window
from .probe import Prober
from .unclaimed import UnclaimedWatch

LEDGER_MAX_BYTES = 4 * 1024 * 1024
LEDGER_KEEP = 3      # rotated generations kept next to the live ledger


def load_state():
    """The last saved ``state.json`` (dict) or None."""
    try:
        with open(state_path(), "rb") as f:
            doc = json.loads(f.read())
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def rotate_ledger(path, max_bytes=LEDGER_MAX_BYTES, keep=LEDGER_KEEP):
    """Move a ledger past ``max_bytes`` aside (``ledger-<stamp>.jsonl`` + head); keep ``keep`` old ones."""
    try:
        if os.stat(path).st_size <= max_bytes:
            return None
    except OSError:
        return None
    d, base = os.path.split(path)
    stem = base[:-len(".jsonl")]
    new = atomic.aside_name(d, stem + "-", ".jsonl")
    os.replace(path, new)
    try:
        os.replace(path + ".head", new + ".head")
    except FileNotFoundError:
        pass
    old = sorted(f for f in os.listdir(d) if f.startswith(stem + "-") and f.endswith(".jsonl"))
    atomic.keep_newest(d, old, keep, extras=(".head",))
    return new


class Daemon:
    """The watchdog; ``run()`` for the real loop, ``cycle()`` for one deterministic step."""

    def __init__(self, settings=None, clock=time.time, push_fn=None, watch_transcripts=True, reload=None):
        self.fixed_settings = not reload if reload is not None else settings is not None
        self.settings = settings or Settings.load()
        self.clock = clock
        self._config_mtime = self._config_stamp()
        self.stop_event = threading.Event()
        self.procs = ProcessTable()
        self.transcripts = TranscriptWatch(clock=clock) if watch_transcripts else None
        self.scanner = Scanner(self.procs, self.transcripts, stall=self.settings.stall)
        self.prober = Prober(self.settings)
        saved = load_state() or {}
        self.brain = Brain(self.settings, saved.get("brain"))
        self.executor = Executor(self.settings, self.procs, push_fn)
        self.unclaimed = UnclaimedWatch(push if push_fn is None else push_fn, saved.get("unclaimed"))
        self._push = push if push_fn is None else push_fn
        self._window_asked = False  # the probed server's window: asked once it is up, again after each outage
        self.started = None
        self.cycles = 0
        self._work_expected = False
        self._ledger = ledger_path()

    # -- settings ----------------------------------------------------------

    @staticmethod
    def _config_stamp():
        try:
            st = os.stat(paths.config_file())
            return st.st_mtime_ns, st.st_size
        except OSError:
            return None

    def _reload(self):
        if self.fixed_settings:
            return
        stamp = self._config_stamp()
        if stamp == self._config_mtime:
            return
        self._config_mtime = stamp
        try:
            new = Settings.load()
        except Exception as e:   # a half-saved or broken config: keep going with the last good one
            log.write(LOG, "config not reloaded, keeping the previous settings: %s" % e)
            self._note({"ev": "config_error", "error": str(e)[:300]})
            return
        self.apply(new)
        self._note({"ev": "config_reloaded"})

    def apply(self, settings):
        self.settings = settings
        self.scanner.stall = settings.stall
        self.prober.settings = settings
        self.brain.settings = settings
        self.brain.server.fail_threshold = max(1, int(settings.fail_threshold))
        self.executor.settings = settings

    # -- one cycle -----------------------------------------------------------

    def _note(self, record):
        try:
            paths.ensure_dir(state_dir())
            ledger.append(self._ledger, record)
        except OSError as e:
            log.write(LOG, "ledger write failed: %s" % e)

    def cycle(self, now=None):
        """One probe + scan + plan + act step; returns ``[(action, outcome, detail)]``."""
        self._reload()
        probe = None
        if self.settings.probing:
            probe = self.prober.probe(self.clock() if now is None else now, work_expected=self._work_expected)
            self._note({"ev": "probe", "ok": probe.ok, "ms": probe.ms, "health": probe.health,
                        "progress": probe.progress})
        now = self.clock() if now is None else now
        sessions = self.scanner.scan(now)
        self._work_expected = any(o.alive and o.mid_turn and not o.finished for o in sessions)
        actions = self.brain.cycle(now, probe, sessions)
        back = False
        for change in self.brain.drain_changes():
            self._note(change)
            if change["ev"] == "server":
                log.write(LOG, "model server %s -> %s (%s)" % (change["from"], change["to"], change.get("why")))
                back = back or change["to"] == "UP"
        if probe is not None and probe.ok and (back or not self._window_asked):
            self._window_asked = True
            self._server_window()
        done = []
        for action in actions:
            outcome, detail = self.executor.run(action, now)
            if self.brain.record(action, outcome, self.clock(), detail):
                self._note(dict(ev="action", outcome=outcome, detail=detail, **action.to_json()))
                log.write(LOG, "%s %s: %s -> %s (%s)" % (action.kind, action.name or "-", action.why, outcome, detail))
            done.append((action, outcome, detail))
        for ref, outcome in self.unclaimed.tick(now):
            self._note({"ev": "unclaimed", "ref": ref, "outcome": outcome})
            log.write(LOG, "published checkpoint %s: %s" % (ref, outcome))
        finished = self.executor.tick(now)
        if finished:
            self._note(finished)
            log.write(LOG, "power cycle finished: %s" % finished)
        self.cycles += 1
        self.save(now)
        rotate_ledger(self._ledger)
        return done

    def _server_window(self):
        """The server is up (the watchdog's start, or after an outage): a context size other than
        cc-continuity's window is said once (watch/window.py)."""
        try:
            text = window.check(self.settings)
        except Exception as e:  # the watchdog goes on whatever the question met
            log.write(LOG, "server window not asked: %s" % type(e).__name__)
            return
        if text:
            self._note({"ev": "server_window", "text": text[:300]})
            log.write(LOG, text)
            self._push("server-window", text=text)

    def state_doc(self, now):
        s = self.settings
        return {
            "version": 1,
            "at": now,
            "daemon": {"pid": os.getpid(), "started": self.started, "cycles": self.cycles,
                       "interval_s": s.interval},
            "status": self.brain.status(now),
            "brain": self.brain.to_json(),
            "unclaimed": self.unclaimed.to_json(),
        }

    def save(self, now):
        try:
            paths.ensure_dir(state_dir())
            atomic.write_text(state_path(), json.dumps(self.state_doc(now), separators=(",", ":")), fsync=False)
        except OSError as e:
            log.write(LOG, "state not saved: %s" % e)

    # -- the loop ------------------------------------------------------------

    def _signals(self):
        """SIGTERM / SIGINT / SIGHUP end the loop after the current cycle; returns the old handlers."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        old = {}
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            old[sig] = signal.signal(sig, lambda signum, frame: self.stop_event.set())
        return old

    def run(self, once=False, max_cycles=None, out=None):
        """The daemon's life.  0 after a clean stop (or when another instance runs); a crash raises."""
        out = out or sys.stderr
        paths.ensure_dir(paths.home())
        paths.ensure_dir(state_dir())
        try:
            lock = Lock(pid_path(), timeout=0).acquire()
        except LockTimeout:
            out.write("cc-continuity watchdog: already running (pid %s); not starting a second one\n"
                      % (holder_pid(pid_path()) or "?"))
            return 0
        code = 0
        handlers = {}
        try:
            handlers = self._signals()
            self.started = self.clock()
            if self.transcripts is not None:
                self.transcripts.start()
            self._note({"ev": "start", "pid": os.getpid(), "probing": self.settings.probing,
                        "interval_s": self.settings.interval})
            log.write(LOG, "started pid %d (interval %gs, server probe %s)"
                      % (os.getpid(), self.settings.interval, "on" if self.settings.probing else "off"))
            if once:
                out.write("cc-continuity watchdog: one cycle as pid %d\n" % os.getpid())
            else:
                out.write("cc-continuity watchdog: running as pid %d, every %gs; SIGTERM stops it\n"
                          % (os.getpid(), self.settings.interval))
            out.flush()
            last_error = None
            while not self.stop_event.is_set():
                t0 = time.monotonic()
                try:
                    self.cycle()
                    last_error = None
                except Exception as e:   # e.g. a state dir gone unreadable: say so once, keep watching
                    if repr(e) != last_error:
                        last_error = repr(e)
                        log.write(LOG, "cycle failed: %r" % e)
                        self._note({"ev": "cycle_error", "error": repr(e)[:300]})
                    self.cycles += 1
                if once or (max_cycles is not None and self.cycles >= max_cycles):
                    break
                self.stop_event.wait(max(0.0, self.settings.interval - (time.monotonic() - t0)))
        except Exception as e:
            code = 1
            log.write(LOG, "crashed: %r" % e)
            self._note({"ev": "crash", "error": repr(e)[:300]})
            raise
        finally:
            if self.transcripts is not None:
                self.transcripts.stop()
            self.prober.close()
            self.executor.close()
            self._note({"ev": "stop", "pid": os.getpid(), "cycles": self.cycles, "code": code})
            log.write(LOG, "stopped pid %d after %d cycles" % (os.getpid(), self.cycles))
            self.save(self.clock())
            lock.release()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        return code

    def stop(self):
        self.stop_event.set()
