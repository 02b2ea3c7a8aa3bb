"""A session starts: register it, claim what waits for it, deliver its bootstrap; its prompts; its end.

* :func:`session_started` (SessionStart) - register (or refresh) the session, claim a
  waiting checkpoint (or a crashed predecessor's machine handoff) for its bootstrap;
* :func:`prompt_submitted` (UserPromptSubmit) - record the prompt; a successor's first
  prompt makes it ACTIVE; parked level notes and a claim cut short are delivered;
* :func:`session_ended` (SessionEnd's record, after :func:`.turn.session_ended` verified a handoff its
  Stop left unverified) - ENDED, or the ``/clear`` that starts a successor.

A claim is exactly once (under the project lock); its bootstrap is delivered exactly once
(recorded as owed, sent, then confirmed from the transcript by the next hook that can add
context).
"""

from __future__ import annotations

import os
import time

from .. import atomic, faults, fastjson, ledger, meter, safefile, session
from ..digest import sha256
from ..errors import StateDirError
from ..procs import pid_alive
from ..holds import effects
from . import claim, context, handover, revalidation, texts

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from collections.abc import Iterator
    from typing import Any

    from ..project import Project
    from ..session import Record
    from .context import Context, Output


PROMPT_KEEP = 4000  # characters of each prompt kept in the ledger (carried over by a rotation)


REVALIDATE_S = 6.0  # the claim's comparison with the work tree, inside SessionStart's 12 s: past it, not compared


