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

let entries = {}; // hook event -> [command, ...args but the last], from hooks/hooks.json (see pythonEntry)
let runtime = null; // cc-continuity's runtime folder, from ModHello's answer
let handing = false; // a hand-over is running in this process
let headless = false; // claude -p (a plugin eval's run too): the process ends when the turn's handlers return
let deferred = null; // headless: a hand-over a skipped compaction asked for, done at the turn's end
let pinned = false; // a notice of ours is pinned under the prompt ($.ui.status)

// A session that waits for the user's /clear says so under the prompt at once (the Python answers
// {"notice": text}); the next answer without one, or a new session, takes it away.
function notice($, answer) {
  try {
    if (answer && typeof answer.notice === "string") {
      $.ui.status(answer.notice);
      pinned = true;
    } else if (pinned) {
      $.ui.status(null);
      pinned = false;
    }
  } catch (err) {
    $.ui.log(`cc-continuity: status failed: ${err}`, { to: "debug" });
  }
}

// The command of the Stop hook (a tool call's: the Python SessionStart chose, a link: no shell
// starts), or for ModHello the SessionStart's (the chooser, which links the Python when there is
// none yet: a mod loaded by an install in a live session says hello before any SessionStart), as
// Claude Code runs it: ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} filled in from the hook environment.
async function pythonEntry($, env, handler) {
  const event = handler === "ModHello" ? "SessionStart" : "Stop";
  if (!entries[event]) {
    const table = JSON.parse(await $.fs.read(`${$.plugin.root}/hooks/hooks.json`));
    const hook = table.hooks[event][0].hooks[0];
    const fill = (text) => text.split("${CLAUDE_PLUGIN_ROOT}").join($.plugin.root)
      .split("${CLAUDE_PLUGIN_DATA}").join(env.CLAUDE_PLUGIN_DATA);
    entries[event] = [fill(hook.command), ...hook.args.slice(0, -1).map(fill)];
  }
  return entries[event];
}

async function call($, handler, payload) {
  try {
    const env = await $.process.hookEnv();
    const argv = [...(await pythonEntry($, env, handler)), handler];
    const body = JSON.stringify({ hook_event_name: handler, mod: { version: 1 }, ...payload });
    const run = await $.process.run(argv, { stdin: body, env, timeoutMs: 20000 });
    const out = (run.stdout || "").trim();
    return run.exitCode === 0 && out.startsWith("{") ? JSON.parse(out) : {};
  } catch (err) {
    $.ui.log(`cc-continuity: ${handler} failed: ${err}`, { to: "debug" });
    return {};
  }
}

// The Stop hook offers a verified checkpoint's hand-over as <runtime>/handover/<session>.json, bound to
// the moment it is for (rotation.offer_binding): this Claude process (pid and start), its turn and its
// checkpoint. The mod acts on it only after checking it: the directory ours and 0700, the file ours, a
// regular file with one link (not a symlink); bound to this very process; the checkpoint still unclaimed
// (its record ROTATING with the mod as driver, no successor). Anything else is refused and removed.
// A tmux rotator may stand by: whoever renames the file first does the /clear (rename is atomic; mv is
// one, and far quicker to start than Python). The checks cannot stop another process of the same user,
// which could edit settings.json as well (docs/SECURITY.md).
const TAKE = [
  'd=$1; f=$2; o=$3; u=$(id -u)',
  '[ -n "$(find "$d" -maxdepth 0 -type d -user "$u" -perm 700)" ] || exit 4', // not our private dir: touch nothing
  'if [ -n "$(find "$f" -maxdepth 0 -type f -user "$u" -links 1)" ]; then',
  '  mv "$f" "$o" || exit 1', // the rotator had it first
  '  [ -n "$(find "$o" -maxdepth 0 -type f -user "$u" -links 1)" ] && exit 0',
  '  rm -f "$o"; exit 3',
  'fi',
  'rm -f "$f"; exit 3', // a link, a foreign file, a directory...: refused and removed
].join("\n");

