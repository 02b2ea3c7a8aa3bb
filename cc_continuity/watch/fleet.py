"""The fleet view: every live and recent session on this machine, the ones that need someone first.

One owner for each fact a row shows and for how the table is drawn:

* :func:`row` turns one observation (:class:`liveness.SessionObs`) and its class into the
  row's fields; :meth:`actions.Brain.status` uses it and adds its own memory (the last
  action, when the next is allowed);
* :func:`rank` is the order: blocked (a frozen, failed, dead or hung session, a rotation
  waiting for a manual ``/clear`` -- which is also where a failed rotator leaves one --
  or a session that signalled needs-human), then waiting out a usage limit, rotating,
  active, waiting for the user, done;
* :func:`pane_states` asks each tmux server once (bounded, fail-soft) which panes still
  exist and whether any client is attached to their session: a detached one is a session
  whose terminal was closed;
* :func:`render` draws the table for ``watchdog status`` and ``status --all-projects``.

``watchdog status`` shows the rows the daemon saved at its last cycle.
``status --all-projects`` builds them now (:func:`.actions.collect_fleet`), without the daemon: the
open sessions from each project's index of open sessions, plus the ones that ended in the
last :data:`RECENT_S` (at most :data:`RECENT_MAX`, found among the newest records of each
project, so the history is not read), classified by the same :class:`actions.Brain`.
"""

import os
import shlex
import shutil
import subprocess

from .. import session
from ..project import all_projects
from . import ago
from .liveness import ACTIVE, DEAD, DONE, EXIT_HUNG, FAILED, LIMITED, STALLED, WAITING

BLOCKED = (STALLED, FAILED, DEAD, EXIT_HUNG)
ROTATION_STATES = frozenset((session.ROTATION_PENDING, session.HANDOFF_REQUESTED, session.CHECKPOINT_VERIFIED, session.ROTATING))
BLOCKED_STATES = frozenset((session.AWAITING_MANUAL_CLEAR,))
BLOCKED_FLAGS = ("needs_human",)
RECENT_S = 86400.0     # an ended session is "recent" this long
RECENT_MAX = 10        # recent ended sessions shown at most (all projects)
TMUX_TIMEOUT_S = 1.0   # per tmux server asked
MAX_SOCKETS = 16       # tmux servers asked at most


def row(obs, cls):
    """The fields of one fleet row (JSON-ready)."""
    return {"key": obs.key, "name": obs.name, "slug": obs.slug, "class": cls, "state": obs.state,
            "percent": obs.percent, "pane": list(obs.pane) if obs.pane else None, "driver": obs.driver,
            "host": obs.host,
            "last_progress": obs.last_progress, "pid": obs.pid, "error": obs.failed_error,
            "flags": list(obs.flags or ()), "ended_at": obs.ended_at}


def rank(r):
    """Sort order of the fleet view (0 first): blocked, limited, rotating, active, waiting, done."""
    if (r.get("class") in BLOCKED or r.get("state") in BLOCKED_STATES
            or any(f in BLOCKED_FLAGS for f in r.get("flags") or ())):
        return 0
    if r.get("class") == LIMITED:
        return 1
    if r.get("state") in ROTATION_STATES and r.get("class") != DONE:
        return 2
    return {ACTIVE: 3, WAITING: 4}.get(r.get("class"), 5)


def sort_key(r):
    return rank(r), r.get("name") or r.get("key") or ""


# -- tmux: where a pane is and who looks at it -----------------------------------------

def default_socket():
    return os.path.join(os.environ.get("TMUX_TMPDIR") or "/tmp", "tmux-%d" % os.getuid(), "default")


def reach(pane):
    """The command that attaches to a session's pane (tmux finds the session from the pane id), or "-"."""
    if not pane or len(pane) != 2 or not all(isinstance(p, str) for p in pane):
        return "-"
    sock, pane_id = pane
    return ("tmux attach -t %s" % pane_id if sock == default_socket()
            else "tmux -S %s attach -t %s" % (shlex.quote(sock), pane_id))


