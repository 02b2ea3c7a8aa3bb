"""Runs the doctor's checks and closes the report: which checks (the system's, and those of the agents
judged), the rows, the summary line and the closing ``Next:``.

The agents judged are the ones ``doctor --agent`` names, else the ones set up here
(:meth:`.base.Context.installed`: what ``cc-continuity install`` recorded for each, a plugin of ours,
or hooks of ours in an agent's hook file).  An agent not judged and not set up gets one neutral row
saying how to add it; with none set up, one red row says how to start.
"""

import os
import shlex

from ..hosts.claude import doctor as claude
from ..hosts.claude import doctor_plugin as claude_plugin
from ..hosts.codex import doctor as codex
from ..install import manifest
from . import system
from .base import AGENTS, Context, Result
from ..hosts.claude.doctor import _settings_fix
from ..hosts.codex.doctor import CODEX_FIX

__all__ = ["AGENTS", "CHECKS", "Context", "Result", "closing", "render", "run_checks", "selected"]

# The order the rows are shown in: the tools, then each agent's wiring, then the state directory.
CHECKS = [
    system.check_python, system.check_git, system.check_tmux, claude.check_claude, system.check_config,
    claude_plugin.check_plugin, claude_plugin.check_plugin_python, claude_plugin.check_plugin_packages,
    claude.check_hooks, claude.check_hook_probe, claude.check_shell_reader, claude_plugin.check_mods,
    claude.check_statusline, claude.check_wrapper, claude_plugin.check_skills, claude_plugin.check_skill_shell,
    system.check_app_copy, codex.check_codex_hooks, codex.check_codex_trust, codex.check_codex_firing,
    system.check_watchdog_unit, system.check_permissions, system.check_leftovers, claude.check_trust,
    claude.check_context_window, claude.check_system_prompt, system.check_ntfy, system.check_mirror,
]
AGENT_MODULES = {claude.__name__: "claude", claude_plugin.__name__: "claude", codex.__name__: "codex"}
NAMES = {"claude": "Claude Code", "codex": "Codex CLI"}
INSTALL = {"claude": "cc-continuity install", "codex": CODEX_FIX}


def agent_of(check):
    """The agent a check judges, or None for the system's."""
    return AGENT_MODULES.get(check.__module__)


def not_set_up(agent):
    """The neutral row of an agent not set up here (and not asked for)."""
    def check(ctx):
        return Result(agent.replace("claude", "claude-code").replace("codex", "codex-cli"), True,
                      "%s is not set up here, so not checked: `%s` adds it (`cc-continuity doctor --agent %s` "
                      "checks it anyway)" % (NAMES[agent], INSTALL[agent], agent), neutral=True)
    check.__name__ = "check_%s_not_set_up" % agent
    return check


def check_nothing_installed(ctx):
    return Result("install", False, "cc-continuity is set up for no agent here: no install record (%s), no hook "
                  "of ours in %s or in Codex's hooks.json" % (manifest.path(), ctx.settings_path),
                  "`cc-continuity install` for Claude Code, or `%s` for Codex CLI" % CODEX_FIX)


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
    rest."""
    out = []
    for check in selected(ctx) if checks is None else checks:
        try:
            out.append(check(ctx))
        except Exception as e:
            name = check.__name__.replace("check_", "").replace("_", "-")
            out.append(Result(name, False, "the check itself failed: %s: %s" % (type(e).__name__, e),
                              "report this as a cc-continuity bug"))
    if ctx.settings()[0] is None and os.path.exists(ctx.settings_path):
        for r in out:  # install refuses a settings.json it cannot parse: every such fix starts with the repair
            if not r.ok and r.fix and r.fix.startswith("cc-continuity install") and CODEX_FIX not in r.fix:
                r.fix = _settings_fix(ctx, r.fix)
    return out


def closing(ctx, results):
    """The closing ``Next:`` line: only commands that fit what is set up and the options used."""
    if not ctx.agents:
        return "Next: `cc-continuity install` sets cc-continuity up for Claude Code, `%s` for Codex CLI." % CODEX_FIX
    steps = []
    if any(not r.ok for r in results):
        again = ["cc-continuity", "doctor"] + (["--agent", _agent_option(ctx.asked)] if ctx.asked else [])
        steps.append("the fixes above, then `%s` again" % shlex.join(again))
    if "claude" in ctx.agents:
        steps.append("`cc-continuity rehearse` runs one full rotation in a scratch project to prove the chain "
                     "end to end")
    if "codex" in ctx.agents:
        steps.append("`cc-continuity run --agent codex \"<task>\"` runs a task through `codex exec`, rotating "
                     "with no typing")
    return "Next: " + "; then ".join(steps) + "."


def _agent_option(asked):
    return "all" if set(asked) == set(AGENTS) else asked[0]


_GREEN, _RED, _DIM, _RESET = "\033[32m", "\033[31m", "\033[2m", "\033[0m"
NAME_WIDTH = len("plugin-packages")  # the longest row name: the columns stay put whichever agents are judged


def render(results, color=False, next_line=None):
    """The human report: one line per check, a ``fix:`` line under each red one, the summary, ``next_line``."""
    def paint(code, text):
        return code + text + _RESET if color else text

    width = max([NAME_WIDTH] + [len(r.name) for r in results])
    lines = []
    for r in results:
        mark = "-   " if r.neutral else paint(_GREEN, "ok  ") if r.ok else paint(_RED, "FAIL")
        lines.append("%s  %-*s  %s" % (mark, width, r.name, r.detail))
        if not r.ok and r.fix:
            lines.append("%s  %-*s  fix: %s" % ("    ", width, "", r.fix))
    judged = [r for r in results if not r.neutral]
    bad = sum(not r.ok for r in judged)
    lines.append("")
    lines.append("%d of %d checks failed." % (bad, len(judged)) if bad else "All %d checks passed." % len(judged))
    if next_line:
        lines.append(paint(_DIM, next_line))
    return "\n".join(lines) + "\n"
