"""A turn goes on and ends: the context's levels, and at *rotate* the hand-off.

* :func:`tool_used` (after a tool call) - a level change is recorded once;
* :func:`turn_ended` (Stop) - the gate at the end of each turn: record the level, request
  the handoff at *rotate*, check it on the following Stops, fall back to a machine
  handoff, make the checkpoint (snapshot + manifest) and hand over;
* :func:`late_turn_end` (the late Stop) - a second look at a turn's end whose reading lagged;
* :func:`before_compact` (PreCompact) and :func:`rotate_instead_of_compacting` (the mod's
  skipped compaction) - rotate instead of compacting;
* :func:`session_ended` (SessionEnd) - a handoff the verifying Stop died before checking is
  checked as it would have been, then the session's record ends (``start.session_ended``);
* :func:`finish_undecided` (``cc-continuity run``, once a session's process is over) - a rotation
  its process ended in is decided: the handoff it wrote, else a machine one.
"""

from __future__ import annotations

import os
import time

from .. import ledger, meter, paths, safefile, session
from ..errors import StateDirError
from . import checkpoint, claim, context, handover, start, texts

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from typing import Any

    from ..session import Record
    from .context import Context, Output, Reading
    from .handoff import Validation


STOP_WAIT_S = 3.0  # Stop waits this long for the transcript to hold the turn's last reply


LATE_WAIT_S = 30.0  # the late Stop (async: nobody waits for it) waits this long for a reading


LATE_SYNC_WAIT_S = 10.0  # and this long for the Stop hook's ledger line of the same turn end


IN_PROCESS = ("mod", "native")  # drivers that clear at once in the agent's process: the snapshot is not waited for


STATE_FOR_LEVEL = {"warn": session.WARNED, "rotate": session.ROTATION_PENDING, "hard": session.ROTATION_PENDING}


def measure_turn_end(ctx: Context, sdir: str, rec: Record, bound_s: float,
                     since: float) -> tuple[Reading, bool, int]:
    """``(reading, caught_up, waited_ms)`` for the reply that ended the turn.

    The transcript can lag the turn's last reply (seen on Claude Code 2.1.328: the
    Stop hook read 20 % while the reply had taken the context to 63 %), so this
    waits, up to ``bound_s``, until either the transcript holds the reply the
    payload names (``last_assistant_message``) or the agent has left a reading of
    its own taken after ``since`` (Claude Code's status line).  When neither comes
    in time, ``caught_up`` is False and the reading is the stale one - not to be
    acted on.
    """
    path = ctx.payload.get("transcript_path") or rec.get("transcript")
    last = ctx.payload.get("last_assistant_message")
    t0 = time.monotonic()
    deadline = t0 + bound_s
    version = None
    refused = False
    while True:
        ok, got = False, None
        if isinstance(path, str) and path:
            try:
                ok, got = ctx.host.reply_reading(path, last)
            except safefile.NotRegular:  # a FIFO, a device: it never catches up; the agent's own reading, if any, now
                path, refused = None, True
            except OSError:
                ok, got = False, None
        version = (got or {}).get("cc_version") or version  # a stale row still names the agent's version
        if not ok:
            own = ctx.host.own_reading(sdir, ctx.session_id, since)
            if own is not None:
                ok, got = True, own
                version = version or own.get("cc_version")
        now = time.monotonic()
        if ok or now >= deadline or refused:
            break
        time.sleep(0.02)
    got = got or {"tokens": None, "model": None, "source": "none"}
    ctx.agent_version = version  # how a Stop asks for more (hooks.stop_wire)
    reading = ctx.reading_for(sdir, rec, got.get("tokens"), got.get("source"), got.get("model"), got.get("window"))
    return reading, ok, int((now - t0) * 1000)


def tool_used(ctx: Context, n: int, sdir: str, rec: Record,
              reading: Reading) -> tuple[str | None, Record]:
    """A reading taken around a tool call: a level change is recorded once.  (note to show or None, rec)."""
    if not needs_level_change(rec, reading):
        return None, rec
    return apply_level(ctx, n, sdir, reading)


def needs_level_change(rec: Record, reading: Reading) -> bool:
    return bool(meter.level_index(reading["level"]) != meter.notified_index(rec))


