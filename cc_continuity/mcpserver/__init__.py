"""``cc-continuity mcp``: checkpoints, side effects and rotation as MCP tools, for any agent (an optional feature).

A stdio MCP server on the official Python SDK (``mcp`` 2.x, the ``cc-continuity[mcp]`` extra): heavy (its
import ~1 s and ~65 MB), so a separate long-lived process the agent starts, and nothing else imports this
folder (tests/test_layers.py): no hook and no status line loads it.

* :mod:`.tools` - what each tool does, on the project's records; no SDK.  Read-only tools are open; a
  mutating one runs only for a client the user's own config names (``mcp_clients``), and whatever an agent
  reports through it is recorded as reported by the agent, never as seen by the machine.
* :mod:`.server` - the SDK's server: each tool registered, the calling client's declared name passed in.
"""
