"""The six ``/continuity-*`` skills: shipped in ``data/skills/``, installed to ``<claude dir>/skills/``.

Each skill runs one CLI verb and reports.  Install never overwrites a file that
is not ours (a user's own skill of the same name); uninstall removes only
files whose content is one we wrote, so a user's edits survive.
"""

import hashlib
import os


VERBS = ("status", "checkpoint", "rotate", "off", "on", "history")
NAMES = tuple("continuity-" + v for v in VERBS)
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "skills")


COMMAND = "cc-continuity"


def shipped(command=COMMAND):
    """``{skill name: SKILL.md bytes}`` from the package data, running ``command``.

    Claude Code's Bash tool sees the user's PATH, which need not hold the
    ``~/.local/bin`` link (macOS; Debian before the next login): a settings
    install names the launcher by its absolute path (:func:`model_command`).
    A plugin's ``bin/`` is on that PATH, so the plugin keeps the bare name.
    """
    out = {}
    for name in NAMES:
        with open(os.path.join(SOURCE, name, "SKILL.md"), "rb") as f:
            out[name] = render(f.read(), command)
    return out


def render(text, command):
    """``text`` (bytes or str) with the command the model runs set to ``command``."""
    if command == COMMAND:
        return text
    raw = isinstance(text, bytes)
    s = text.decode("utf-8") if raw else text
    for before in ("`", "Bash("):
        s = s.replace(before + COMMAND + " ", before + command + " ")
    return s.encode("utf-8") if raw else s


def model_command(launcher):
    """How the model is told to run us: the launcher's absolute path, when it can be written as one word."""
    if launcher and os.path.isabs(launcher) and not any(c.isspace() or c in "`'\"$\\()*" for c in launcher):
        return launcher
    return COMMAND


def skills_dir(claude_dir):
    return os.path.join(claude_dir, "skills")


def target(claude_dir, name):
    return os.path.join(skills_dir(claude_dir), name, "SKILL.md")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