def apply_level(ctx: Context, n: int, sdir: str, reading: Reading) -> tuple[str | None, Record]:
    """Record a level change (under the project lock).  Returns the note to show, once."""
    with ctx.project.edit(sdir) as rec:
        lvl = reading["level"]
        idx = meter.level_index(lvl)
        have = meter.notified_index(rec)
        if idx == have:
            return None, rec
        state = rec["state"]
        if idx < have:
            # Context shrank (compaction): step back down, and allow notes again.
            rec["levels_notified"] = [x for x in rec.get("levels_notified") or () if meter.level_index(x) <= idx]
            target = {meter.OK: session.ACTIVE, meter.WARN: session.WARNED}.get(idx, state)
            if state in (session.WARNED, session.ROTATION_PENDING) and target != state and session.is_allowed(state, target):
                session.transition(sdir, rec, target, "context shrank to %s" % lvl)
            return None, rec
        rec["levels_notified"] = meter.notified_through(idx)
        rec["last_reading"] = {k: reading[k] for k in ("tokens", "window", "percent", "level")}
        target = STATE_FOR_LEVEL.get(lvl, state)  # no state of its own: stays
        if target and target != state and session.is_allowed(state, target):
            session.transition(sdir, rec, target, "context %s%% >= %s" % (reading["percent"], lvl))
        ctx.log(sdir, {"ev": "level", "level": lvl, "tokens": reading["tokens"], "window": reading["window"],
                       "percent": reading["percent"]})
    if lvl == "warn":
        ctx.push(rec, "context-warning", "context at warn level", reading)
    return texts.level_note(reading, ctx.cfg), rec


# -- the turn's end: request, check, fall back, verify, hand over ----------------------------------
def turn_ended(ctx: Context, wait_s: float | None = None) -> Output | None:
    """Stop: the rotation gate at the end of each turn; the hook's output (a block continues the turn).

    Below *rotate* the level is recorded (a warn note is parked for the next
    prompt: Stop output would make the turn go on); at *rotate* the handoff is
    requested, on the following Stops checked, and once valid (or replaced by
    a machine handoff) verified and handed over.  A reading that is not caught
    up with the turn's last reply is never acted on (:func:`measure_turn_end`).
    """
    since = time.time()
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    problem = _state_dirs_problem(sdir)
    if problem is not None:  # no rotation writes into a directory that is not ours; said once
        ctx.outcome = "state directory not ours: %s" % problem
        if not problem.startswith("the state directory %s " % sdir):  # (its own dir: nothing written there)
            if any(r.get("ev") == "state_dir_not_ours" for r in ledger.tail(session.ledger_path(sdir), 200)):
                return None
            ctx.log(sdir, {"ev": "state_dir_not_ours", "problem": problem[:300]})
        return {"systemMessage": texts.state_dir_not_ours(problem)}
    if rec.get("resume_grace"):  # a resumed conversation's first turn is over: the gates apply from now on
        with ctx.project.edit(sdir) as rec:
            rec.pop("resume_grace", None)
    reading, caught, waited = measure_turn_end(ctx, sdir, rec, STOP_WAIT_S if wait_s is None else wait_s, since)
    ctx.log(sdir, {"ev": "stop", "tokens": reading["tokens"], "percent": reading["percent"],
                   "level": reading["level"], "stop_hook_active": bool(ctx.payload.get("stop_hook_active")),
                   "caught_up": caught, "waited_ms": waited, "source": reading["source"],
                   "prompt_id": ctx.payload.get("prompt_id")})
    ctx.renew_leases(sdir)  # remote leases held for this work (share/): renewed hourly, by a detached job
    state = rec["state"]
    due = None
    if (rec.get("claim_pending") is not None or rec.get("claiming") is not None) and not rec.get("predecessor_claimed"):
        due = start.claim_for(ctx, n, sdir, rec, cleared=rec.get("claim_pending") in ("clear", None))  # its hooks all died
        rec = session.load(sdir)
        state = rec["state"]
    if due is None and rec.get("bootstrap"):
        due = start.bootstrap_due(ctx, sdir, rec)
    if due:  # its SessionStart and first prompt both lost it: the turn goes on with it
        ctx.outcome = "bootstrap delivered late (Stop)"
        return {"decision": "block", "reason": due}
    if state == session.HANDOFF_REQUESTED:
        return check_handoff(ctx, n, sdir)
    if state == session.AWAITING_MANUAL_CLEAR:
        return _ask_for_clear(rec)
    if state == session.ROTATING and not handover.rotator_alive(rec):
        with ctx.project.edit(sdir) as rec:
            if rec["state"] != session.ROTATING:
                return None
            session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator %s is gone" % rec.get("rotator_pid"))
        ctx.push(rec, "lifecycle-failed", "rotator stopped; /clear needed")
        return _ask_for_clear(rec)
    if state in session.CLAIMABLE or state in session.TERMINAL:
        return None
    if rec.get("loop_stopped"):
        return None  # told once: this checkout's fixed context alone is past rotate; no more rotations here
    if caught and reading["level"] in ("rotate", "hard") and rec.get("predecessor_claimed") and state in session.WORKING \
            and _first_turn_without_tools(sdir) and _first_request_past_rotate(ctx, rec, reading):
        return _stop_loop(ctx, sdir, reading)
    out = decide(ctx, n, sdir, rec, reading, caught, waited)
    if out is None and ctx.cfg["turn_snapshots"]:
        _turn_snapshot(ctx, n, sdir, rec)
    return out


