"""``cc-continuity configure``: change settings without editing JSON by hand.

    cc-continuity configure [--window N|auto] [--thresholds W,R,H] [--rotate-tokens N|off]
                            [--ntfy URL|off] [--unattended on|off] [--share-remote NAME|off]
                            [--enable|--disable] [--project]

Writes the global config, or with ``--project`` the user's own settings for
this project, kept in the state dir (``projects/<key>/config.json``) and never
in the repository (see SECURITY.md: a repository's ``.claude/continuity.json``
may only narrow), through :mod:`cc_continuity.config` (validated, atomic).  A bad value is refused with the option named and nothing is written;
all changes of one call land together or not at all.  Prints the effective
values afterwards (or, with no option, right away).
"""

import argparse
import json
import os
import sys
import time
from urllib.parse import urlsplit

from .. import atomic, config, paths
from ._util import current_project

# The keys this verb can change, in the order they are shown, with their option.
SHOWN = (
    ("enabled", "--enable/--disable"),
    ("window", "--window"),
    ("window_source", "--window auto"),
    ("warn", "--thresholds"),
    ("rotate", "--thresholds"),
    ("hard", "--thresholds"),
    ("rotate_tokens", "--rotate-tokens"),
    ("unattended", "--unattended"),
    ("ntfy_url", "--ntfy"),
    ("share_remote", "--share-remote"),
)
OPTION_OF = dict(SHOWN)

_ON = ("on", "true", "yes", "1")
_OFF = ("off", "false", "no", "0")


def register(subparsers):
    p = subparsers.add_parser(
        "configure", description="Change cc-continuity settings globally, or for the current project with --project.")
    p.add_argument("--window", type=parse_window, default=argparse.SUPPRESS, metavar="N|auto",
                   help="context window in tokens (e.g. 200000, 200k, 1m), or auto: ask the model server your "
                        "agent talks to (ANTHROPIC_BASE_URL from your shell or user settings) and keep its "
                        "answer; with Anthropic's own API, detect it from the model id")
    p.add_argument("--thresholds", type=parse_thresholds, default=argparse.SUPPRESS, metavar="W,R,H",
                   help="warn, rotate and hard-ceiling percentages, e.g. 55,62,72")
    p.add_argument("--rotate-tokens", type=parse_tokens_or_off, default=argparse.SUPPRESS, metavar="N|off",
                   help="also rotate past this many tokens (e.g. 300k), or off")
    p.add_argument("--ntfy", type=parse_url_or_off, default=argparse.SUPPRESS, metavar="URL|off", help="ntfy topic URL for pushes, or off")
    p.add_argument("--unattended", type=parse_on_off, default=argparse.SUPPRESS, metavar="on|off",
                   help="start claude with --dangerously-skip-permissions for the whole rotation chain")
    p.add_argument("--share-remote", type=parse_remote_or_off, default=argparse.SUPPRESS, metavar="NAME|off",
                   help="publish every verified checkpoint to this git remote of the repository, or off "
                        "(your config only: a repository's file cannot set it)")
    p.add_argument("--mcp-server", type=parse_on_off, default=argparse.SUPPRESS, metavar="on|off",
                   help="the plugin from a marketplace: build the MCP server's SDK (about 45 MB, from your "
                        "package index) at the next session, so its cc-continuity server starts; off: the "
                        "server stays off (your config only)")
    p.add_argument("--project", action="store_true", help="change your settings for this project (kept in the state dir, never in the repository)")
    onoff = p.add_mutually_exclusive_group()
    onoff.add_argument("--enable", dest="enabled", action="store_const", const=True, help="turn rotation on")
    onoff.add_argument("--disable", dest="enabled", action="store_const", const=False, help="turn rotation off")
    p.set_defaults(func=run)


# -- value parsers (argparse names the option in their errors) ----------------

