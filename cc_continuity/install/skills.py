"""The six ``/continuity-*`` skills: shipped in ``data/skills/``, installed to ``<claude dir>/skills/``.

Each skill runs one CLI verb and reports.  Install never overwrites a file that
is not ours (a user's own skill of the same name); uninstall removes only
files whose content is one we wrote, so a user's edits survive.
"""

import hashlib
import os

from .. import errors

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


class FrontmatterError(errors.InstallError, ValueError):
    pass


_SPECIAL_START = tuple("[]{}&*!|>'\"%@`#,?:-")


def parse_frontmatter(text):
    """``(fields, body)`` of a SKILL.md.

    Only the YAML subset our skills use: ``key: value`` lines, values plain or
    double/single quoted.  Anything a YAML parser could read differently (a
    plain value containing ``": "`` or ``" #"``, or starting with an indicator
    character) is an error rather than a guess.
    """
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        raise FrontmatterError("no frontmatter: the first line must be ---")
    fields = {}
    for i, line in enumerate(lines[1:], 2):
        if line == "---":
            return fields, "\n".join(lines[i:])
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key or key != key.strip() or " " in key:
            raise FrontmatterError("line %d: expected 'key: value', got %r" % (i, line))
        if key in fields:
            raise FrontmatterError("line %d: duplicate key %r" % (i, key))
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            inner = value[1:-1]
            if '"' in inner.replace('\\"', "") or "\\" in inner.replace('\\"', ""):
                raise FrontmatterError("line %d: escapes in quoted values are not supported" % i)
            value = inner.replace('\\"', '"')
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            inner = value[1:-1]
            if "'" in inner.replace("''", ""):
                raise FrontmatterError("line %d: stray quote in %r" % (i, value))
            value = inner.replace("''", "'")
        else:
            if not value or value.startswith(_SPECIAL_START) or ": " in value or " #" in value or value.endswith(":"):
                raise FrontmatterError("line %d: value of %r must be quoted" % (i, key))
        fields[key] = value
    raise FrontmatterError("frontmatter is not closed with ---")
