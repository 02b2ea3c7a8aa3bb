"""``cc-continuity mcp``: the MCP server on stdio (mcpserver/), for an agent to start; needs the optional SDK."""

import sys

from ..install import mcp as mcp_install
from ._util import host_of  # a session record's host, handed to the server (it imports no host)


def register(sub):
    p = sub.add_parser("mcp", description="Serve cc-continuity's tools over MCP on stdin/stdout (an agent starts "
                                          "this). Needs the optional SDK: pip install 'cc-continuity[mcp]'.")
    p.set_defaults(func=run)


def run(args):
    for p in mcp_install.sdk_paths():
        if p not in sys.path:
            sys.path.append(p)  # (after the app's own lib/: its versions win)
    try:
        from ..mcpserver import server  # (the SDK: ~1 s and ~65 MB, only for this verb)
    except ImportError as e:
        sys.stderr.write("cc-continuity mcp: %s\n" % mcp_install.off_reason(e))
        return 2
    return server.main(host_of)