def _first_turn_without_tools(sdir: str) -> bool:
    lines = ledger.read(session.ledger_path(sdir))
    return sum(r.get("ev") == "stop" for r in lines) <= 1 and not any(r.get("ev") == "tool" for r in lines)


def _first_request_past_rotate(ctx: Context, rec: Record, reading: Reading) -> bool:
    """Was the session's very first model request (its start alone: the bootstrap and fixed context) past rotate?"""
    tpath = ctx.payload.get("transcript_path") or rec.get("transcript")
    tokens = ctx.host.first_request_tokens(tpath) if isinstance(tpath, str) else None
    return tokens is not None and meter.level(tokens, reading.get("window") or 0, ctx.cfg) in ("rotate", "hard")


def _stop_loop(ctx: Context, sdir: str, reading: Reading) -> Output:
    """A successor past *rotate* before any tool: another rotation would start the same way (a loop)."""
    with ctx.project.edit(sdir) as rec:
        rec["loop_stopped"] = True
    ctx.log(sdir, {"ev": "rotation_loop_stopped", "percent": reading["percent"], "tokens": reading["tokens"]})
    ctx.push(rec, "lifecycle-failed", "rotation loop stopped at %s%%" % reading["percent"])
    ctx.outcome = "rotation loop stopped"
    return {"systemMessage": texts.rotation_loop(reading["percent"], ctx.cfg["rotate"])}


def _state_dirs_problem(sdir: str) -> str | None:
    """The state directories a rotation writes into, checked (and made private) at this turn's end."""
    try:
        for d in (sdir, session.checkpoint_dir(sdir), paths.runtime_dir(), paths.handover_dir()):
            if d == sdir or os.path.lexists(d):
                safefile.private_dir(d)
    except StateDirError as e:
        return str(e)
    return None


def _turn_snapshot(ctx: Context, n: int, sdir: str, rec: Record) -> None:
    """The rolling turn-end snapshot (a crash before any checkpoint then loses at most this turn's tree)."""
    from ..snapshot import job  # subprocess and git: loaded by the steps that snapshot, not by every hook (the mod)

    try:
        proc = job.start_turn(ctx.project.root, sdir, ctx.project.key, n, rec.get("name"), ctx.cfg)
    except (OSError, ValueError) as e:
        ctx.log(sdir, {"ev": "turn_snapshot_failed", "error": str(e)[:200]})
        return
    if proc is not None:
        ctx.outcome += "; turn snapshot started"


def decide(ctx: Context, n: int, sdir: str, rec: Record, reading: Reading, caught: bool,
           waited: int) -> Output | None:
    """Act on a turn-end reading: record its level, request the handoff at *rotate*.

    A reading that is not ``caught`` up is never acted on (it could undo a
    level, or miss one); only what is already known from earlier (a level
    recorded after a tool, a manual ``rotate``) still requests the handoff.
    """
    if caught and needs_level_change(rec, reading):
        note, rec = apply_level(ctx, n, sdir, reading)
        if note and reading["level"] in ("warn",):
            _park_note(ctx, sdir, note)
    if ((caught and meter.at_least(reading["level"], "rotate")) or rec.get("rotate_requested")
            or rec["state"] == session.ROTATION_PENDING):
        if not caught and rec.get("last_reading"):
            reading = dict(reading, **rec["last_reading"])  # what was known, not the stale tail
        return request_handoff(ctx, n, sdir, reading)
    if not caught:
        ctx.outcome = "transcript behind after %d ms; left to the late Stop" % waited
    return None


def _park_note(ctx: Context, sdir: str, note: str) -> None:
    with ctx.project.edit(sdir) as rec:
        rec["pending_note"] = note


