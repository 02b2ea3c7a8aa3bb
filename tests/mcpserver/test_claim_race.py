"""A claim through the MCP server (a client with no hooks) racing a hook's claim of the same checkpoint: exactly
one wins, 100 rounds.  The hook is the real SessionStart of a new Claude Code process (a subprocess); the MCP
claim is the server's tool, in a thread started 0-300 ms after it (seeded per round: the hook's own start-up
is ~100 ms, so each wins some rounds, some at the lock together); both take the project lock."""

import random
import threading
import time
import uuid

from cc_continuity import config, session
from cc_continuity.mcpserver import tools
from helpers.hookdriver import HookDriver, dead_pid, handoff_text, tokens_at

ROUNDS = 100


def _verified(drv, sid, pid):
    env = drv.env(sid, CLAUDE_PID=pid)
    drv.transcript(sid).assistant(tokens_at(8))
    drv.inproc("SessionStart", sid, env=env, source="startup")
    drv.inproc("UserPromptSubmit", sid, env=env, prompt="carry on")
    drv.transcript(sid).assistant(tokens_at(65))
    drv.inproc("Stop", sid, env=env)
    with open(drv.handoff_path(sid), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`"}))
    drv.inproc("Stop", sid, env=env, stop_hook_active=True)
    rec = drv.state(sid)
    assert rec["state"] in session.CLAIMABLE, rec["state"]
    return rec["checkpoint"]["id"]


def test_an_mcp_claim_racing_a_hooks_claim_is_won_exactly_once(tmp_path):
    drv = HookDriver(tmp_path / "proj", files={"README.md": "hi\n", "src/app.py": "x = 1\n"})
    config.update_global({"mcp_clients": ["cc-test"]})
    proj = tools.project(drv.root)
    wins = {"mcp": 0, "hook": 0}
    for k in range(ROUNDS):
        cp = _verified(drv, str(uuid.uuid4()), dead_pid(2 * k))
        hook_sid = str(uuid.uuid4())
        drv.transcript(hook_sid).assistant(tokens_at(3))
        got = {}

        def mcp(delay=random.Random(k).uniform(0.0, 0.3)):  # around the hook's own start-up: either may be first
            time.sleep(delay)
            try:
                got["mcp"] = tools.claim_checkpoint(proj, "cc-test", cp)
            except tools.Denied as e:
                got["denied"] = str(e)
        t = threading.Thread(target=mcp)
        hook = drv.start("SessionStart", hook_sid, env=drv.env(hook_sid, CLAUDE_PID=dead_pid(2 * k + 1)),
                         source="startup")
        t.start()
        out, err = hook.communicate(timeout=60)
        t.join(60)
        assert hook.returncode == 0 and not err, err
        hooked = drv.state(hook_sid).get("checkpoint_from") == cp
        assert hooked != ("mcp" in got), (k, cp, got, hooked)  # exactly one of them
        assert ("denied" in got) == hooked and (not hooked or "claimed" in got["denied"])
        owners = [n for n in proj.numbers() if session.load(proj.session_dir(n)).get("checkpoint_from") == cp]
        assert len(owners) == 1, (k, owners)
        wins["hook" if hooked else "mcp"] += 1
        if hooked:  # the hook's session goes on working: end it so the next round's checkpoint is the only one
            drv.inproc("SessionEnd", hook_sid, env=drv.env(hook_sid, CLAUDE_PID=dead_pid(2 * k + 1)), reason="other")
    print("100 rounds: the MCP claim won %(mcp)d, the hook's %(hook)d" % wins)
    assert wins["mcp"] + wins["hook"] == ROUNDS and wins["mcp"] and wins["hook"], wins  # a race, both ways
