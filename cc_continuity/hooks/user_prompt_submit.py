"""UserPromptSubmit: record the prompt; first prompt of a successor; flags and notes.

Prompts are kept in the ledger so a rotation can carry over anything typed
after the handoff was requested (it would otherwise be lost).  The first
prompt of a successor moves it to ACTIVE, tells the rotator the continuation
arrived, and names the session (``sessionTitle``).  If SessionStart could not
claim (it timed out, say), the continuation prompt claims here instead.
"""

import time

from .. import atomic, session
from . import common

PROMPT_KEEP = 4000


def handle(call):
    started = common.begin(call)
    if started is None:
        return None
    ctx, n, sdir, rec = started
    prompt = ctx.payload.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    ctx.log(sdir, {"ev": "prompt", "text": prompt[:PROMPT_KEEP], "chars": len(prompt),
                   "prompt_id": ctx.payload.get("prompt_id")})
    out = {}
    context = []
    continuation = prompt.startswith("Continuing from cp-") and rec["state"] == session.ACTIVE
    cut_short = rec.get("claiming") is not None  # a SessionStart killed mid-claim: complete or roll back now
    if (continuation or cut_short) and not rec.get("predecessor_claimed"):
        from .session_start import claim_for

        text = claim_for(ctx, n, sdir, rec, cleared=True)  # fallback: the rotator's prompt follows a /clear
        if text:
            context.append(text)
    with ctx.project.lock():
        rec = session.load(sdir)
        changed = False
        if rec.get("flags"):
            ctx.log(sdir, {"ev": "flags_cleared", "flags": sorted(rec["flags"])})
            rec["flags"] = {}
            changed = True
        note = rec.pop("pending_note", None)
        if note:
            context.append(note)
            changed = True
        first = rec["state"] == session.BOOTSTRAPPING
        if first:
            session.transition(sdir, rec, session.ACTIVE, "first prompt")
            out["sessionTitle"] = rec["name"]
        elif changed:
            session.save(sdir, rec)
    if first:
        common.notify(ctx, rec, "successor-resumed", "continuing from %s" % rec.get("checkpoint_from"))
    if first and rec.get("predecessor") is not None:
        from .. import rotation

        pdir = ctx.project.session_dir(rec["predecessor"])
        try:
            atomic.write_text(rotation.delivered_marker(pdir), "%s %s\n" % (ctx.session_id, time.time()), fsync=False)
        except OSError:
            pass
    if context:
        out["additionalContext"] = "\n\n".join(context)
    if not out:
        return None
    out["hookEventName"] = "UserPromptSubmit"
    return {"hookSpecificOutput": out}
