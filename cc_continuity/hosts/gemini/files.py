"""Gemini CLI's files: our hooks in ``~/.gemini/settings.json``, and what doctor reads of Gemini's settings.

Gemini's own, so in its host folder: its install piece (:mod:`.install`) writes them and its doctor
checks (:mod:`.doctor`) read them.  Pure functions on bytes and parsed values, like
``install/settings.py``, whose strict reader, exact writer and merge rules this file shares (the hook
table has Claude Code's shape; timeouts are milliseconds; each handler has a ``name``).

Where Gemini 0.61 reads (its bundle, checked): ``$GEMINI_CLI_HOME/.gemini`` (else ``~/.gemini``) for the
user's ``settings.json`` and ``trustedFolders.json`` (``$GEMINI_CLI_TRUSTED_FOLDERS_PATH`` overrides the
latter), ``<folder>/.gemini/settings.json`` for a trusted folder's own settings, and the system's file
(``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``, else ``/etc/gemini-cli/settings.json``), which wins over both.
Every one may hold ``//`` and ``/* */`` comments (Gemini strips them before ``JSON.parse``).

Install writes only the user's file, and only one without comments: writing JSON back would drop them,
so a file with comments is refused with the exact lines to add (:func:`paste_text`).  What install puts
there: one group of ours per event of :data:`.hooks.EVENTS` (matcher ``*``; handler named
``cc-continuity-<Event>``, so ``/hooks`` and doctor can tell them; its timeout
:data:`.hooks.TIMEOUTS_MS`), recognised by the Gemini entry's import (``HOOK_MARK``), and
``model.compressionThreshold`` when the user has none (:func:`wanted_threshold`): Gemini compresses the
chat at that fraction of 1,048,576 tokens, by default at 0.5, which comes before our rotate level on a
1M window, so ours puts it just above our hard ceiling.  A threshold the user set stays as it is.
"""

import copy
import json
import math
import os
import re
import shlex

from ... import errors
from ...install import mcp, settings

SETTINGS_FILE = "settings.json"
TRUST_FILE = "trustedFolders.json"
SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"  # (Linux; macOS keeps it under /Library/Application Support)
GEMINI_LIMIT = 1_048_576  # the window Gemini 0.61's core assumes for every model: its threshold is a fraction of it
DEFAULT_THRESHOLD = 0.5  # model.compressionThreshold when no file sets it
THRESHOLD = ("model", "compressionThreshold")
NAME_PREFIX = "cc-continuity-"
POLICY_FILE = os.path.join("policies", "cc-continuity.toml")

SettingsError = errors.SettingsError


# -- where Gemini reads ------------------------------------------------------------

def gemini_home(env=None):
    """Gemini's user folder: ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``."""
    env = os.environ if env is None else env
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(base):
        raise SettingsError("GEMINI_CLI_HOME is %r, not an absolute path: Gemini CLI would not read a "
                            "settings file we could name" % base)
    return os.path.join(base, ".gemini")


def settings_path(home):
    return os.path.join(home, SETTINGS_FILE)


def trust_path(home, env=None):
    env = os.environ if env is None else env
    return env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(home, TRUST_FILE)


def system_path(env=None):
    env = os.environ if env is None else env
    return env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or SYSTEM_SETTINGS


def policy_path(home):
    """Our policy rule's file: Gemini loads every ``*.toml`` of ``<its folder>/policies`` at the user's tier."""
    return os.path.join(home, POLICY_FILE)


def project_path(folder):
    """A folder's own settings, which Gemini reads only once the folder is trusted."""
    return os.path.join(folder, ".gemini", SETTINGS_FILE)


# -- JSON with comments ------------------------------------------------------------

def strip_comments(text):
    """``text`` with every ``//`` and ``/* */`` comment outside a string blanked (newlines kept, so a
    parse error's line and column stay the file's).  An unterminated block comment runs to the end."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load(data, where):
    """``(object, has_comments)`` of a Gemini settings file's bytes (``({}, False)`` when absent);
    SettingsError when Gemini could not read it either."""
    if data is None:
        return {}, False
    text = settings.decode(data, where)
    try:
        return settings.parse(text, where), False
    except SettingsError as strict:
        stripped = strip_comments(text)
        if stripped == text:
            raise strict from None
    return settings.parse(stripped, where), True


# -- our hook table ----------------------------------------------------------------

def _entry():
    """The Gemini hook entry's module: its events, timeouts and bootstrap mark."""
    from . import hooks  # (every verb's start loads install's and doctor's pieces: not the entry's world)

    return hooks


