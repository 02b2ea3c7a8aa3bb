"""Where cc-continuity keeps its state (``$CC_CONTINUITY_HOME``) and how it is made.

Dirs are 0700 and files 0600: handoffs and ledgers quote the user's prompts.
Standard library only (hook fast path).
"""

import os

DIR_MODE = 0o700
FILE_MODE = 0o600


def home():
    """The state root: ``$CC_CONTINUITY_HOME`` or ``~/.claude-continuity``."""
    h = os.environ.get("CC_CONTINUITY_HOME")
    if h:
        return os.path.abspath(os.path.expanduser(h))
    return os.path.join(os.path.expanduser("~"), ".claude-continuity")


def ensure_dir(path):
    """Create ``path`` (and parents) with mode 0700; return it."""
    try:
        os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    except FileExistsError:
        pass
    return path


def config_file():
    return os.path.join(home(), "config.json")


def logs_dir():
    return os.path.join(home(), "logs")


def runtime_dir():
    return os.path.join(home(), "runtime")


def projects_dir():
    return os.path.join(home(), "projects")


def project_dir(key):
    return os.path.join(projects_dir(), key)


def session_dir(key, number):
    return os.path.join(projects_dir(), key, "sessions", "%03d" % number)


def spool_dir():
    """Notifications waiting for delivery."""
    return os.path.join(home(), "spool")


def claude_config_dir():
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` (where settings.json lives)."""
    d = os.environ.get("CLAUDE_CONFIG_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    return os.path.join(os.path.expanduser("~"), ".claude")
