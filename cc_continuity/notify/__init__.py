"""Opt-in phone pushes through an ntfy-compatible server.

A hook must never wait on the network, so :func:`emit` only writes the message
to the spool (``$CC_CONTINUITY_HOME/spool``) and starts a detached flusher
process.  The flusher POSTs with a short timeout, keeps a failed message for a
bounded number of retries with exponential backoff, and never raises.

A push is short by construction: an event label, the session name, the
context ratio, a one-line reason and the hostname, every piece passed through
:func:`redact.redact`.  Callers pass a *reason* ("tests green, PR opened"),
never a prompt, file contents or command output; only the first line of the
reason is used, and the body is capped at 200 characters.

``requests`` is imported only inside the delivery function (flusher side).
"""

import base64
import json
import os
import subprocess
import sys
import time
from urllib.parse import urlsplit

from .. import atomic, config, deps, fastjson, log, paths
from ..lock import Lock, LockTimeout

BODY_MAX = 200
TITLE_MAX = 120
TIMEOUT = 5.0            # seconds for connect + read of one POST
BACKOFF_BASE = 10.0      # first retry after 10 s, then doubling ...
BACKOFF_CAP = 600.0      # ... up to 10 min between tries
MAX_ATTEMPTS = 8         # ~20 min of trying, then the message is dropped
MAX_AGE = 2 * 3600.0     # a push older than this is stale: dropped unsent
LOG = "notify.log"

# event: (label, ntfy priority 1..5, tag shown as an emoji by ntfy clients).
# Callers may spell names with "_" ("rotation_pending"); "-" is canonical.
EVENTS = {
    "session-started": ("session started", 2, "arrow_forward"),
    "context-warning": ("context warning", 3, "warning"),
    "rotation-pending": ("rotation pending", 3, "hourglass"),
    "checkpoint-verified": ("handoff written and verified", 2, "memo"),
    "rotation-complete": ("rotation complete", 3, "repeat"),
    "successor-resumed": ("successor resumed", 2, "arrow_forward"),
    "blocked": ("BLOCKED, needs you", 5, "rotating_light"),
    "done": ("task done", 4, "white_check_mark"),
    "lifecycle-failed": ("lifecycle step failed", 5, "x"),
    "session-ended": ("session ended", 2, "checkered_flag"),
    "server-down": ("model server down", 5, "red_circle"),
    "server-up": ("model server up", 3, "green_circle"),
    "server-degraded": ("model server degraded", 4, "yellow_circle"),
    "server-window": ("model server window changed", 4, "straight_ruler"),
    "server-power-cycle": ("model server power-cycled", 4, "electric_plug"),
    "session-escalated": ("session frozen, escalated", 5, "rotating_light"),
    "session-stalled": ("session stalled", 4, "hourglass_flowing_sand"),
    "session-dead": ("session dead", 5, "skull"),
    "session-nudged": ("session nudged", 3, "point_right"),
    "session-killed": ("session killed", 4, "dagger"),
    "session-failed": ("turn failed on an API error", 4, "warning"),
    "session-limited": ("usage limit", 3, "hourglass"),
    "session-stuck": ("rotation stuck", 5, "rotating_light"),
    "checkpoint-unclaimed": ("published checkpoint unclaimed", 4, "package"),
    "test": ("test notification", 3, "bell"),
}
URGENT = 5


# --- message ----------------------------------------------------------------

def _event(event):
    name = str(event).strip().lower().replace("_", "-")
    if name not in EVENTS:
        raise ValueError("unknown notification event %r (known: %s)" % (event, ", ".join(EVENTS)))
    return name


def hostname():
    return os.uname().nodename.split(".")[0] or "localhost"


def _one_line(text):
    """The first non-empty line, whitespace collapsed: a reason, not a document."""
    for line in str(text or "").splitlines():
        line = " ".join("".join(c if c.isprintable() else " " for c in line).split())
        if line:
            return line
    return ""