def mark():
    return _entry().HOOK_MARK


def hook_name(event):
    return NAME_PREFIX + event


def command(python, app, event):
    """The shell command of our handler for ``event``: the base interpreter, ``-E`` (no ``PYTHON*`` name
    counts: a repository's .env may have put one in Gemini's environment) and ``-S``, the bootstrap (a
    missing app copy exits 0: a hook never fails Gemini), the event.  Gemini expands ``$NAME`` in
    a settings value, so a path with ``$`` in it is refused rather than written."""
    for path in (python, app):
        if "$" in path:
            raise SettingsError("%s has a $ in it, which Gemini CLI would expand in settings.json; install "
                                "from a path without one" % path)
    return shlex.join([python, "-E", "-S", "-c", settings.boot_code(app, mark()), event])


def render(python, app):
    """Our hook table: one group per event, every tool and source (``*``), each handler named and its
    timeout one second over the hook's own budget, in milliseconds."""
    timeouts = _entry().TIMEOUTS_MS
    return {"hooks": {e: [{"matcher": "*", "hooks": [{"name": hook_name(e), "type": "command",
                                                     "command": command(python, app, e),
                                                     "timeout": timeouts[e]}]}] for e in _entry().EVENTS}}


def ours(doc):
    """``[(event, handler)]`` of every handler of ours in a settings object."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    found = []
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for h in handlers if isinstance(handlers, list) else ():
                    if settings.is_our_handler(h, mark()):
                        found.append((event, h))
    return found


# -- the compression threshold -----------------------------------------------------

def threshold_of(doc):
    """``model.compressionThreshold`` as a number in a settings object, else None."""
    model = doc.get(THRESHOLD[0]) if isinstance(doc, dict) else None
    value = model.get(THRESHOLD[1]) if isinstance(model, dict) else None
    value = value.value() if isinstance(value, settings.Number) else value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def wanted_threshold(window, hard_percent):
    """The fraction of 1,048,576 just above our hard ceiling on ``window`` (two decimals, at most 1):
    Gemini's compression is then what comes after everything of ours, never before a rotation."""
    need = hard_percent / 100.0 * window / GEMINI_LIMIT
    return min(1.0, math.ceil(need * 100 + 1) / 100)


def _with_threshold(doc, value):
    doc = copy.deepcopy(doc)
    model = doc.setdefault(THRESHOLD[0], {})
    if not isinstance(model, dict):
        raise SettingsError('"model" is not a JSON object; fix or remove it, then run install again')
    model[THRESHOLD[1]] = value
    return doc


def _without_threshold(doc, record):
    """``doc`` without the threshold install set, if it is still the value set (and ``model`` gone too
    when install created it and nothing else is in it)."""
    model = doc.get(THRESHOLD[0])
    if not record or not isinstance(model, dict) or threshold_of(doc) != record.get("threshold_set"):
        return doc
    doc = copy.deepcopy(doc)
    del doc[THRESHOLD[0]][THRESHOLD[1]]
    if record.get("created_model") and not doc[THRESHOLD[0]]:
        del doc[THRESHOLD[0]]
    return doc


MCP_SERVERS = "mcpServers"
MCP_NAME = mcp.SERVER


def mcp_entry(doc):
    servers = doc.get(MCP_SERVERS)
    entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def mcp_is_ours(entry, launcher=None):
    """Our server's entry: it runs a cc-continuity launcher (``launcher`` when given) with the verb ``mcp``."""
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and entry.get("args") == ["mcp"] and (
        command == launcher if launcher else command.endswith("/bin/cc-continuity"))


