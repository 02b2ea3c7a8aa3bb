"""A plugin session's optional packages: started at its SessionStart and prompts, said once when they fail.

Only a plugin installed from a marketplace builds them (``${CLAUDE_PLUGIN_DATA}``, :mod:`cc_continuity.deps`);
the build runs detached and is never awaited, and nothing here may cost the user's prompt more than a few
stats.  A failure is shown once, as a ``systemMessage`` beside whatever the step answered.
"""

from .... import config, deps

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    from typing import Any

    from ..host import HookContext


def noted(ctx: "HookContext", out: "dict[str, Any] | None") -> "dict[str, Any] | None":
    """``out`` (the step's answer), with the packages' one line for the user when there is one."""
    if deps.plugin_data(ctx.env) is None:
        return out
    try:
        line = deps.at_session(config.load(None, ctx.env), ctx.env)
    except Exception as e:  # the user's session before our packages: log it, answer as the step did
        ctx.outcome = "%s; optional packages: %s: %s" % (ctx.outcome, type(e).__name__, str(e)[:120])
        return out
    if not line:
        return out
    out = dict(out or {})
    said = out.get("systemMessage")
    out["systemMessage"] = "%s\n%s" % (said, line) if isinstance(said, str) and said else line
    return out
