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

# ``typing`` is not imported at run time (this module is on the per-tool-call path): the
# record's type exists for the type checker and the reader only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypedDict

    class Record(TypedDict, total=False):
        """A session record (``state.json``): every key, its type and what it holds.

        The one place a key is declared: a key the package reads or writes that is
        not here fails tests/test_session_record.py, so a new key is a decision.
        """

        # identity (new_record)
        number: int                      # the session's number in its project (sessions/<NNN>)
        name: str                        # "<slug>-<NNN>", what the user and the ledgers see
        session_id: str                  # Claude Code's session id (the card and the hooks' payloads name it)
        session_ids: list[str]           # the Claude Code session ids this record has had
        host: str                        # the agent it runs in ("claude", "codex"); absent: "claude" (older records)
        state: str                       # one of STATES; changed only through transition()
        created: float                   # epoch seconds, when the record was made
        updated: float                   # epoch seconds, set by every save()
        project_root: str                # the project's root directory
        project_key: str                 # paths.project_key(project_root): its dir under projects/
        slug: str                        # the project's readable name (paths.slugify)
        launch_dir: str | None           # where Claude Code was started (project.launch_dir)
        source: str                      # SessionStart's source when the record was made (startup/clear/resume/...)
        unattended: bool                 # started unattended (no one at the keyboard: the pushes say so)
        levels_notified: list[str]       # the levels above ok this session has been told about (meter.LEVELS)
        flags: dict[str, dict[str, Any]]  # raised by `cc-continuity signal` (needs_human, ...): {"text", "at"}
        # the live process (refreshed at every SessionStart)
        pid: int | None                  # the Claude Code process
        tmux_socket: str | None          # the tmux server and pane it runs in (None outside tmux)
        tmux_pane: str | None
        transcript: str                  # Claude Code's transcript of the session
        model: str                       # the model id Claude Code reported
        # the chain of sessions
        predecessor: int | None          # the number of the session this one continues
        successor: int | None            # the number of the session that claimed this one's checkpoint
        claiming: int                    # the predecessor being claimed (the intent, written first; popped when done)
        claim_pending: str               # the SessionStart source whose claim has not been looked for to the end yet
        predecessor_claimed: bool        # the claim completed (claim.finish)
        checkpoint_from: str | None      # the predecessor's checkpoint id this session started from
        bootstrap: dict[str, Any]        # the claimed checkpoint's bootstrap on its way to the model: {"checkpoint",
                                         # "needle", "due_at", "sent" (the hook that printed it), "delivered_at", "via"}
        revalidation: dict[str, Any]     # resume.summary of the predecessor's checkpoint against the work tree
        recovered_from: int              # the crashed session (no checkpoint) this one got the notice of
        resumed_from: int                # `claude --resume` of a conversation rotated away from: its old record
        resume_grace: bool               # resumed: no tool is denied before this record's first turn end
        loop_stopped: bool               # a successor past rotate before any tool: it does not rotate (told once)
        recovery: dict[str, Any]         # that crashed session: name, session_id, resume command, at
        recovered_by: int                # set on the crashed session: who got its notice
        ended: dict[str, Any]            # why and when the process ended: {"reason", "at"} (popped on --resume)
        # the rotation
        last_reading: dict[str, Any]     # the last level change's reading: tokens, window, percent, level
        rotate_requested: bool           # `cc-continuity rotate` (or a blocked compaction) asked for a rotation
        rotation_asked_by_agent: bool    # an agent asked through the MCP server (once a session: mcpserver/tools.py)
        pending_note: str                # a note for the next prompt (UserPromptSubmit adds and pops it)
        handoff_tries: int               # handoff validations so far for the current request
        claims_shown: str                # sha256 of the handoff whose contradicted claims its writer was shown
        handoff_requested_at: float      # when the handoff was requested (the snapshot's requested_at)
        checkpoint: dict[str, Any]       # the verified checkpoint's summary (checkpoint.finalize): id, ref, ...
        driver: str                      # who drives the /clear: one of rotation.DRIVERS
        handover_bound: dict[str, Any]   # the mod's hand-over is for this Claude process only: {"pid", "pid_ticks"}
        rotator_pid: int                 # the detached tmux rotator
        snapshot_wait: dict[str, Any]    # a claimed checkpoint's snapshot still being taken (PreToolUse waits)
        imported: dict[str, Any]         # a checkpoint claimed from a git remote (share.py): remote, machine, author, fork
        remote_lease: dict[str, Any]     # a published checkpoint's local claim took its lease on the remote (lease.py)
        remote_claim: dict[str, Any]     # a published checkpoint another machine holds the lease of: not claimed here
        unconfirmed: dict[str, Any]      # the remote did not answer the local claim: the handoff was shown, not claimed

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

