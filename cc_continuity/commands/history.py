"""``cc-continuity history [--json]``: the rotation chain of this project."""

from .. import session
from ._util import ago, current_project, print_json


def register(sub):
    p = sub.add_parser("history", help="the rotation chain: ratio at trigger, handoff, duration")
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
        })
    return rows


def rotations(rows):
    return [r for r in rows if r["checkpoint"] and r["successor"]]


def run(args):
    proj = current_project()
    rows = chain(proj)
    if args.json:
        print_json({"project": proj.root, "sessions": rows, "rotations": len(rotations(rows))})
        return 0
    print("%s: %d sessions, %d rotations" % (proj.slug, len(rows), len(rotations(rows))))
    for r in rows:
        line = "  %-24s %-22s %s" % (r["name"], r["state"], ago(r["created"]))
        if r["checkpoint"]:
            line += "  %s at %s%% (%s tok), handoff %s chars %s%s" % (
                r["checkpoint"], r["trigger_percent"], r["trigger_tokens"], r["handoff_chars"],
                r["validation"], " DEGRADED" if r["degraded"] else "")
            if r["rotation_ms"] is not None:
                line += ", rotated in %.1fs" % (r["rotation_ms"] / 1000.0)
            if r["driver"]:
                line += " by %s" % r["driver"]
            if r["successor"]:
                line += " -> %03d" % r["successor"]
        elif r["ended"]:
            line += "  ended (%s)" % r["ended"]
        if r["revalidation"]:
            line += "  [resumed %s: %s]" % (r["checkpoint_from"], r["revalidation"].get("verdict"))
        print(line)
    return 0