def request_handoff(ctx: Context, n: int, sdir: str, reading: Reading) -> Output | None:
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    with ctx.project.edit(sdir) as rec:
        if rec["state"] not in session.WORKING:
            return None
        snap = checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg, ctx.host)
        rec.pop("pending_note", None)
        session.transition(sdir, rec, session.HANDOFF_REQUESTED,
                           "manual rotate" if rec.get("rotate_requested") else "context %s%%" % reading["percent"],
                           handoff_tries=0, handoff_requested_at=snap["requested_at"], rotate_requested=False)
    ctx.push(rec, "rotation-pending", "handoff requested", reading)
    path = checkpoint.handoff_path(sdir)
    if os.path.exists(path):
        # Written already (e.g. during the hard-ceiling gate): accept it now if it is valid.
        check = handoff.validate(path, ctx.project.root, ctx.cfg)
        if check.ok:
            return checkpoint_and_hand_over(ctx, n, sdir, check, degraded=False, tries=1)
    ctx.outcome = "handoff requested"
    return {"decision": "block", "reason": texts.handoff_request(reading, path, ctx.cfg, ctx.host.write_with)}


def check_handoff(ctx: Context, n: int, sdir: str) -> Output | None:
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    path = checkpoint.handoff_path(sdir)
    if not os.path.exists(path):
        # Nothing written yet (or the request never reached the model): ask again, in full.
        reading = checkpoint.facts(sdir).get("reading") or {}
        tries = _count_try(ctx, sdir)
        if tries < ctx.cfg["handoff_max_tries"]:
            ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": False, "problems": ["missing"]})
            ctx.outcome = "handoff missing (try %d)" % tries
            return {"decision": "block", "reason": texts.handoff_missing(tries, ctx.cfg["handoff_max_tries"],
                                                                          texts.handoff_request(reading, path, ctx.cfg, ctx.host.write_with))}
        return fall_back(ctx, n, sdir, handoff.validate(path, ctx.project.root, ctx.cfg).problems, tries)
    check, tries = verify_written(ctx, sdir)
    if check.ok:
        held = _claims_contradicted(ctx, sdir, path, check, tries)
        if held is not None:
            return held
        return checkpoint_and_hand_over(ctx, n, sdir, check, degraded=False, tries=tries)
    if tries < ctx.cfg["handoff_max_tries"]:
        ctx.outcome = "handoff invalid (try %d)" % tries
        return {"decision": "block",
                "reason": texts.handoff_incomplete(path, tries, ctx.cfg["handoff_max_tries"], check.problems)}
    return fall_back(ctx, n, sdir, check.problems, tries)


def verify_written(ctx: Context, sdir: str) -> tuple[Validation, int]:
    """The handoff the model wrote, checked as a verifying Stop checks it (its sections, then its sources);
    one more try counted and its ``handoff_check`` line written.  (the validation, the try's number)."""
    from . import handoff  # (see check_handoff)

    path = checkpoint.handoff_path(sdir)
    check = handoff.validate(path, ctx.project.root, ctx.cfg)
    handoff.apply_sources(check, path, ctx.project.root, sdir, ctx.cfg)
    tries = _count_try(ctx, sdir)
    ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": check.ok, "problems": check.problems[:10],
                   "chars": check.chars, "sha256": check.sha256, "sources": check.sources, "by": ctx.event})
    return check, tries


def _claims_contradicted(ctx: Context, sdir: str, path: str, check: Validation, tries: int) -> Output | None:
    """A valid handoff whose claims ("tests pass", "pushed" …) the ledger contradicts: shown once to its writer.

    Once per handoff version (its sha256), and only while a try is left: the writer may fix
    the handoff or leave it; either way the successor is told what was not confirmed.
    """
    try:
        text = checkpoint.read_handoff(sdir).decode("utf-8", "replace")
    except OSError:
        return None
    from . import handoff  # (see check_handoff)

    found = handoff.claim_problems(handoff.check_claims(text, handoff.tool_lines(ledger.read(session.ledger_path(sdir))), path))
    if not found or tries >= ctx.cfg["handoff_max_tries"]:
        return None
    with ctx.project.edit(sdir) as rec:
        if rec.get("claims_shown") == check.sha256:
            return None
        rec["claims_shown"] = check.sha256 or ""
    ctx.log(sdir, {"ev": "claims_contradicted", "try": tries, "problems": found[:10]})
    ctx.outcome = "handoff claims contradicted (try %d)" % tries
    return {"decision": "block", "reason": texts.claims_contradicted(path, found)}


def _count_try(ctx: Context, sdir: str) -> int:
    """One more check of the handoff, recorded under the project lock; its number."""
    with ctx.project.edit(sdir) as rec:
        tries = int(rec.get("handoff_tries") or 0) + 1
        rec["handoff_tries"] = tries
    return tries


