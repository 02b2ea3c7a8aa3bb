"""``cc-continuity config show [--json]``: the effective config and where each value came from."""

import json

from .. import config
from ._util import current_project, die, print_json

SECRET_KEYS = ("ntfy_token",)  # never printed


def register(sub):
    p = sub.add_parser("config")
    sp = p.add_subparsers(dest="action", metavar="<action>")
    show = sp.add_parser("show", help="print every key, its value and its source")
    show.add_argument("--json", action="store_true")
    p.set_defaults(func=run, action=None, json=False)


def run(args):
    if args.action not in (None, "show"):
        die("unknown config action %r" % args.action)
    proj = current_project()
    try:
        cfg = config.load(proj.root)
    except config.ConfigError as e:
        die(str(e))
    values = {k: ("<set>" if k in SECRET_KEYS and v else v) for k, v in cfg.values.items()}
    if args.json:
        print_json({"project": proj.root, "values": values, "sources": cfg.sources, "warnings": cfg.warnings})
        return 0
    width = max(len(k) for k in cfg.values)
    for key in config.SCHEMA:
        print("%-*s  %-28s  %s" % (width, key, _show(values[key]), cfg.source(key)))
    for w in cfg.warnings:
        print("warning: %s" % w)
    return 0


def _show(v):
    s = json.dumps(v)
    return s if len(s) <= 28 else s[:25] + "..."
