"""Stop: the rotation gate, at the end of each turn.

- below *rotate*: update the meter; a level note is parked for the next prompt
  (Stop output would make the turn continue);
- at *rotate*/*hard* (or after ``cc-continuity rotate``): take machine facts,
  and block once with the handoff path and template (HANDOFF_REQUESTED);
- on the following Stops: validate the handoff; block again with the exact
  problems, at most ``handoff_max_tries`` times, then fall back to a machine
  handoff marked degraded - a rotation never waits on the model;
- valid: git snapshot + manifest (CHECKPOINT_VERIFIED), then hand over to the
  tmux rotator (ROTATING) or ask the user for ``/clear`` (AWAITING_MANUAL_CLEAR).

The reading that decides is the turn's *last* reply, and the transcript can lag
it: this hook waits (at most ``WAIT_S``) for the row the payload's
``last_assistant_message`` names, or for the status line's own reading.  If
neither arrives, it does not act on the stale one: the late Stop
(``stop_late``, an async hook that can wake the model) waits longer and
requests the handoff then.
"""

import os
import time

from .. import checkpoint, claim, handoff, session
from . import common

WAIT_S = 3.0


def handle(call):
    since = time.time()
    started = common.begin(call)
    if started is None:
        return None
    ctx, n, sdir, rec = started
    reading, caught, waited = common.measure_turn_end(ctx, sdir, rec, WAIT_S, since)
    ctx.log(sdir, {"ev": "stop", "tokens": reading["tokens"], "percent": reading["percent"],
                   "level": reading["level"], "stop_hook_active": bool(ctx.payload.get("stop_hook_active")),
                   "caught_up": caught, "waited_ms": waited, "source": reading["source"],
                   "prompt_id": ctx.payload.get("prompt_id")})
    state = rec["state"]
    if state == session.HANDOFF_REQUESTED:
        return _check_handoff(ctx, n, sdir)
    if state == session.AWAITING_MANUAL_CLEAR:
        return _ask_for_clear(rec)
    if state == session.ROTATING and not _rotator_alive(rec):
        with ctx.project.lock():
            rec = session.load(sdir)
            if rec["state"] != session.ROTATING:
                return None
            session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator %s is gone" % rec.get("rotator_pid"))
        common.notify(ctx, rec, "lifecycle-failed", "rotator stopped; /clear needed")
        return _ask_for_clear(rec)
    if state in session.CLAIMABLE or state in (session.ROTATED, session.ENDED):
        return None
    out = decide(ctx, n, sdir, rec, reading, caught, waited)
    if out is None and ctx.cfg["turn_snapshots"]:
        _turn_snapshot(ctx, n, sdir, rec)
    return out


def _turn_snapshot(ctx, n, sdir, rec):
    """The rolling turn-end snapshot (a crash before any checkpoint then loses at most this turn's tree)."""
    from .. import snapjob

    try:
        proc = snapjob.start_turn(ctx.project.root, sdir, ctx.project.key, n, rec.get("name"), ctx.cfg)
    except (OSError, ValueError) as e:
        ctx.log(sdir, {"ev": "turn_snapshot_failed", "error": str(e)[:200]})
        return
    if proc is not None:
        ctx.outcome += "; turn snapshot started"


def decide(ctx, n, sdir, rec, reading, caught, waited):
    """Act on a turn-end reading: record its level, request the handoff at *rotate*.

    A reading that is not ``caught`` up is never acted on (it could undo a
    level, or miss one); only what is already known from earlier (a level
    recorded after a tool, a manual ``rotate``) still requests the handoff.
    """
    if caught and common.needs_level_change(rec, reading):
        note, rec = common.apply_level(ctx, n, sdir, reading)
        if note and reading["level"] in ("warn",):
            _park_note(ctx, sdir, note)
    if ((caught and reading["level"] in ("rotate", "hard")) or rec.get("rotate_requested")
            or rec["state"] == session.ROTATION_PENDING):
        if not caught and rec.get("last_reading"):
            reading = dict(reading, **rec["last_reading"])  # what was known, not the stale tail
        return _request_handoff(ctx, n, sdir, reading)
    if not caught:
        ctx.outcome = "transcript behind after %d ms; left to the late Stop" % waited
    return None


def _park_note(ctx, sdir, note):
    with ctx.project.lock():
        rec = session.load(sdir)
        rec["pending_note"] = note
        session.save(sdir, rec)


