"""UserPromptSubmit: record the prompt, clear a needs-human flag, deliver a pending note.

Prompts are kept in the ledger so a rotation can carry over anything typed
after the handoff was written (it would otherwise be lost).
"""

from .. import session
from . import common


PROMPT_KEEP = 4000


def handle(call):
    ctx = common.HookContext(call)
    n, sdir, rec = ctx.load_session()
    prompt = ctx.payload.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    ctx.log(sdir, {"ev": "prompt", "text": prompt[:PROMPT_KEEP], "chars": len(prompt),
                   "prompt_id": ctx.payload.get("prompt_id")})
    changed = False
    note = None
    if rec.get("flags"):
        with ctx.project.lock():
            rec = session.load(sdir)
            if rec.get("flags"):
                ctx.log(sdir, {"ev": "flags_cleared", "flags": sorted(rec["flags"])})
                rec["flags"] = {}
                changed = True
            if changed:
                session.save(sdir, rec)
    if rec.get("pending_note"):
        with ctx.project.lock():
            rec = session.load(sdir)
            note = rec.pop("pending_note", None)
            session.save(sdir, rec)
    if rec.get("state") == session.BOOTSTRAPPING:
        with ctx.project.lock():
            rec = session.load(sdir)
            if rec["state"] == session.BOOTSTRAPPING:
                session.transition(sdir, rec, session.ACTIVE, "first prompt")
    if note:
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": note}}
    return None
