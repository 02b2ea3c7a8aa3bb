// A stand-in for Claude Code's mod API ($), enough to run hooks/mod.js in node.
// argv: <mod.js> <plugin root> <session id>; env CLAUDE_PID (the Claude process the mod is in) and the
// hook environment. Runs session.start, then one main-thread turn.complete, and prints what the mod did
// (one JSON line: clears, submits, Python calls, debug lines).
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, promises as fsp } from "node:fs";

const [modPath, root, firstSession] = process.argv.slice(2);
const did = { clears: 0, submits: [], calls: [], log: [] };
let session = firstSession;
const pending = new Set();

const $ = {
  plugin: { root },
  fs: { read: (p) => fsp.readFile(p, "utf8"), exists: async (p) => existsSync(p) },
  process: {
    hookEnv: async () => ({ ...process.env }),
    run: async (argv, opts = {}) => {
      const r = spawnSync(argv[0], argv.slice(1), { input: opts.stdin, env: opts.env || process.env,
                                                    timeout: opts.timeoutMs, encoding: "utf8" });
      if (argv.length > 1 && String(argv[argv.length - 1]).startsWith("Mod")) did.calls.push(argv[argv.length - 1]);
      return { exitCode: r.status, stdout: r.stdout, stderr: r.stderr };
    },
  },
  session: {
    id: async () => session,
    usage: async () => ({ context: { tokens: Number(process.env.STUB_TOKENS || 1000), window: 200000, percent: 1 } }),
  },
  command: { run: async ({ command }) => { if (command === "clear") { did.clears += 1; session = randomUUID(); } return { text: "" }; } },
  prompt: { submit: async ({ text }) => { did.submits.push(text); } },
  ui: { log: (msg) => did.log.push(String(msg)) },
};

const handlers = {};
const mod = await import(modPath);
mod.register((name, fn) => { handlers[name] = fn; });

// session.start: the mod says hello (in the background) and learns the runtime folder.
await handlers["session.start"]($, { cwd: process.cwd() }, async () => ({}));
for (let i = 0; i < 400 && !did.calls.includes("ModHello"); i++) await new Promise((r) => setTimeout(r, 25));
await new Promise((r) => setTimeout(r, 200)); // (the answer is parsed after the process ends)
await handlers["turn.complete"]($, { text: "Handoff written." }, async () => ({}));
// the turn's end work runs in the background: wait until it is done (a Python call or a hand-over)
for (let i = 0; i < 600; i++) {
  if (did.calls.includes("ModTurnEnd") || did.calls.includes("ModDone")) break;
  await new Promise((r) => setTimeout(r, 25));
}
await new Promise((r) => setTimeout(r, 300));
for (let i = 0; i < 400 && did.clears > 0 && !did.calls.includes("ModDone"); i++) await new Promise((r) => setTimeout(r, 25));
console.log(JSON.stringify(did));
