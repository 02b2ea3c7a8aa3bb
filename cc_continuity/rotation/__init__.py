"""The rotation domain: from a context reading to a successor that carries on (DESIGN §4-5).

The protocol's steps, in the order a rotation meets them, each run in-process for one
hook call by an adapter that builds a :class:`~.context.Context` (its facts and ports):

1. :func:`.start.session_started`  (SessionStart) - register the session; claim a waiting
   checkpoint, exactly once, and return its bootstrap; at a start with none, a crashed
   predecessor's machine handoff;
2. :func:`.start.prompt_submitted` (UserPromptSubmit) - record the prompt; a successor's first
   prompt makes it ACTIVE; parked notes, a claim cut short and an undelivered bootstrap go here;
3. :func:`.turn.tool_used`         (after a tool) - a level change is recorded once, with its note;
4. :func:`.turn.turn_ended`        (Stop) - the gate: below *rotate* the level; at *rotate* the
   handoff is requested, on the next Stops checked (:mod:`.handoff`, its claims and sources),
   else a machine handoff; then :func:`.turn.checkpoint_and_hand_over`: the work-tree snapshot
   (:mod:`..snapshot`) and manifest (:mod:`.checkpoint`), the bootstrap prepared
   (:mod:`.claim`), published when the user shares (:mod:`.share`), and one driver hands over
   (:mod:`.handover`: the mod, the tmux rotator, or the user's /clear);
5. :func:`.turn.late_turn_end`     (the late Stop) - a second look at a turn's end that lagged;
6. :func:`.turn.before_compact`    (PreCompact) - past *rotate*, rotate instead of compacting;
7. :func:`.turn.session_ended`     (SessionEnd) - a handoff its Stop died before verifying is verified
   now; then :func:`.start.session_ended`: ENDED, or the /clear that starts a successor,
   whose SessionStart (step 1) claims the checkpoint and revalidates it (:mod:`.revalidation`).

What a step needs of the agent it runs in goes through the host port (:mod:`.host`); what
it says to the model or the user is in :mod:`.texts`; a record changes only through
``Project.edit``.  Importing this package loads nothing: a hook imports the step it runs.
"""