def _clip(text, n):
    if len(text) <= n:
        return text
    return text[:n - 1].rstrip() + "…" if n > 0 else ""


def session_name(slug, session=None):
    """``demo-003`` (or just the slug when there is no session number)."""
    slug = _one_line(slug) or "-"
    if session is None or session == "":
        return slug
    try:
        return "%s-%03d" % (slug, int(session))
    except (TypeError, ValueError):
        return "%s-%s" % (slug, _one_line(session))


def format_message(event, *, slug=None, session=None, ratio=None, text="", host=None, agent=None):
    """``{"event", "title", "body", "priority", "tags"}`` for one push.

    ``ratio`` is the context fill as a fraction (0.63 -> "ctx 63%"); a value above
    1.5 is taken as a percentage already (no window is 150% full).  ``text`` is
    a short reason or summary; only its first line is used.  ``agent`` names the agent CLI the session runs
    in (Codex CLI, Gemini CLI; Claude Code's pushes name none).  Everything is
    redacted before it is cut to size, so a cut can never expose half a secret.
    """
    # lazy: compiling its rules costs ~20 ms, and the hooks (the mod's per-turn calls) import this
    # module to push even when pushes are off
    from ..redact import redact

    name = _event(event)
    label, priority, tag = EVENTS[name]
    who = session_name(slug, session) if slug or session is not None else ""
    title = " · ".join(p for p in ("cc-continuity", who, label) if p)
    facts = [who] if who else []
    if ratio is not None:
        ratio = float(ratio)
        facts.append("ctx %d%%" % round(ratio if ratio > 1.5 else ratio * 100))
    if agent:
        facts.append(_one_line(agent))
    facts.append(_one_line(host) or hostname())
    tail = redact(" · ".join(facts))
    reason = redact(_one_line(text))
    if reason:
        room = BODY_MAX - len(tail) - 1
        reason = _clip(reason, room) if room >= 16 else _clip(reason, BODY_MAX)
        body = reason + "\n" + tail if room >= 16 else reason
    else:
        body = tail
    return {
        "event": name,
        "title": _clip(redact(title), TITLE_MAX),
        "body": _clip(body, BODY_MAX),
        "priority": priority,
        "tags": [tag],
    }


# --- settings -----------------------------------------------------------------

def settings(project_root=None):
    """``(url, token, events)`` from the effective config, or None when pushes are off."""
    try:
        cfg = config.load(project_root)
    except (config.ConfigError, OSError) as e:
        log.write(LOG, "config unreadable, push skipped: %s" % type(e).__name__)
        return None
    url = cfg.get("ntfy_url")
    if not url:
        return None
    return url, cfg.get("ntfy_token"), cfg.get("notify_events") or ["all"]


def wanted(event, events):
    """Is ``event`` selected by ``notify_events`` (names, "all", or "urgent")?"""
    chosen = {str(e).strip().lower().replace("_", "-") for e in events}
    return "all" in chosen or event in chosen or ("urgent" in chosen and EVENTS[event][1] >= URGENT)


# --- emit (caller side: no network, returns in milliseconds) ------------------

def emit(event, *, slug=None, session=None, ratio=None, text="", host=None, project_root=None, agent=None):
    """Queue one push and start a detached flusher; True when queued.

    Does nothing (False) when no ntfy URL is configured or the event is not
    selected.  Never touches the network and never raises for an I/O problem.
    ``text`` must be a short reason -- never a prompt, file contents or output.
    """
    name = _event(event)
    conf = settings(project_root)
    if conf is None:
        return False
    url, token, events = conf
    if not wanted(name, events):
        return False
    msg = format_message(name, slug=slug, session=session, ratio=ratio, text=text, host=host, agent=agent)
    try:
        spool(msg, url, token)
    except OSError as e:
        log.write(LOG, "spool write failed, push lost event=%s: %s" % (name, type(e).__name__))
        return False
    try:
        spawn_flusher()
    except OSError as e:  # stays spooled: the next flusher delivers it
        log.write(LOG, "flusher not started event=%s: %s" % (name, type(e).__name__))
    return True


