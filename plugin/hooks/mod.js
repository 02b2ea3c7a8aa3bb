// cc-continuity's mod: measure where Claude Code computes the context, hand over in-process.
//
// Thin on purpose: every decision (the protocol, validation, the claim, the ledger)
// stays in the Python core. The mod tells it what it sees and does what it answers:
//
//   session.start   -> ModHello    (this Claude process has a working mod: a heartbeat)
//   turn.complete   -> ModTurnEnd  (the context from $.session.usage(); a hand-over to do?)
//   session.compact -> ModCompact  (rotate instead of an automatic compaction?)
//   after acting    -> ModDone     (what happened, for the ledger; a failure falls back)
//
// A hand-over is `$.command.run({command: "clear"})` then `$.prompt.submit(...)` of
// the continuation as the user: no tmux, nothing typed into the user's input box.
// The Python entry is the one hooks/hooks.json gives every hook, so there is one
// implementation and one interpreter. Module variables survive /clear ($.state does not).

let entry = null; // [python, "-S", "-c", boot], from hooks/hooks.json (see pythonEntry)
let runtime = null; // cc-continuity's runtime folder, from ModHello's answer
let handing = false; // a hand-over is running in this process

// The Stop hook's command as Claude Code runs it: ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA}
// (the Python SessionStart chose, a link: no shell starts) filled in from the hook environment.
async function pythonEntry($, env) {
  if (entry === null) {
    const table = JSON.parse(await $.fs.read(`${$.plugin.root}/hooks/hooks.json`));
    const hook = table.hooks.Stop[0].hooks[0];
    const fill = (text) => text.split("${CLAUDE_PLUGIN_ROOT}").join($.plugin.root)
      .split("${CLAUDE_PLUGIN_DATA}").join(env.CLAUDE_PLUGIN_DATA);
    entry = [fill(hook.command), ...hook.args.slice(0, -1).map(fill)];
  }
  return entry;
}

async function call($, handler, payload) {
  try {
    const env = await $.process.hookEnv();
    const argv = [...(await pythonEntry($, env)), handler];
    const body = JSON.stringify({ hook_event_name: handler, mod: { version: 1 }, ...payload });
    const run = await $.process.run(argv, { stdin: body, env, timeoutMs: 20000 });
    const out = (run.stdout || "").trim();
    return run.exitCode === 0 && out.startsWith("{") ? JSON.parse(out) : {};
  } catch (err) {
    $.ui.log(`cc-continuity: ${handler} failed: ${err}`, { to: "debug" });
    return {};
  }
}

// The Stop hook offers a verified checkpoint's hand-over as <runtime>/handover/<session>.json;
// a tmux rotator may stand by for it. Whoever renames it first does the /clear (rename is
// atomic; mv is one, and far quicker to start than Python).
async function takeOffered($, session) {
  if (runtime === null) return null;
  const offered = `${runtime}/handover/${session}.json`;
  if (!(await $.fs.exists(offered))) return null;
  const ours = `${runtime}/handover/${session}.mod`;
  const moved = await $.process.run(["mv", offered, ours], { timeoutMs: 5000 });
  if (moved.exitCode !== 0) return null; // the rotator had it first
  try {
    return JSON.parse(await $.fs.read(ours));
  } catch (err) {
    await $.process.run(["mv", ours, offered], { timeoutMs: 5000 }); // give it back
    throw err;
  }
}

async function handOver($, plan, fromSession, via) {
  if (handing) return;
  handing = true;
  const t0 = Date.now();
  let step = "clear";
  try {
    await $.command.run({ command: "clear" });
    const cleared = Date.now();
    const toSession = await $.session.id();
    if (toSession === fromSession) throw new Error("/clear left the session id unchanged");
    step = "submit";
    // The user may have sent a prompt of their own into the new session meanwhile: it got the
    // handoff with it (SessionStart), and a second prompt from us is not needed.
    if (!(await $.fs.exists(plan.delivered_marker))) {
      await $.prompt.submit({ text: plan.continuation, asUser: true });
    }
    await call($, "ModDone", {
      session_id: fromSession, ok: true, step: "submitted", via, new_session_id: toSession,
      cleared_ms: cleared - t0, submitted_ms: Date.now() - t0,
    });
  } catch (err) {
    await call($, "ModDone", { session_id: fromSession, ok: false, step, via, error: String(err) });
  } finally {
    handing = false;
  }
}

export function register(on) {
  on("session.start", async ($, e, next) => {
    const started = await next(e);
    void (async () => {
      const hello = await call($, "ModHello", { session_id: await $.session.id(), cwd: e.cwd });
      if (typeof hello.runtime === "string") runtime = hello.runtime;
    })();
    return started;
  });

  on("turn.complete", async ($, e, next) => {
    const done = await next(e);
    if (!e.agentId && !handing) {
      void (async () => {
        const session = await $.session.id();
        const offered = await takeOffered($, session).catch(() => null);
        if (offered) return handOver($, offered, session, "offer");
        const { context } = await $.session.usage();
        const answer = await call($, "ModTurnEnd", { session_id: session, usage: context });
        if (answer.handover) await handOver($, answer.handover, session, "ModTurnEnd");
      })();
    }
    return done;
  });

  on("session.compact", async ($, e, next) => {
    if (e.agentId || e.trigger !== "auto") return next(e);
    const session = await $.session.id();
    const answer = await call($, "ModCompact", { session_id: session, trigger: e.trigger });
    if (!answer.skip) return next(e);
    if (answer.handover) void handOver($, answer.handover, session, "ModCompact"); // the clear waits for the turn's end
    return { skip: answer.skip };
  });
}
