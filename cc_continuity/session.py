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


def save(sdir, rec):
    from . import atomic

    rec["updated"] = round(time.time(), 3)
    atomic.write_text(state_path(sdir), fastjson.dumps(rec))


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
