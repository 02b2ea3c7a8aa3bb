"""What the plugin's mod asks the Python core: it measures and acts, decisions stay here.

The mod (``hooks/mod.js``) runs inside Claude Code and calls these handlers through
the same entry as every hook (``python -S -c <boot> <Handler>``, the JSON on stdin,
one JSON object back on stdout):

* ``ModHello`` - the mod of this Claude process is loaded (at its start); the answer
  names the runtime folder, where the Stop hook offers a hand-over as a file
  (:func:`handover.offer_handover`) that the mod takes by renaming it, with no
  Python start on the critical path;
* ``ModTurnEnd`` - a main-thread turn ended with no hand-over offered: the context
  as Claude Code itself computed it (no transcript lag), and, should the session be
  rotating with the mod as driver all the same, the hand-over: ``{"handover": {...}}``;
* ``ModCompact`` - an automatic compaction is about to run: rotate instead
  (``{"skip": reason, "handover": {...}}``).  The window is full, so there is no
  turn left for the model to write a handoff: the one it wrote, if valid, else a
  machine handoff (degraded); the continuation restates the user's last request
  (a skipped reactive compaction ends the turn without retrying it);
* ``ModDone`` - what the mod did; a failure gives the hand-over back to the tmux
  rotator standing by, or asks the user for /clear.

While a session waits for the user's /clear (AWAITING_MANUAL_CLEAR), ModDone's and
ModTurnEnd's answers carry ``{"notice": text}``, which the mod pins under the prompt
(``$.ui.status``) at once: no turn's end may come to say it (issue 32).

Every call also leaves the mod's heartbeat (:func:`handover.mod_heartbeat`), which
is how the Stop hook knows it may choose the mod.
"""

from .... import meter, paths, procs, session
from ....rotation import context, handover, texts
from ..host import HookContext

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from ....session import Record
    from . import Call

MOD_EVENTS = ("ModHello", "ModTurnEnd", "ModCompact", "ModDone")
SKIP_REASON = texts.COMPACT_SKIP


def handle(call: "Call") -> "dict[str, Any] | None":
    ctx = HookContext(call)
    mod = ctx.payload.get("mod")
    handover.mod_heartbeat(ctx.agent_pid(), mod.get("version") if isinstance(mod, dict) else None)
    if call.event == "ModHello":
        ctx.outcome = "mod heartbeat"
        return {"runtime": paths.runtime_dir()}  # where the mod finds an offered hand-over by itself
    found = context.known(ctx)
    if found is None:
        return None
    n, sdir = found
    return {"ModTurnEnd": turn_end, "ModCompact": compact, "ModDone": done}[call.event](ctx, n, sdir)


def turn_end(ctx: HookContext, n: int, sdir: str) -> "dict[str, Any] | None":
    refused = ctx.payload.get("offer_refused")
    if isinstance(refused, str):  # the mod refused and removed an offer that was not for it
        ctx.log(sdir, {"ev": "offer_refused", "why": refused[:200]})
    usage = ctx.payload.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("tokens"), int) and not isinstance(usage["tokens"], bool):
        window = usage.get("window") if isinstance(usage.get("window"), int) else None
        meter.save_status_reading(sdir, ctx.session_id, usage["tokens"], window)
    rec = session.load(sdir)
    if rec["state"] == session.AWAITING_MANUAL_CLEAR:
        return _notice(rec)  # however it came to wait (a driver that failed, no driver at all): shown now
    if rec["state"] != session.ROTATING or rec.get("driver") != "mod" or not ctx.cfg["mod"]:
        return None
    return _hand_over(ctx, n, sdir)