def _request_handoff(ctx, n, sdir, reading):
    with ctx.project.lock():
        rec = session.load(sdir)
        if rec["state"] not in (session.ACTIVE, session.WARNED, session.ROTATION_PENDING, session.BOOTSTRAPPING):
            return None
        snap = checkpoint.collect(ctx.project.root, sdir, rec, reading, ctx.payload, ctx.cfg)
        rec.pop("pending_note", None)
        session.transition(sdir, rec, session.HANDOFF_REQUESTED,
                           "manual rotate" if rec.get("rotate_requested") else "context %s%%" % reading["percent"],
                           handoff_tries=0, handoff_requested_at=snap["requested_at"], rotate_requested=False)
    common.notify(ctx, rec, "rotation-pending", "handoff requested", reading)
    path = checkpoint.handoff_path(sdir)
    if os.path.exists(path):
        # Written already (e.g. during the hard-ceiling gate): accept it now if it is valid.
        check = handoff.validate(path, ctx.project.root, ctx.cfg)
        if check.ok:
            return _verified(ctx, n, sdir, check, degraded=False, tries=1)
    ctx.outcome = "handoff requested"
    return {"decision": "block", "reason": request_text(reading, path, ctx.cfg)}


def request_text(reading, path, cfg):
    win = reading.get("window")
    return (
        "cc-continuity: this session's context is at %s%% of its %s-token window (rotate level %g%%). The work "
        "continues in a fresh session that starts from a handoff file, so the handoff needs to be written before "
        "this turn can end.\n\n"
        "Handoff file (absolute path): %s\n\n"
        "Write it with the Write tool using the template below. Every section must be present and non-empty "
        "(write \"none\" where there is nothing), %d-%d characters, no secrets or tokens, and every file path it names "
        "must exist (relative to the project root, in backticks). Git state, the recent user prompts and the todo "
        "list are recorded automatically. Once the file is written, ending the turn completes the hand-over; "
        "the next session continues from it without the user having to re-explain anything.\n\n%s"
        % (reading.get("percent"), "{:,}".format(win) if win else "?", cfg["rotate"], path,
           cfg["handoff_min_chars"], cfg["handoff_max_chars"], handoff.template(cfg["handoff_sections"]))
    )


def _check_handoff(ctx, n, sdir):
    path = checkpoint.handoff_path(sdir)
    if not os.path.exists(path):
        # Nothing written yet (or the request never reached the model): ask again, in full.
        try:
            reading = checkpoint.read_json(checkpoint.cp_dir(sdir) + "/snapshot.json").get("reading") or {}
        except (OSError, ValueError):
            reading = {}
        with ctx.project.lock():
            rec = session.load(sdir)
            tries = int(rec.get("handoff_tries") or 0) + 1
            rec["handoff_tries"] = tries
            session.save(sdir, rec)
        if tries < ctx.cfg["handoff_max_tries"]:
            ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": False, "problems": ["missing"]})
            ctx.outcome = "handoff missing (try %d)" % tries
            return {"decision": "block", "reason": "The handoff file does not exist yet (check %d of %d).\n\n%s" % (
                tries, ctx.cfg["handoff_max_tries"], request_text(reading, path, ctx.cfg))}
        return _fallback(ctx, n, sdir, handoff.validate(path, ctx.project.root, ctx.cfg), tries)
    check = handoff.validate(path, ctx.project.root, ctx.cfg)
    with ctx.project.lock():
        rec = session.load(sdir)
        tries = int(rec.get("handoff_tries") or 0) + 1
        rec["handoff_tries"] = tries
        session.save(sdir, rec)
    ctx.log(sdir, {"ev": "handoff_check", "try": tries, "ok": check.ok, "problems": check.problems[:10],
                   "chars": check.chars, "sha256": check.sha256})
    if check.ok:
        return _verified(ctx, n, sdir, check, degraded=False, tries=tries)
    if tries < ctx.cfg["handoff_max_tries"]:
        ctx.outcome = "handoff invalid (try %d)" % tries
        return {"decision": "block", "reason": (
            "cc-continuity: the handoff at %s is not complete yet (check %d of %d). What is wrong:\n%s\n\n"
            "Fix these in the file, then end the turn." % (
                path, tries, ctx.cfg["handoff_max_tries"], "\n".join("- " + p for p in check.problems)))}
    return _fallback(ctx, n, sdir, check, tries)


