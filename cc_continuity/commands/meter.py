"""``cc-continuity meter <transcript.jsonl>``: tokens, window, ratio, level and source."""

import os

from .. import meter
from ..safefile import NotRegular
from ._util import die, load_config, print_json
from ..project import find_root


def register(sub):
    p = sub.add_parser("meter")
    p.add_argument("transcript", help="path to a Claude Code session .jsonl")
    p.add_argument("--window", type=int, help="context window in tokens (overrides detection)")
    p.add_argument("--model", help="model id, for the window when it is not in the transcript")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args):
    if args.window is not None and args.window <= 0:
        die("--window must be a positive number of tokens")
    cfg = load_config(find_root(os.getcwd()))
    try:
        got = meter.read_transcript(args.transcript)  # (meter.open_transcript: a FIFO is never opened, nothing blocks)
    except FileNotFoundError:
        die("no such transcript: %s" % args.transcript)
    except NotRegular as e:
        die("%s; not a transcript" % e)
    except OSError as e:
        die("cannot read %s: %s" % (args.transcript, e.strerror))
    window, wsrc = meter.resolve_window(args.window or cfg["window"], None, args.model or got["model"])
    if args.window:
        wsrc = "--window"
    r = meter.reading(got["tokens"], window, wsrc, cfg, got["source"])
    r["model"] = args.model or got["model"]
    r["scanned_bytes"] = got.get("scanned")
    if args.json:
        print_json(r)
        return 0
    pct = "unknown" if r["percent"] is None else "%.1f%%" % r["percent"]
    tok = "unknown" if r["tokens"] is None else "{:,}".format(r["tokens"])
    print("tokens  %s" % tok)
    print("window  {:,} ({})".format(r["window"], r["window_source"]))
    print("ratio   %s" % pct)
    print("level   %s" % r["level"])
    print("source  %s (scanned %s bytes from the end)" % (r["source"], "{:,}".format(r["scanned_bytes"] or 0)))
    return 0
