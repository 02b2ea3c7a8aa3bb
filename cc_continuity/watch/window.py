"""The watchdog notices a model server that came back with another context size, and says so once.

When the probed server is up at the watchdog's start or after an outage (a restart), its window is asked
(serverwindow/: bounded, one request a shape; the model id is not known here, so the shapes that name one are
skipped) and compared with cc-continuity's ``window``.  A new answer that differs from that window is said
once (a push, a log line); the same answer is not said again, even across the watchdog's restarts (what was
said is kept in ``window.json`` beside its state).  Nothing is changed: ``configure --window auto`` is the
user's.
"""

import json
import os
from urllib.parse import urlsplit

from .. import atomic, config, paths
from . import state_dir

SEEN_FILE = "window.json"


def server_root(settings):
    """``scheme://host:port`` of the server the watchdog probes (its health or progress URL), or None."""
    for url in (settings.health_url, settings.progress_url):
        parts = urlsplit(url or "")
        if parts.scheme in ("http", "https") and parts.netloc:
            return "%s://%s" % (parts.scheme, parts.netloc)
    return None


def _seen_path():
    return os.path.join(state_dir(), SEEN_FILE)


def _load_seen():
    try:
        with open(_seen_path(), "rb") as f:
            doc = json.loads(f.read(4096))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def check(settings, ours=None):
    """Ask the probed server for its window; the text to say (once) when it differs from cc-continuity's
    ``window`` (``ours``: the config's, read when None), else None.  Never raises for a network problem."""
    root = server_root(settings)
    if root is None:
        return None
    from ..serverwindow import ask  # (requests: only once the server is up; status loads watch too)

    got = ask.ask(root, None).answer
    if got is None or got.tokens is None:
        return None
    if ours is None:
        try:
            ours = config.load().get("window")
        except config.ConfigError:
            ours = None
    said = _load_seen().get("said")
    tell = ours != got.tokens and said != got.tokens
    paths.ensure_dir(state_dir())
    atomic.write_text(_seen_path(), json.dumps({"seen": got.tokens, "said": got.tokens if tell else said}),
                      fsync=False)
    if not tell:
        return None
    return "model server %s now runs a %d-token window (%s %s), cc-continuity's is %s: `cc-continuity configure " \
           "--window auto`" % (urlsplit(root).netloc, got.tokens, got.server, got.where,
                               ours or "detected from the model id")