def _fallback(ctx, n, sdir, check, tries):
    """The model did not produce a valid handoff in time: write one from machine facts."""
    try:
        snap = checkpoint.read_json(checkpoint.cp_dir(sdir) + "/snapshot.json")
    except (OSError, ValueError):
        snap = {}
    machine = checkpoint.write_machine_handoff(sdir, snap, ctx.cfg, check.problems)
    machine.problems = check.problems  # kept in the manifest: why it is degraded
    return _verified(ctx, n, sdir, machine, degraded=True, tries=tries)


def _verified(ctx, n, sdir, check, degraded, tries, driver=None):
    """Snapshot + manifest, CHECKPOINT_VERIFIED, then start the hand-over by one driver.

    ``driver`` (mod, tmux or manual) is chosen here unless given: the plugin's
    mod when this Claude process's mod is alive (it hands over at the turn's end,
    in-process; a tmux rotator stands by in case it does not), else the tmux
    rotator, else the user's own /clear.  The ledger and the record say which.
    """
    from .. import rotation, tmux
    from ..tmux import rotator

    try:
        snap = checkpoint.read_json(checkpoint.cp_dir(sdir) + "/snapshot.json")
    except (OSError, ValueError):
        snap = {}
    proj = ctx.project
    with proj.lock():
        rec = session.load(sdir)
        summary = checkpoint.finalize(proj.root, proj.slug, sdir, rec, check, ctx.cfg, degraded, tries, snap)
        session.transition(sdir, rec, session.CHECKPOINT_VERIFIED,
                           "handoff %s after %d tries" % ("degraded" if degraded else "valid", tries),
                           checkpoint=summary)
        try:
            claim.prepare(proj, n, rec, ctx.cfg["bootstrap_max_tokens"])  # the claim then only adds what is new
        except (OSError, ValueError) as e:
            ctx.log(sdir, {"ev": "bootstrap_prepare_failed", "error": str(e)[:200]})
        successor_name = proj.session_name(proj.peek_next_number())
        tmux_ok = tmux.can_drive(rec, ctx.cfg)
        driver = driver or rotation.choose_driver(rec, ctx.cfg, tmux_ok)
        use_tmux = driver != "manual" and tmux_ok
        why = {"mod": "the mod hands over in-process", "tmux": "tmux pane %s" % rec.get("tmux_pane"),
               "manual": "no tmux: manual /clear"}[driver]
        session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR if driver == "manual" else session.ROTATING,
                           why, driver=driver)
        if driver == "mod":  # left where the mod reads it at the turn's end, without starting a process
            rotation.offer_handover(ctx.session_id, rotation.handover(rec, sdir, successor_name, proj.root))
        ctx.log(sdir, {"ev": "driver", "driver": driver, "checkpoint": summary["id"]})
    common.notify(ctx, rec, "checkpoint-verified", "%s %s" % (summary["id"], "degraded" if degraded else "valid"))
    ctx.outcome = "checkpoint %s verified%s, driver %s" % (summary["id"], " (degraded)" if degraded else "", driver)
    if use_tmux:
        try:
            standby = ctx.cfg["mod_standby_s"] if driver == "mod" else None
            pid = rotator.start(rec, sdir, ctx.cfg, successor_name, proj.lock_path, standby)
            with proj.lock():
                rec = session.load(sdir)
                rec["rotator_pid"] = pid
                session.save(sdir, rec)
            ctx.log(sdir, {"ev": "rotator_spawned", "pid": pid, "successor": successor_name,
                           "standby": bool(standby)})
            return None
        except Exception as e:  # the rotator could not start: fall back to a manual /clear
            ctx.log(sdir, {"ev": "rotator_failed", "error": str(e)[:300]})
            if driver == "mod":
                return None  # the mod still hands over; it just has no tmux behind it
            with proj.lock():
                rec = session.load(sdir)
                session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "rotator failed to start")
            common.notify(ctx, rec, "lifecycle-failed", "rotator did not start: %s" % type(e).__name__)
    if driver == "mod":
        return None
    return _ask_for_clear(rec)


def _ask_for_clear(rec):
    cid = (rec.get("checkpoint") or {}).get("id", "the checkpoint")
    return {"systemMessage": "cc-continuity: handoff %s is verified. Type /clear to continue in a fresh session; "
                             "it picks up the handoff automatically." % cid}


def _rotator_alive(rec):
    """Is the rotator spawned for this checkpoint still running?  (Unknown counts as alive.)"""
    from .. import rotation
    from ..procs import pid_alive

    pid = rec.get("rotator_pid")
    if not isinstance(pid, int):
        return True
    if not pid_alive(pid):
        return False
    try:  # a recycled pid is not our rotator
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return rotation.ROTATOR_MODULE.encode() in f.read()
    except OSError:
        return True