def _with_mcp(doc, entry):
    cur = mcp_entry(doc)
    if cur is not None and not mcp_is_ours(cur, entry["command"]):
        raise SettingsError('"mcpServers.%s" is there and is not ours (command %s): remove it, or install without '
                            "--mcp" % (MCP_NAME, cur.get("command")))
    doc = copy.deepcopy(doc)
    servers = doc.setdefault(MCP_SERVERS, {})
    if not isinstance(servers, dict):
        raise SettingsError('"mcpServers" is not a JSON object; fix or remove it, then run install again')
    servers[MCP_NAME] = entry
    return doc


def _without_mcp(doc, record):
    """``doc`` without our server's entry (and ``mcpServers`` when install created it and it is empty now)."""
    if not mcp_is_ours(mcp_entry(doc), (record or {}).get("mcp_command")):
        return doc
    doc = copy.deepcopy(doc)
    del doc[MCP_SERVERS][MCP_NAME]
    if not doc[MCP_SERVERS] and (record is None or record.get("created_mcp_servers")):
        del doc[MCP_SERVERS]
    return doc


# -- whole-file plans --------------------------------------------------------------

def plan(old, python, app, threshold, previous=None, where=SETTINGS_FILE, server=None):
    """``(new bytes, record)`` for the user's settings.json: our hooks merged as :func:`settings.plan_install`
    merges them, ``threshold`` set when no threshold is there (or the one there is ours from before), and
    ``server`` (our MCP server's entry, or None: none of ours) under ``mcpServers``.
    A file with comments is refused (SettingsError) with the lines to add."""
    doc, commented = load(old, where)
    if commented:
        raise SettingsError(paste_text(where, python, app, None if threshold_of(doc) is not None else threshold))
    previous = previous or {}
    new, record = settings.plan_install(old, render(python, app), previous, where=where, mark=mark())
    merged = settings.parse(settings.decode(new, where), where)
    have = threshold_of(merged)
    ours_before = previous.get("threshold_set")
    created = not isinstance(doc.get(THRESHOLD[0]), dict)
    record["created_model"] = previous.get("created_model", created) if ours_before is not None else created
    if have is None or (ours_before is not None and have == ours_before):
        if have != threshold:
            merged = _with_threshold(merged, threshold)
            new = settings.dumps(merged, settings.detect_indent(settings.decode(old or b"{}", where))).encode()
        record["threshold_set"] = threshold
    else:
        record["threshold_set"] = None  # the user's: never touched
    unserved = _without_mcp(merged, previous)
    served = _with_mcp(unserved, server) if server else unserved
    if server:
        record["mcp_command"] = server["command"]
        record["created_mcp_servers"] = previous.get("created_mcp_servers", MCP_SERVERS not in doc) \
            if previous.get("mcp_command") else MCP_SERVERS not in doc
    if served != merged:
        new = settings.dumps(served, settings.detect_indent(settings.decode(old or b"{}", where))).encode()
    record["written_sha256"] = settings.sha256(new)
    return new, record


def plan_undo(current, record=None, where=SETTINGS_FILE):
    """What uninstall leaves of settings.json (bytes, None to delete, or ``current``): the exact bytes from
    before install when nobody wrote the file since, else the file without our hooks and threshold."""
    if current is None:
        return None
    exact = record and record.get("original_known") and record.get("written_sha256") == settings.sha256(current)
    doc, commented = load(current, where)
    if commented and not exact:
        if not ours(doc) and _without_mcp(_without_threshold(doc, record), record) == doc:
            return current
        raise SettingsError("%s has comments now and our hooks in it: remove the cc-continuity-* entries "
                            "under \"hooks\"%s by hand (rewriting it would drop the comments)"
                            % (where, " and model.compressionThreshold" if record and record.get("threshold_set")
                               is not None else ""))
    new = settings.plan_uninstall(current, record, where=where, mark=mark())
    if new is None or exact:
        return new
    text = settings.decode(new, where)
    left = settings.parse(text, where)
    trimmed = _without_mcp(_without_threshold(left, record), record)
    if trimmed == left:
        return new
    if not trimmed and record and record.get("original_known") and record.get("original") is None:
        return None
    return settings.dumps(trimmed, settings.detect_indent(text)).encode("utf-8")


