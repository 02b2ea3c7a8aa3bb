"""SessionStart: register the session, then claim a waiting checkpoint.

After ``/clear`` the same Claude process starts a new session id; the
SessionEnd(clear) seen just before names the predecessor.  On clear,
startup and resume the latest claimable checkpoint of the project is
claimed (exactly once, under the project lock) and the bootstrap text is
returned as ``additionalContext``.  The rotator waits for the started-marker
written here.
"""

import time

from .. import atomic, claim, session
from ..procs import pid_alive
from . import common

CLAIM_SOURCES = ("clear", "startup", "resume")


def handle(call):
    ctx = common.HookContext(call)
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    source = ctx.payload.get("source")
    source = source if isinstance(source, str) else None
    n, sdir, rec = common.register(ctx, source)
    ctx.outcome = "registered %s (%s)" % (rec["name"], source)
    if source == "startup":
        common.notify(ctx, rec, "session-started", source)
        _sweep()
    warning = _boundary_warning(ctx) if source == "startup" else None
    text = None
    if source in CLAIM_SOURCES:
        text = claim_for(ctx, n, sdir, rec, cleared=source == "clear")
        if text is None and source == "startup":
            text = crash_notice(ctx, n)
    out = {}
    if text is not None:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": text}
    if warning:
        out["systemMessage"] = warning
    return out or None


def _sweep():
    """Markers of calls long handled and hand-overs long done (at startup, never on a rotation's path)."""
    from .. import once, rotation

    once.sweep()
    rotation.sweep_handovers()


def _boundary_warning(ctx):
    """The user sees it when a repository tried to set a key only their own config may set."""
    ignored = ctx.cfg.ignored
    if not ignored:
        return None
    return "cc-continuity: %s tries to set %s; only your own config may set %s, so it is ignored " \
           "(`cc-continuity config show` explains)." % (
               ignored[0][0], ", ".join(sorted({k for _, k, _ in ignored})),
               "it" if len(ignored) == 1 else "them")


def claim_for(ctx, n, sdir, rec, cleared=False):
    """Claim the best checkpoint for session ``n``; the bootstrap text, or None.

    ``cleared``: this session follows a ``/clear`` of the same Claude process.
    """
    from .. import rotation

    proj = ctx.project
    with proj.lock():
        rec = session.load(sdir)
        if rec.get("predecessor_claimed"):
            return None
        cands = claim.candidates(proj, ctx.claude_pid(), rec.get("predecessor"), me=n, cleared=cleared,
                                 intent=rec.get("claiming"))
        pred_n, prec = claim.claim(proj, n, sdir, cands)
        if pred_n is None:
            claim.drop_intent(sdir)  # a claim cut short whose checkpoint went elsewhere: rolled back
            return None
        rec = claim.finish(proj, n, sdir, pred_n, prec)
    pdir = proj.session_dir(pred_n)
    try:
        atomic.write_text(rotation.started_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
    except OSError:
        pass
    since, reval = _revalidate(ctx, n, sdir, pdir, prec)
    text = claim.bootstrap_text(proj, pred_n, prec, rec["name"], ctx.cfg["bootstrap_max_tokens"], since=since)
    ctx.log(sdir, {"ev": "bootstrap", "checkpoint": rec["checkpoint_from"], "chars": len(text),
                   "tokens_est": len(text) // 4, "verdict": reval.get("verdict")})
    ctx.outcome = "claimed %s for %s" % (rec["checkpoint_from"], rec["name"])
    common.notify(ctx, rec, "rotation-complete", "%s -> %s" % (prec.get("name"), rec.get("name")))
    return text


def _revalidate(ctx, n, sdir, pdir, prec):
    """Compare the claimed checkpoint with the world now: (bootstrap section, summary); recorded in the
    successor's record and ledger.  A failure costs only the section (logged), never the claim."""
    from .. import resume

    try:
        res, since = resume.since_text(ctx.project.root, pdir, prec, ctx.cfg, ctx.claude_pid())
    except Exception as e:  # noqa: BLE001 - the handoff still goes through
        ctx.log(sdir, {"ev": "revalidation_failed", "error": "%s: %s" % (type(e).__name__, str(e)[:200])})
        return "", {}
    summ = resume.summary(res)
    summ.update(actions=res.get("actions"), actions_outside=res.get("actions_outside"))
    with ctx.project.lock():
        rec = session.load(sdir)
        rec["revalidation"] = summ
        session.save(sdir, rec)
    ctx.log(sdir, dict(summ, ev="revalidation"))
    return since, summ


def crash_notice(ctx, n):
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
    from .. import claim, resume

    budget = min(ctx.cfg["bootstrap_max_tokens"] * 4, claim.SPILL_LIMIT)
    try:
        text, facts = resume.crash_handoff(proj.root, mdir, prev, ctx.cfg, budget)
    except Exception as e:  # noqa: BLE001 - the short notice still tells the user what happened
        facts = {"error": "%s: %s" % (type(e).__name__, str(e)[:200])}
        text = ("cc-continuity: the previous session %s in this project died mid-work before any checkpoint. "
                "Its conversation can be reopened with `claude --resume %s`." % (prev.get("name"),
                                                                                prev.get("session_id")))
    ctx.log(sdir, dict(facts, ev="crash_recovery", predecessor=m, chars=len(text), tokens_est=len(text) // 4,
                       degraded=True))
    ctx.log(mdir, {"ev": "recovered", "by": n})
    ctx.outcome = "recovered %s after a crash (machine handoff, degraded)" % prev.get("name")
    return text


def _dead_without_checkpoint(proj, n):
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


def _worked(sdir):
    """Did the session get a prompt (one opened and closed unused leaves nothing to recover)?"""
    from .. import ledger

    return any(r.get("ev") == "prompt" for r in ledger.read(session.ledger_path(sdir)))


def _newest_first(proj, skip, below=None):
    """Existing session numbers, newest first, without listing the history (a stat per number)."""
    import os

    m = proj.newest_number() if below is None else below - 1
    while m > 0:
        if m != skip and os.path.isdir(proj.session_dir(m)):
            yield m
        m -= 1