async function takeOffered($, session) {
  if (runtime === null) return null;
  const dir = `${runtime}/handover`;
  const offered = `${dir}/${session}.json`;
  if (!(await $.fs.exists(offered))) return null;
  const ours = `${dir}/${session}.mod`;
  const took = await $.process.run(["sh", "-c", TAKE, "sh", dir, offered, ours], { timeoutMs: 5000 });
  if (took.exitCode === 1) return null;
  if (took.exitCode !== 0) return { refused: took.exitCode === 4 ? "its directory is not ours and private" : "not our file" };
  let plan;
  try {
    plan = JSON.parse(await $.fs.read(ours));
  } catch (err) {
    await $.process.run(["rm", "-f", ours], { timeoutMs: 5000 });
    return { refused: `unreadable: ${err}` };
  }
  const why = await unbound($, session, plan);
  if (why !== null) {
    await $.process.run(["rm", "-f", ours], { timeoutMs: 5000 });
    return { refused: why };
  }
  return { plan };
}

// Why the offer is not for this process and turn, or null when it is.
async function unbound($, session, plan) {
  const b = plan && plan.bound;
  if (!b || typeof b !== "object") return "not bound to a process";
  const pid = Number((await $.process.hookEnv()).CLAUDE_PID);
  if (!(pid > 0) || b.pid !== pid) return `made for process ${b.pid}, this is ${pid}`;
  if (typeof b.pid_ticks === "number") {
    let ticks = null;
    try {
      const stat = await $.fs.read(`/proc/${pid}/stat`);
      ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    } catch (err) {
      ticks = null;
    }
    if (ticks !== b.pid_ticks) return "made for an earlier process with this pid";
  }
  let rec;
  try {
    rec = JSON.parse(await $.fs.read(b.state));
  } catch (err) {
    return `its session record is unreadable: ${err}`;
  }
  if (rec.session_id !== session || plan.session_id !== session) return "made for another session";
  if (rec.state !== "ROTATING" || rec.driver !== "mod" || rec.successor != null) return `its session is ${rec.state}`;
  if (!rec.checkpoint || rec.checkpoint.id !== b.checkpoint || plan.checkpoint !== b.checkpoint) return "another checkpoint";
  return null;
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
    notice($, await call($, "ModDone", { session_id: fromSession, ok: false, step, via, error: String(err) }));
  } finally {
    handing = false;
  }
}

export function register(on) {
  on("session.start", async ($, e, next) => {
    const started = await next(e);
    headless = e.isInteractive === false;
    notice($, null); // a new session (a /clear): whatever waited is over
    void (async () => {
      const hello = await call($, "ModHello", { session_id: await $.session.id(), cwd: e.cwd });
      if (typeof hello.runtime === "string") runtime = hello.runtime;
    })();
    return started;
  });

  on("session.end", async ($, e, next) => {
    notice($, null); // a /clear (or the end): whatever waited is over
    return next(e);
  });

  on("turn.complete", async ($, e, next) => {
    const done = await next(e);
    if (!e.agentId && !handing) {
      const work = (async () => {
        const session = await $.session.id();
        if (deferred) {
          const d = deferred;
          deferred = null;
          return handOver($, d, session, "ModCompact");
        }
        const offered = await takeOffered($, session).catch((err) => ({ refused: `${err}` }));
        if (offered && offered.plan) return handOver($, offered.plan, session, "offer");
        const { context } = await $.session.usage();
        const refused = offered && offered.refused ? { offer_refused: offered.refused } : {};
        const answer = await call($, "ModTurnEnd", { session_id: session, usage: context, ...refused });
        notice($, answer);
        if (answer.handover) await handOver($, answer.handover, session, "ModTurnEnd");
      })();
      if (headless) await work; // interactive: the turn ends at once, the hand-over follows
    }
    return done;
  });

  on("session.compact", async ($, e, next) => {
    if (e.agentId || e.trigger !== "auto") return next(e);
    const session = await $.session.id();
    const answer = await call($, "ModCompact", { session_id: session, trigger: e.trigger });
    if (!answer.skip) return next(e);
    if (answer.handover && headless) deferred = answer.handover; // awaited at turn.complete, before -p exits
    else if (answer.handover) void handOver($, answer.handover, session, "ModCompact"); // the clear waits for the turn's end
    return { skip: answer.skip };
  });
}
