"""The detached process that types ``/clear`` and the continuation into the agent's pane.

Why detached: the Stop hook that decides to rotate is part of the turn that must
end before ``/clear`` can run (typed while Claude is busy it is swallowed), so the
hook writes a plan and :func:`spawn` starts this process in its own session; it
outlives the hook and waits for the pane to go idle.

Usage: ``python -m cc_continuity.tmux.rotator <plan.json>``. The plan::

    {"socket": "/tmp/tmux-1000/default", "pane": "%3",
     "started_marker": "/abs/...",    # created by the successor's SessionStart hook
     "delivered_marker": "/abs/...",  # optional; created by its UserPromptSubmit hook
     "continuation": "Continuing from cp-004 (proj-005).",
     "ledger": "/abs/.../ledger.jsonl", "successor_name": "proj-005",
     "host": "codex",                 # optional: the agent's TUI (absent: Claude Code's)
     "reader": "cc_continuity.hosts.codex.screen:CodexScreen",  # its screen reader (module:Class; needed
                                      # for a host but Claude Code, whose reader is tmux/pane's ClaudeScreen)
     "claude_pid": 4242,              # optional: the agent process this rotation serves (Claude Code's, or
                                      # with host codex the Codex process its hooks ran under)
     "sdir": "/abs/...", "project_lock": "/abs/.../lock",   # optional: where to record a failure
     "draft_file": "/abs/.../draft.txt",                     # optional: where a kept draft goes
     "timeouts": {"idle_s": 120, "marker_s": 60, "delivery_s": 20, "type_s": 5,
                  "quiet_s": 1, "draft_s": 60},
     "retries": 3}

The agent's TUI is read and typed into through the pane's reader: the one the plan names
(``reader``, written by the host that started the rotation: ``hosts/ports.py``, Codex CLI's
``hosts.codex.screen.CodexScreen``), else Claude Code's :class:`~.pane.ClaudeScreen`.  So tmux/
knows no host's folder: the host below which it sits hands its reader over in the plan.
Codex differs in one step: its successor's SessionStart fires only at the thread's first
prompt (the continuation), so after ``/clear`` the rotator waits for the new, empty thread
on screen instead of the started marker, and the delivered marker proves the rest.

What it guarantees, and how:

* **It types only into the agent it serves.**  Before every keystroke batch
  the ``claude_pid`` must still be alive, the same process (start time) and the
  program in the pane or below it; otherwise it stops (a ``kill -9`` and a
  restart in the same pane must not get our ``/clear``).
* **Never a mixture of our text and the user's.**  It types only into an empty
  box after no attached client has sent a key for ``quiet_s``; the text and its
  Enter go in one tmux step, only if still no key arrived (see
  :meth:`Pane.submit_if_quiet`).  Should the Enter not take and the user type on,
  our text is taken back out once they pause (their characters stay).
* **Nothing the user types is lost.**  A prompt they submit goes where they sent
  it (the predecessor, or the successor as its first prompt - the continuation is
  then not needed).  Text left in the box unchanged for ``draft_s`` is kept: cut
  into the agent's kill ring (Claude Code: ``C-w`` batches; Codex: ``C-e C-u``; a
  draft that cannot be cut whole is put back and the rotation left to the user),
  written to ``draft_file`` (the successor's bootstrap quotes it) and put back with
  ``C-y`` into the successor's box.
* **A failure is never silent.**  The session moves from ROTATING to
  AWAITING_MANUAL_CLEAR (the status line asks for ``/clear``) and an urgent push
  says why.

``retries`` counts extra attempts per step after a failed one (0 = try once);
waiting for the user does not use them up.  A marker that already exists counts
as done, so re-running a plan after a crash never clears twice.  Every step goes
to the ledger as ``{"ev": "rotator", "step": …, "ms": …}``: ``begin, idle,
clear_sent, started, idle, continuation_sent, delivered, renamed`` on the happy
path (Codex: ``cleared`` in place of ``started``); ``held`` (the user typed), ``taken_back``, ``draft_kept``,
``draft_restored``, ``not_typed``/``stuck`` (before a retry) and ``failed``.
Exit status 0 on success, 1 on failure (also for an unusable plan: reported on
stderr and, when the plan names a ledger, as ``failed`` there).
"""

import fcntl
import hashlib
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import time

