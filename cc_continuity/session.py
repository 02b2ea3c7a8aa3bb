"""Session records and the rotation state machine (DESIGN §4).

Every change of ``state`` goes through :func:`transition`, which checks the
explicit table below, persists the record atomically and appends the change
to the session ledger.  An illegal transition raises (and the caller logs
it); nothing is silently applied.  Reading a record is on the per-tool-call
path, so this module avoids ``os`` (writes import it lazily via atomic).
"""

import posix
import time

from . import fastjson, ledger

ACTIVE = "ACTIVE"
WARNED = "WARNED"
ROTATION_PENDING = "ROTATION_PENDING"
HANDOFF_REQUESTED = "HANDOFF_REQUESTED"
CHECKPOINT_VERIFIED = "CHECKPOINT_VERIFIED"
ROTATING = "ROTATING"
AWAITING_MANUAL_CLEAR = "AWAITING_MANUAL_CLEAR"
ROTATED = "ROTATED"
BOOTSTRAPPING = "BOOTSTRAPPING"
ENDED = "ENDED"

STATES = (ACTIVE, WARNED, ROTATION_PENDING, HANDOFF_REQUESTED, CHECKPOINT_VERIFIED,
          ROTATING, AWAITING_MANUAL_CLEAR, ROTATED, BOOTSTRAPPING, ENDED)

# Live states a process can simply end in (-> ENDED).
LIVE = (ACTIVE, WARNED, ROTATION_PENDING, HANDOFF_REQUESTED, BOOTSTRAPPING)
# A verified checkpoint waiting for a successor survives the process.
CLAIMABLE = (CHECKPOINT_VERIFIED, ROTATING, AWAITING_MANUAL_CLEAR)
# Done for good (ENDED only comes back through `claude --resume`, under the project lock).
TERMINAL = (ROTATED, ENDED)

TRANSITIONS = {
    ACTIVE: {WARNED, ROTATION_PENDING, HANDOFF_REQUESTED, ENDED, BOOTSTRAPPING},  # -> BOOTSTRAPPING: a new session adopts a checkpoint
    WARNED: {ROTATION_PENDING, HANDOFF_REQUESTED, ACTIVE, ENDED},   # -> ACTIVE after a compaction
    ROTATION_PENDING: {HANDOFF_REQUESTED, WARNED, ACTIVE, ENDED},
    HANDOFF_REQUESTED: {CHECKPOINT_VERIFIED, ENDED},
    CHECKPOINT_VERIFIED: {ROTATING, AWAITING_MANUAL_CLEAR, ROTATED},
    ROTATING: {AWAITING_MANUAL_CLEAR, ROTATED},
    AWAITING_MANUAL_CLEAR: {ROTATING, ROTATED},
    ROTATED: set(),
    BOOTSTRAPPING: {ACTIVE, WARNED, ROTATION_PENDING, HANDOFF_REQUESTED, ENDED},
    ENDED: {ACTIVE},  # only `claude --resume` of an ended session brings it back
}


class IllegalTransition(RuntimeError):
    """A state change the table does not allow."""


def is_allowed(src, dst):
    return dst in TRANSITIONS.get(src, ())


LEVEL_ORDER = ("ok", "warn", "rotate", "hard")


def state_path(sdir):
    return sdir + "/state.json"


def ledger_path(sdir):
    return sdir + "/ledger.jsonl"


# The checkpoint's files (their owner is here, with the rest of the session dir's layout,
# so a module that only needs a path does not pull in checkpoint's git machinery).
def checkpoint_dir(sdir):
    return sdir + "/checkpoint"


def handoff_path(sdir):
    return sdir + "/checkpoint/handoff.md"


def checkpoint_id(number):
    return "cp-%03d" % number


def read_file(path, limit=1 << 22):
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        chunks = []
        while True:
            b = posix.read(fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
            limit -= len(b)
            if limit < 0:
                raise ValueError("%s is unreasonably large" % path)
        return b"".join(chunks)
    finally:
        posix.close(fd)


def load(sdir):
    """The record in ``sdir``; raises OSError/ValueError when missing or corrupt."""
    rec = fastjson.loads(read_file(state_path(sdir)))
    if not isinstance(rec, dict) or rec.get("state") not in STATES:
        raise ValueError("corrupt session state in %s" % sdir)
    return rec


def open_marker(sdir):
    """``<project>/open/<NNN>`` for the session dir ``<project>/sessions/<NNN>`` (None for other dirs).

    The ``open/`` directory indexes the sessions that are not in a TERMINAL state, so the
    claim, the crash notice and ``status`` read those records only, not the whole history.
    The marker is made before a record goes open and removed after it went terminal: the
    index may hold a stale number (readers check the record) but never misses an open one.
    """
    head, sep, num = sdir.rstrip("/").rpartition("/sessions/")
    return head + "/open/" + num if sep and num.isdigit() else None


def _mark_open(marker, is_open):
    try:
        if is_open:
            posix.close(posix.open(marker, posix.O_WRONLY | posix.O_CREAT | posix.O_CLOEXEC, 0o600))
        else:
            posix.unlink(marker)
    except FileNotFoundError:
        pass  # no index yet (built on the next registration), or no marker to remove


def save(sdir, rec):
    from . import atomic

    rec["updated"] = round(time.time(), 3)
    marker = open_marker(sdir)
    is_open = rec.get("state") not in TERMINAL
    if marker and is_open:
        _mark_open(marker, True)
    atomic.write_text(state_path(sdir), fastjson.dumps(rec))
    if marker and not is_open:
        _mark_open(marker, False)


def notified_index(rec):
    """The highest context level this session has already been told about (0 = ok)."""
    best = 0
    for name in rec.get("levels_notified") or ():
        if name in LEVEL_ORDER:
            best = max(best, LEVEL_ORDER.index(name))
    return best


def new_record(number, name, session_id, state=ACTIVE, **fields):
    now = round(time.time(), 3)
    rec = {
        "number": number,
        "name": name,
        "session_id": session_id,
        "session_ids": [session_id],
        "state": state,
        "created": now,
        "updated": now,
        "predecessor": None,
        "successor": None,
        "levels_notified": [],
        "flags": {},
    }
    rec.update(fields)
    return rec


def log(sdir, record):
    """Append ``record`` to the session's ledger."""
    return ledger.append(ledger_path(sdir), record)


def transition(sdir, rec, dst, why, **fields):
    """Move ``rec`` to ``dst`` (checked), persist it, and log it to the ledger."""
    src = rec.get("state")
    if not is_allowed(src, dst):
        ledger.append(ledger_path(sdir), {"ev": "illegal_transition", "from": src, "to": dst, "why": why})
        raise IllegalTransition("%s -> %s is not allowed (%s)" % (src, dst, why))
    rec["state"] = dst
    rec.update(fields)
    save(sdir, rec)
    ledger.append(ledger_path(sdir), {"ev": "transition", "from": src, "to": dst, "why": why})
    return rec
