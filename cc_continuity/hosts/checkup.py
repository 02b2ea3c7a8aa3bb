"""``cc-continuity doctor`` across the hosts: which checks (the system's, and those of the agents judged),
their rows in one order, the summary and the closing ``Next:``.

Above both: doctor/ is the library (the row, the Context, the system's checks, running and rendering)
and names no host; each host folder named in :data:`~cc_continuity.hosts.HOSTS` has its doctor unit,
``hosts/<name>/doctor.py``: its ``CHECKS``, ``NAME``, ``ROW`` (its one row when not set up),
``INSTALL_FIX``, ``NEXT`` (its closing step), ``RECORD_KEYS``, ``installed(ctx)``, ``hook_file(ctx)``,
``own_copy(ctx)``, ``stale_files(now)`` and ``amend(ctx, results)``.  This module finds them by the
registry's names, so a new host is its folder and its registry line (and its rows' places in
:data:`ORDER`).  ``commands/doctor.py`` calls here.  Not in hosts/__init__: that one is on every tool
call's path and imports nothing.

The agents judged are the ones ``doctor --agent`` names, else the ones set up here
(:meth:`~cc_continuity.doctor.base.Context.installed`: what ``cc-continuity install`` recorded for each, a
plugin of ours, or hooks of ours in an agent's hook file).  An agent not judged and not set up gets one
neutral row saying how to add it; with none set up, one red row says how to start.
"""

import importlib
import shlex

from ..doctor import base, runner, system
from ..doctor.base import Result
from ..doctor.runner import render
from ..install import manifest
from . import HOSTS, mcpcheck, servers

__all__ = ["AGENTS", "CHECKS", "Context", "Result", "closing", "render", "run_checks", "selected"]

# Every host's doctor unit, by its --agent name, in the registry's order (the order the report names them).
UNITS = {name: importlib.import_module(".%s.doctor" % name, __package__) for name in HOSTS}
AGENTS = tuple(UNITS)  # doctor's --agent values (and "all")

# The order the rows are shown in, by check (its function's name without "check_"): the tools, then each
# agent's wiring, then the state directory.  A check not placed here comes last.
ORDER = (
    "python", "git", "tmux", "claude", "config",
    "plugin", "plugin_python", "plugin_packages", "hooks", "hook_probe", "shell_reader", "mods", "statusline",
    "wrapper", "skills", "skill_shell", "app_copy", "codex_hooks", "codex_trust", "codex_firing",
    "gemini_hooks", "gemini_trust", "gemini_settings", "gemini_window", "gemini_firing",
    "watchdog_unit", "permissions", "leftovers", "trust", "context_window", "server_window", "small_window", "system_prompt", "ntfy",
    "mirror", "mcp_server",
)
_AGENT_OF = {check: agent for agent, unit in UNITS.items() for check in unit.CHECKS}


def _place(check):
    name = check.__name__[len("check_"):]
    return ORDER.index(name) if name in ORDER else len(ORDER)


CHECKS = sorted(system.CHECKS + list(_AGENT_OF) + [servers.check_server_window, servers.check_small_window,
                                                mcpcheck.check_mcp_server],
                key=_place)


class Context(base.Context):
    """doctor's :class:`~cc_continuity.doctor.base.Context`, given every host's unit."""

    def __init__(self, env=None, cwd=None, fix=False, notify_test=False, agents=None):
        super().__init__(env, cwd, fix, notify_test, agents, hosts=UNITS)


def agent_of(check):
    """The agent a check judges, or None for the system's."""
    return _AGENT_OF.get(check)


def not_set_up(agent):
    """The neutral row of an agent not set up here (and not asked for)."""
    unit = UNITS[agent]

    def check(ctx):
        return Result(unit.ROW, True, "%s is not set up here, so not checked: `%s` adds it (`cc-continuity doctor "
                      "--agent %s` checks it anyway)" % (unit.NAME, unit.INSTALL_FIX, agent), neutral=True)
    check.__name__ = "check_%s_not_set_up" % agent
    return check


def check_nothing_installed(ctx):
    return Result("install", False, "cc-continuity is set up for no agent here: no install record (%s), no hook "
                  "of ours in %s" % (manifest.path(), " or in ".join(u.hook_file(ctx) for u in UNITS.values())),
                  ", or ".join("`%s` for %s" % (u.INSTALL_FIX, u.NAME) for u in UNITS.values()))


def selected(ctx):
    """The checks for ``ctx``: the system's, and each judged agent's; a neutral row for one not set up."""
    judged, out, noted = ctx.agents, [], set()
    if not judged:
        out.append(check_nothing_installed)
    for check in CHECKS:
        agent = agent_of(check)
        if agent is None or agent in judged:
            out.append(check)
        elif judged and agent not in noted and agent not in ctx.installed():
            noted.add(agent)
            out.append(not_set_up(agent))
    return out


def run_checks(ctx, checks=None):
    """Run ``checks`` (default: :func:`selected`); one that crashes is reported red instead of stopping the
    rest.  Then each host amends the fixes of its rows and the system's (Claude Code's: a settings.json it
    cannot parse is repaired first)."""
    chosen = selected(ctx) if checks is None else list(checks)
    results = runner.run(ctx, chosen)
    for agent, unit in UNITS.items():
        unit.amend(ctx, [r for check, r in zip(chosen, results) if agent_of(check) in (None, agent)])
    return results


def closing(ctx, results):
    """The closing ``Next:`` line: only commands that fit what is set up and the options used."""
    if not ctx.agents:
        first, *rest = UNITS.values()
        return "Next: %s." % ", ".join(["`%s` sets cc-continuity up for %s" % (first.INSTALL_FIX, first.NAME)]
                                       + ["`%s` for %s" % (u.INSTALL_FIX, u.NAME) for u in rest])
    steps = []
    if any(not r.ok for r in results):
        again = ["cc-continuity", "doctor"] + (["--agent", _agent_option(ctx.asked)] if ctx.asked else [])
        steps.append("the fixes above, then `%s` again" % shlex.join(again))
    steps += [unit.NEXT for agent, unit in UNITS.items() if agent in ctx.agents]
    return "Next: " + "; then ".join(steps) + "."


def _agent_option(asked):
    return "all" if set(asked) == set(AGENTS) else asked[0]