from .. import atomic, deps, errors, faults, ledger, notify, paths, procs, session
from ..project import RecordEdit
from ..rotation import handover
from .pane import KEYS_PER_CALL, ClaudeScreen, Pane, TmuxError

DEFAULT_TIMEOUTS = {"idle_s": 120.0, "marker_s": 60.0, "delivery_s": 20.0, "type_s": 5.0,
                    "quiet_s": 1.0, "draft_s": 60.0, "standby_s": 0.0}
DEFAULT_RETRIES = 3
MAX_RETRIES = 10
POLL_S = 0.05
DRAFT_POLL_S = 0.25
STANDBY_DELAY_S = 1.0
PANE_WATCH_S = 1.0  # standing by for the mod: how often the pane's program is asked of tmux
SUBMIT_S = 0.5  # an Enter that took empties the box within this
# Claude Code 2.1.331+: /clear typed while a subagent's view is in front asks first
# ("/clear acts on the main conversation, not this agent", starting on No).
SUBAGENT_CONFIRM = "acts on the main conversation"
HOSTS = ("claude", "codex")  # a plan's "host": whose TUI it types into
READER = re.compile(r"cc_continuity(\.[A-Za-z_]\w*)+:[A-Za-z_]\w*\Z")  # a plan's "reader": one of ours, module:Class
# A plan the previous version wrote names its host but no reader (the rotator chose it then): one release on,
# such a plan (a watchdog re-spawning a rotation saved before the upgrade) still gets its host's reader.
EARLIER_READERS = {"codex": "cc_continuity.hosts.codex.screen:CodexScreen"}
_REQUIRED = ("socket", "pane", "started_marker", "continuation", "ledger", "successor_name")
_ABSOLUTE = ("started_marker", "delivered_marker", "ledger", "sdir", "project_lock", "draft_file")

PlanError = errors.PlanError  # (defined with every error class, in errors.py)
RotationFailed = errors.RotationFailed  # (defined with every error class, in errors.py)
AgentGone = errors.AgentGone  # (defined with every error class, in errors.py)


