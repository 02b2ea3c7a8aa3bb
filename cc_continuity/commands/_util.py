"""Small helpers shared by the CLI verbs."""

import json
import os
import sys

from .. import config
from ..hosts.claude.host import CLAUDE
from ..hosts.codex.host import CODEX
from ..hosts.gemini.host import GEMINI
from ..watch import ago  # noqa: F401 - the verbs take it from here
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


def count(n, word):
    """``1 session``, ``2 sessions``, ``0 rotations``."""
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def print_json(obj):
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def host_of(rec):
    """The agent host a session record was made by (records without one are Claude Code's: they came first)."""
    return {"codex": CODEX, "gemini": GEMINI}.get(rec.get("host"), CLAUDE)
