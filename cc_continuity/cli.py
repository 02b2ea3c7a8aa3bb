"""``cc-continuity <verb>``: one module per verb in :mod:`cc_continuity.commands`, named in :data:`VERBS`.

A verb's module defines ``register(sub)`` (``sub.add_parser(<verb>, ...)``, its options and
``set_defaults(func=run)``; the one-line help comes from :data:`VERBS`) and ``run(args) -> int``.
``cc-continuity <verb> ...`` imports and builds that verb's module alone, so a verb's imports cost
no other verb; ``--help``, no verb and a mistyped one build them all.
"""

import argparse
import importlib
import os
import sys
from collections.abc import Iterable
from typing import Any

from . import __version__, errors

# verb -> (its module in cc_continuity/commands/, the one line `cc-continuity --help` shows for it)
VERBS = {
    "checkpoint": ("checkpoint", "snapshot the work tree and machine facts now (session continues)"),
    "claim": ("claim", "continue a checkpoint published to a git remote: lease, worktree, claude"),
    "config": ("config", "show the effective configuration"),
    "configure": ("configure", "change thresholds, window, notifications, unattended mode, on/off"),
    "doctor": ("doctor", "check the installation and say how to fix what is wrong"),
    "history": ("history", "the rotation chain: ratio at trigger, handoff, duration"),
    "hook": ("hook", "run a Claude Code hook (JSON on stdin; always exits 0)"),
    "install": ("install", "install hooks, status line, CLAUDE.md block, shell wrapper and skills"),
    "launch": ("launch", "run claude for rotation (inside tmux when possible); used by the claude() shell wrapper"),
    "mcp": ("mcp", "serve checkpoints, side effects and rotation as MCP tools (stdio; the [mcp] extra)"),
    "meter": ("meter", "measure a transcript: tokens, window, ratio, level"),
    "notify-flush": ("notify_flush", "deliver queued push notifications now (the watchdog runs it too)"),
    "off": ("off", "disable rotation for this project (hooks stay installed, do nothing)"),
    "on": ("on", "enable rotation for this project"),
    "recall": ("recall", "the share of the successor's needed facts in its first request"),
    "rehearse": ("rehearse", "run one full rotation offline with your claude and hooks; timed report"),
    "repeat": ("repeat", "let one repeat of a held side effect through (you type its code again)"),
    "rotate": ("rotate", "hand off and rotate at the end of the current turn"),
    "run": ("run", "run a task unattended (claude -p, codex exec, gemini -p), rotating with no typing"),
    "share": ("share", "publish a verified checkpoint to a git remote (refs/continuity/shared/…)"),
    "signal": ("signal", "flag this session: needs-human (blocked) or done"),
    "snapshots": ("snapshots", "list refs/continuity/* snapshots with age and size; --prune old ones"),
    "status": ("status", "this project's sessions: ratio, level, state"),
    "statusline": ("statusline", "render the status line (Claude Code statusLine JSON on stdin)"),
    "uninstall": ("uninstall", "remove what install added (hooks, blocks, skills, launcher, app copy)"),
    "verify": ("verify", "verify the hash chain of every ledger"),
    "watchdog": ("watchdog", "optional daemon: model server probe, session liveness, bounded nudges"),
}


class _Verb:
    """What a verb module's ``register`` is given: the subparsers' ``add_parser``, with the help of :data:`VERBS`."""

    def __init__(self, sub: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str) -> None:
        self._sub, self._name = sub, name

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name != self._name:
            raise ValueError("commands/%s.py registers %r, not its verb %r" % (VERBS[self._name][0], name, self._name))
        return self._sub.add_parser(name, help=VERBS[name][1], **kwargs)


def add_verb(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str) -> None:
    """Import verb ``name``'s module and add its parser to ``sub`` (an import error propagates)."""
    mod = importlib.import_module("%s.commands.%s" % (__package__, VERBS[name][0]))
    mod.register(_Verb(sub, name))