def load_plan(path):
    """Read and validate a plan file; return it with defaults filled in."""
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except OSError as e:
        raise PlanError("cannot read plan %s: %s" % (path, e.strerror or e)) from None
    except ValueError as e:
        raise PlanError("plan %s is not valid JSON: %s" % (path, e)) from None
    if not isinstance(plan, dict):
        raise PlanError("plan %s is not a JSON object" % path)
    for key in _REQUIRED:
        if not isinstance(plan.get(key), str) or not plan[key].strip():
            raise PlanError("plan %s: %r must be a non-empty string" % (path, key))
    for key in _ABSOLUTE:
        value = plan.get(key)
        if value is not None and (not isinstance(value, str) or not os.path.isabs(value)):
            raise PlanError("plan %s: %r must be an absolute path" % (path, key))
    if plan.get("host", "claude") not in HOSTS:
        raise PlanError("plan %s: 'host' must be one of %s" % (path, ", ".join(HOSTS)))
    reader = plan.get("reader")
    if reader is None and plan.get("host", "claude") in EARLIER_READERS:
        reader = plan["reader"] = EARLIER_READERS[plan["host"]]
    if reader is not None:
        if not isinstance(reader, str) or not READER.match(reader):
            raise PlanError("plan %s: 'reader' must name a screen reader of cc-continuity (module:Class)" % path)
        try:
            reader_of(plan)
        except (ImportError, AttributeError) as e:
            raise PlanError("plan %s: its reader %s cannot be loaded: %s" % (path, reader, e)) from None
    elif plan.get("host", "claude") != "claude":
        raise PlanError("plan %s: host %s's TUI needs its screen reader ('reader')" % (path, plan["host"]))
    pid = plan.get("claude_pid")
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0):
        raise PlanError("plan %s: 'claude_pid' must be a positive integer" % path)
    timeouts = dict(DEFAULT_TIMEOUTS)
    given = plan.get("timeouts") or {}
    if not isinstance(given, dict):
        raise PlanError("plan %s: 'timeouts' must be an object" % path)
    for key, value in given.items():
        if key in timeouts:
            low_ok = key in ("quiet_s", "standby_s")  # zero allowed (tests; no mod to wait for)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not (0 <= value if low_ok else 0 < value) or value > 86400):
                raise PlanError("plan %s: timeouts.%s must be a number of seconds > 0" % (path, key))
            timeouts[key] = float(value)
    plan["timeouts"] = timeouts
    retries = plan.get("retries", DEFAULT_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise PlanError("plan %s: 'retries' must be an integer 0..%d" % (path, MAX_RETRIES))
    plan["retries"] = retries
    try:
        Pane(plan["socket"], plan["pane"])
    except ValueError as e:
        raise PlanError("plan %s: %s" % (path, e)) from None
    return plan


def reader_of(plan):
    """How the plan's agent TUI is read and typed into (a :class:`Pane`'s reader): the class its ``reader``
    names (``module:Class``), else Claude Code's."""
    name = plan.get("reader")
    if not name:
        return ClaudeScreen
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def _wait_for(predicate, timeout):
    """Poll ``predicate`` until true (return True) or ``timeout`` passes (return False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        time.sleep(min(POLL_S, deadline - now))


def _squash(text):
    return "".join(text.split())


def _box_holds(box, sent):
    """Does the input box show exactly ``sent``? Whitespace is ignored (wrapping, trimmed ends)."""
    want = _squash(sent)
    return bool(want) and _squash(box) == want


class AgentProcess:
    """The agent process a rotation serves (``name``: claude, codex): its pid and start time, checked
    against the pane."""

    def __init__(self, pid, name="claude"):
        self.pid = pid
        self.name = name
        self.started = procs.start_time(pid)
        if self.started is None:
            raise AgentGone("%s %d has exited" % (name, pid))

    def check(self, pane, pane_too=True):
        """Raise AgentGone unless this very process is alive and is (or runs under) the pane's program
        (``pane_too=False``: alive, without asking tmux)."""
        now = procs.start_time(self.pid)
        if now is None:
            raise AgentGone("%s %d has exited" % (self.name, self.pid))
        if now != self.started:
            raise AgentGone("%s %d has exited (its pid now belongs to another process)" % (self.name, self.pid))
        if not pane_too:
            return
        owner = pane.pane_pid()
        if owner != self.pid and owner not in procs.ancestors(self.pid):
            raise AgentGone("%s %d is no longer the program in pane %s" % (self.name, self.pid, pane.pane_id))


class Rotator:
    """Runs one plan against one pane. ``pane`` can be injected (tests, other drivers)."""

    def __init__(self, plan, pane=None, agent=None):
        self.plan = plan
        self.pane = pane or Pane(plan["socket"], plan["pane"], plan.get("tmux_bin"),
                                 reader=reader_of(plan))
        self.timeouts = plan["timeouts"]
        self.attempts = plan["retries"] + 1
        self.t0 = time.monotonic()
        self.agent = agent
        self._pane_watched = float("-inf")  # when _check last asked tmux
        self.draft = None  # the user's unsent text we cut from the predecessor's box
        # A rotator standing by for the mod has no hand-over until it wins the offered one
        # (handover.take_handover): until then the session's record is not its to change.
        self.owns = not (self.timeouts.get("standby_s") and plan.get("session_id"))

    def note(self, step, **fields):
        """Append one step to the predecessor's ledger; a ledger error never stops the handover."""
        record = {"ev": "rotator", "step": step, "ms": int((time.monotonic() - self.t0) * 1000)}
        record.update(fields)
        try:
            ledger.append(self.plan["ledger"], record)
        except Exception as e:  # keep going: the pane matters more than the record
            print("rotator: cannot write ledger %s: %s; record %r"
                  % (self.plan["ledger"], e, record), file=sys.stderr)

    def run(self):
        """Perform the hand-over; return the exit status (0 ok, 1 failed)."""
        reason = None
        try:
            with _pane_lock(self.plan):
                self.note("begin", pid=os.getpid(), pane=self.plan["pane"],
                          successor=self.plan["successor_name"])
                if self.agent is None and self.plan.get("claude_pid"):
                    self.agent = AgentProcess(self.plan["claude_pid"], self.pane.reader.name)
                self._clear()
                self._continue()
                self._restore_draft()
                self._rename()
            return 0
        except _Busy as e:
            self.note("failed", reason=str(e))
            return 1
        except RotationFailed as e:
            reason = str(e)
        except TmuxError as e:
            reason = "tmux: %s" % e
            try:
                self._check()  # a pane gone with its program: say which agent left it
            except AgentGone as gone:
                reason = "%s (%s)" % (gone, reason)
            except Exception:
                pass
        except SystemExit as e:  # SIGTERM
            reason = "terminated (%s)" % e.code
        except Exception as e:  # a bug or a missing module: say so where doctor and Stop look
            reason = "%s: %s" % (type(e).__name__, e)
        self.note("failed", reason=reason)
        if self.owns or self._offer_left_to_us():
            self._give_up(reason)
        return 1

    # -- guards -------------------------------------------------------------

    def _check(self, pane_every=0.0):
        """Before every keystroke batch: the pane still runs the agent we serve.  ``pane_every`` (standing by
        while the mod hands over: PANE_WATCH_S): the agent is checked at each call (a /proc read), its pane
        through tmux at most that often; a tmux call at every 50 ms poll took CPU from the agent's own
        /clear and first request on a 2-core machine (bench/p4.py)."""
        faults.fail("rotator:check")  # (tests: a rotator that cannot even look at its pane)
        if self.agent is None:
            return
        now = time.monotonic()
        pane_too = now >= self._pane_watched + pane_every
        self.agent.check(self.pane, pane_too)
        if pane_too:
            self._pane_watched = now

    def _box(self):
        return self.pane.input_text(self.pane.capture())

    def _idle(self, phase, attempt):
        # Watch the agent process all along: a claude killed and restarted in the same pane
        # may draw a screen we never see as idle (2.1.328 falls back to its classic renderer).
        if not self.pane.wait_idle(self.timeouts["idle_s"], check=self._check):
            raise RotationFailed("pane %s not idle within %gs (%s)"
                                 % (self.plan["pane"], self.timeouts["idle_s"], phase))
        self.note("idle", phase=phase, attempt=attempt)

    def _quiet(self):
        """Wait until no attached client has sent a key for ``quiet_s``; tmux's activity stamp then."""
        deadline = time.monotonic() + self.timeouts["idle_s"]
        while True:
            stamp = self.pane.activity()
            if time.time() >= stamp + 1 + self.timeouts["quiet_s"]:  # the stamp has whole seconds
                return stamp
            if time.monotonic() >= deadline:
                raise RotationFailed("the user kept typing for %gs" % self.timeouts["idle_s"])
            time.sleep(0.1)

    # -- the user's text ----------------------------------------------------

    def _wait_for_user(self, box, what):
        """Text is in the box: the user's.  Wait while they work on it; keep it when it rests.

        Returns when the box is empty again (they submitted or cleared it, or
        we kept it).  A submitted prompt makes the pane busy: the caller waits
        for idle again.
        """
        self.note("held", what=what, reason="text in the input box", chars=len(box))
        since_change = start = time.monotonic()
        last, stamp = box, self.pane.activity()
        while True:
            time.sleep(DRAFT_POLL_S)
            screen = self.pane.capture()
            now_box = self.pane.input_text(screen)
            if not now_box or not self.pane.is_idle(screen):
                return
            now_stamp = self.pane.activity()
            now = time.monotonic()
            if now_box != last or now_stamp != stamp:
                last, stamp, since_change = now_box, now_stamp, now
                continue
            if now - since_change >= self.timeouts["draft_s"] or now - start >= 10 * self.timeouts["draft_s"]:
                if self._keep_draft(now_box, stamp):
                    return

    def _keep_draft(self, text, stamp):
        """Cut the resting draft into the kill ring and save it for the successor; True when done."""
        if self.pane.reader.PASTED in text:
            # Observed: a paste's content does not survive /clear (only its placeholder does).
            raise RotationFailed("text pasted into the input box would be lost by /clear; "
                                 "send it or clear it, then type /clear")
        self._check()
        self._save_draft(text)
        # The reader's batches (Claude Code's C-w ..., Codex's C-e C-u), each only if the user is
        # still away; they follow each other in a few ms, after the draft has rested for draft_s.
        for n, keys in enumerate(self.pane.reader.cut_keys(text)):
            if not self.pane.press_if_quiet(stamp, *keys):
                if n:
                    self.pane.press("C-y")  # the user is back mid-cut: give the text back at once
                return False
        if not _wait_for(lambda: not self._box(), self.timeouts["type_s"]):
            left = self._box()
            self._check()
            self.pane.press("C-y")  # what was cut goes back before the box is left to the user
            raise RotationFailed("cannot empty the input box (it shows %r): send the text or clear it, "
                                 "then type /clear" % left[:80])
        self.draft = text
        self.note("draft_kept", chars=len(text))
        return True

    def _save_draft(self, text):
        path = self.plan.get("draft_file")
        if path:
            atomic.write_text(path, text, mode=0o600)

    def _take_back(self, sent):
        """Our text stayed in the box (its Enter did not take) and the user typed behind it:
        once they pause, remove ours from the front and keep theirs.

        Never while they type: Claude Code garbles editing keys that arrive among a
        person's keystrokes (observed: C-a + Delete batches interleaved with typing
        deleted their letters and kept some of ours).  Each batch is sent only if they
        are still quiet, and ends with the cursor back at the end.
        """
        left = len(sent)
        while left > 0:
            stamp = self._quiet()
            n = min(KEYS_PER_CALL - 2, left)
            self._check()
            if self.pane.press_if_quiet(stamp, "C-a", *["DC"] * n, "C-e"):
                left -= n
        self.note("taken_back", chars=len(sent))

    def _restore_draft(self):
        """Put the kept draft back (``C-y``) into the successor's empty box."""
        if self.draft is None:
            return
        deadline = time.monotonic() + self.timeouts["delivery_s"]
        while time.monotonic() < deadline:
            if self._box():
                break  # the user is typing something new: the draft stays in the bootstrap only
            stamp = self.pane.activity()
            if time.time() < stamp + 1 + self.timeouts["quiet_s"]:
                time.sleep(0.1)
                continue
            self._check()
            if self.pane.press_if_quiet(stamp, "C-y"):
                ok = _wait_for(lambda: _box_holds(self._box(), self.draft), self.timeouts["type_s"])
                self.note("draft_restored", ok=ok, chars=len(self.draft))
                return
        self.note("draft_restored", ok=False, chars=len(self.draft), reason="the box was not free")

    # -- typing one prompt --------------------------------------------------

    def _submit(self, text, what, phase, done):
        """Type ``text`` with its Enter so that exactly ``text`` is submitted.

        Returns (sent, attempt), or (None, attempt) when ``done()`` became true
        meanwhile (the step happened another way, e.g. the user's own prompt
        reached the successor).  Raises RotationFailed after the attempts run out.
        """
        attempt, failures = 1, 0
        while failures < self.attempts:
            if done():
                return None, attempt
            self._idle(phase, attempt)
            if done():
                return None, attempt
            box = self._box()
            if box:
                self._wait_for_user(box, what)
                continue
            stamp = self._quiet()
            if done():
                return None, attempt
            screen = self.pane.capture()
            if self.pane.input_text(screen):
                continue
            if not self.pane.main_view(screen):
                self.note("subagent_view", action="a subagent's view is in front",
                          listed=[n for n, front, _ in self.pane.conversations(screen) if front])
                self._main_forward()
                continue
            self._check()
            sent = self.pane.submit_if_quiet(text, stamp, bracketed=self.pane.reader.bracketed(text))
            if sent is None:
                self.note("held", what=what, reason="a key arrived", attempt=attempt)
                continue
            gone = self._submitted(sent, stamp, screen)
            if gone:
                return sent, attempt
            self.note("not_typed", what=what, attempt=attempt, box=self._box()[:80])
            failures, attempt = failures + 1, attempt + 1
            if _squash(self._box()).startswith(_squash(sent)):
                self._take_back(sent)
        raise RotationFailed("%s not submitted after %d attempt(s)" % (what, self.attempts))

    def _submitted(self, sent, stamp, before):
        """After our text and Enter: True once the box no longer starts with our text.

        The box is judged only once the screen differs from ``before`` (the screen
        just before we typed): until the program has read our keys and drawn, an
        empty box says nothing (on a loaded machine the first look came before the
        drawing and took a text still to be shown for one submitted).  A program
        that draws nothing within ``type_s`` is taken as having submitted, as before;
        the delivery wait judges it.

        An Enter that did not take (not seen with the atomic submit, 80 of 80 took; a
        slower or older Claude Code might) is pressed again at once while nobody has
        typed, and our text taken back right away if that does not take either: the
        user must not find it in the box to type behind.  False then.
        """
        want = _squash(sent)
        t0 = time.monotonic()
        drawn = deadline = None  # the first drawing; SUBMIT_S from it, and again from a second Enter
        again = True
        while True:
            screen = self.pane.capture()
            now = time.monotonic()
            if screen == before:
                if now - t0 >= self.timeouts["type_s"]:
                    return True
                time.sleep(0.01)
                continue
            if drawn is None:
                drawn, deadline = now, now + SUBMIT_S
            box = _squash(self.pane.input_text(screen))
            if not box.startswith(want):
                return True
            if again and box == want and now - drawn >= 0.05:
                again = False
                self._check()
                if self.pane.press_if_quiet(stamp, "Enter"):
                    deadline = time.monotonic() + SUBMIT_S
            elif now >= deadline:
                return False
            time.sleep(0.01)

    # -- steps --------------------------------------------------------------

    def _standby(self):
        """The mod is to hand over in-process: wait (up to ``standby_s``) while it does.

        Then take the hand-over ourselves unless the mod took it (an atomic rename of
        the offered plan: exactly one of us does the /clear).  True when the mod has it.
        """
        wait = self.timeouts.get("standby_s")
        sid = self.plan.get("session_id")
        if not wait or not sid:
            return False
        self.note("standby", s=wait)
        _wait_for(lambda: (self._check(PANE_WATCH_S) or True) and (
            os.path.exists(self.plan["started_marker"]) or handover.handover_holder(sid) == "mod"), wait)
        if handover.take_handover(sid, "tmux"):
            self.owns = True
            self.note("standby_over", by="tmux")
            return False
        self.note("standby_over", by=handover.handover_holder(sid) or "mod")
        return True

    def _mod_holds(self):
        sid = self.plan.get("session_id")
        if not sid:
            return False
        return handover.handover_holder(sid) == "mod"

    def _await_mod(self, done, timeout, what):
        """Wait while the mod does a step: True when ``done``; False when it gave the hand-over
        back (its ModDone failed) and it is ours now, so we type the step ourselves."""
        sid = self.plan["session_id"]
        back = lambda: handover.handover_holder(sid) is None
        if _wait_for(lambda: (self._check(PANE_WATCH_S) or True) and (done() or back()), self.timeouts[timeout]) and done():
            return True
        if back() and handover.take_handover(sid, "tmux"):
            self.owns = True
            self.note("handover_back", by="tmux")
            return False
        raise RotationFailed("the mod took the hand-over but %s within %gs" % (what, self.timeouts[timeout]))

    def _clear(self):
        marker = self.plan["started_marker"]
        started = lambda: os.path.exists(marker)
        self._check()  # a marker another claude wrote (a restart that claimed) is not our success
        if started():
            self.note("started", preexisting=True)
            return
        if self._standby() and self._await_mod(started, "marker_s", "no successor started"):
            self.note("started", by="mod")
            return
        for attempt in range(1, self.attempts + 1):
            sent, at = self._submit("/clear", "/clear", "predecessor", started)
            if sent is None:
                self.note("started", attempt=at, late=True)
                return
            self.note("clear_sent", attempt=attempt)
            if not self.pane.reader.STARTS_AT_CLEAR:
                # Codex: the successor's SessionStart runs at its first prompt, our continuation;
                # the clear is seen on screen (the new thread, the old conversation gone).
                if _wait_for(lambda: started() or self.pane.fresh_thread(self.pane.capture()),
                             self.timeouts["marker_s"]):
                    self.note("started" if started() else "cleared", attempt=attempt)
                    return
                continue
            if _wait_for(lambda: started() or SUBAGENT_CONFIRM in self.pane.capture(), self.timeouts["marker_s"]):
                if started():
                    self.note("started", attempt=attempt)
                    return
                self._decline_subagent_clear()
                continue
        if not self.pane.reader.STARTS_AT_CLEAR:
            raise RotationFailed("no new thread on screen after %d /clear attempt(s)" % self.attempts)
        raise RotationFailed("successor did not start: %s missing after %d /clear attempt(s)"
                             % (marker, self.attempts))

    def _decline_subagent_clear(self):
        """A subagent's view was in front: answer its /clear question No, then bring main forward.

        Enter on the question's first selection cancels on both 2.1.328 and
        2.1.332 (Escape could stop a running subagent); ``/clear`` stays in
        the box and is taken out again.  Confirming instead would clear the main
        conversation but leave the subagent's view in front, and the
        continuation would go to the subagent.
        """
        self._check()
        self.pane.press("Enter")
        _wait_for(lambda: SUBAGENT_CONFIRM not in self.pane.capture(), self.timeouts["type_s"])
        if _squash(self._box()).startswith("/clear"):
            self.pane.press("C-u")
        self.note("subagent_view", action="declined /clear there")
        self._main_forward()

    def _main_forward(self):
        """Bring the main conversation in front of a subagent's view (it would take our typing).

        Observed on 2.1.328 and 2.1.332: from an empty box ``Down`` moves the
        focus to the list of conversations (main highlighted); in the list
        ``Up``/``Down`` move the highlight and ``Enter`` puts that conversation
        in front.  Never ``Left`` (it moves the session to the background) nor
        ``Escape`` (it stops a running subagent).
        """
        pressed = []
        for _ in range(12):
            screen = self.pane.capture()
            if self.pane.main_view(screen):
                self.note("subagent_view", action="main view in front", keys=pressed)
                return
            listed = self.pane.conversations(screen)
            names = [name for name, _, _ in listed]
            at = next((i for i, (_, _, hl) in enumerate(listed) if hl), None)
            key = ("Down" if at is None else "Enter" if names[at] == "main"
                   else "Up" if "main" in names[:at] else "Down")
            self._check()
            self.pane.press(key)
            pressed.append(key)
            # Wait for the list (not the whole screen: a spinner redraws it) to answer the key.
            before = (listed, self.pane.main_view(screen))
            _wait_for(lambda: (lambda sc: (self.pane.conversations(sc), self.pane.main_view(sc)))(
                self.pane.capture()) != before, self.timeouts["type_s"])
        raise RotationFailed("a subagent's view stays in front of the main conversation (keys %s)" % pressed)

    def _continue(self):
        marker = self.plan.get("delivered_marker")
        arrived = lambda: bool(marker) and os.path.exists(marker)
        self._check()
        if arrived():
            self.note("delivered", via="marker", preexisting=True)
            return
        if self._mod_holds() and self._await_mod(arrived, "delivery_s", "its continuation did not arrive"):
            self.note("delivered", via="mod")  # never a second continuation from us
            return
        text = self.plan["continuation"]
        for attempt in range(1, self.attempts + 1):
            sent, at = self._submit(text, "continuation", "successor", arrived)
            if sent is None:
                self.note("delivered", via="marker", attempt=at, late=True)
                return
            self.note("continuation_sent", attempt=attempt, chars=len(sent))
            left_box = lambda: not _box_holds(self._box(), sent)
            if marker:
                if _wait_for(arrived, self.timeouts["delivery_s"]):
                    self.note("delivered", via="marker", attempt=attempt)
                    return
                if left_box():  # submitted, but the hook never confirmed: do not send twice
                    self.note("delivered", via="screen", attempt=attempt, confirmed=False)
                    return
            elif _wait_for(left_box, self.timeouts["delivery_s"]):
                self.note("delivered", via="screen", attempt=attempt)
                return
            self.note("stuck", what="continuation", attempt=attempt)  # still in the box
            if _squash(self._box()).startswith(_squash(sent)):
                self._take_back(sent)
        raise RotationFailed("continuation not delivered after %d attempt(s)" % self.attempts)

    def _rename(self):
        name = self.plan["successor_name"]
        self._check()  # never rename the tmux session of a claude we do not serve
        errors = []
        for rename in (self.pane.rename_session, self.pane.rename_window):
            try:
                rename(name)
            except TmuxError as e:  # cosmetic: the hand-over itself succeeded
                errors.append(str(e))
        if errors:
            self.note("renamed", name=name, ok=False, errors=errors)
        else:
            self.note("renamed", name=name, ok=True)

    # -- failure --------------------------------------------------------------

    def _offer_left_to_us(self):
        """A standby rotator failed before it won the hand-over: the mod has the rest of the standby to
        take the offer (its turn's end), and the record stays as it is.  Only an offer nobody took by then
        is this rotator's failure to report (it takes the offer first: never both)."""
        sid = self.plan["session_id"]
        left = self.timeouts["standby_s"] - (time.monotonic() - self.t0)
        _wait_for(lambda: handover.handover_holder(sid) is not None
                  or os.path.exists(self.plan["started_marker"]), max(0.0, left))
        if handover.take_handover(sid, "tmux"):
            self.note("standby_over", by="tmux", after="failed")
            return True
        self.note("left_to_mod", holder=handover.handover_holder(sid) or "none")
        return False

    def _give_up(self, reason):
        """ROTATING -> AWAITING_MANUAL_CLEAR (the status line asks for /clear) and an urgent push."""
        sdir, lock_path = self.plan.get("sdir"), self.plan.get("project_lock")
        if not sdir or not lock_path:
            return
        try:
            with RecordEdit(sdir, lock_path) as rec:
                if rec["state"] != session.ROTATING:
                    return
                session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator failed: %s" % reason[:200])
            cid = (rec.get("checkpoint") or {}).get("id") or "the checkpoint"
            try:  # said where the user looks, at once: no turn's end may come to say it
                self.pane.tell("cc-continuity: %s waits: type /clear (the rotation stopped: %s)" % (cid, reason[:120]))
            except (TmuxError, ValueError):
                pass  # no client attached, or tmux itself is what failed: the push and the status line say it
            notify.emit("lifecycle-failed", slug=rec.get("slug"), session=rec.get("number"),
                        text="%s waits: type /clear (the rotation stopped: %s)" % (cid, reason),
                        project_root=rec.get("project_root"))
        except Exception as e:  # the ledger already says why; never let this mask it
            print("rotator: could not record the failure: %s" % e, file=sys.stderr)


class _Busy(RotationFailed):
    """Another rotator already holds this pane: not a failure of the rotation itself."""


class _pane_lock:
    """One rotator per pane: a second one for the same pane fails instead of typing twice."""

    def __init__(self, plan):
        key = hashlib.sha256(("%s\0%s" % (plan["socket"], plan["pane"])).encode()).hexdigest()[:16]
        self.path = os.path.join(paths.runtime_dir(), "rotator-%s.lock" % key)
        self.fd = None

    def __enter__(self):
        paths.ensure_dir(os.path.dirname(self.path))
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, paths.FILE_MODE)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise _Busy("another rotator is already working on this pane") from None
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def spawn(plan_path, log_path=None, delay_s=0.0):
    """Start ``python -m cc_continuity.tmux.rotator <plan>`` fully detached; return its pid.

    Own session (no controlling terminal, not killed with the hook's process
    group), stdin from /dev/null, output to ``log_path`` or /dev/null: a Stop hook
    whose stdout pipe stayed open in a child would keep Claude Code waiting.
    """
    plan_path = os.path.abspath(plan_path)
    env = deps.child_env()  # (it needs none of the optional packages; a push it sends may)
    out = subprocess.DEVNULL
    if log_path:
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, paths.FILE_MODE)
    try:
        argv = [sys.executable, "-m", handover.ROTATOR_MODULE, plan_path]
        if delay_s:
            argv = ["/bin/sh", "-c", 'sleep "$0" && exec "$@"', "%g" % delay_s] + argv
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL, stdout=out, stderr=out if log_path else subprocess.DEVNULL,
            cwd="/", env=env, start_new_session=True, close_fds=True,
        )
    finally:
        if log_path:
            os.close(out)
    return proc.pid


