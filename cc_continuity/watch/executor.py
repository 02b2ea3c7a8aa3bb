"""What the watchdog does about what it sees -- always bounded: the :class:`Executor` of the planner's actions.

It carries an action out (tmux, signals, pushes, the power-cycle command) and
reports ``(outcome, detail)`` for :meth:`.planner.Brain.record`.

What is typed into a pane and when: only into the pane that holds the session's
Claude process, only into an empty box of the main view, only when no key came
from an attached client for a moment, and each burst (the text, the Enter, the
Escape) only if still none came (tmux ``if-shell`` on ``session_activity``, as
the rotator types).  Escape is pressed only on a busy pane, once per attempt;
what it puts back in the box (the interrupted turn's prompt, byte-identical to
typed text) is recognised because the watchdog pressed it and the ledger holds
the turn's prompt: Enter resubmits it.
"""


import json
import os
import re
import shutil
import signal
import subprocess
import time

import psutil

from .. import ledger, log, notify, paths, session
from ..rotation import handover
from ..project import RecordEdit
from ..procs import pid_alive
from ..redact import redact
from ..tmux import KEYS_PER_CALL, Pane, TmuxError, rotator
from . import LOG
from .liveness import LIMITED, ProcessTable

from .planner import fmt_span, fmt_time, with_digest

DIGEST_LINES = 8
DIGEST_CHARS = 300
POWER_CYCLE_TIMEOUT = 1800.0
SUBMIT_S = 1.0              # an Enter that took empties the box within this
KEY_BATCH_GAP_S = 0.05      # between two key batches (Claude Code drops batches that follow at once)
# The watchdog's push events and, for each, the notifier's names to use, best first: the
# first one :mod:`notify` knows wins, so an event it does not have (yet) still gets through
# under the closest one it does (an escalation as "blocked": urgent, needs you).
PUSH_EVENTS = {
    "server-down": ("server-down",),
    "server-up": ("server-up",),
    "server-degraded": ("server-degraded", "server-down"),
    "server-window": ("server-window", "server-up"),
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
