"""``cc-continuity status [--json] [--all | --all-projects]``: this project's sessions, ratio, level
and state; ``--all-projects``: the fleet view of every live and recent session on this machine
(:mod:`cc_continuity.watch.fleet`, the same view as ``watchdog status``)."""


import sys
import time

from ..rotation import context
from ..share import fleet as share_fleet, transport
from .. import session
from ._util import host_of, ago, count, current_project, load_config, print_json
from ..procs import pid_alive
from ..watch import fleet


def register(sub):
    p = sub.add_parser("status")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true",
                       help="every session of this project, history included (ended and rotated ones)")
    which.add_argument("--all-projects", action="store_true",
                       help="every live and recent session on this machine, across projects, blocked first")
    which.add_argument("--remote", metavar="REMOTE",
                       help="the checkpoints published to this git remote and who claimed them, unclaimed first")
    p.set_defaults(func=run)


def describe(proj, cfg, n):
    sdir = proj.session_dir(n)
    try:
        rec = session.load(sdir)
    except (OSError, ValueError) as e:
        return {"number": n, "name": proj.session_name(n), "state": "UNREADABLE", "error": str(e)}
    reading = None
    if rec["state"] not in session.TERMINAL and rec.get("transcript"):
        reading = context.session_reading(sdir, rec, cfg, host_of(rec))
    if reading is None or reading["tokens"] is None:
        reading = rec.get("last_reading") or reading
    return {
        "number": n,
        "name": rec.get("name"),
        "session_id": rec.get("session_id"),
        "state": rec["state"],
        "alive": pid_alive(rec.get("pid")),
        "pid": rec.get("pid"),
        "tmux_pane": rec.get("tmux_pane"),
        "tmux_socket": rec.get("tmux_socket"),
        "percent": reading.get("percent") if reading else None,
        "tokens": reading.get("tokens") if reading else None,
        "window": reading.get("window") if reading else None,
        "level": reading.get("level") if reading else None,
        "flags": rec.get("flags") or {},
        "driver": rec.get("driver"),  # who hands over (mod, tmux, manual), once a checkpoint is verified
        "predecessor": rec.get("predecessor"),
        "successor": rec.get("successor"),
        "updated": rec.get("updated"),
        "ended": (rec.get("ended") or {}).get("reason") if isinstance(rec.get("ended"), dict) else None,
        "revalidation": rec.get("revalidation"),  # how the checkpoint it resumed compared with the world at claim
        "recovery": rec.get("recovery"),  # it took over a session that crashed before any checkpoint
        "bootstrap_undelivered": (rec.get("bootstrap") or {}).get("checkpoint")  # a claim not yet in the transcript
        if isinstance(rec.get("bootstrap"), dict) and not rec["bootstrap"].get("delivered_at") else None,
        "resume_command": _resume_command(rec),
    }


def _resume_command(rec):
    """How to reopen this session's whole conversation, for one whose process is gone."""
    sid = rec.get("session_id")
    if not sid or rec["state"] == session.ROTATED or pid_alive(rec.get("pid")):
        return None
    return "claude --resume %s" % sid


def _panes(rows):
    """Add ``pane`` and ``tmux`` (attached, detached, gone: :func:`fleet.pane_states`) to the open rows."""
    open_rows = []
    for r in rows:
        if r["state"] not in session.TERMINAL and r.get("alive") and r.get("tmux_socket") and r.get("tmux_pane"):
            r["pane"] = [r["tmux_socket"], r["tmux_pane"]]
            open_rows.append(r)
    fleet.pane_states(open_rows)