# The sets of states, named once (every other module asks these):
# Live states a process can simply end in (-> ENDED).
LIVE = frozenset((ACTIVE, WARNED, ROTATION_PENDING, HANDOFF_REQUESTED, BOOTSTRAPPING))
# Live and no handoff asked for yet: a rotation (a handoff request) may start from these.
WORKING = LIVE - {HANDOFF_REQUESTED}
# A verified checkpoint waiting for a successor survives the process.
CLAIMABLE = frozenset((CHECKPOINT_VERIFIED, ROTATING, AWAITING_MANUAL_CLEAR))
# Done for good, "finished" (ENDED only comes back through `claude --resume`, or a run finishing the rotation
# its process ended in; both under the project lock).
TERMINAL = frozenset((ROTATED, ENDED))

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
    # `claude --resume` of an ended session brings it back; `cc-continuity run` finishes a rotation whose process
    # ended with its handoff requested and not decided (rotation/turn.finish_undecided)
    ENDED: {ACTIVE, HANDOFF_REQUESTED},
}


class IllegalTransition(RuntimeError):
    """A state change the table does not allow."""


def is_allowed(src: "str | None", dst: "str") -> "bool":
    return src is not None and dst in TRANSITIONS.get(src, ())  # no state (None) allows nothing


# -- the session dir's layout ------------------------------------------------------------
#
# Every name inside a session dir (``<project>/sessions/<NNN>/``) is spelled here and only
# here, with what the file holds; a module that needs only a path does not pull in the
# module that writes it (nor checkpoint's git machinery).
STATE = "state.json"                 # the record (:func:`load`, :func:`save`)
LEDGER = "ledger.jsonl"              # the session's append-only event log (:mod:`ledger`)
STATUS_READING = "context.json"      # the status line's last context reading (meter.save_status_reading)
STATUSLINE = "statusline.json"       # the window the status line last reported (meter.reported_window)
CHAIN_CACHE = "statusline.chain.json"  # the user's chained status line: its last output and the stdin it was for
TURN_SNAPSHOT = "turn-snapshot.json"  # the rolling turn-end snapshot's result (snapshot.job.start_turn)
EMERGENCY = "emergency"              # PreCompact's facts when the context compacts before a checkpoint
MANUAL = "manual"                    # ``cc-continuity checkpoint``: one dir of facts per manual checkpoint
CHECKPOINT = "checkpoint"            # the rotation's checkpoint dir, holding:
HANDOFF = "handoff.md"               # - what the successor starts from (model- or machine-written)
FACTS = "snapshot.json"              # - the machine facts taken when the handoff was requested (also in emergency/, manual/*;
#                                      the name predates the work-tree snapshot: older records read it)
MANIFEST = "manifest.json"           # - id, handoff sha256 + validation, git ref, trigger reading
SNAPSHOT_RESULT = "snapshot-%s.json"  # - a snapshot job's result, by job id (snapshot.job.result_path)
BOOTSTRAP = "bootstrap.json"         # - the successor's bootstrap text, prepared at the verified turn's end
FENCE = "fence.nonce"                # - the random marker fencing the handoff in the bootstrap (texts.fenced)
BOOTSTRAP_DUE = "bootstrap.due.txt"  # a successor's built bootstrap, kept until its transcript holds it
ROTATOR_PLAN = "rotator-plan.json"   # - the tmux rotator's plan (the watchdog re-spawns a rotator from it)
DRAFT = "draft.txt"                  # - what the user had typed when the rotator cleared the input box
SUCCESSOR_STARTED = "successor.started"  # - the successor's SessionStart claimed the checkpoint
CONTINUATION_DELIVERED = "continuation.delivered"  # - the continuation reached the successor's first prompt
SHARE_STATUS = "share.json"          # - publishing it to share_remote: queued/waiting/retrying/published/failed (share.py)
CHECKPOINT_PREFIX = "cp-"            # a checkpoint's id: cp-<NNN> (:func:`checkpoint_id`)


def state_path(sdir: "str") -> "str":
    return sdir + "/" + STATE


def ledger_path(sdir: "str") -> "str":
    return sdir + "/" + LEDGER


def status_reading_path(sdir: "str") -> "str":
    return sdir + "/" + STATUS_READING


def statusline_path(sdir: "str") -> "str":
    return sdir + "/" + STATUSLINE


def chain_cache_path(sdir: "str") -> "str":
    return sdir + "/" + CHAIN_CACHE


def turn_snapshot_path(sdir: "str") -> "str":
    return sdir + "/" + TURN_SNAPSHOT


