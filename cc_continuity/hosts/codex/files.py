"""Codex CLI's files: our hooks in ``$CODEX_HOME/hooks.json``, their trust in ``$CODEX_HOME/config.toml``.

Codex's own, so in its host folder: its install piece (:mod:`.install`) writes them and its doctor
checks (:mod:`.doctor`) read them; nothing outside ``hosts/codex/`` knows their shape.  Pure
functions on bytes and parsed values, like ``install/settings.py`` (whose strict JSON reader, exact
writer and merge rules hooks.json shares: the same hook table shape, no status line); the caller
reads, writes and backs up.

hooks.json: one group of ours per event in :data:`.hooks.EVENTS`, each running
``<python> -S -c <BOOT> <Event>`` as a shell command (Codex runs ``command`` with a
shell), recognised by the Codex entry's import (``HOOK_MARK``) in it.  A file we cannot
parse is refused, never rewritten; every entry of the user's stays, byte for byte.

Trust (Codex 0.171, observed on the binary and read in its source): a hook entry runs
only once ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`` in the *user's*
config.toml holds ``trusted_hash`` equal to the entry's current hash; Codex's review
screen ("Trust all") writes those tables, ``exec`` skips an untrusted entry silently,
and a repository's ``.codex/config.toml`` cannot write hook state (project layers are
not read for it).  The key names the entry by position; the hash (:func:`entry_hash`)
names its content: sha256 of the canonical JSON of ``{event_name, matcher, hooks:
[normalized handler]}``, so any edit of the entry (or of our app path) untrusts it again.

config.toml is the user's, and Codex rewrites parts of it itself (its TUI state): we
change only ``[hooks.state."<key>"]`` tables whose key names an entry of ours, as text,
so comments and formatting stay, and every edit is checked by parsing the result with
``tomllib`` (the same document but for those tables, or nothing is written).
"""

import copy
import hashlib
import json
import os
import re
import shlex
import tomllib

from ... import errors
from ...install import mcp, settings

HOOKS_FILE = "hooks.json"
CONFIG_FILE = "config.toml"
DEFAULT_TIMEOUT_S = 600  # Codex's timeout for an entry that names none (and its floor is 1)
STATE = ("hooks", "state")


CodexError = errors.CodexError  # (defined with every error class, in errors.py)


# -- where Codex reads -------------------------------------------------------------

def codex_home(env=None):
    """``$CODEX_HOME`` as Codex resolves it (it must be a directory; Codex canonicalizes it, and the
    trust keys name that path), else ``$HOME/.codex`` as it is (Codex does not resolve that one)."""
    env = os.environ if env is None else env
    given = env.get("CODEX_HOME")
    if given:
        if not os.path.isdir(given):
            raise CodexError("CODEX_HOME=%s is not a directory (Codex refuses it too)" % given)
        return os.path.realpath(given)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")


def hooks_path(home):
    return os.path.join(home, HOOKS_FILE)


def config_path(home):
    return os.path.join(home, CONFIG_FILE)


# -- our hook table ----------------------------------------------------------------

def _entry():
    """The Codex hook entry's module: its events, timeouts and bootstrap mark."""
    from . import hooks  # (every verb's start loads install's and doctor's pieces: it and its rotation imports +~5-7 ms)

    return hooks


def mark():
    return _entry().HOOK_MARK


def events():
    return _entry().EVENTS


def command(python, app, event):
    """The shell command of our handler for ``event``: the base interpreter, ``-S``, the bootstrap
    (a missing app copy exits 0: a hook never fails Codex), the event."""
    return shlex.join([python, "-S", "-c", settings.boot_code(app, mark()), event])


def render(python, app):
    """Our hook table for hooks.json: one group per event, no matcher (every tool), the timeout one second
    over the hook's own budget (Codex clamps SessionEnd's to 3 s; ours stops at 2)."""
    timeouts = _entry().TIMEOUTS
    return {"hooks": {e: [{"hooks": [{"type": "command", "command": command(python, app, e),
                                      "timeout": timeouts[e]}]}] for e in events()}}