def run(args):
    if args.all_projects:
        return run_fleet(args)
    proj = current_project()
    if args.remote:
        return run_remote(proj, args)
    cfg = load_config(proj.root)
    if args.all:
        rows = [describe(proj, cfg, n) for n in proj.numbers()]
    else:  # the open sessions (an index: the history is not read), else the newest one
        rows = [r for r in (describe(proj, cfg, n) for n in proj.open_numbers())
                if r["state"] not in session.TERMINAL]
        newest = proj.newest_number()
        if not rows and newest:
            rows = [describe(proj, cfg, newest)]
    _panes(rows)
    if args.json:
        print_json({"project": proj.root, "slug": proj.slug, "enabled": cfg["enabled"], "sessions": rows,
                    "share": _share(proj)})
        return 0
    print("%s  (%s)  rotation %s" % (proj.slug, proj.root, "on" if cfg["enabled"] else "OFF"))
    sh = _share(proj)
    if sh or cfg["share_remote"]:
        print("  " + _share_line(sh, cfg["share_remote"]))
    if args.all and rows:
        done = sum(r["state"] in session.TERMINAL for r in rows)
        print("  all %s: %d open, %d ended or rotated" % (count(len(rows), "session"), len(rows) - done, done))
    if not rows:
        print("  no sessions recorded yet")
    for r in rows:
        pct = "-" if r.get("percent") is None else "%.0f%%" % r["percent"]
        flags = " ".join("[%s]" % f.upper().replace("_", "-") for f in r.get("flags") or {})
        if r.get("driver") and r["state"] not in (session.ACTIVE, session.WARNED):
            flags = ("driver %s %s" % (r["driver"], flags)).strip()
        if r["state"] == session.ROTATED:
            life = "-> %s" % proj.session_name(r["successor"]) if r.get("successor") else "rotated"
        elif r["state"] == session.ENDED:
            life = "ended (%s)" % (r.get("ended") or "?")
        else:   # a finished record's pid may well be alive: the same Claude process after /clear
            life = "alive" if r.get("alive") else "gone "
            t = r.get("tmux") or {}
            if r.get("alive") and t.get("state") == "detached":
                life += " detached (no terminal shows it: %s)" % fleet.reach(r["pane"])
        print("  %-24s %-22s %5s %-6s %s %s %s" % (
            r.get("name"), r["state"], pct, r.get("level") or "-", life, ago(r.get("updated")), flags))
        if r.get("bootstrap_undelivered"):
            print("    claimed %s; its bootstrap has not reached the model yet: the next prompt (or turn end) adds it"
                  % r["bootstrap_undelivered"])
        rv = r.get("revalidation")
        if rv:
            print("    resumed %s: %s (%s)" % (rv.get("checkpoint"), rv.get("verdict"), rv.get("reason")))
        rc = r.get("recovery")
        if rc:
            print("    took over %s after a crash (machine handoff, degraded); its whole conversation: %s" % (
                rc.get("from"), rc.get("resume")))
        if r.get("resume_command") and r["state"] != session.ENDED:
            print("    its process is gone; its whole conversation: %s" % r["resume_command"])
    return 0


def _share(proj):
    got = share_fleet.latest_status(proj)
    return dict(got[1], checkpoint=got[0]) if got else None


def _share_line(sh, remote):
    """The newest checkpoint's publishing, in one line."""
    if not sh:
        return "sharing to %s: no checkpoint published yet" % remote
    where = "%s to %s" % (sh["checkpoint"], sh.get("remote"))
    state = sh.get("state")
    if state == "published":
        return "shared %s: published %s%s" % (where, ago(sh.get("published_at")),
                                               ", claimed here by its own successor" if sh.get("local_claim") else "")
    if state == "retrying":
        return "sharing %s: try %d failed (%s); next try %s" % (where, sh.get("tries", 0), sh.get("error"),
                                                               time.strftime("%H:%M:%S",
                                                                             time.localtime(sh.get("next_try_at") or 0)))
    if state == "failed":
        return "sharing %s FAILED after %d tries: %s (retry: cc-continuity share %s)" % (
            where, sh.get("tries", 0), sh.get("error"), sh["checkpoint"])
    return "sharing %s: %s" % (where, state)


def run_remote(proj, args):
    """``status --remote``: what the remote holds (one ls-remote and one fetch)."""
    now = time.time()
    rows = share_fleet.fleet(proj.root, args.remote, now)
    if args.json:
        print_json({"remote": args.remote, "at": now, "checkpoints": rows})
        return 0
    unclaimed = sum(1 for r in rows if r["class"] != "claimed")
    print("%s: %d published checkpoint(s), %d unclaimed or with a stale lease" % (args.remote, len(rows), unclaimed))
    for r in rows:
        h = r.get("holder") or {}
        who = "-" if not h else "%s; lease renewed %s" % (transport.describe(h), ago(transport.lease_time(h)))
        print("  %-11s %s/%-8s machine %s %s  %s%s" % (
            r["class"], r["key"], r["cid"], r["machine"], ago(r.get("published_at")), who,
            "  forks: %s" % ", ".join(r["forks"]) if r["forks"] else ""))
    if rows and any(r["class"] != "claimed" for r in rows):
        print("  claim one: cc-continuity claim --from %s <key>/cp-NNN" % args.remote)
    return 0


def run_fleet(args):
    """The fleet view: open sessions of every project, then those ended in the last day."""
    # lazy: the fleet's planner (liveness: psutil; the Brain) +~40 ms, `--all-projects` only
    from ..watch import planner

    now = time.time()
    rows = planner.collect_fleet(now)
    done = sum(1 for r in rows if r.get("class") == "done")
    if args.json:
        print_json({"at": now, "recent_s": fleet.RECENT_S, "recent_max": fleet.RECENT_MAX, "sessions": rows})
        return 0
    blocked = sum(1 for r in rows if fleet.rank(r) == 0)
    print("sessions on this machine: %d open%s, %d ended in the last %dh" % (
        len(rows) - done, " (%d blocked)" % blocked if blocked else "", done, fleet.RECENT_S // 3600))
    if rows:
        fleet.render(rows, now, sys.stdout.write)
    return 0