def fall_back(ctx: Context, n: int, sdir: str, problems: list[str], tries: int,
              driver: str | None = None) -> Output | None:
    """No valid handoff from the model in time: write one from machine facts (degraded) and verify it."""
    snap = checkpoint.facts(sdir)
    aside = checkpoint.move_aside_non_file(sdir)
    if aside:
        ctx.log(sdir, {"ev": "handoff_path_not_a_file", "moved_to": aside})
    machine = checkpoint.write_machine_handoff(sdir, snap, ctx.cfg, problems)
    machine.problems = problems  # kept in the manifest: why it is degraded
    out = checkpoint_and_hand_over(ctx, n, sdir, machine, degraded=True, tries=tries, driver=driver)
    if aside:  # said once: this is the one fall-back of this checkpoint
        note = texts.handoff_path_was_a_directory(checkpoint.handoff_path(sdir), aside)
        out = dict(out or {})
        out["systemMessage"] = (out["systemMessage"] + "\n" + note) if out.get("systemMessage") else note
    return out


def checkpoint_and_hand_over(ctx: Context, n: int, sdir: str, check: Validation, degraded: bool, tries: int,
                             driver: str | None = None, snapshot_wait_s: float | None = None) -> Output | None:
    """The handoff is settled: make the checkpoint, then hand over to the successor by one driver.

    Both in one critical section of the project (no claim sees the checkpoint without its
    driver), then the tmux rotator is started outside it.  ``driver`` (mod, native, tmux, headless or
    manual) is the adapter's own when it has one (``native``: the host's answer clears and continues;
    ``headless``: the run loop starts the successor
    once the agent's process ends), else chosen: the plugin's mod when this agent process's mod
    is alive (it hands over at the turn's end, in-process; a tmux rotator stands by in case it
    does not), else the tmux rotator, else the user's own /clear.  The ledger and the record say
    which.  ``snapshot_wait_s``: how long the work-tree snapshot is waited for (default
    ``snapshot_hook_wait_s``, and 0 for a driver that clears in the agent's process at once, as
    the mod does: the successor's first request does not wait for it, its tools that change
    files do; its job finishes it either way).  A session that left
    HANDOFF_REQUESTED meanwhile (another hook verified it first) is left as it is.
    """
    snap = checkpoint.facts(sdir)
    proj = ctx.project
    with proj.edit(sdir) as rec:
        if rec["state"] != session.HANDOFF_REQUESTED:  # a concurrent hook made the checkpoint: never a second one
            ctx.log(sdir, {"ev": "checkpoint_skipped", "state": rec["state"], "by": ctx.event})
            ctx.outcome = "checkpoint already made (%s)" % rec["state"]
            return None
        driver = driver or ctx.own_driver()
        tmux_ok = driver not in ("headless", "manual", "native") and ctx.can_drive(rec)
        driver = driver or handover.choose_driver(rec, ctx.cfg, tmux_ok)
        if snapshot_wait_s is None and driver in IN_PROCESS:
            snapshot_wait_s = 0.0
        summary = _make_checkpoint(ctx, n, sdir, rec, check, degraded, tries, snap, snapshot_wait_s)
        successor_name = proj.session_name(proj.peek_next_number())
        _offer(ctx, sdir, rec, summary, driver, successor_name)
    ctx.push(rec, "checkpoint-verified", "%s %s" % (summary["id"], "degraded" if degraded else "valid"))
    ctx.outcome = "checkpoint %s verified%s, driver %s" % (summary["id"], " (degraded)" if degraded else "", driver)
    if driver == "native":
        return _clear_natively(ctx, n, sdir, rec, successor_name)
    if driver != "manual" and tmux_ok and not _start_rotator(ctx, sdir, rec, driver, successor_name):
        if driver != "mod":  # the mod still hands over without a rotator behind it
            with proj.edit(sdir) as rec:
                session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator failed to start")
            return _ask_for_clear(rec)
    if driver != "manual":
        return None
    return _ask_for_clear(rec)


def _make_checkpoint(ctx: Context, n: int, sdir: str, rec: Record, check: Validation, degraded: bool, tries: int,
                     snap: dict[str, Any], snapshot_wait_s: float | None = None) -> dict[str, Any]:
    """The work-tree snapshot and the manifest, CHECKPOINT_VERIFIED, publishing started (when the user shares),
    the bootstrap's checkpoint part prepared; the checkpoint's summary.  Under the project lock."""
    proj = ctx.project
    summary: dict[str, Any] = checkpoint.finalize(proj.root, proj.slug, sdir, rec, check, ctx.cfg, degraded, tries,
                                                  snap, snapshot_wait_s)
    session.transition(sdir, rec, session.CHECKPOINT_VERIFIED,
                       "handoff %s after %d tries" % ("degraded" if degraded else "valid", tries), checkpoint=summary)
    ctx.after_verified(n)  # when the user shares: a detached job publishes it (never waited for)
    try:
        claim.prepare(proj, n, rec, ctx.cfg["bootstrap_max_tokens"])  # the claim then only adds what is new
    except (OSError, ValueError) as e:
        ctx.log(sdir, {"ev": "bootstrap_prepare_failed", "error": str(e)[:200]})
    return summary