def start(rec, sdir, cfg, successor_name, project_lock=None, standby_s=None, reader=None):
    """Write the rotation's plan (:func:`handover.plan`) for a verified checkpoint and spawn the rotator; its pid.
    ``reader``: the host's screen reader (``module:Class``; None: Claude Code's)."""
    p = handover.plan(rec, sdir, cfg, successor_name, project_lock, standby_s)
    if reader:
        p["reader"] = reader
    path = session.rotator_plan_path(sdir)
    atomic.write_text(path, json.dumps(p, indent=2) + "\n")
    paths.ensure_dir(paths.logs_dir())
    return spawn(path, log_path=paths.logs_dir() + "/rotator.log", delay_s=STANDBY_DELAY_S if standby_s else 0.0)


def _note_bad_plan(path, error):
    """Record an unusable plan in its ledger when the plan at least names one."""
    try:
        with open(path, encoding="utf-8") as f:
            where = json.load(f).get("ledger")
        if isinstance(where, str) and os.path.isabs(where):
            ledger.append(where, {"ev": "rotator", "step": "failed", "ms": 0, "reason": str(error)})
    except Exception:
        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m %s <plan.json>" % handover.ROTATOR_MODULE, file=sys.stderr)
        return 2
    try:
        plan = load_plan(argv[0])
    except PlanError as e:
        print("rotator: %s" % e, file=sys.stderr)
        _note_bad_plan(argv[0], e)
        return 1
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return Rotator(plan).run()


if __name__ == "__main__":
    sys.exit(main())
