"""``cc-continuity watchdog run | status | install | uninstall``: the optional daemon.

``run`` is what the service starts (foreground; SIGTERM stops it).  ``status``
reads the state the daemon saves each cycle: the model server's state and the
fleet of sessions it watches (:mod:`cc_continuity.watch.fleet`: the same rows,
order and table as ``status --all-projects``) -- the ones that need someone
first, then those waiting out a usage limit, rotating, active, waiting -- each
with its class, rotation state, context fill, driver, how long since it moved,
how to reach its pane (and whether a terminal shows it), its last action and
when the next one is allowed.
``install`` / ``uninstall`` manage the launchd agent or systemd user unit.
"""

import argparse
import sys
import time

from .. import config
from ..lock import holder_pid, is_held
from ..watch import Settings, fleet, pid_path, service, state_path
from ..watch.daemon import Daemon, load_state
from ._util import ago, die, print_json


def register(sub):
    p = sub.add_parser("watchdog")
    w = p.add_subparsers(dest="watchdog_cmd", metavar="<action>")
    r = w.add_parser("run", help="run the daemon in the foreground (what the service starts)")
    r.add_argument("--once", action="store_true", help="one cycle, then exit")
    s = w.add_parser("status", help="server state and the sessions it watches, blocked first")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--all", action="store_true", help="include sessions that are done")
    for name, text in (("install", "install and start the launchd agent / systemd user service"),
                       ("uninstall", "stop and remove the service")):
        q = w.add_parser(name, help=text)
        q.add_argument("--dry-run", action="store_true", help="show what would be written and run")
        q.add_argument("--platform", choices=("darwin", "linux"), help=argparse.SUPPRESS)
    p.set_defaults(func=run, _parser=p)


def run(args):
    cmd = getattr(args, "watchdog_cmd", None)
    if cmd == "run":
        return _run(args)
    if cmd == "status":
        return _status(args)
    if cmd in ("install", "uninstall"):
        return _service(cmd, args)
    args._parser.print_help()
    return 2


def _run(args):
    try:
        settings = Settings.load()
    except config.ConfigError as e:
        die(str(e))
    return Daemon(settings, reload=True).run(once=args.once)


def _service(cmd, args):
    try:
        fn = service.install if cmd == "install" else service.uninstall
        fn(platform=args.platform, dry_run=args.dry_run)
    except service.ServiceError as e:
        die(str(e), code=1)
    except OSError as e:
        die("%s: %s" % (getattr(e, "filename", None) or cmd, e.strerror or e), code=1)
    return 0


# -- status ----------------------------------------------------------------------

def collect(now=None):
    """Everything ``status`` shows, as one dict."""
    now = time.time() if now is None else now
    doc = load_state() or {}
    running = is_held(pid_path())
    daemon = dict(doc.get("daemon") or {})
    daemon.update({"running": running, "pid": holder_pid(pid_path()) if running else None,
                   "state_file": state_path(), "state_saved": doc.get("at")})
    daemon["service"] = service.installed_service()
    status = doc.get("status") or {"server": {"state": "UNKNOWN", "probing": None}, "sessions": []}
    return {"daemon": daemon, "server": status.get("server"), "power_cycles": status.get("power_cycles") or [],
            "sessions": fleet.pane_states(status.get("sessions") or []), "at": now}


# A service started this long ago may not have saved its first state yet.
STARTING_S = 30


def _when(ts, now):
    if ts is None:
        return "cap reached"
    if ts <= now + 0.5:
        return "now"
    s = int(ts - now)
    return "in %dm%02ds" % (s // 60, s % 60) if s >= 60 else "in %ds" % s


def _status(args):
    info = collect()
    if not args.all:
        info["sessions"] = [r for r in info["sessions"] if r.get("class") != "done"]
    if args.json:
        print_json(info)
        return 0
    now = info["at"]
    d = info["daemon"]
    w = sys.stdout.write
    if d["running"]:
        w("watchdog: running (pid %s, started %s, %s cycles, every %ss)\n" % (
            d.get("pid"), ago(d.get("started"), now), d.get("cycles", "?"), d.get("interval_s", "?")))
    elif d.get("service"):
        svc = d["service"]
        since = ago(svc["installed_at"], now)
        if not svc.get("manager", True):
            w("watchdog: NOT running: its service is installed (%s) but no %s runs here, so nothing has "
              "started it; run `cc-continuity watchdog run` in a terminal that stays open, or, once one runs:\n"
              % (svc["path"], "systemd user manager" if svc["kind"] == "systemd" else "launchd"))
            for cmd in svc["start"]:
                w("  %s\n" % cmd)
        elif now - svc["installed_at"] < STARTING_S and not d.get("state_saved"):
            w("watchdog: starting (service %s installed %s; it saves its first state within seconds)\n"
              % (svc["path"], since))
        else:
            w("watchdog: NOT running, although the service is installed (%s, written %s%s); start it:\n"
              % (svc["path"], since, ", last state saved %s" % ago(d["state_saved"], now) if d.get("state_saved") else ""))
            for cmd in svc["start"]:
                w("  %s\n" % cmd)
    elif d.get("state_saved"):
        w("watchdog: NOT running (last state saved %s)\n" % ago(d["state_saved"], now))
    else:
        w("watchdog: NOT running (never ran; start it with `cc-continuity watchdog install` or `run`)\n")
    srv = info["server"] or {}
    if srv.get("probing") is False:
        w("model server: not probed (set watchdog_health_url)\n")
    else:
        last = srv.get("last_probe") or {}
        detail = "; ".join("%s %s" % (k, last[k]) for k in ("health", "progress") if last.get(k))
        w("model server: %s since %s%s\n" % (srv.get("state", "UNKNOWN"), ago(srv.get("since"), now),
                                            ("  (last probe %s: %s)" % (ago(last.get("at"), now), detail))
                                            if last else ""))
        for start, end in srv.get("outages") or []:
            w("  outage from %s %s\n" % (_utc(start), "to %s" % _utc(end) if end else "(ongoing)"))
    if not info["sessions"]:
        w("sessions: none to show\n")
        return 0
    def detail(r):
        last = r.get("last_action")
        last_s = "%s %s %s" % (last["kind"], last["outcome"], ago(last["at"], now)) if last else "no action yet"
        nxt = ", ".join("%s %s" % (k, _when(v, now)) for k, v in (r.get("next") or {}).items()) or "-"
        return "last: %s; next: %s" % (last_s, nxt)

    fleet.render(info["sessions"], now, w, detail)
    return 0


def _utc(t):
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)) if t else "-"