def _offer(ctx: Context, sdir: str, rec: Record, summary: dict[str, Any], driver: str, successor_name: str) -> None:
    """ROTATING by ``driver`` (AWAITING_MANUAL_CLEAR for the user's own /clear); for the mod, the hand-over is
    offered where it reads it at the turn's end, bound to this process and turn.  Under the project lock."""
    why = {"mod": "the mod hands over in-process", "native": "the host clears and continues in-process",
           "tmux": "tmux pane %s" % rec.get("tmux_pane"),
           "headless": "the run loop starts the successor", "manual": "no tmux: manual /clear"}[driver]
    session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR if driver == "manual" else session.ROTATING,
                       why, driver=driver)
    if driver == "mod" and ctx.session_id:
        bound = handover.offer_binding(ctx.agent_pid(), ctx.payload.get("prompt_id"), summary["id"],
                                       session.state_path(sdir))
        handover.offer_handover(ctx.session_id, handover.handover(rec, sdir, successor_name, ctx.project.root), bound)
        rec["handover_bound"] = {"pid": bound["pid"], "pid_ticks": bound["pid_ticks"]}
    ctx.log(sdir, {"ev": "driver", "driver": driver, "checkpoint": summary["id"]})


def _clear_natively(ctx: Context, n: int, sdir: str, rec: Record, successor_name: str) -> Output:
    """The host clears and continues in this very answer (``native``): the continuation is the first message
    after the clear.  This agent process is remembered as having cleared session ``n``, as a SessionEnd(clear)
    does, so the successor it starts is paired with it."""
    plan = handover.handover(rec, sdir, successor_name, ctx.project.root)
    ctx.project.remember_pid(ctx.agent_pid(), n, round(time.time(), 3))
    return {"decision": "block", "reason": plan["continuation"],
            "hookSpecificOutput": {"hookEventName": ctx.event, "clearContext": True},
            "systemMessage": texts.cleared_natively(plan["checkpoint"], successor_name)}


def _start_rotator(ctx: Context, sdir: str, rec: Record, driver: str, successor_name: str) -> bool:
    """The tmux rotator, started (standing by behind the mod, when the mod drives); False when it could not."""
    proj = ctx.project
    try:
        standby = ctx.cfg["mod_standby_s"] if driver == "mod" else None
        pid = ctx.start_rotator(rec, sdir, successor_name, proj.lock_path, standby)
    except Exception as e:  # the rotator could not start: the caller falls back to a manual /clear
        ctx.log(sdir, {"ev": "rotator_failed", "error": str(e)[:300]})
        if driver != "mod":
            ctx.push(rec, "lifecycle-failed", "rotator did not start: %s" % type(e).__name__)
        return False
    with proj.edit(sdir) as rec:
        rec["rotator_pid"] = pid
    ctx.log(sdir, {"ev": "rotator_spawned", "pid": pid, "successor": successor_name, "standby": bool(standby)})
    return True


def _ask_for_clear(rec: Record) -> Output:
    return {"systemMessage": texts.type_clear((rec.get("checkpoint") or {}).get("id", "the checkpoint"))}


# -- compaction ------------------------------------------------------------------------------------
def before_compact(ctx: Context) -> Output | None:
    """PreCompact: at or past *rotate* an automatic compaction is blocked (configurable) and the handoff
    requested at this turn's end instead; otherwise an emergency machine checkpoint (facts only, not
    claimable) is written and compaction proceeds."""
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    trigger = ctx.payload.get("trigger")
    trigger = trigger if isinstance(trigger, str) else None
    level = meter.notified_index(rec)
    ctx.log(sdir, {"ev": "precompact", "trigger": trigger, "level_index": level})
    if trigger == "auto" and level >= meter.ROTATE and ctx.cfg["precompact_block"] and rec["state"] in session.LIVE:
        with ctx.project.edit(sdir) as rec:
            rec["rotate_requested"] = True
        ctx.outcome = "auto-compaction blocked; rotation requested"
        return {"decision": "block",
                "reason": texts.compaction_blocked()}
    reading = ctx.reading(sdir, rec)
    out = session.emergency_dir(sdir)
    checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg, ctx.host, out_dir=out)
    ctx.log(sdir, {"ev": "emergency_checkpoint", "trigger": trigger, "path": out + "/" + session.FACTS})
    ctx.outcome = "emergency checkpoint"
    return None


