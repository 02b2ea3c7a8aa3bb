"""From a verified checkpoint to the successor: one driver at a time, chosen at run time.

* ``mod`` - the plugin's mod, inside Claude Code: it clears and submits the
  continuation itself (``$.command.run`` + ``$.prompt.submit``), no tmux, no
  typing into the user's input box.  Chosen when the mod of this very Claude
  process has said it is there (:func:`mod_alive`, a heartbeat it leaves at
  start and after every turn).  A tmux rotator stands by meanwhile (``standby_s``)
  and takes over only if the mod's hand-over does not start.
* ``tmux`` - the detached rotator types ``/clear`` and the continuation.
* ``native`` - the host clears and continues by itself, in its answer to the hook
  that verified the checkpoint (Gemini CLI's AfterAgent ``clearContext``): no tmux,
  no typing, no process of ours; the successor claims at its first prompt.
* ``manual`` - the user is told to type ``/clear``; the successor's SessionStart
  claims the checkpoint all the same.
"""

import os
import time

from .. import atomic, fastjson, paths, safefile, session
from . import texts

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from typing import Any

    from ..config import Config
    from ..session import Record

DRIVERS = ("mod", "native", "tmux", "headless", "manual")
# The rotator's identity: how it is started (``python -m``) and recognised among processes.
ROTATOR_MODULE = "cc_continuity.tmux.rotator"
MOD_FRESH_S = 24 * 3600  # a heartbeat older than this is not taken as a live mod


def runs_rotator(pid: int) -> bool | None:
    """Does process ``pid`` run the rotator (its command line names :data:`ROTATOR_MODULE`)?

    None when that cannot be read (no ``/proc``, the process gone or not ours to
    read): each caller says what unknown means for it.
    """
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return ROTATOR_MODULE.encode() in f.read()
    except OSError:
        return None


