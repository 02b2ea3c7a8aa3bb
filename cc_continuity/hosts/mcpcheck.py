"""doctor's ``mcp-server`` row: the MCP server ``install --mcp`` registered starts and lists its tools, and no
repository entry of the same name stands in for it.

The probe is the launcher the hosts run (``<launcher> mcp``), in the project, spoken to as a host would:
``initialize``, then ``tools/list`` (three JSON lines on stdio; doctor never imports the SDK, the server does),
within :data:`PROBE_S`, then ended.  Codex gives a server 10 s to start; the row says how long ours took.

Once the server is registered, a server of our name in a repository (Claude Code's ``.mcp.json`` or local scope, ``.codex/config.toml``,
``.gemini/settings.json``) wins over the user's in those hosts: it runs whatever the repository says under our
name, so the row fails and names the file.
"""

import json
import os
import select
import subprocess
import time

from .. import paths
from ..doctor.base import Result
from ..install import app, manifest, mcp
from .claude import mcpentry as claude
from .codex import files as codex
from .gemini import files as gemini

PROBE_S = 20.0
START_LIMIT_S = 10.0  # Codex's default startup_timeout_sec


def registered(installed):
    """The hosts the install record (``installed``) has the server registered with, by name."""
    installed = installed or {}
    out = ["Claude Code"] if installed.get("claude_mcp") else []
    out += [name for key, name in (("codex", "Codex CLI"), ("gemini", "Gemini CLI"))
            if isinstance(installed.get(key), dict) and installed[key].get("mcp")]
    return out


def probe(command, cwd, env, timeout=PROBE_S):
    """``(seconds to the initialize answer, the tool names listed)`` of the server ``command``; RuntimeError
    saying what went wrong (its last stderr line when it died)."""
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "cc-continuity-doctor", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}]
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as e:
        raise RuntimeError("it does not start: %s" % (e.strerror or e)) from None
    try:
        proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in msgs))
        proc.stdin.flush()
        answers, started, buf = {}, None, b""
        while len(answers) < 2:
            left = t0 + timeout - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise RuntimeError("no answer within %.0f s" % timeout)
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                err = proc.stderr.read(4096).decode("utf-8", "replace").strip().splitlines()
                raise RuntimeError("it ended before answering%s" % (": " + err[-1][:200] if err else ""))
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("id") in (1, 2):
                    answers[msg["id"]] = msg
                    if msg["id"] == 1 and started is None:
                        started = time.monotonic() - t0
        tools = ((answers[2].get("result") or {}).get("tools")) or []
        return started, sorted(t.get("name") for t in tools if isinstance(t, dict))
    finally:
        proc.kill()
        proc.wait(5)
        for f in (proc.stdin, proc.stdout, proc.stderr):
            f.close()


def repo_entries(root, env):
    if not root:
        return []
    return claude.repo_entries(root, env) + codex.repo_mcp_entries(root) + gemini.repo_mcp_entries(root)


def check_mcp_server(ctx):
    """doctor: the MCP server (when an install registered it) starts, answers and lists every tool; no
    repository entry of its name shadows it."""
    try:
        hosts = registered(manifest.load())
    except manifest.ManifestError as e:
        return Result("mcp-server", False, "cannot read the install record: %s" % e, "cc-continuity install")
    if not hosts:  # (and a repository's files are not read: nothing of ours for them to stand in for)
        return Result("mcp-server", True, "not turned on (`cc-continuity install --mcp` registers it with an agent)")
    shadows = repo_entries(ctx.root, ctx.env)
    if shadows:
        return Result("mcp-server", False, "a server named %s in this repository's %s would run in place of yours "
                      "(in those hosts a project's entry wins), whatever it runs" % (mcp.SERVER, ", ".join(shadows)),
                      "remove that entry, or do not run agents here with it")
    command, args = mcp.command(app.launcher_path(paths.home()))
    try:
        took, tools = probe([command, *args], ctx.root or ctx.cwd, dict(ctx.env))
    except RuntimeError as e:
        return Result("mcp-server", False, "registered with %s, but %s" % (" and ".join(hosts), e),
                      "cc-continuity install --mcp (again), then doctor")
    missing = sorted(set(mcp.READ_ONLY + mcp.MUTATING) - set(tools))
    if missing:
        return Result("mcp-server", False, "it started but lists no %s" % ", ".join(missing),
                      "cc-continuity install --mcp (the app copy is older than this command)")
    return Result("mcp-server", took < START_LIMIT_S, "registered with %s; it answered in %.1f s (Codex allows "
                  "%.0f) and lists its %d tools" % (" and ".join(hosts), took, START_LIMIT_S, len(tools)),
                  None if took < START_LIMIT_S else "a slow disk or Python: Codex may start without it")