# -- the late Stop ---------------------------------------------------------------------------------
def late_turn_end(ctx: Context, wait_s: float | None = None, sync_wait_s: float | None = None) -> str | None:
    """A second look at a turn's end whose reading the Stop hook could not trust; the text to wake
    the model with (a handoff request), or None.

    It does nothing when the Stop hook saw a caught-up reading (the common case: one
    ledger read), when the session moved on (a new prompt or tool call), or when the
    reading never arrives.
    """
    since = time.time()
    found = context.known(ctx)
    if found is None:
        return None
    n, sdir = found
    seen = _sync_stop(sdir, ctx.payload.get("prompt_id"), since,
                      LATE_SYNC_WAIT_S if sync_wait_s is None else sync_wait_s)
    if seen is not None and seen.get("caught_up") is not False:
        ctx.outcome = "the Stop hook saw the turn's end"
        return None
    rec = session.load(sdir)
    if rec["state"] not in session.WORKING:
        ctx.outcome = "nothing to do in %s" % rec["state"]
        return None
    reading, caught, waited = measure_turn_end(ctx, sdir, rec, LATE_WAIT_S if wait_s is None else wait_s, since)
    if not caught:
        ctx.outcome = "transcript still behind after %d ms" % waited
        ctx.log(sdir, {"ev": "late_stop", "caught_up": False, "waited_ms": waited})
        return None
    if seen is not None and _moved_on(sdir, seen):
        ctx.outcome = "the session moved on"
        return None
    rec = session.load(sdir)
    if rec["state"] not in session.WORKING:
        return None
    ctx.log(sdir, {"ev": "late_stop", "caught_up": True, "waited_ms": waited, "tokens": reading["tokens"],
                   "percent": reading["percent"], "level": reading["level"], "source": reading["source"]})
    out = decide(ctx, n, sdir, rec, reading, True, waited)
    if isinstance(out, dict) and out.get("decision") == "block":
        ctx.outcome = "handoff requested late (after %d ms)" % waited
        return str(out["reason"])
    return None


def _sync_stop(sdir: str, prompt_id: object, since: float, timeout: float) -> dict[str, Any] | None:
    """The Stop hook's ledger line for this turn end, waiting for it (None if it never comes)."""
    deadline = time.monotonic() + timeout
    path = session.ledger_path(sdir)
    while True:
        for rec in reversed(ledger.tail(path, 40)):
            if rec.get("ev") != "stop" or rec.get("ts", 0) < since - 5:
                continue
            if prompt_id is None or rec.get("prompt_id") == prompt_id:
                line: dict[str, Any] = rec
                return line
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


_NEWER = ("prompt", "tool", "stop")  # ledger lines that say the session went on after a turn's end


def _moved_on(sdir: str, seen: dict[str, Any]) -> bool:
    """A prompt, tool call or another turn end after the Stop line ``seen``."""
    return any(r.get("n", 0) > seen.get("n", 0) and r.get("ev") in _NEWER
               for r in ledger.tail(session.ledger_path(sdir), 40))


def rotate_instead_of_compacting(ctx: Context, n: int, sdir: str, rec: Record) -> str | None:
    """An auto-compaction the mod skips: the window is full, so no turn is left for the model to write a
    handoff - the one it wrote, if valid, else a machine handoff (degraded), verified with the mod as
    driver.  ``"valid"`` or ``"degraded"``; None when the session is in no state to rotate."""
    from . import handoff  # its patterns load re: only the steps that read a handoff pay for it

    if rec["state"] not in session.LIVE:
        return None
    proj = ctx.project
    reading = ctx.reading(sdir, rec)
    with proj.edit(sdir) as rec:
        if rec["state"] in session.WORKING:
            snap = checkpoint.collect(proj.root, sdir, rec, reading, ctx.payload, ctx.cfg, ctx.host)
            session.transition(sdir, rec, session.HANDOFF_REQUESTED, "auto-compaction: rotating instead",
                               handoff_tries=0, handoff_requested_at=snap["requested_at"])
        elif rec["state"] != session.HANDOFF_REQUESTED:
            return None
    check = handoff.validate(checkpoint.handoff_path(sdir), proj.root, ctx.cfg)
    if check.ok:
        checkpoint_and_hand_over(ctx, n, sdir, check, degraded=False, tries=int(rec.get("handoff_tries") or 0) or 1, driver="mod")
        return "valid"
    fall_back(ctx, n, sdir, ["the context filled up (auto-compaction) before a valid handoff was written"], 0,
              driver="mod")
    return "degraded"