def plan_hooks(old, python, app, previous=None, where=HOOKS_FILE):
    """``(new bytes, record)`` for hooks.json: :func:`settings.plan_install` with Codex's mark, no status line."""
    return settings.plan_install(old, render(python, app), previous, where=where, mark=mark())


def plan_unhooks(current, record=None, where=HOOKS_FILE):
    """What uninstall leaves of hooks.json (bytes, None to delete, or ``current``)."""
    return settings.plan_uninstall(current, record, where=where, mark=mark())


def parse_hooks(data, where=HOOKS_FILE):
    """hooks.json's object (``{}`` when absent); SettingsError (a CodexError's sibling) when unusable."""
    if data is None:
        return {}
    return settings.parse(settings.decode(data, where), where)


# -- entries, keys, hashes -----------------------------------------------------------

def label(event):
    """The event as Codex writes it in a trust key: ``PreToolUse`` -> ``pre_tool_use``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def key(hooks_file, event, group, handler):
    return "%s:%s:%d:%d" % (hooks_file, label(event), group, handler)


def entries(doc, hooks_file):
    """Every entry of ours in a hooks.json object: ``[{"key", "event", "handler", "matcher", "hash"}]``.

    Positions count every group and handler of the event, as Codex's keys do."""
    found = []
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if settings.is_our_handler(handler, mark()):
                    matcher = group.get("matcher")
                    found.append({"key": key(hooks_file, event, g, h), "event": event, "handler": handler,
                                  "matcher": matcher, "hash": entry_hash(event, matcher, handler)})
    return found