def emergency_dir(sdir: "str") -> "str":
    return sdir + "/" + EMERGENCY


def manual_dir(sdir: "str", stamp: "str") -> "str":
    return sdir + "/" + MANUAL + "/" + stamp


def checkpoint_dir(sdir: "str") -> "str":
    return sdir + "/" + CHECKPOINT


def handoff_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + HANDOFF


def facts_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + FACTS


def manifest_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + MANIFEST


def snapshot_result_path(sdir: "str", job: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + SNAPSHOT_RESULT % job


def bootstrap_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + BOOTSTRAP


def bootstrap_due_path(sdir: "str") -> "str":
    """The successor's own copy of the bootstrap it claimed (in its dir, not the predecessor's)."""
    return sdir + "/" + BOOTSTRAP_DUE


def rotator_plan_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + ROTATOR_PLAN


def fence_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + FENCE


def draft_file(sdir: "str") -> "str":
    """Text the user had left in the input box when the rotator cleared it (the bootstrap quotes it)."""
    return checkpoint_dir(sdir) + "/" + DRAFT


def started_marker(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + SUCCESSOR_STARTED


def delivered_marker(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + CONTINUATION_DELIVERED


def share_status_path(sdir: "str") -> "str":
    return checkpoint_dir(sdir) + "/" + SHARE_STATUS


def checkpoint_id(number: "int") -> "str":
    return CHECKPOINT_PREFIX + "%03d" % number


def read_file(path: "str", limit: "int" = 1 << 22) -> "bytes":
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


def load(sdir: "str") -> "Record":
    """The record in ``sdir``; raises OSError/ValueError when missing or corrupt."""
    rec = fastjson.loads(read_file(state_path(sdir)))
    if not isinstance(rec, dict) or rec.get("state") not in STATES:
        raise ValueError("corrupt session state in %s" % sdir)
    return rec  # type: ignore[return-value]  # a dict with a known state: its keys are Record's (tests/test_session_record.py)


def open_marker(sdir: "str") -> "str | None":
    """``<project>/open/<NNN>`` for the session dir ``<project>/sessions/<NNN>`` (None for other dirs).

    The ``open/`` directory indexes the sessions that are not in a TERMINAL state, so the
    claim, the crash notice and ``status`` read those records only, not the whole history.
    The marker is made before a record goes open and removed after it went terminal: the
    index may hold a stale number (readers check the record) but never misses an open one.
    """
    head, sep, num = sdir.rstrip("/").rpartition("/sessions/")
    return head + "/open/" + num if sep and num.isdigit() else None


def _mark_open(marker: "str", is_open: "bool") -> "None":
    try:
        if is_open:
            posix.close(posix.open(marker, posix.O_WRONLY | posix.O_CREAT | posix.O_CLOEXEC, 0o600))
        else:
            posix.unlink(marker)
    except FileNotFoundError:
        pass  # no index yet (built on the next registration), or no marker to remove


def save(sdir: "str", rec: "Record") -> "None":
    from . import atomic

    rec["updated"] = round(time.time(), 3)
    marker = open_marker(sdir)
    is_open = rec.get("state") not in TERMINAL
    if marker and is_open:
        _mark_open(marker, True)
    atomic.write_text(state_path(sdir), fastjson.dumps(rec))
    if marker and not is_open:
        _mark_open(marker, False)


def new_record(number: "int", name: "str", session_id: "str", state: "str" = ACTIVE, **fields: "Any") -> "Record":
    now = round(time.time(), 3)
    rec: "Record" = {
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
    rec.update(fields)  # type: ignore[typeddict-item]  # keyword fields: Record's keys (tests/test_session_record.py)
    return rec


def log(sdir: "str", record: "dict[str, Any]") -> "dict[str, Any]":
    """Append ``record`` to the session's ledger."""
    return ledger.append(ledger_path(sdir), record)


def transition(sdir: "str", rec: "Record", dst: "str", why: "str", **fields: "Any") -> "Record":
    """Move ``rec`` to ``dst`` (checked), persist it, and log it to the ledger."""
    src = rec.get("state")
    if not is_allowed(src, dst):
        ledger.append(ledger_path(sdir), {"ev": "illegal_transition", "from": src, "to": dst, "why": why})
        raise IllegalTransition("%s -> %s is not allowed (%s)" % (src, dst, why))
    rec["state"] = dst
    rec.update(fields)  # type: ignore[typeddict-item]  # keyword fields: Record's keys (tests/test_session_record.py)
    save(sdir, rec)
    ledger.append(ledger_path(sdir), {"ev": "transition", "from": src, "to": dst, "why": why})
    return rec