def paste_text(where, python, app, threshold):
    """The refusal for a file with comments: what to add to it by hand (then doctor checks it)."""
    fragment = {"hooks": render(python, app)["hooks"]}
    if threshold is not None:
        fragment["model"] = {THRESHOLD[1]: threshold}
    body = json.dumps(fragment, indent=2, ensure_ascii=False)
    return ("%s has comments, which writing it back would drop; cc-continuity changes nothing in it. Merge "
            "this into it by hand (each event's group beside any of yours; \"model\" beside your model "
            "settings), then run `cc-continuity doctor --agent gemini`:\n%s" % (where, body))


# -- the handoff's write, approved by a policy rule ----------------------------------

def policy_text(home, mcp_tools=()):
    """Our one policy rule: ``write_file`` allowed without a prompt for a ``continuity-handoff-<n>.md`` right in
    a project's temp folder (``<home>/tmp/<project>/``), nothing else.

    Gemini 0.61 matches ``argsPattern`` against the arguments as sorted JSON with each top-level argument
    between NUL bytes, so ``\\x00"file_path":"…"\\x00`` is the ``file_path`` argument itself, never text
    inside ``content``; ``[a-z0-9-]+`` is the alphabet of its project folders, so no ``..`` or ``/``.  A user
    rule at priority 100 sits above every default (4.1 against 1.x), in the TUI and headless (where it also
    gives the model ``write_file`` back, for that path only).  A BeforeTool answer cannot approve: 0.61 reads
    only deny, ask and a rewrite from it.

    ``mcp_tools``: our MCP server's read-only tools, each allowed by a rule naming the server and the tool
    (``mcpName`` and ``toolName``, never the whole server); the server's other tools ask."""
    if any(c in home for c in "\"'\n"):
        raise SettingsError("%s has a quote, backslash or newline in it: no policy rule of ours could name it" % home)
    spelled = re.sub(r"[.^$*+?()\[\]{}|]", lambda m: "\\" + m.group(0), home)
    return ("# cc-continuity: the model writes its rotation handoff here without a prompt; nothing else.\n"
            "# Written by `cc-continuity install --agent gemini`; `cc-continuity uninstall` removes it.\n"
            "[[rule]]\n"
            'toolName = "write_file"\n'
            "argsPattern = '\\x00\"file_path\":\"%s/tmp/[a-z0-9-]+/continuity-handoff-[0-9]+\\.md\"\\x00'\n"
            'decision = "allow"\n'
            "priority = 100\n" % spelled) + (
        "\n# Our MCP server's read-only tools run without a prompt too (install --mcp); its other tools ask.\n"
        if mcp_tools else "") + "".join(
        '[[rule]]\nmcpName = "%s"\ntoolName = "%s"\ndecision = "allow"\npriority = 100\n' % (MCP_NAME, tool)
        for tool in mcp_tools)


# -- trust -------------------------------------------------------------------------

def folder_trusted(folder, trusted, env=None):
    """Gemini 0.61's answer for ``folder`` from the trustedFolders.json object ``trusted``: True, False
    (DO_NOT_TRUST) or None (not listed: untrusted, and headless refuses to start).  The longest rule
    that holds the folder decides; TRUST_PARENT trusts the rule's parent folder."""
    env = os.environ if env is None else env
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    real = os.path.realpath(folder)
    best, verdict = -1, None
    for rule, level in (trusted or {}).items():
        if not isinstance(rule, str):
            continue
        base = os.path.realpath(os.path.dirname(rule) if level == "TRUST_PARENT" else rule)
        if (real == base or real.startswith(base.rstrip("/") + "/")) and len(rule) > best:
            best, verdict = len(rule), level
    if verdict == "DO_NOT_TRUST":
        return False
    return True if verdict in ("TRUST_FOLDER", "TRUST_PARENT") else None


def repo_mcp_entries(root):
    """A repository's own ``.gemini/settings.json`` with a server of our name (Gemini merges a trusted
    workspace's settings over the user's)."""
    path = os.path.join(root, ".gemini", SETTINGS_FILE)
    try:
        with open(path, "rb") as f:
            doc, _ = load(f.read(1 << 20), path)
    except (OSError, SettingsError):
        return []
    return [path] if mcp_entry(doc) is not None else []
