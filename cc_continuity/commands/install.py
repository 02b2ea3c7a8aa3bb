"""``cc-continuity install``: hooks, status line, CLAUDE.md block, shell wrapper, skills, launcher.

``--agent codex``: the hooks into Codex CLI's ``$CODEX_HOME/hooks.json`` instead (``--trust``
also records Codex's trust for them); ``--agent gemini``: into Gemini CLI's ``~/.gemini/settings.json``
(and its compression threshold above our hard ceiling, when the user set none).  Safe to re-run (a second run changes nothing; an
upgrade replaces ours in place).  ``--dry-run`` prints the diff of every file and writes nothing.
"""

import argparse
import sys

from .. import errors
from ..hosts import setup
from ..install import plan as install_plan
# The same value parsers as `configure` (one spelling of 200k, 55,62,72, a URL for both).
from .configure import parse_thresholds, parse_tokens, parse_url_or_off


def register(sub):
    p = sub.add_parser("install")
    p.add_argument("--agent", choices=setup.AGENTS, default="claude",
                   help="the agent CLI to install into: Claude Code (default; ~/.claude), Codex CLI (hooks into "
                        "$CODEX_HOME/hooks.json, default ~/.codex) or Gemini CLI (hooks into ~/.gemini/settings.json)")
    p.add_argument("--trust", action="store_true",
                   help="--agent codex: also trust our hooks, and only ours, in Codex's config.toml (by the hash "
                        "`codex app-server` gives each), instead of choosing \"Trust all\" on Codex's \"Hooks need "
                        "review\" screen")
    p.add_argument("--window", type=parse_tokens, metavar="N",
                   help="context window in tokens, e.g. 200000, 200k, 1m (default: detect)")
    p.add_argument("--thresholds", type=parse_thresholds, metavar="WARN,ROTATE,HARD",
                   help="percent of the window, e.g. 55,62,72")
    p.add_argument("--ntfy", type=parse_url_or_off, metavar="URL", help="ntfy topic URL for phone notifications")
    p.add_argument("--unattended", action="store_true",
                   help="run the whole rotation chain without permission prompts")
    p.add_argument("--shell", choices=("auto", "zsh", "bash", "fish"), default="auto",
                   help="which shell rc gets the claude() wrapper (default: from $SHELL)")
    p.add_argument("--no-wrapper", action="store_true", help="do not add the claude() shell wrapper")
    p.add_argument("--plugin", action="store_true",
                   help="carry the hooks, skills and the in-process mod as a Claude Code plugin (claude plugin "
                        "install) instead of settings.json; the status line stays in settings.json")
    p.add_argument("--mcp", action=argparse.BooleanOptionalAction, default=None,
                   help="register cc-continuity's MCP server with the agent (its read-only tools allowed, the others "
                        "only for clients in your mcp_clients; needs the SDK: cc-continuity[mcp]); --no-mcp takes it "
                        "out; left out, as the last install left it")
    p.add_argument("--dry-run", action="store_true", help="print the diff of every file; write nothing")
    p.add_argument("--check", action="store_true",
                   help="only check the options and every file install would change; write nothing, print "
                        "nothing when all is well (install.py runs this before it creates anything)")
    p.set_defaults(func=run)


def run(args):
    opts = install_plan.Options(window=args.window, thresholds=args.thresholds, ntfy=args.ntfy,
                           unattended=args.unattended, shell=args.shell, no_wrapper=args.no_wrapper,
                           dry_run=args.dry_run, plugin=args.plugin, agent=args.agent, trust=args.trust,
                           mcp=args.mcp)
    try:
        if args.check:
            return setup.check(opts)
        return setup.install(opts)
    except errors.Error as e:  # every install and config error: nothing half-done is left
        sys.stderr.write("cc-continuity install: %s\n" % e)
        sys.stderr.write("cc-continuity install: nothing was changed\n")
        return 1