def rotator_alive(rec: "Record") -> bool:
    """Is the rotator spawned for this checkpoint (``rotator_pid``) still running?  Unknown counts as alive;
    no rotator recorded as alive too (the caller asks whether one would take over)."""
    from ..procs import pid_alive

    pid = rec.get("rotator_pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return True
    if not pid_alive(pid):
        return False
    return runs_rotator(pid) is not False  # a recycled pid is not our rotator; unreadable: alive


# -- the mod's heartbeat: which Claude processes have a working mod -------------

def _heartbeat_path(pid: int) -> str:
    return paths.runtime_dir() + "/mod/%d.json" % pid


def mod_heartbeat(pid: int | None, version: object = None, now: float | None = None) -> None:
    """The mod of Claude process ``pid`` is loaded and reached us (written by the mod's calls)."""
    from ..procs import start_time

    if not (isinstance(pid, int) and not isinstance(pid, bool) and pid > 0):
        return
    started = start_time(pid)
    if started is None:
        return
    paths.ensure_dir(paths.runtime_dir() + "/mod")
    atomic.write_text(_heartbeat_path(pid), fastjson.dumps(
        {"pid": pid, "started": started, "version": version,
         "at": round(time.time() if now is None else now, 3)}), fsync=False)


def mod_alive(pid: int | None, now: float | None = None) -> bool:
    """Has the mod of Claude process ``pid`` (this very process, still running) spoken to us lately?"""
    from ..procs import start_time

    if not (isinstance(pid, int) and not isinstance(pid, bool) and pid > 0):
        return False
    started = start_time(pid)
    if started is None:
        return False
    try:
        with open(_heartbeat_path(pid), "rb") as f:
            beat = fastjson.loads(f.read())
    except (OSError, ValueError):
        return False
    now = time.time() if now is None else now
    return (isinstance(beat, dict) and beat.get("started") == started  # not an earlier process's pid
            and isinstance(beat.get("at"), (int, float)) and now - beat["at"] <= MOD_FRESH_S)


# -- one hand-over, taken by one driver -------------------------------------------
#
# With the mod driving, the Stop hook leaves the hand-over as a file the mod can read
# without starting a process (``runtime/handover/<session id>.json``), and a tmux
# rotator stands by.  Whoever *renames* the file first does the /clear: rename(2) is
# atomic, and both sides have it (the mod runs ``mv``; the rotator ``os.rename``).

def handover_file(session_id: str, taken_by: str | None = None) -> str:
    return "%s/%s.%s" % (paths.handover_dir(), session_id, taken_by or "json")


def offer_handover(session_id: str, plan: "dict[str, Any]", bound: "dict[str, Any] | None" = None) -> None:
    """Leave the hand-over for whichever driver takes it first, bound to the moment it is for.

    ``bound`` (:func:`offer_binding`): the Claude process (pid and start time), the turn
    (its prompt id) and the checkpoint; the mod acts on the offer only in that process,
    while the checkpoint is still unclaimed (hooks/mod.js), and the next prompt of the
    session withdraws it (:func:`withdraw_offer`).  The directory is checked and made
    private at this use, and the file replaces whatever is at its name (a planted link is
    replaced, never written through).
    """
    safefile.private_dir(paths.runtime_dir())
    safefile.private_dir(paths.handover_dir())
    if bound is not None:
        plan = dict(plan, bound=bound)
    atomic.write_text(handover_file(session_id), fastjson.dumps(plan), fsync=False, follow=False)


def offer_binding(pid: int | None, prompt_id: object, checkpoint: object, state_file: str) -> "dict[str, Any]":
    """What an offer is bound to: this process (pid, and its start in clock ticks since boot, as /proc has
    it), this turn, the checkpoint, and the record that says whether it is still unclaimed."""
    from ..procs import start_ticks

    return {"pid": pid, "pid_ticks": start_ticks(pid) if pid else None,
            "prompt_id": prompt_id if isinstance(prompt_id, str) else None,
            "checkpoint": checkpoint, "state": state_file}


def withdraw_offer(session_id: str) -> bool:
    """Remove an offer not taken (its turn is over): True if there was one."""
    try:
        os.unlink(handover_file(session_id))
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return False


def handover_offered(session_id: str) -> bool:
    return os.path.exists(handover_file(session_id))


def take_handover(session_id: str, who: str) -> bool:
    """Take the offered hand-over for ``who`` (``mod`` or ``tmux``): True for the one rename that won."""
    try:
        os.rename(handover_file(session_id), handover_file(session_id, who))
        return True
    except FileNotFoundError:
        return False


def handover_holder(session_id: str) -> str | None:
    """``mod`` / ``tmux`` once taken, None while offered or when there is none."""
    for who in ("mod", "tmux"):
        if os.path.exists(handover_file(session_id, who)):
            return who
    return None


def give_back(session_id: str, who: str) -> None:
    """A driver that failed gives the hand-over back (the other one may take it)."""
    try:
        os.rename(handover_file(session_id, who), handover_file(session_id))
    except FileNotFoundError:
        pass


def sweep_handovers(now: float | None = None, keep_s: float = 24 * 3600) -> int:
    """Remove hand-over files (offered or taken) older than ``keep_s``; returns how many."""
    return paths.remove_older(paths.handover_dir(), keep_s, now)


def choose_driver(rec: "Record", cfg: "Config", tmux_usable: bool) -> str:
    """``mod`` when this process's mod is alive and allowed, else ``tmux`` when usable, else ``manual``.

    ``tmux_usable``: whether a tmux rotator can drive this session (the caller asks
    the adapter, :func:`cc_continuity.tmux.can_drive`; the domain does not talk to tmux).
    """
    if cfg["mod"] and mod_alive(rec.get("pid")):
        return "mod"
    if tmux_usable:
        return "tmux"
    return "manual"


# The rotation's markers and the kept draft, in the checkpoint dir (their names: session's layout).
started_marker = session.started_marker
delivered_marker = session.delivered_marker
draft_file = session.draft_file


def plan(rec: "Record", sdir: str, cfg: "Config", successor_name: str, project_lock: str | None = None,
         standby_s: float | None = None) -> "dict[str, Any]":
    cid = (rec.get("checkpoint") or {}).get("id") or session.checkpoint_id(rec["number"])
    out: "dict[str, Any]" = {
        "session_id": rec.get("session_id"),
        "socket": rec["tmux_socket"],
        "pane": rec["tmux_pane"],
        "started_marker": started_marker(sdir),
        "delivered_marker": delivered_marker(sdir),
        "continuation": texts.continuation_prompt(cid, successor_name),
        "ledger": session.ledger_path(sdir),
        "successor_name": successor_name,
        "sdir": sdir,
        "draft_file": draft_file(sdir),
        "timeouts": {"idle_s": cfg["rotator_idle_timeout_s"], "marker_s": cfg["rotator_marker_timeout_s"],
                     "delivery_s": cfg["rotator_delivery_timeout_s"], "draft_s": cfg["rotator_draft_wait_s"]},
        "retries": cfg["rotator_retries"],
    }
    if rec.get("host") not in (None, "claude"):
        out["host"] = rec.get("host")  # whose TUI the rotator types into (absent: Claude Code's)
    if project_lock:
        out["project_lock"] = project_lock
    if standby_s:
        out["timeouts"]["standby_s"] = standby_s
    pid = rec.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
        out["claude_pid"] = pid
    return out


def handover(rec: "Record", sdir: str, successor_name: str, root: str,
             last_request: str | None = None) -> "dict[str, Any]":
    """What the mod is told to do for a verified checkpoint: clear, then submit this."""
    cid = (rec.get("checkpoint") or {}).get("id") or session.checkpoint_id(rec["number"])
    return {"checkpoint": cid, "successor": successor_name, "delivered_marker": delivered_marker(sdir),
            "session_id": rec.get("session_id"),
            "continuation": texts.continuation_prompt(cid, successor_name, "mod", root, session.handoff_path(sdir),
                                                last_request)}
