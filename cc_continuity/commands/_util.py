"""Small helpers shared by the CLI verbs."""

import json
import os
import sys
import time

from .. import config
from ..project import Project


def current_project(path=None):
    return Project.discover(path or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def load_config(root):
    """The effective config, or exit 2 with the error naming file and key."""
    try:
        return config.load(root)
    except config.ConfigError as e:
        die(str(e))


def die(msg, code=2):
    sys.stderr.write("cc-continuity: %s\n" % msg)
    raise SystemExit(code)


def print_json(obj):
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def ago(ts, now=None):
    if not ts:
        return "-"
    s = max(0, int((now or time.time()) - ts))
    if s < 60:
        return "%ds ago" % s
    if s < 3600:
        return "%dm ago" % (s // 60)
    if s < 86400:
        return "%dh%02dm ago" % (s // 3600, (s % 3600) // 60)
    return "%dd ago" % (s // 86400)
