"""``cc-continuity history [--json]``: the rotation chain of this project.

Each session's context curve is drawn as a sparkline (one block per reading, or the
highest of a few when there are many; the same 0-100 % scale on every line), from the
readings its ledger holds (PostToolUse and Stop), with ``↻`` where its checkpoint was
taken: the rotation point.  A chain of rotations reads at a glance, one line per session.
"""

import json
import os

from ..rotation import recall
from .. import session
from ._util import ago, count, current_project, print_json

BLOCKS = "▁▂▃▄▅▆▇█"
ROTATION_MARK = "↻"
CURVE_WIDTH = 32          # characters of a sparkline at most
LEDGER_TAIL = 1 << 20     # bytes of a ledger read for its curve (the newest readings)


def register(sub):
    p = sub.add_parser("history")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def chain(proj):
    rows = []
    for n in proj.numbers():
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        cp = rec.get("checkpoint") or {}
        rows.append({
            "number": n,
            "name": rec.get("name"),
            "state": rec.get("state"),
            "created": rec.get("created"),
            "predecessor": rec.get("predecessor"),
            "successor": rec.get("successor"),
            "checkpoint": cp.get("id"),
            "trigger_percent": cp.get("percent"),
            "trigger_tokens": cp.get("tokens"),
            "handoff_chars": cp.get("handoff_chars"),
            "validation": cp.get("validation"),
            "degraded": cp.get("degraded"),
            "rotation_ms": cp.get("rotation_ms"),
            "driver": rec.get("driver") if cp.get("id") else None,
            "ended": (rec.get("ended") or {}).get("reason"),
            "checkpoint_from": rec.get("checkpoint_from"),
            "revalidation": rec.get("revalidation"),  # the claim's verdict on the checkpoint this one resumed
            "recovered_from": rec.get("recovered_from"),  # a session that crashed before any checkpoint
            "bootstrap": bootstrap_state(rec),
            "recall": machine_recall(proj.session_dir(n), cp.get("id")) if rec.get("successor") else None,
        })
        rows[-1].update(curve(proj.session_dir(n)))
    return rows


def machine_recall(sdir, cid):
    """The share of the machine facts (prompts, todos, changed files, last failing command) in the successor's
    first context: ``{"present", "facts", "percent"}`` or None (no checkpoint, or no prepared bootstrap)."""
    got = recall.of_checkpoint(sdir, cid) if cid else None
    return None if got is None else {k: got[k] for k in ("present", "facts", "percent")}


def bootstrap_state(rec):
    """The claimed checkpoint's bootstrap: "delivered", "not delivered yet", or None (no claim, or from before
    delivery was recorded)."""
    b = rec.get("bootstrap")
    if not isinstance(b, dict):
        return None
    return "delivered" if b.get("delivered_at") else "not delivered yet"


def readings(sdir, tail=LEDGER_TAIL):
    """``([percent, ...], index of the first reading after the checkpoint or None)`` in ledger order."""
    path = session.ledger_path(sdir)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - tail))
            data = f.read(tail)
    except OSError:
        return [], None
    lines = data.split(b"\n")
    if size > tail:
        lines = lines[1:]   # cut mid-line
    values, mark = [], None
    for line in lines:
        if b'"percent"' not in line and b'"checkpoint"' not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("ev") == "checkpoint" and mark is None:
            mark = len(values)
        elif rec.get("ev") in ("tool", "stop"):
            pct = rec.get("percent")
            if isinstance(pct, (int, float)) and not isinstance(pct, bool):
                values.append(float(pct))
    return values, mark


def resample(values, mark, width=CURVE_WIDTH):
    """At most ``width`` points (the highest of each run), and where ``mark`` lands among them."""
    if len(values) <= width:
        return list(values), mark
    out, at = [], None
    for i in range(width):
        lo, hi = len(values) * i // width, len(values) * (i + 1) // width
        out.append(max(values[lo:hi]))
        if mark is not None and at is None and mark < hi:
            at = i if mark <= lo else i + 1
    return out, (width if mark is not None and at is None else at)


def sparkline(points, mark=None):
    """Unicode blocks on a fixed 0-100 % scale, ``↻`` inserted before point ``mark``."""
    chars = [BLOCKS[max(0, min(len(BLOCKS) - 1, int(p * len(BLOCKS) / 100.0)))] for p in points]
    if mark is not None:
        chars.insert(min(mark, len(chars)), ROTATION_MARK)
    return "".join(chars)


def curve(sdir):
    values, mark = readings(sdir)
    points, at = resample(values, mark)
    return {"curve": [round(p, 1) for p in points], "curve_rotation_at": at, "readings": len(values),
            "peak_percent": max(values) if values else None}


def rotations(rows):
    return [r for r in rows if r["checkpoint"] and r["successor"]]


def run(args):
    proj = current_project()
    rows = chain(proj)
    if args.json:
        print_json({"project": proj.root, "sessions": rows, "rotations": len(rotations(rows))})
        return 0
    print("%s: %s, %s" % (proj.slug, count(len(rows), "session"), count(len(rotations(rows)), "rotation")))
    for r in rows:
        line = "  %-24s %-22s %s" % (r["name"], r["state"], ago(r["created"]))
        if r["checkpoint"]:
            line += "  %s at %s%% (%s tok), handoff %s chars %s" % (
                r["checkpoint"], r["trigger_percent"], r["trigger_tokens"], r["handoff_chars"],
                "DEGRADED (machine handoff)" if r["degraded"] else (r["validation"] or "?"))
            succ = next((x for x in rows if x["number"] == r["successor"]), None) if r["successor"] else None
            if succ and succ["bootstrap"] == "not delivered yet":
                line += ", claimed; its bootstrap not delivered yet (the successor's next prompt adds it)"
            elif r["rotation_ms"] is not None:
                line += ", rotated in %.1fs" % (r["rotation_ms"] / 1000.0)
            if r["driver"]:
                line += " by %s" % r["driver"]
            if r["recall"] and r["recall"]["facts"]:
                line += ", machine facts %d/%d" % (r["recall"]["present"], r["recall"]["facts"])
            if r["successor"]:
                line += " -> %03d" % r["successor"]
        elif r["ended"]:
            line += "  ended (%s)" % r["ended"]
        if r["revalidation"]:
            line += "  [resumed %s: %s]" % (r["checkpoint_from"], r["revalidation"].get("verdict"))
        print(line)
        if r["curve"] or r["curve_rotation_at"] is not None:
            print("  %-24s %s  peak %.0f%%" % ("", sparkline(r["curve"], r["curve_rotation_at"]),
                                               r["peak_percent"] or 0))
    return 0