def parse_tokens(text):
    """``200000``, ``200k``, ``1m``, ``1.5M`` → an int."""
    s = text.strip().lower().replace("_", "").replace(",", "")
    scale = 1
    if s.endswith("k"):
        s, scale = s[:-1], 1000
    elif s.endswith("m"):
        s, scale = s[:-1], 1000000
    try:
        value = float(s) * scale
    except ValueError:
        raise argparse.ArgumentTypeError("expected a token count like 200000, 200k or 1m, got %r" % text) from None
    if value != value or value in (float("inf"), float("-inf")) or value <= 0 or value != int(value):
        raise argparse.ArgumentTypeError("expected a positive whole number of tokens, got %r" % text)
    return int(value)


def parse_window(text):
    return None if text.strip().lower() == "auto" else parse_tokens(text)


def parse_tokens_or_off(text):
    return None if text.strip().lower() == "off" else parse_tokens(text)


def parse_thresholds(text):
    parts = [p.strip().rstrip("%") for p in text.split(",")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("expected three percentages warn,rotate,hard like 55,62,72, got %r" % text)
    values = []
    for p in parts:
        try:
            v = float(p)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number (expected warn,rotate,hard like 55,62,72)" % p) from None
        if not 0 < v <= 100:
            raise argparse.ArgumentTypeError("%s is not a percentage above 0 and at most 100" % p)
        values.append(int(v) if v == int(v) else v)
    if not values[0] <= values[1] <= values[2]:
        raise argparse.ArgumentTypeError("need warn <= rotate <= hard, got %s" % text)
    return tuple(values)


def parse_url_or_off(text):
    if text.strip().lower() == "off":
        return None
    if not (text.startswith("https://") or text.startswith("http://")) or len(text.split("//", 1)[1]) < 1:
        raise argparse.ArgumentTypeError("expected an http(s) URL like https://ntfy.sh/my-topic, or off; got %r" % text)
    return text


def parse_remote_or_off(text):
    """A git remote name (or URL) for ``share_remote``; ``off`` -> None.  Never one git would read as an option."""
    t = text.strip()
    if t.lower() == "off":
        return None
    if not t or t != text or t.startswith("-") or any(c.isspace() or ord(c) < 32 for c in t):
        raise argparse.ArgumentTypeError("expected a git remote name like origin, or off; got %r" % text)
    return t


def parse_on_off(text):
    t = text.strip().lower()
    if t in _ON:
        return True
    if t in _OFF:
        return False
    raise argparse.ArgumentTypeError("expected on or off, got %r" % text)


# -- the verb ------------------------------------------------------------------

# Options not given are absent from ``args`` (default=SUPPRESS), so "auto" and
# "off" (which parse to None) stay distinguishable from "not given".
_KEYS = {"window": "window", "rotate_tokens": "rotate_tokens", "ntfy": "ntfy_url", "unattended": "unattended",
         "share_remote": "share_remote", "mcp_server": "mcp_server"}


def changes_from(args):
    """The config changes ``args`` asks for (only the options given)."""
    changes = {key: getattr(args, dest) for dest, key in _KEYS.items() if hasattr(args, dest)}
    if hasattr(args, "thresholds"):
        changes["warn"], changes["rotate"], changes["hard"] = args.thresholds
    if args.enabled is not None:
        changes["enabled"] = args.enabled
    return changes


def run(args):
    root = current_project().root
    target = config.user_project_file(root) if args.project else paths.config_file()
    changes = changes_from(args)
    if "window" in changes and changes["window"] is None:  # --window auto
        asked = window_from_server(os.environ)
        if asked is None:
            return 1  # (said why; nothing written)
        changes["window"], changes["window_source"] = asked
    elif "window" in changes and _loads(root).get("window_source") is not None:
        changes["window_source"] = None  # a number given by hand: no server said it
    if changes:
        before = _read_bytes(target)
        try:
            if args.project:
                config.update_project(root, changes)
            else:
                config.update_global(changes)
            config.load(root)  # the file alone may be valid but clash with the other layer
        except config.ConfigError as e:
            if _read_bytes(target) != before:
                _restore(target, before)
            option = OPTION_OF.get(e.key, e.key or "config")
            sys.stderr.write("cc-continuity configure: %s: %s (%s); nothing was written\n" % (option, e.msg, e.file))
            return 2
        print("updated %s" % target)
    try:
        cfg = config.load(root)
    except config.ConfigError as e:
        sys.stderr.write("cc-continuity configure: the effective config is invalid: %s\n" % e)
        return 2
    for key, _option in SHOWN:
        mark = "*" if key in changes else " "
        print("%s %-13s %-28s %s" % (mark, key, json.dumps(cfg[key]), _source(cfg.source(key))))
    for path, key, _message in cfg.ignored:
        # Older versions wrote `configure --project` values into the repository file; say how
        # to keep one (we cannot tell the user's own old value from one a repository ships).
        option = OPTION_OF.get(key)
        how = "run `cc-continuity configure --project %s ...`" % option if option else \
            "set it in %s" % config.user_project_file(root)
        sys.stderr.write("cc-continuity configure: %s sets %r, which only your own config may set: ignored. "
                         "If you put it there yourself (older versions of `configure --project` did), %s "
                         "and delete it from that file.\n" % (path, key, how))
    return 0


def _loads(root):
    try:
        return config.load(root)
    except config.ConfigError:
        return {}


def window_from_server(env):
    """``(window, source)`` for ``--window auto``: the model servers' answer (said on stdout; the smallest when
    the hosts' servers differ: rotating early never overflows), ``(None, None)`` when no host has a server of
    the user's own (the window is detected from the model id), or None when a server gave no answer (said why
    on stderr; nothing is written)."""
    from ..hosts import servers  # (--window auto only)

    found = servers.configured(env)
    if not found:
        print("--window auto: no model server of your own is set (ANTHROPIC_BASE_URL, a Codex provider's "
              "base_url, GOOGLE_GEMINI_BASE_URL): the window is detected from the model id")
        return None, None
    try:
        from ..serverwindow import ask, shapes  # (requests: --window auto only)
    except ImportError as e:  # a Python without our packages (a plugin's, before its environment is built)
        sys.stderr.write("cc-continuity configure: --window auto needs requests, which this Python (%s) does not "
                         "have (%s). Nothing was written; run it with the installed cc-continuity, or set the "
                         "window by hand: cc-continuity configure --window N\n" % (sys.executable, e))
        return None
    answers = []
    for server in found:
        asked = ask.ask(server["url"], server["model"], server["credential"])
        for line in asked.tried:
            print("  %s: asked %s" % (server["host"], line))
        got = asked.answer
        if got is None or got.tokens is None:
            why = got.note if got is not None else asked.why or "no endpoint answered in a shape it documents"
            sys.stderr.write("cc-continuity configure: --window auto: %s's server %s (%s, model %s): %s. Nothing "
                             "was written; set the window by hand: cc-continuity configure --window N\n" % (
                                 server["host"], ask.root_of(server["url"]), server["where"],
                                 server["model"] or "not set", why))
            return None
        print("--window auto: %s's server (%s) says %d tokens for %s%s" % (
            server["host"], got.server, got.tokens, server["model"] or "its model",
            "" if got.kind == shapes.EXACT else " (its ceiling)"))
        answers.append((got.tokens, _server_source(got, server["url"], ask, shapes)))
    return min(answers)


def _server_source(got, url, ask, shapes):
    source = "%s %s at %s, %s" % (got.server, got.where, urlsplit(ask.root_of(url)).netloc, time.strftime("%Y-%m-%d"))
    if got.kind == shapes.CEILING:
        return source + " (a ceiling: %s)" % got.note
    return source + (" (%s)" % got.note if got.note else "")


def _read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _restore(path, data):
    """Put back what was there before this call (or nothing)."""
    if data is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    else:
        atomic.write_bytes(path, data)


def _source(src):
    return "(default)" if src == "default" else "(%s)" % src