def build_parser(verbs: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subparsers of ``verbs`` (only their modules imported); every verb's without them."""
    parser = argparse.ArgumentParser(
        prog="cc-continuity",
        description="Zero-touch session rotation for Claude Code, Codex CLI and Gemini CLI.",
    )
    parser.add_argument("--version", action="version", version="cc-continuity %s" % __version__)
    sub = parser.add_subparsers(dest="verb", metavar="<command>")
    for name in VERBS if verbs is None else verbs:
        try:
            add_verb(sub, name)
        except Exception as e:  # one broken verb must not take the others down
            sys.stderr.write("cc-continuity: command %r unavailable: %s\n" % (name, e))
    return parser


def verbs_of(argv: list[str]) -> tuple[str, ...] | None:
    """The verbs a command line needs parsers for: its verb alone, none for ``--version``, else (None) all:
    ``--help``, no verb and a mistyped one list or match them all."""
    if argv and argv[0] in VERBS:
        return (argv[0],)
    if argv[:1] == ["--version"]:
        return ()
    return None


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parse_args``, but a mistyped verb gets a "did you mean", and an option a verb does not
    have is reported with that verb's usage (not the top-level one)."""
    verbs = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None) or {}
    if argv and not argv[0].startswith("-") and argv[0] not in verbs:
        import difflib  # lazy: only a mistyped verb needs it

        close = difflib.get_close_matches(argv[0], list(verbs), n=1)
        parser.print_usage(sys.stderr)
        sys.stderr.write("cc-continuity: unknown command %r%s; `cc-continuity --help` lists them\n"
                         % (argv[0], " (did you mean %r?)" % close[0] if close else ""))
        raise SystemExit(2)
    args, extra = parser.parse_known_args(argv)
    if extra:
        (verbs.get(getattr(args, "verb", None) or "") or parser).error("unrecognized arguments: %s" % " ".join(extra))
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The hook path must stay lean: route it before building the full parser
    # (only asking for help goes to the parser: a hook call must always exit 0).
    asks_help = any(a in ("-h", "--help") for a in argv[1:])
    if argv[:1] == ["hook"] and not asks_help:
        from .hooks import main as hook_main

        hook_main(argv[1:])
    if argv[:1] == ["launch"]:
        # What the claude() shell wrapper runs: a failure before exec must let the
        # wrapper fall through to the real claude (reserved status), never block it.
        try:
            parser = argparse.ArgumentParser(prog="cc-continuity")
            add_verb(parser.add_subparsers(), "launch")
            args = parser.parse_args(argv)
            return int(args.func(args) or 0)
        except SystemExit as e:
            if e.code in (0, None):
                raise
            return launch_fallthrough_status()
        except BaseException as e:
            sys.stderr.write("cc-continuity launch failed (%s); starting claude directly\n" % e)
            return launch_fallthrough_status()
    if argv[:1] == ["statusline"] and not asks_help:
        from .statusline import main as status_main

        status_main()
    parser = build_parser(verbs_of(argv))
    args = _parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.verb not in ("install", "uninstall", "doctor"):
        _leftovers()
    try:
        return int(args.func(args) or 0)
    except errors.Error as e:  # the one place a user-facing error becomes a message and a status
        return report(args.verb, e)
    except FileNotFoundError:
        if _cwd_exists():
            raise
        return report(args.verb, errors.Error("the current directory no longer exists (deleted or moved "
                                              "away); cd to an existing directory and run it again"))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _leftovers() -> None:
    """Name what of ours an uninstall done inside Claude Code left (it runs no code of ours)."""
    try:
        from .install import plugin

        line = plugin.leftover_line()
    except Exception:  # a notice must never keep a verb from running
        return
    if line:
        sys.stderr.write(line + "\n")


def report(verb: str, error: errors.Error) -> int:
    """One line on stderr, the traceback in ``logs/cli.log``; the error's exit status."""
    import traceback

    text = (str(error) or type(error).__name__).splitlines()[0]
    sys.stderr.write("cc-continuity %s: %s\n" % (verb, text))
    from . import log

    log.write("cli.log", "%s: %s\n%s" % (verb, text, traceback.format_exc()))  # never raises
    return error.exit_code


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def launch_fallthrough_status() -> int:
    try:
        from .install.wrapper import FALLTHROUGH_STATUS

        return FALLTHROUGH_STATUS
    except Exception:
        return 199


if __name__ == "__main__":
    sys.exit(main())