def spool(msg, url, token=None, now=None):
    """Write ``msg`` as a new spool file (0600, atomic); return its path.

    The file name starts with the creation time in nanoseconds, so a sorted
    listing is oldest first.  The token rides along (same 0600 as config.json)
    so a later config change cannot strand queued pushes.
    """
    now = time.time() if now is None else now
    paths.ensure_dir(paths.home())
    d = paths.ensure_dir(paths.spool_dir())
    name = "%020d-%d-%s.json" % (int(now * 1e9), os.getpid(), os.urandom(3).hex())
    record = dict(msg, url=url, token=token or None, created=now, attempts=0, next_at=now)
    path = os.path.join(d, name)
    atomic.write_text(path, fastjson.dumps(record), mode=paths.FILE_MODE, fsync=False)
    return path


def spawn_flusher():
    """``python -m cc_continuity.notify`` (``notify/__main__.py``: :func:`main`) in its own session, stdio on /dev/null; the Popen."""
    env = deps.child_env()  # requests where the app copy or a plugin's built packages have it (else urllib)
    return subprocess.Popen(
        [sys.executable, "-m", "cc_continuity.notify"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd="/", env=env, start_new_session=True, close_fds=True,
    )


# --- delivery (flusher side) --------------------------------------------------

def _header(value):
    """HTTP headers are latin-1 on the wire; ntfy decodes RFC 2047 words for the rest."""
    if value.isascii():
        return value
    return "=?utf-8?b?%s?=" % base64.b64encode(value.encode("utf-8")).decode("ascii")


def _server(url):
    """Host (and port) of ``url`` for logs: never the topic path, user or token."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        if not parts or not parts.hostname:
            return "?"
        return parts.hostname + (":%d" % parts.port if parts.port else "")
    except ValueError:  # a malformed port
        return "?"


def post(msg, timeout=TIMEOUT):
    """One POST of ``msg``: ``(outcome, detail, retry_after)``.

    outcome is "sent", "retry" (no connection, timeout, 429, 5xx) or "drop"
    (any other answer: a 4xx or a redirect will not get better by waiting).
    ``detail`` names the failure without the URL, token or message text.
    """
    headers = {
        "Title": _header(msg["title"]),
        "Priority": str(int(msg.get("priority", 3))),
        "Tags": _header(",".join(msg.get("tags") or [])),
        "Content-Type": "text/plain; charset=utf-8",
    }
    if msg.get("token"):
        headers["Authorization"] = "Bearer " + msg["token"]
    try:
        import requests  # optional (certifi's certificates): flusher side only, emit must not import it
    except ImportError:
        return _post_urllib(msg, headers, timeout)
    connect = min(2.0, timeout / 2.0)
    try:
        r = requests.post(msg["url"], data=msg["body"].encode("utf-8"), headers=headers,
                          timeout=(connect, timeout - connect), allow_redirects=False)
    except requests.Timeout:
        return "retry", "no answer within %gs" % timeout, None
    except requests.ConnectionError:
        return "retry", "cannot connect", None
    except (requests.RequestException, ValueError, KeyError, TypeError) as e:
        return "drop", "bad request (%s)" % type(e).__name__, None
    status = r.status_code
    r.close()
    return _answer(status, r.headers.get("Retry-After"))


def _post_urllib(msg, headers, timeout):
    """:func:`post` on the standard library (no requests where the flusher runs): the same outcomes."""
    import http.client  # the flusher's only, without requests (emit is on every hook's path: +~25 ms there)
    import socket  # (the same)
    import urllib.error  # (the same)
    import urllib.request  # (the same)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None  # a redirect is an answer (3xx: dropped), never followed with the token

    req = urllib.request.Request(msg["url"], data=msg["body"].encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=timeout) as r:
            return _answer(r.status, r.headers.get("Retry-After"))
    except urllib.error.HTTPError as e:
        status, after = e.code, e.headers.get("Retry-After") if e.headers else None
        e.close()
        return _answer(status, after)
    except (TimeoutError, socket.timeout):
        return "retry", "no answer within %gs" % timeout, None
    except urllib.error.URLError as e:
        if isinstance(e.reason, (TimeoutError, socket.timeout)):
            return "retry", "no answer within %gs" % timeout, None
        if isinstance(e.reason, OSError):
            return "retry", "cannot connect", None
        return "drop", "bad request (%s)" % type(e.reason).__name__, None
    except (http.client.HTTPException, ConnectionError):
        return "retry", "cannot connect", None
    except (ValueError, KeyError, TypeError) as e:
        return "drop", "bad request (%s)" % type(e).__name__, None


def _answer(status, retry_after):
    """The outcome of an HTTP answer: sent (2xx), retry (429, 5xx; Retry-After seconds), else drop."""
    if 200 <= status < 300:
        return "sent", "HTTP %d" % status, None
    if status == 429 or status >= 500:
        try:
            after = float(retry_after or "")
        except ValueError:
            after = None
        return "retry", "HTTP %d" % status, after
    return "drop", "HTTP %d" % status, None


def backoff(attempts):
    """Seconds to wait after the ``attempts``-th failure: 10, 20, 40 ... capped."""
    return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** max(0, attempts - 1))


def spooled():
    """Paths of queued messages, oldest first."""
    d = paths.spool_dir()
    try:
        names = os.listdir(d)
    except OSError:
        return []
    return [os.path.join(d, n) for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]


def _load(path):
    # json, not fastjson: fastjson's C scanner misreports bad JSON when json was never imported
    try:
        with open(path, "rb") as f:
            msg = json.loads(f.read())
        if (isinstance(msg, dict) and all(isinstance(msg.get(k), str) for k in ("url", "title", "body"))
                and all(isinstance(msg.get(k), (int, float)) for k in ("created", "next_at", "attempts"))):
            return msg
    except FileNotFoundError:
        return False  # taken by someone else meanwhile
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    return None


def _save(path, msg):
    atomic.write_text(path, fastjson.dumps(msg), mode=paths.FILE_MODE, fsync=False)


def _drop(path, msg, why):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    log.write(LOG, "dropped %s event=%s server=%s attempts=%s: %s" % (
        os.path.basename(path)[:20], (msg or {}).get("event", "?"), _server((msg or {}).get("url")),
        (msg or {}).get("attempts", "?"), why))


def flush(now=None, *, timeout=TIMEOUT, max_attempts=MAX_ATTEMPTS, max_age=MAX_AGE):
    """Deliver every due spooled message once, oldest first; return counts.

    One flusher at a time (a non-blocking lock: a second one returns at once
    with ``busy``).  After a message to a server fails, the rest for that
    server wait for the same retry time instead of each burning a timeout.
    Never raises.
    """
    stats = {"sent": 0, "retry": 0, "dropped": 0, "deferred": 0, "waiting": 0, "busy": False}
    now = time.time() if now is None else now
    try:
        d = paths.spool_dir()
        if not os.path.isdir(d):
            return stats
        try:
            held = Lock(os.path.join(d, "flush.lock"), timeout=0).acquire()
        except LockTimeout:
            stats["busy"] = True
            return stats
        try:
            _flush_locked(stats, now, timeout, max_attempts, max_age)
        finally:
            held.release()
    except Exception as e:  # a flusher must never crash its caller
        log.write(LOG, "flush error: %s" % type(e).__name__)
    return stats


def _flush_locked(stats, now, timeout, max_attempts, max_age):
    down = {}  # url -> next_at, for servers that failed during this pass
    for path in spooled():
        try:
            _deliver_one(path, stats, down, now, timeout, max_attempts, max_age)
        except OSError as e:  # this file cannot be rewritten or removed: try the others
            log.write(LOG, "spool file %s: %s" % (os.path.basename(path)[:20], type(e).__name__))


def _deliver_one(path, stats, down, now, timeout, max_attempts, max_age):
    msg = _load(path)
    if msg is False:
        return
    if msg is None:
        _drop(path, None, "unreadable spool file")
        stats["dropped"] += 1
        return
    if now - msg["created"] > max_age:
        _drop(path, msg, "expired after %ds unsent" % (now - msg["created"]))
        stats["dropped"] += 1
        return
    if msg["next_at"] > now:
        stats["waiting"] += 1
        return
    if msg["url"] in down:
        msg["next_at"] = down[msg["url"]]
        _save(path, msg)
        stats["deferred"] += 1
        return
    outcome, detail, after = post(msg, timeout)
    if outcome == "sent":
        os.unlink(path)
        log.write(LOG, "sent event=%s server=%s attempts=%d" % (
            msg.get("event", "?"), _server(msg["url"]), msg["attempts"] + 1))
        stats["sent"] += 1
        return
    msg["attempts"] += 1
    if outcome == "drop" or msg["attempts"] >= max_attempts:
        why = detail if outcome == "drop" else "gave up after %d attempts, last: %s" % (msg["attempts"], detail)
        _drop(path, msg, why)
        stats["dropped"] += 1
        return
    delay = backoff(msg["attempts"])
    if after is not None:
        delay = max(delay, min(after, BACKOFF_CAP))
    msg["next_at"] = down[msg["url"]] = now + delay
    msg["last_error"] = detail
    _save(path, msg)
    stats["retry"] += 1


def next_due():
    """The earliest ``next_at`` in the spool, or None when it is empty."""
    due = [m["next_at"] for m in map(_load, spooled()) if m]
    return min(due) if due else None


def main(argv=None):
    """The detached flusher: deliver now, then stay to retry while anything is queued.

    Only one process (the keeper) lingers for retries; any other flusher makes
    one pass for the message it was started for and exits.  The keeper's life
    is bounded because every message is sent or dropped within ``MAX_AGE``.
    """
    d = paths.ensure_dir(paths.spool_dir())
    try:
        keeper = Lock(os.path.join(d, "keeper.lock"), timeout=0).acquire()
    except LockTimeout:
        keeper = None
    deadline = time.time() + MAX_AGE + 2 * BACKOFF_CAP
    try:
        while time.time() < deadline:
            stats = flush()
            if stats["busy"] and keeper is None:
                break  # the running flusher re-checks the spool when it finishes
            due = next_due()
            if due is None:
                break
            wait = due - time.time()
            if wait <= 0 and not stats["busy"]:
                if any(stats[k] for k in ("sent", "retry", "dropped", "deferred")):
                    continue  # messages arrived during the pass: go again now
                wait = 30.0  # a file that cannot be handled (disk full?): do not spin
            if keeper is None:
                break
            time.sleep(min(max(wait, 1.0) if stats["busy"] else wait, 60.0))
    finally:
        if keeper is not None:
            keeper.release()
    return 0


def send_test(url=None, token=None, project_root=None, timeout=TIMEOUT):
    """Send one test push right now (for ``doctor --notify-test``): ``(ok, detail)``."""
    if url is None:
        conf = settings(project_root)
        if conf is None:
            return False, "no ntfy URL configured (cc-continuity configure --ntfy URL)"
        url, configured_token, _ = conf
        token = token if token is not None else configured_token
    msg = format_message("test", text="If you can read this, cc-continuity pushes work.")
    msg.update(url=url, token=token)
    outcome, detail, _ = post(msg, timeout)
    where = _server(url)
    if outcome == "sent":
        return True, "delivered to %s (%s)" % (where, detail)
    return False, "%s: %s" % (where, detail)