def entry_hash(event, matcher, handler):
    """The ``trusted_hash`` Codex 0.171 wants for a command entry, or None for a shape we never write.

    Codex normalizes the handler (its timeout defaulted to 600 and at least 1, ``async`` false unless
    set), drops what is unset, sorts every object's keys and hashes the compact JSON:
    ``sha256:<hex>``.  Checked against the binary's ``hooks/list`` (tests/e2e)."""
    handler = settings.plain(handler)
    if not isinstance(handler, dict) or handler.get("type") != "command" or not isinstance(
            handler.get("command"), str):
        return None
    if set(handler) - {"type", "command", "timeout", "async", "statusMessage"}:
        return None
    timeout = handler.get("timeout")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT_S
    if type(timeout) is not int or timeout < 0:
        return None
    normal = {"type": "command", "command": handler["command"], "timeout": max(1, timeout),
              "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity = {"event_name": label(event), "hooks": [normal]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- config.toml: reading --------------------------------------------------------------

def load_config(data, where=CONFIG_FILE):
    """config.toml as ``tomllib`` reads it (``{}`` when absent); CodexError when Codex could not read it either."""
    if data is None:
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CodexError("%s: not UTF-8 (byte %d)" % (where, e.start)) from None
    except tomllib.TOMLDecodeError as e:
        raise CodexError("%s: not valid TOML: %s" % (where, e)) from None


def trust_state(doc):
    """``{key: {"trusted_hash", "enabled"}}`` of config.toml's ``[hooks.state]`` (entries that are tables)."""
    state = (doc.get("hooks") or {}).get("state") if isinstance(doc.get("hooks"), dict) else None
    return {k: v for k, v in state.items() if isinstance(v, dict)} if isinstance(state, dict) else {}


def our_trust_keys(doc, hooks_file, ours, known_hashes=()):
    """The ``[hooks.state]`` keys that name entries of ours: the positions ours hold in hooks.json now, and
    any key of this hooks.json whose trusted hash is one of our entries' (ours before another group moved
    them, or an earlier install's): such a hash is of a command running our bootstrap, so nobody else's."""
    hashes = {e["hash"] for e in ours if e["hash"]} | {h for h in known_hashes if h}
    places = {e["key"] for e in ours}
    return {k for k, state in trust_state(doc).items()
            if k in places or (k.startswith(hooks_file + ":") and state.get("trusted_hash") in hashes)}


# -- config.toml: the tables as text ---------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


def _basic_string(text, i):
    """(value, index after the closing quote) of the basic string whose content starts at ``text[i]``."""
    out = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            e = text[i + 1:i + 2]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
                continue
            width = {"u": 4, "U": 8, "x": 2}.get(e)
            if width is None:
                raise ValueError("bad escape")
            out.append(chr(int(text[i + 2:i + 2 + width], 16)))
            i += 2 + width
            continue
        out.append(c)
        i += 1
    raise ValueError("unterminated string")


def _header(line):
    """``(key path, is array)`` of a table header line (leading blanks stripped); ValueError if it is not one."""
    array = line.startswith("[[")
    i, parts = (2 if array else 1), []
    while True:
        while line[i:i + 1] in (" ", "\t"):
            i += 1
        if line[i:i + 1] == '"':
            part, i = _basic_string(line, i + 1)
        elif line[i:i + 1] == "'":
            j = line.index("'", i + 1)
            part, i = line[i + 1:j], j + 1
        else:
            m = _BARE.match(line, i)
            if not m:
                raise ValueError("bad key")
            part, i = m.group(0), m.end()
        parts.append(part)
        while line[i:i + 1] in (" ", "\t"):
            i += 1
        if line[i:i + 1] == ".":
            i += 1
            continue
        break
    close = "]]" if array else "]"
    if not line.startswith(close, i):
        raise ValueError("no closing bracket")
    rest = line[i + len(close):].strip()
    if rest and not rest.startswith("#"):
        raise ValueError("text after the header")
    return tuple(parts), array


def _scan(text):
    """The lines of a TOML text and ``{line index: (key path, is array)}`` for each table header.

    A line is a header when it starts with ``[`` outside any string and any value's brackets (an
    array of arrays spread over lines has lines starting with ``[`` too)."""
    lines = text.splitlines(keepends=True)
    headers = {}
    mode, depth = None, 0  # inside a multi-line string ('"""' or "'''"); open brackets of a value
    for n, line in enumerate(lines):
        if mode is None and depth == 0 and line.lstrip(" \t").startswith("["):
            headers[n] = _header(line.lstrip(" \t"))
            continue
        i, end = 0, len(line)
        while i < end:
            if mode:
                j = line.find(mode, i)
                if j < 0:
                    break
                if mode == '"""' and (j - len(line[:j].rstrip("\\"))) % 2:
                    i = j + 1  # an escaped quote
                    continue
                i = j + 3
                while i < end and line[i] == mode[0] and i - j < 5:
                    i += 1  # up to two quotes of the content before the closing three
                mode = None
                continue
            c = line[i]
            if c == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                mode, i = line[i:i + 3], i + 3
            elif c == '"':
                i = _basic_string(line, i + 1)[1]
            elif c == "'":
                i = line.index("'", i + 1) + 1
            else:
                depth += c in "[{"
                depth -= c in "]}" and depth > 0
                i += 1
    return lines, headers


def _blank(line):
    return not line.strip()


def _spans(lines, headers):
    """``[(header line, end of its content, end of its span)]`` in order: the content ends after its last
    line that is neither blank nor only a comment (those before the next header belong to that one)."""
    starts = sorted(headers)
    out = []
    for k, h in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        last = h + 1
        for n in range(h + 1, end):
            if not _blank(lines[n]) and not lines[n].lstrip().startswith("#"):
                last = n + 1
        out.append((h, last, end))
    return out


def _normal(value):
    """A parsed TOML value without empty tables (Codex reads none of them; an explicit ``[hooks.state]``
    header Codex added is one)."""
    if isinstance(value, dict):
        kept = {k: _normal(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v != {}}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _parse_text(text, where):
    try:
        lines, headers = _scan(text)
    except (ValueError, IndexError):
        raise CodexError("%s: a line we cannot take apart safely; edit it by hand (nothing was written)"
                         % where) from None
    return lines, headers


def _checked(new_text, want, where):
    """``new_text`` as bytes when it reads as ``want`` (normalized), else CodexError: nothing is written."""
    try:
        got = load_config(new_text.encode("utf-8"), where)
    except CodexError:
        got = None
    if got is None or _normal(got) != _normal(want):
        raise CodexError("%s: our edit would change more than our trust tables; edit it by hand "
                         "(nothing was written)" % where)
    return new_text.encode("utf-8")


def has_state_header(data):
    """Does config.toml have an explicit ``[hooks.state]`` header (False when absent or unreadable)?  Codex adds
    one when it writes the first trust; uninstall takes it out again only when it was not there before."""
    try:
        _, headers = _scan((data or b"").decode("utf-8"))
    except (ValueError, IndexError):
        return False
    return (STATE, False) in headers.values()


def plan_trust(old, trusts, where=CONFIG_FILE):
    """config.toml with ``trusted_hash`` set for each ``{key: hash}``: in the key's table when there is one
    (its other lines, such as ``enabled = false``, stay), else a new table after the last
    ``[hooks.state...]`` table (where Codex puts them), else at the end.  The bytes (``old`` when nothing
    changes)."""
    doc = load_config(old, where)  # first: a file Codex could not read is refused as it is
    text = (old or b"").decode("utf-8")
    state = trust_state(doc)
    todo = {k: h for k, h in trusts.items() if state.get(k, {}).get("trusted_hash") != h}
    if not todo:
        return old
    lines, headers = _parse_text(text, where)
    spans = {headers[h][0]: (h, last) for h, last, _ in _spans(lines, headers) if not headers[h][1]}
    inserts = {}  # line index -> lines to put before it
    replace = {}
    for k, h in todo.items():
        value = "trusted_hash = %s" % json.dumps(h)
        at = spans.get(STATE + (k,))
        if at is None:
            continue
        start, last = at
        for n in range(start + 1, last):
            if re.match(r"\s*trusted_hash\s*=", lines[n]):
                replace[n] = value + ("\n" if lines[n].endswith("\n") else "")
                break
        else:
            inserts.setdefault(start + 1, []).append(value + "\n")
    new_tables = [k for k in todo if STATE + (k,) not in spans]
    if new_tables:
        block = "".join("\n[hooks.state.%s]\ntrusted_hash = %s\n" % (json.dumps(k, ensure_ascii=False),
                                                                      json.dumps(todo[k])) for k in new_tables)
        ours = [last for path, (_, last) in spans.items() if path[:2] == STATE]
        at = max(ours) if ours else len(lines)
        if at == len(lines) and not text.strip():
            block = block.lstrip("\n")
        inserts.setdefault(at, []).append(block)
    out = []
    for n in range(len(lines) + 1):
        for piece in inserts.get(n, ()):
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n"
            out.append(piece)
        if n < len(lines):
            out.append(replace.get(n, lines[n]))
    want = copy.deepcopy(doc)
    want_state = want.setdefault("hooks", {}).setdefault("state", {})
    for k, h in todo.items():
        want_state.setdefault(k, {})["trusted_hash"] = h
    return _checked("".join(out), want, where)


def plan_untrust(old, keys, drop_state_header, where=CONFIG_FILE):
    """config.toml without the ``[hooks.state."<key>"]`` tables of ``keys`` (each with the blank line that
    set it apart), and without an explicit ``[hooks.state]`` header left empty when ``drop_state_header``
    (Codex adds one when it writes the first trust; it was not there before).  ``(bytes, removed keys)``;
    ``old`` when there is nothing to take out."""
    if old is None:
        return None, []
    doc = load_config(old, where)
    text = old.decode("utf-8")
    present = [k for k in keys if k in trust_state(doc)]
    lines, headers = _parse_text(text, where)
    spans = _spans(lines, headers)
    drop = set()

    def remove(h, last):
        drop.update(range(h, last))
        if h > 0 and _blank(lines[h - 1]) and h - 1 not in drop:
            drop.add(h - 1)
        elif last < len(lines) and _blank(lines[last]):
            drop.add(last)

    state_header = None
    for h, last, _end in spans:
        path, array = headers[h]
        if array:
            continue
        if len(path) == 3 and path[:2] == STATE and path[2] in present:
            remove(h, last)
        elif path == STATE and last == h + 1:
            state_header = (h, last)
    if state_header and drop_state_header:
        remove(*state_header)
    if not drop:
        return old, []
    new_text = "".join(line for n, line in enumerate(lines) if n not in drop)
    want = copy.deepcopy(doc)
    for k in present:
        del want["hooks"]["state"][k]
    return _checked(new_text, want, where), present


# -- config.toml: the MCP server's table ---------------------------------------------------

MCP = ("mcp_servers", mcp.SERVER)  # (Codex names its tools mcp__cc_continuity)


def mcp_entry(doc):
    """``[mcp_servers.cc-continuity]`` as config.toml has it (a dict), or None."""
    servers = doc.get(MCP[0])
    entry = servers.get(MCP[1]) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def mcp_is_ours(entry, launcher):
    return isinstance(entry, dict) and (entry.get("command"), entry.get("args")) == (launcher, ["mcp"])


def plan_mcp(old, launcher, env, where=CONFIG_FILE):
    """config.toml with our server's table (``command``, ``args``, and ``env`` when the state folder moved)
    appended at the end, or brought up to date where it is.  Codex runs a read-only tool (``readOnlyHint``) in
    its sandbox without asking, so no per-tool approval is written; the other tools ask.  A table of that
    name that is not ours is refused.  The bytes (``old`` when nothing changes)."""
    doc = load_config(old, where)
    want_entry = {"command": launcher, "args": ["mcp"]}
    if env:
        want_entry["env"] = dict(env)
    cur = mcp_entry(doc)
    if cur == want_entry:
        return old
    if cur is not None and not mcp_is_ours(cur, launcher):
        raise CodexError("%s: [mcp_servers.%s] is there and is not ours (command %s): remove it, or install "
                         "without --mcp (nothing was written)" % (where, MCP[1], cur.get("command")))
    if cur is not None:
        old, _ = plan_unmcp(old, launcher, where)
        doc = load_config(old, where)
    text = (old or b"").decode("utf-8")
    block = "\n[mcp_servers.%s]\ncommand = %s\nargs = [\"mcp\"]\n" % (MCP[1], json.dumps(launcher))
    if env:
        block += "\n[mcp_servers.%s.env]\n%s" % (MCP[1], "".join(
            "%s = %s\n" % (k, json.dumps(v)) for k, v in sorted(env.items())))
    if not text.strip():
        block = block.lstrip("\n")
    elif not text.endswith("\n"):
        text += "\n"
    want = copy.deepcopy(doc)
    want.setdefault(MCP[0], {})[MCP[1]] = want_entry
    return _checked(text + block, want, where)


def plan_unmcp(old, launcher, where=CONFIG_FILE):
    """config.toml without our server's tables (``[mcp_servers.cc-continuity]`` and its sub-tables, each with
    the blank line that set it apart), when the entry is ours.  ``(bytes, what happened)``."""
    if old is None:
        return None, "not there"
    doc = load_config(old, where)
    cur = mcp_entry(doc)
    if cur is None:
        return old, "not there"
    if not mcp_is_ours(cur, launcher):
        return old, "not ours (%s): left alone" % cur.get("command")
    lines, headers = _parse_text(old.decode("utf-8"), where)
    drop = set()
    for h, last, _end in _spans(lines, headers):
        path, array = headers[h]
        if not array and path[:2] == MCP:
            drop.update(range(h, last))
            if h > 0 and _blank(lines[h - 1]):
                drop.add(h - 1)
    new_text = "".join(line for n, line in enumerate(lines) if n not in drop)
    want = copy.deepcopy(doc)
    del want[MCP[0]][MCP[1]]
    if not want[MCP[0]]:
        del want[MCP[0]]
    return _checked(new_text, want, where), "removed"


def repo_mcp_entries(root):
    """A repository's own ``.codex/config.toml`` with a server of our name (Codex reads a trusted project's)."""
    path = os.path.join(root, ".codex", CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            doc = load_config(f.read(1 << 20), path)
    except (OSError, CodexError):
        return []
    return [path] if mcp_entry(doc) is not None else []