def _hand_over(ctx: HookContext, n: int, sdir: str, last_request: str | None = None) -> "dict[str, Any] | None":
    """The hand-over for the mod, once (whoever takes it first: the mod or the tmux rotator)."""
    proj = ctx.project
    rec = session.load(sdir)
    bound = rec.get("handover_bound")
    if isinstance(bound, dict) and not _this_process(ctx, bound):  # `claude --resume` elsewhere: not its to clear
        ctx.outcome = "hand-over bound to process %s, not this one" % bound.get("pid")
        return None
    plan = handover.handover(rec, sdir, proj.session_name(proj.peek_next_number()), proj.root, last_request)
    if handover.handover_holder(ctx.session_id) is None and (last_request or not handover.handover_offered(ctx.session_id)):
        handover.offer_handover(ctx.session_id, plan,  # this plan (it restates the request), or one lost
                                handover.offer_binding(ctx.agent_pid(), None, plan["checkpoint"], session.state_path(sdir)))
    if not handover.take_handover(ctx.session_id, "mod"):
        ctx.outcome = "hand-over already taken (%s)" % handover.handover_holder(ctx.session_id)
        return None
    ctx.log(sdir, {"ev": "mod", "step": "handover", "checkpoint": plan["checkpoint"],
                   "successor": plan["successor"]})
    ctx.outcome = "hand-over %s to the mod" % plan["checkpoint"]
    return {"handover": plan}


def _this_process(ctx: HookContext, bound: "dict[str, Any]") -> bool:
    pid = ctx.agent_pid()
    if pid is None or pid != bound.get("pid"):
        return False
    return bound.get("pid_ticks") is None or procs.start_ticks(pid) == bound["pid_ticks"]


def compact(ctx: HookContext, n: int, sdir: str) -> "dict[str, Any] | None":
    if not (ctx.cfg["mod"] and ctx.cfg["compact_to_rotation"]) or ctx.payload.get("trigger") != "auto":
        return None
    if ctx.payload.get("agent_id"):
        return None  # a subagent's own transcript: not ours to rotate
    rec = session.load(sdir)
    last = _last_request(sdir)
    if rec["state"] in session.CLAIMABLE:
        out = _hand_over(ctx, n, sdir, last) if rec.get("driver") == "mod" else None
        return dict(out or {}, skip=SKIP_REASON)
    from ....rotation import turn  # the compaction's step: not loaded at every turn's end (the mod calls in then)

    handoff = turn.rotate_instead_of_compacting(ctx, n, sdir, rec)
    if handoff is None:
        return None
    ctx.log(sdir, {"ev": "mod", "step": "compaction_skipped", "trigger": "auto", "degraded": handoff == "degraded"})
    out = _hand_over(ctx, n, sdir, last)
    return dict(out or {}, skip=SKIP_REASON)


def _last_request(sdir: str) -> str | None:
    from ....rotation import checkpoint  # (a compaction's only: see compact)

    asked = checkpoint.prompts(sdir, limit=1, chars=600)
    text: str | None = asked[-1]["text"] if asked else None
    return text


def done(ctx: HookContext, n: int, sdir: str) -> "dict[str, Any] | None":
    p = ctx.payload
    ok = p.get("ok") is True
    record: "dict[str, Any]" = {"ev": "mod", "step": p.get("step") if isinstance(p.get("step"), str) else ("done" if ok else "failed"),
              "ok": ok}
    for key in ("via", "cleared_ms", "submitted_ms", "new_session_id"):
        if isinstance(p.get(key), (int, str)) and not isinstance(p.get(key), bool):
            record[key] = p[key]
    if not ok:
        record["error"] = str(p.get("error"))[:300]
    ctx.log(sdir, record)
    if ok:
        ctx.outcome = "mod %s" % record["step"]
        return None
    # Give the hand-over back: a tmux rotator standing by (and still running) takes it, else the user types
    # /clear, and the mod shows it under the prompt at once (no turn's end may come).
    proj = ctx.project
    handover.give_back(ctx.session_id, "mod")
    rec = session.load(sdir)
    ctx.outcome = "mod failed: %s" % record["error"][:80]
    if rec.get("rotator_pid") and handover.rotator_alive(rec) and ctx.can_drive(rec):
        return None
    with proj.edit(sdir) as rec:
        if rec["state"] == session.ROTATING:
            session.transition(sdir, rec, session.AWAITING_MANUAL_CLEAR, "the mod's hand-over failed")
    ctx.push(rec, "lifecycle-failed", "the mod could not hand over: type /clear")
    return _notice(rec)


def _notice(rec: "Record") -> "dict[str, Any] | None":
    """What the mod pins under the prompt while the session waits for the user's /clear (``$.ui.status``)."""
    if rec.get("state") != session.AWAITING_MANUAL_CLEAR:
        return None
    return {"notice": texts.type_clear((rec.get("checkpoint") or {}).get("id") or "the checkpoint")}
