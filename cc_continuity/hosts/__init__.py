"""The agents cc-continuity rotates, one folder per host: each fills the rotation's host port
(rotation/host.py) from its own files, and holds what else is its own (its hook entry and wire,
its transcript).  Importing this package loads nothing: a hook imports its own host's modules.
"""

# Every host, by its folder's name: its port (rotation/host.py's Host, filled in) and the function its hook entry
# runs when a tool call must be decided, which calls the one tool-call step (rotation/toolcall.before_tool: the
# snapshot's wait, the hard ceiling, the handoff's write, the hold).  A new host is a row here;
# tests/hosts/test_toolcall.py runs each row's step and fails for a host that decides a tool call on its own.
HOSTS = {
    "claude": ("cc_continuity.hosts.claude.host:ClaudeHost", "cc_continuity.hosts.claude.hooks.pre_tool_use:_decide"),
    "codex": ("cc_continuity.hosts.codex.host:CodexHost", "cc_continuity.hosts.codex.hooks:_pre_tool_use"),
}