# -- the session's end -----------------------------------------------------------------------------
END_SNAPSHOT_WAIT_S = 1.0  # a checkpoint made at SessionEnd waits this long for its snapshot (Codex's budget: 2 s)


def session_ended(ctx: Context) -> None:
    """SessionEnd: a handoff the Stop left unverified is verified now, then the record ends (:func:`start.session_ended`).

    The verifying Stop can die before it verified (killed at its timeout or by the user's
    interrupt) and the user type ``/clear`` (or quit) with the session still in
    HANDOFF_REQUESTED: a complete handoff is there, and ending the session would drop it.
    It is checked here as the Stop checks it (:func:`verify_written`); a valid one makes
    the checkpoint and the session waits for its successor (AWAITING_MANUAL_CLEAR: the
    ``/clear``'s SessionStart claims it, or the next session's after a quit).  Anything
    else ends the session as before, and the ledger says why it was not verified.
    """
    n = ctx.number()
    if n is not None:
        sdir = ctx.session_dir(n)
        try:
            state = session.load(sdir)["state"]
        except (OSError, ValueError, KeyError):
            state = None
        if state == session.HANDOFF_REQUESTED and ctx.cfg["enabled"]:
            _verify_at_end(ctx, n, sdir)
    return start.session_ended(ctx)


def _verify_at_end(ctx: Context, n: int, sdir: str) -> None:
    reason = ctx.payload.get("reason")
    if not os.path.lexists(checkpoint.handoff_path(sdir)):
        why: dict[str, Any] = {"why": "no handoff was written"}
    else:
        check, tries = verify_written(ctx, sdir)
        if check.ok:
            checkpoint_and_hand_over(ctx, n, sdir, check, degraded=False, tries=tries,
                                     driver="headless" if ctx.own_driver() == "headless" else "manual",
                                     snapshot_wait_s=min(ctx.cfg["snapshot_hook_wait_s"], END_SNAPSHOT_WAIT_S))
            rec = session.load(sdir)
            if rec["state"] in session.CLAIMABLE:
                ctx.log(sdir, {"ev": "handoff_verified_at_end", "reason": reason,
                               "checkpoint": (rec.get("checkpoint") or {}).get("id")})
                ctx.outcome = "handoff verified at the session's end: %s" % ctx.outcome
            return
        why = {"why": "the handoff is not valid", "problems": check.problems[:10]}
    ctx.log(sdir, dict(why, ev="handoff_not_verified_at_end", reason=reason))
    ctx.outcome = "handoff not verified at the session's end: %s" % why["why"]


# -- a run's session whose process is over -----------------------------------------------------------
def undecided(rec: Record | dict[str, Any]) -> bool:
    """A session left with its handoff requested and never decided: no checkpoint, not said done, still
    HANDOFF_REQUESTED or ENDED by its process (not by the user's /clear)."""
    if rec.get("checkpoint") or not rec.get("handoff_requested_at") or (rec.get("flags") or {}).get("done"):
        return False
    state = rec.get("state")
    return state == session.HANDOFF_REQUESTED or (
        state == session.ENDED and (rec.get("ended") or {}).get("reason") != "clear")


def finish_undecided(ctx: Context, n: int, sdir: str) -> str | None:
    """A session of ``cc-continuity run`` whose process is over with its handoff requested and never decided
    (killed, its turns cut short, its Stop gone at a headless teardown): decided now as its Stop would have,
    driver ``headless``: the handoff the model wrote when it is valid, else a machine handoff (degraded), as
    after a crash.  ``"valid"``, ``"degraded"``, or None: nothing to finish (no handoff requested, a checkpoint
    made, a session that said it is done, one the user cleared).  Only the run calls this: nothing else knows
    that the session's process is over."""
    with ctx.project.edit(sdir) as rec:
        if not undecided(rec):
            return None
        if rec["state"] == session.ENDED:
            session.transition(sdir, rec, session.HANDOFF_REQUESTED,
                               "run: the process ended before its handoff was decided")
    ctx.log(sdir, {"ev": "finished_by_run", "had_handoff": os.path.lexists(checkpoint.handoff_path(sdir))})
    if os.path.lexists(checkpoint.handoff_path(sdir)):
        check, tries = verify_written(ctx, sdir)
        if check.ok:
            checkpoint_and_hand_over(ctx, n, sdir, check, degraded=False, tries=tries, driver="headless")
            return "valid"
        problems = check.problems
    else:
        tries, problems = int(session.load(sdir).get("handoff_tries") or 0), [
            "the session's process ended before it wrote its handoff"]
    fall_back(ctx, n, sdir, problems, tries, driver="headless")
    return "degraded"
