"""The stdio MCP server (the official SDK's ``MCPServer``): :mod:`.tools` registered, the client's declared
name handed to the mutating ones, a refusal answered as a tool error (the agent reads why).

Bounded like the hooks: every tool reads a project's records (small files, bounded ledgers) and returns;
none waits on the network or on a lock longer than the project lock's own timeout.  A server killed mid-call
leaves what the records' writes leave (atomic files, one ``write`` a ledger line, locks that die with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from .. import __version__
from . import tools

INSTRUCTIONS = ("cc-continuity keeps long sessions going across context resets: it checkpoints the work and "
                "hands it to a fresh session. Read-only tools (session_context, list_checkpoints, "
                "checkpoint_bootstrap, list_effects, verify_ledgers) are open; take_checkpoint, request_rotation, "
                "effect_begin, effect_end and claim_checkpoint run only for clients the user allowed. Route a side effect the shell cannot show through effect_begin / effect_end: "
                "a repeat after a crash is then held.")


def _client(ctx: Context) -> str | None:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = info.name if info is not None else None
    return name if isinstance(name, str) else None


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A tool's answer, or its refusal as the tool's error (the agent reads why)."""
    try:
        return call()
    except tools.Denied as e:
        raise ToolError(str(e)) from None


def build(host_of: tools.HostOf) -> MCPServer:
    """The server with every tool; ``host_of`` gives a session record's host (the command hands it in: this
    folder imports no host)."""
    server: MCPServer = MCPServer("cc-continuity", version=__version__, instructions=INSTRUCTIONS)
    _read_only(server)
    _mutating(server, host_of)
    return server


READ_ONLY = ToolAnnotations(read_only_hint=True)  # (Codex runs such a tool in its sandbox without asking)


def _read_only(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY,
                 description="This session's context: its name and state, the context's last reading (tokens, "
                             "window, percent, level) and the warn/rotate/hard thresholds. Read-only.")
    def session_context() -> dict[str, Any]:
        return tools.session_context(tools.project())

    @server.tool(annotations=READ_ONLY,
                 description="The project's checkpoints, newest first: each one's session, whether it waits for "
                             "a successor (then revalidated against the work tree now) or who claimed it, and "
                             "whether its handoff was degraded. Read-only.")
    def list_checkpoints() -> dict[str, Any]:
        return {"checkpoints": tools.list_checkpoints(tools.project())}

    @server.tool(annotations=READ_ONLY,
                 description="The text a successor of a checkpoint (e.g. cp-003) starts with: the handoff, the "
                             "machine's facts. Reading it claims nothing. Read-only.")
    def checkpoint_bootstrap(checkpoint: str) -> dict[str, Any]:
        return _answer(lambda: tools.checkpoint_bootstrap(tools.project(), checkpoint))

    @server.tool(annotations=READ_ONLY,
                 description="Check the hash chain of every session ledger of the project. Read-only.")
    def verify_ledgers() -> dict[str, Any]:
        return tools.verify_ledgers(tools.project())

    @server.tool(annotations=READ_ONLY,
                 description="The project's side-effect records, newest first: what, in which session, recorded by "
                             "the machine or reported by an agent, and the outcome (done, failed, not run, or "
                             "uncertain: begun and never ended, so a repeat is held). Read-only.")
    def list_effects() -> dict[str, Any]:
        return tools.list_effects(tools.project())



def _mutating(server: MCPServer, host_of: tools.HostOf) -> None:
    @server.tool(description="Take a checkpoint of this session now (its facts and a git snapshot that touches no "
                             "branch), without rotating: before a risky step. Only for clients the user allowed.")
    def take_checkpoint(ctx: Context, message: str = "") -> dict[str, Any]:
        return _answer(lambda: tools.take_checkpoint(tools.project(), _client(ctx), message, host_of))

    @server.tool(description="Ask for a rotation at the end of this turn (you sense the context filling up). "
                             "cc-continuity decides: only past warn, once per session, never in a rotation "
                             "loop; the answer says what will happen. Only for clients the user allowed.")
    def request_rotation(ctx: Context) -> dict[str, Any]:
        return _answer(lambda: tools.request_rotation(tools.project(), _client(ctx)))

    @server.tool(description="Before a side effect the shell cannot show (a program that posts, a deploy, another "
                             "server's tool): record it under a key that names the effect (a release tag, a "
                             "message id). Refused, with the user's 'repeat <code>', when the same effect already "
                             "ran or may have (begun, never ended). Only for clients the user allowed.")
    def effect_begin(key: str, what: str, ctx: Context) -> dict[str, Any]:
        return _answer(lambda: tools.effect_begin(tools.project(), _client(ctx), key, what))

    @server.tool(description="After the effect begun under key: whether it succeeded (recorded as reported by you). "
                             "Only for clients the user allowed.")
    def effect_end(key: str, ok: bool, ctx: Context) -> dict[str, Any]:
        return _answer(lambda: tools.effect_end(tools.project(), _client(ctx), key, ok))

    @server.tool(description="For a client with no cc-continuity hooks: claim a checkpoint (exactly once, as a "
                             "hook's claim would) and get the text to continue from. Only for clients the user "
                             "allowed.")
    def claim_checkpoint(checkpoint: str, ctx: Context) -> dict[str, Any]:
        return _answer(lambda: tools.claim_checkpoint(tools.project(), _client(ctx), checkpoint))


def main(host_of: tools.HostOf) -> int:
    build(host_of).run("stdio")
    return 0