def _ask_tmux(tmux, sock, timeout):
    """``{pane id: (session name, clients attached)}`` on server ``sock``; {} when no server runs
    there; None when it could not be asked (no tmux, timeout, another error)."""
    try:
        res = subprocess.run([tmux, "-S", sock, "list-panes", "-a", "-F",
                              "#{pane_id}\t#{session_attached}\t#{session_name}"],
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        err = res.stderr.lower()
        gone = any(m in err for m in ("no server running", "error connecting", "no such file",
                                      "server exited unexpectedly", "lost server"))
        return {} if gone else None
    out = {}
    for line in res.stdout.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[1].isdigit():
            out[parts[0]] = (parts[2], int(parts[1]))
    return out


def pane_states(rows, timeout=TMUX_TIMEOUT_S, max_sockets=MAX_SOCKETS):
    """Add ``tmux`` to each row that is not done and has a pane: ``{"session", "attached", "state"}``
    with state ``attached`` / ``detached`` (no client: its terminal was closed) / ``gone`` (the pane
    or its server is no more) / ``unknown`` (tmux did not answer in time).  One tmux call per server."""
    tmux = shutil.which("tmux")
    asked = {}
    for r in rows:
        pane = r.get("pane")
        if r.get("class") == DONE or not pane or len(pane) != 2:
            continue
        sock, pane_id = pane
        if sock not in asked:
            asked[sock] = _ask_tmux(tmux, sock, timeout) if tmux and len(asked) < max_sockets else None
        panes = asked[sock]
        if panes is None:
            r["tmux"] = {"session": None, "attached": None, "state": "unknown"}
        elif pane_id not in panes:
            r["tmux"] = {"session": None, "attached": None, "state": "gone"}
        else:
            name, clients = panes[pane_id]
            r["tmux"] = {"session": name, "attached": clients, "state": "attached" if clients else "detached"}
    return rows


# -- the table ---------------------------------------------------------------------------

def _ago(ts, now):
    return ago(ts, now).replace(" ago", "")


def pane_text(r):
    t = r.get("tmux") or {}
    where = reach(r.get("pane")) if r.get("class") != DONE else "-"
    if t.get("state") in ("detached", "gone"):
        where += " (%s)" % ("detached: no terminal shows it" if t["state"] == "detached" else "pane gone")
    return where


COLUMNS = ("SESSION", "AGENT", "CLASS", "STATE", "CTX", "DRIVER", "MOVED", "PID", "PANE")
MIN_WIDTHS = (24, 6, 9, 22, 5, 7, 9, 8, 0)  # the usual widths; a longer cell widens its whole column


def render(rows, now, write, detail=None):
    """The table, one row per session (``detail(row)``: an optional second line under it)."""
    table = [COLUMNS]
    for r in rows:
        pct = r.get("percent")
        state = r.get("state") or "-"
        if r.get("error"):
            state = "%s (%s)" % (state, r["error"])
        flags = " ".join("[%s]" % f.upper().replace("_", "-") for f in r.get("flags") or ())
        table.append((str(r.get("name")), r.get("host") or "claude", str(r.get("class")), ("%s %s" % (state, flags)).strip(),
                      "%d%%" % round(pct) if isinstance(pct, (int, float)) else "-",
                      r.get("driver") or "-", _ago(r.get("last_progress"), now), str(r.get("pid") or "-"),
                      pane_text(r)))
    widths = [max([m] + [len(row[i]) for row in table]) for i, m in enumerate(MIN_WIDTHS)]

    def line(cells):
        out = []
        for i, (cell, w) in enumerate(zip(cells, widths)):
            last = i == len(cells) - 1
            out.append(cell if last else (cell.rjust(w) + " " if COLUMNS[i] == "CTX" else cell.ljust(w)))
        return "  " + " ".join(out).rstrip() + "\n"

    write(line(table[0]))
    for r, cells in zip(rows, table[1:]):
        write(line(cells))
        extra = detail(r) if detail else None
        if extra:
            write("  %s %s\n" % (" " * widths[0], extra))


# -- status --all-projects: the fleet now, without the daemon ------------------------------

def session_dirs(now, recent_s=RECENT_S, recent_max=RECENT_MAX):
    """``[(project, number, dir)]``: every open session, then up to ``recent_max`` that ended within
    ``recent_s`` (newest first; only the newest ``recent_max`` closed records of a project are looked at)."""
    out, ended = [], []
    for proj in all_projects():
        open_ = proj.open_numbers()
        out.extend((proj, n, proj.session_dir(n)) for n in open_)
        closed = [n for n in proj.numbers() if n not in set(open_)][-recent_max:]
        for n in closed:
            sdir = proj.session_dir(n)
            try:
                mtime = os.stat(session.state_path(sdir)).st_mtime
            except OSError:
                continue
            if now - mtime <= recent_s:
                ended.append((mtime, proj, n, sdir))
    ended.sort(key=lambda e: -e[0])
    return out + [(p, n, d) for _, p, n, d in ended[:recent_max]]