def resume_notice(ctx: Context, n: int, rec: Record) -> str | None:
    """What a resumed conversation that was rotated away from is told at its start."""
    old_n = rec.get("resumed_from")
    if not isinstance(old_n, int):
        return None
    proj = ctx.project
    try:
        old = session.load(proj.session_dir(old_n))
    except (OSError, ValueError):
        return None
    succ = old.get("successor")
    went_on = None
    if isinstance(succ, int):
        try:
            srec = session.load(proj.session_dir(succ))
            went_on = texts.successor_went_on(srec.get("name"), pid_alive(srec.get("pid")), srec.get("session_id"))
        except (OSError, ValueError):
            pass
    percent = None
    tokens = ctx.payload.get("context_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        window, _ = meter.resolve_window(ctx.cfg["window"], None, rec.get("model"), ctx.env)
        if meter.level(tokens, window, ctx.cfg) in ("rotate", "hard"):
            percent = 100 * tokens // max(window, 1)
    return texts.resumed_after_rotation(old.get("name"), (old.get("checkpoint") or {}).get("id"),
                                        proj.session_name(succ) if isinstance(succ, int) else "a successor",
                                        went_on, rec["name"], percent)


# -- a session starts: register, claim, recover ----------------------------------------------------
def session_started(ctx: Context) -> Output | None:
    """SessionStart: register the session, then claim what waits for it; the hook's output.

    After ``/clear`` the same Claude process starts a new session id; the
    SessionEnd(clear) seen just before names the predecessor.  On clear, startup
    and resume the best claimable checkpoint is claimed (exactly once, under the
    project lock) and its bootstrap returned as ``additionalContext``; at startup
    with none, a crashed predecessor's machine handoff.
    """
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    source = ctx.payload.get("source")
    source = source if isinstance(source, str) else None
    try:
        n, sdir, rec = context.register(ctx, source)
    except StateDirError as e:  # nothing is written there; the user is told, once per session start
        ctx.outcome = "state directory not ours: %s" % e
        return {"systemMessage": texts.state_dir_not_ours(str(e))}
    ctx.outcome = "registered %s (%s)" % (rec["name"], source)
    if source == "resume" and ctx.session_id and handover.withdraw_offer(ctx.session_id):
        ctx.log(sdir, {"ev": "offer_withdrawn", "why": "resumed in a new process"})  # never for this process
    if source == "startup":
        ctx.push(rec, "session-started", source)
        _sweep(ctx)
    warning = _boundary_warning(ctx) if source == "startup" else None
    text = None
    if source == "resume" and rec.get("resumed_from") is not None and rec.get("source") == "resume" \
            and not rec.get("predecessor_claimed"):
        notice = resume_notice(ctx, n, rec)
        ctx.outcome = "resumed %s as %s" % (rec.get("resumed_from"), rec["name"])
        _settled(sdir)
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": notice}} if notice else None
    if source in context.CLAIM_SOURCES:
        text = claim_for(ctx, n, sdir, rec, cleared=source == "clear")
        if text is None:
            text = bootstrap_due(ctx, sdir, session.load(sdir))  # claimed earlier, never delivered
        if text is None and source == "startup":
            text = crash_notice(ctx, n)
    out: Output = {}
    if text is not None:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": text}
    if warning:
        out["systemMessage"] = warning
    return out or None


def _sweep(ctx: Context) -> None:
    """Hand-overs long done and what the host keeps of calls long handled (at startup, never on a rotation's
    path)."""
    ctx.tidy_at_startup()
    handover.sweep_handovers()


def _boundary_warning(ctx: Context) -> str | None:
    """The user sees it when a repository tried to set a key only their own config may set, or one out of
    bounds: once per version of that file and key (they cannot remove what the repository committed)."""
    ignored = ctx.cfg.ignored
    if not ignored:
        return None
    store = os.path.join(ctx.project.dir, "repo-warned.json")
    try:
        with open(store, "rb") as f:
            warned = set(fastjson.loads(f.read()))
    except (OSError, ValueError, TypeError):
        warned = set()
    new: list[tuple[str, str]] = []
    for path, key, _ in ignored:
        try:
            version = sha256(safefile.read_regular(path, 1 << 20)).hexdigest()[:16]
        except OSError:
            version = "?"
        if "%s:%s" % (version, key) not in warned:
            new.append((path, key))
            warned.add("%s:%s" % (version, key))
    if not new:
        return None
    try:
        atomic.write_text(store, fastjson.dumps(sorted(warned)[-200:]), fsync=False, follow=False)
    except OSError:
        pass
    return texts.repository_keys_ignored(new[0][0], sorted({k for _, k in new}))


def claim_for(ctx: Context, n: int, sdir: str, rec: Record, cleared: bool = False) -> str | None:
    """Claim the best checkpoint for session ``n``; the bootstrap text, or None.

    ``cleared``: this session follows a ``/clear`` of the same Claude process.
    """
    proj = ctx.project
    faults.point("claim:before_lock")
    gate = None  # a published checkpoint's claim asks the remote first (ctx.claim_gate), outside the lock
    while True:
        with proj.lock():  # (not an edit of one record: the claim writes both records itself)
            rec = session.load(sdir)
            if rec.get("predecessor_claimed"):
                return None
            cands = claim.candidates(proj, ctx.agent_pid(), rec.get("predecessor"), me=n, cleared=cleared,
                                     intent=rec.get("claiming"))
            if ctx.payload.get("source") == "resume":  # a resumed conversation never takes a newer one's checkpoint
                cands = [c for c in cands if c < n]
            ask = None
            gate = gate or ctx.claim_gate(n, rec["name"], cands)
            if gate is not None:
                gate.refuse()
                ask = gate.pick(cands)
                cands = gate.allowed(cands)
            if ask is None:
                pred_n, prec = claim.claim(proj, n, sdir, cands)
                if pred_n is None or prec is None:
                    claim.drop_intent(sdir)  # a claim cut short whose checkpoint went elsewhere: rolled back
                    _settled(sdir)
                    if gate is None:
                        return None
                    text = gate.notice(sdir, ctx.cfg)
                    if text:
                        ctx.outcome = "not claimed: %s" % ", ".join(sorted({o for o, _ in gate.asked.values()}))
                    return text
                if gate is not None:
                    gate.settle(pred_n, prec)
                rec = claim.finish(proj, n, sdir, pred_n, prec)
                rec = _settled(sdir)
                break
        assert gate is not None  # (ask is only set with it)
        gate.ask(ask)
    faults.point("claim:after_claim")
    pdir = proj.session_dir(pred_n)
    try:
        atomic.write_text(session.started_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
    except OSError:
        pass
    text = _build_bootstrap(ctx, sdir, rec, pred_n, prec)
    ctx.outcome = "claimed %s for %s" % (rec["checkpoint_from"], rec["name"])
    return text


def _settled(sdir: str) -> Record:
    """This session's claim was looked for to the end (a SessionStart cut before it leaves it pending)."""
    rec = session.load(sdir)
    if rec.pop("claim_pending", None) is not None:
        session.save(sdir, rec)
    return rec


def _build_bootstrap(ctx: Context, sdir: str, rec: Record, pred_n: int, prec: Record) -> str:
    """The bootstrap of the claimed ``pred_n`` (revalidated within its own budget), kept until delivered."""
    proj = ctx.project
    since, reval = _revalidate(ctx, sdir, proj.session_dir(pred_n), prec)
    text = claim.bootstrap_text(proj, pred_n, prec, rec["name"], ctx.cfg["bootstrap_max_tokens"], since=since)
    ctx.log(sdir, {"ev": "bootstrap", "checkpoint": rec["checkpoint_from"], "chars": len(text),
                   "tokens_est": len(text) // 4, "verdict": reval.get("verdict"), "by": ctx.event})
    try:
        atomic.write_text(session.bootstrap_due_path(sdir), text, fsync=False)  # a later hook can deliver it as is
    except OSError:
        pass
    _send(ctx, sdir)
    return text


def _send(ctx: Context, sdir: str) -> None:
    """Once this hook's answer (carrying the bootstrap) is written: the bootstrap was sent, by this event."""
    def sent() -> None:
        with ctx.project.edit(sdir) as rec:
            b = rec.get("bootstrap")
            if isinstance(b, dict) and not b.get("delivered_at"):
                b["sent"], b["sent_at"] = ctx.event, round(time.time(), 3)
    ctx.after_output.append(sent)


def bootstrap_due(ctx: Context, sdir: str, rec: Record) -> str | None:
    """A claimed bootstrap the successor's transcript does not hold yet: the text to add now (else None).

    Delivered means the transcript holds it (Claude Code writes a hook's context as a
    ``hook_additional_context`` attachment).  Before the first prompt of a fresh process
    there is no transcript yet: a bootstrap whose hook wrote its answer (``sent``) counts
    as delivered then.  Anything else - the hook died or ran out of time before its
    answer was out, or Claude Code recorded the hooks but not our context - is added
    by this hook, and confirmed by the next.
    """
    b = rec.get("bootstrap")
    if not isinstance(b, dict) or b.get("delivered_at") or not rec.get("predecessor_claimed"):
        return None
    tpath = ctx.payload.get("transcript_path") or rec.get("transcript")
    held = ctx.host.holds_context(tpath if isinstance(tpath, str) else None, b.get("needle"))
    if held or (held is None and b.get("sent")):
        _delivered(ctx, sdir, "transcript" if held else str(b.get("sent")))
        return None
    text = None
    try:
        with open(session.bootstrap_due_path(sdir), encoding="utf-8") as f:
            text = f.read(claim.SPILL_LIMIT + 1000)
    except OSError:
        pass
    pred_n = rec.get("predecessor")
    if not text and isinstance(pred_n, int):
        text = _build_bootstrap(ctx, sdir, rec, pred_n, session.load(ctx.project.session_dir(pred_n)))
    elif text:
        _send(ctx, sdir)
    if text:
        ctx.log(sdir, {"ev": "bootstrap_redelivered", "checkpoint": b.get("checkpoint"), "by": ctx.event,
                       "sent_before": b.get("sent"), "transcript": held})
    return text


def _delivered(ctx: Context, sdir: str, via: str) -> None:
    with ctx.project.edit(sdir) as rec:
        b = rec.get("bootstrap")
        if not isinstance(b, dict) or b.get("delivered_at"):
            return
        b["delivered_at"], b["via"] = round(time.time(), 3), via
    ctx.log(sdir, {"ev": "bootstrap_delivered", "checkpoint": b.get("checkpoint"), "via": via})
    pred = rec.get("predecessor")
    ctx.push(rec, "rotation-complete", "%s -> %s" % (
        ctx.project.session_name(pred) if isinstance(pred, int) else "?", rec.get("name")))
    try:
        os.unlink(session.bootstrap_due_path(sdir))
    except OSError:
        pass


def _revalidate(ctx: Context, sdir: str, pdir: str, prec: Record) -> tuple[str, dict[str, Any]]:
    """Compare the claimed checkpoint with the world now: (bootstrap section, summary); recorded in the
    successor's record and ledger.  A failure costs only the section (logged), never the claim; past its
    own budget (:data:`REVALIDATE_S`) it says "not compared: took too long" and the bootstrap goes out."""
    try:
        with faults.within(REVALIDATE_S):
            res, since = revalidation.since_text(ctx.project.root, pdir, prec, ctx.cfg, ctx.agent_pid())
    except faults.TookTooLong:
        res, since = {"verdict": None, "problems": ["not compared: took too long"]}, texts.NOT_COMPARED % REVALIDATE_S
    except Exception as e:  # noqa: BLE001 - the handoff still goes through
        ctx.log(sdir, {"ev": "revalidation_failed", "error": "%s: %s" % (type(e).__name__, str(e)[:200])})
        return "", {}
    if res.get("verdict") is None:
        summ: dict[str, Any] = {"verdict": None, "reason": "not compared: took too long", "budget_s": REVALIDATE_S}
        with ctx.project.edit(sdir) as rec:
            rec["revalidation"] = summ
        ctx.log(sdir, dict(summ, ev="revalidation"))
        return since, summ
    summ = revalidation.summary(res)
    summ.update(actions=res.get("actions"), actions_outside=res.get("actions_outside"))
    with ctx.project.edit(sdir) as rec:
        rec["revalidation"] = summ
    ctx.log(sdir, dict(summ, ev="revalidation"))
    return since, summ


def crash_notice(ctx: Context, n: int) -> str | None:
    """A previous session died mid-work with no checkpoint: its machine handoff, claimed exactly once.

    The dead session is marked (``recovered_by``) and ENDED under the project lock, so a
    third session gets nothing.  Older notice (no recovery possible): what is known."""
    proj = ctx.project
    with proj.lock():
        found = _dead_without_checkpoint(proj, n)
        if found is None:
            return None
        m, prev = found
        mdir = proj.session_dir(m)
        prev["recovered_by"] = n
        prev["ended"] = {"reason": "crashed (process gone, no checkpoint); recovered by %s" % proj.session_name(n),
                         "at": round(time.time(), 3)}
        session.transition(mdir, prev, session.ENDED, "crashed; recovered by %s" % proj.session_name(n))
        sdir = proj.session_dir(n)
        rec = session.load(sdir)
        rec["recovered_from"] = m
        rec["recovery"] = {"from": prev.get("name"), "session_id": prev.get("session_id"),
                           "resume": "claude --resume %s" % prev.get("session_id"), "at": round(time.time(), 3)}
        session.save(sdir, rec)
    budget = min(ctx.cfg["bootstrap_max_tokens"] * 4, claim.SPILL_LIMIT)
    try:
        text, facts = revalidation.crash_handoff(proj.root, mdir, prev, ctx.cfg, budget, ctx.host)
    except Exception as e:  # noqa: BLE001 - the short notice still tells the user what happened
        facts = {"error": "%s: %s" % (type(e).__name__, str(e)[:200])}
        text = texts.crashed_without_checkpoint(prev.get("name"), prev.get("session_id"))
    ctx.log(sdir, dict(facts, ev="crash_recovery", predecessor=m, chars=len(text), tokens_est=len(text) // 4,
                       degraded=True))
    ctx.log(mdir, {"ev": "recovered", "by": n})
    ctx.outcome = "recovered %s after a crash (machine handoff, degraded)" % prev.get("name")
    return text


def _dead_without_checkpoint(proj: Project, n: int) -> tuple[int, Record] | None:
    """(number, record) of the newest session that died live (process gone) and was never recovered."""
    for m in _newest_first(proj, n):
        try:
            prev = session.load(proj.session_dir(m))
        except (OSError, ValueError):
            continue
        if prev["state"] in session.LIVE and not pid_alive(prev.get("pid")) and not prev.get("ended") \
                and not prev.get("recovered_by") and _worked(proj.session_dir(m)):
            return m, prev
        return None
    return None


def _worked(sdir: str) -> bool:
    """Did the session get a prompt (one opened and closed unused leaves nothing to recover)?"""
    return any(r.get("ev") == "prompt" for r in ledger.read(session.ledger_path(sdir)))


def _newest_first(proj: Project, skip: int, below: int | None = None) -> Iterator[int]:
    """Existing session numbers, newest first, without listing the history (a stat per number)."""
    m = proj.newest_number() if below is None else below - 1
    while m > 0:
        if m != skip and os.path.isdir(proj.session_dir(m)):
            yield m
        m -= 1


# -- a prompt -------------------------------------------------------------------------------------
def prompt_submitted(ctx: Context) -> Output | None:
    """UserPromptSubmit: record the prompt; a successor's first prompt; flags and parked notes.

    Prompts are kept in the ledger so a rotation carries over anything typed after
    the handoff was requested.  The first prompt of a successor makes it ACTIVE,
    tells the rotator the continuation arrived and names the session
    (``sessionTitle``).  If SessionStart could not claim (it timed out, say), the
    continuation prompt claims here instead.
    """
    started = context.begin(ctx)
    if started is None:
        return None
    n, sdir, rec = started
    prompt = ctx.payload.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    ctx.log(sdir, {"ev": "prompt", "text": prompt[:PROMPT_KEEP], "chars": len(prompt),
                   "prompt_id": ctx.payload.get("prompt_id")})
    if "repeat " in prompt and not texts.is_continuation(prompt) and not prompt.startswith(effects.WATCHDOG_PREFIX):
        # the user's own words (not our continuation, not a watchdog nudge) let one held repeat through
        for code in effects.record_override(ctx.project.dir, prompt, ctx.session_id, rec.get("name")):
            ctx.log(sdir, {"ev": "effect_override", "code": code})
    if ctx.session_id and handover.withdraw_offer(ctx.session_id):  # its turn is over: the next turn's end decides
        ctx.log(sdir, {"ev": "offer_withdrawn", "why": "a new prompt"})
    out = {}
    added = []
    continuation = texts.is_continuation(prompt) and rec["state"] == session.ACTIVE
    # a SessionStart killed mid-claim, or before it: complete, roll back, or claim now
    cut_short = rec.get("claiming") is not None or rec.get("claim_pending") is not None
    if (continuation or cut_short) and not rec.get("predecessor_claimed"):
        cleared = continuation or rec.get("claim_pending") in ("clear", None)
        text = claim_for(ctx, n, sdir, rec, cleared=cleared)  # fallback: the rotator's prompt follows a /clear
        if text:
            added.append(text)
    if not added:
        due = bootstrap_due(ctx, sdir, session.load(sdir))  # a claim whose bootstrap never reached the model
        if due:
            added.append(due)
    with ctx.project.edit(sdir) as rec:
        if rec.get("flags"):
            ctx.log(sdir, {"ev": "flags_cleared", "flags": sorted(rec["flags"])})
            rec["flags"] = {}
        note = rec.pop("pending_note", None)
        if note:
            added.append(note)
        first = rec["state"] == session.BOOTSTRAPPING
        if first:
            session.transition(sdir, rec, session.ACTIVE, "first prompt")
            out["sessionTitle"] = rec["name"]
    if first:
        ctx.push(rec, "successor-resumed", "continuing from %s" % rec.get("checkpoint_from"))
    pred_n = rec.get("predecessor")
    if first and pred_n is not None:
        pdir = ctx.project.session_dir(pred_n)
        try:
            atomic.write_text(session.delivered_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
        except OSError:
            pass
    if added:
        out["additionalContext"] = "\n\n".join(added)
    if not out:
        return None
    out["hookEventName"] = "UserPromptSubmit"
    return {"hookSpecificOutput": out}


# -- a session ends -------------------------------------------------------------------------------
def session_ended(ctx: Context) -> None:
    """SessionEnd: ENDED, or only the process's leaving for a session holding a verified checkpoint.

    On ``/clear`` the Claude process is remembered as having cleared this session,
    so the successor it starts next is paired with it.  The same end told again is one line and
    one push (Gemini CLI fires SessionEnd three times on one ``/quit``).  The hooks run
    :func:`.turn.session_ended`, which first verifies a handoff the Stop left unverified.
    """
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    sdir = ctx.session_dir(n)
    reason = ctx.payload.get("reason")
    reason = reason if isinstance(reason, str) else "other"
    with ctx.project.edit(sdir) as rec:
        if rec["state"] not in session.LIVE and (rec.get("ended") or {}).get("reason") == reason:
            ctx.outcome = "already ended (%s)" % reason  # a host that fires it again (Gemini CLI's /quit: 3x)
            return None
        ctx.log(sdir, {"ev": "session_end", "reason": reason})
        rec["ended"] = {"reason": reason, "at": round(time.time(), 3)}
        if rec["state"] in session.LIVE:
            session.transition(sdir, rec, session.ENDED, "session_end:%s" % reason)
    if reason == "clear":
        ctx.project.remember_pid(ctx.agent_pid(), n, round(time.time(), 3))
    else:
        ctx.push(rec, "session-ended", reason)
    return None
