"""``cc-continuity <verb>``: one module per verb in :mod:`cc_continuity.commands`.

A module becomes a verb by defining ``register(subparsers)`` (which adds its
parser and ``set_defaults(func=run)``) and ``run(args) -> int``.  Verbs are
discovered, so adding one never edits this file.
"""

import argparse
import importlib
import os
import pkgutil
import sys

from . import __version__, commands, errors


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cc-continuity",
        description="Zero-touch session rotation for Claude Code and Codex CLI.",
    )
    parser.add_argument("--version", action="version", version="cc-continuity %s" % __version__)
    sub = parser.add_subparsers(dest="verb", metavar="<command>")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module("%s.%s" % (commands.__name__, info.name))
        except Exception as e:  # one broken verb must not take the others down
            sys.stderr.write("cc-continuity: command %r unavailable: %s\n" % (info.name, e))
            continue
        if hasattr(mod, "register"):
            mod.register(sub)
    return parser


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
            from .commands import launch

            parser = argparse.ArgumentParser(prog="cc-continuity")
            launch.register(parser.add_subparsers())
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
    parser = build_parser()
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
