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
    text = claim.bootstrap_text(proj, pred_n, prec, rec["name"], ctx.cfg["bootstrap_max_tokens"])
    ctx.log(sdir, {"ev": "bootstrap", "checkpoint": rec["checkpoint_from"], "chars": len(text),
                   "tokens_est": len(text) // 4})
    ctx.outcome = "claimed %s for %s" % (rec["checkpoint_from"], rec["name"])
    common.notify(ctx, rec, "rotation-complete", "%s -> %s" % (prec.get("name"), rec.get("name")))
    return text


def crash_notice(ctx, n):
    """A previous session died mid-work with no checkpoint: say what is known."""
    proj = ctx.project
    for m in _newest_first(proj, n):
        try:
            prev = session.load(proj.session_dir(m))
        except (OSError, ValueError):
            continue
        if prev["state"] in session.LIVE and not pid_alive(prev.get("pid")) and not prev.get("ended"):
            last_cp = next((r for r in _checkpointed(proj, m)), None)
            lines = ["cc-continuity: the previous session %s in this project ended without a handoff "
                     "(its process is gone)." % prev.get("name")]
            if last_cp:
                lines.append("The most recent checkpoint is %s from %s (handoff: %s)." % (
                    last_cp[0], last_cp[1], last_cp[2]))
            from .. import checkpoint

            asked = checkpoint.prompts(proj.session_dir(m), limit=3, chars=300)
            if asked:
                lines.append("Its last user prompts were:\n" + "\n".join("- " + p["text"] for p in asked))
            return "\n".join(lines)
        break
    return None


def _newest_first(proj, skip, below=None):
    """Existing session numbers, newest first, without listing the history (a stat per number)."""
    import os

    m = proj.newest_number() if below is None else below - 1
    while m > 0:
        if m != skip and os.path.isdir(proj.session_dir(m)):
            yield m
        m -= 1


def _checkpointed(proj, below):
    from .. import checkpoint

    for m in _newest_first(proj, None, below):
        try:
            r = session.load(proj.session_dir(m))
        except (OSError, ValueError):
            continue
        cp = r.get("checkpoint")
        if cp and cp.get("id"):
            yield cp["id"], r.get("name"), checkpoint.handoff_path(proj.session_dir(m))
