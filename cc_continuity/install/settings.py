"""Merge our hooks and status line into Claude Code's settings.json, and take them out again.

Pure functions on text and JSON values, so they can be property-tested; the
caller does the reading, writing and backups.

Rules (field notes §3.6 lists what other installers broke):
- parse strictly (no NaN, no duplicate keys, top level an object); a file we
  cannot parse is refused, never rewritten;
- every value we do not own is written back exactly: a number keeps the text it
  was written with (:class:`Number`: ``1e400`` is not turned into ``Infinity``,
  nor ``-0`` into ``0``, nor a 30-digit integer into anything else) and a string
  with a lone surrogate keeps its ``\\uD800`` escape;
- every other key and hook group stays, in order;
- one group of ours per event, recognised by its bootstrap (``HOOK_MARK``, or
  ``OLD_HOOK_MARK`` as an earlier version wrote it), replaced in place on re-install, so a second install changes nothing and
  an upgrade does not reorder;
- the user's ``statusLine`` is carried *in our own status line command*
  (``statusmain.py --chain '<their statusLine as JSON>'``), so it survives
  whatever happens to the install record (a deleted state dir, a second
  ``CC_CONTINUITY_HOME``, another ``CLAUDE_CONFIG_DIR``): the file that lost it
  is the file that holds it.  Ours runs it, and uninstall restores it from
  there (the record's ``statusline_chain`` is the fallback for older installs);
- uninstall gives back the exact original bytes when nobody else wrote the
  file since; otherwise it removes only what is ours (same JSON value as
  before install, other writers' changes kept).

The hook table is the plugin's own ``hooks/hooks.json`` (events, matchers,
timeouts, the async late Stop): there each handler runs ``python3 -S -c <BOOT>``
with ``${CLAUDE_PLUGIN_ROOT}`` as the app.  A settings install renders the same
table with the absolute base interpreter and the app copy instead
(:func:`load_fragment` turns it into ``@PYTHON@``/``@BOOT@`` placeholders,
:func:`render_fragment` fills them), so the two installs cannot drift apart.

Why the hooks run ``python -S -c <BOOT>`` and not ``python -S <file>``: if the
app copy ever disappears (``rm -rf ~/.claude-continuity`` without uninstall),
Python exits 2 on a missing script file — and exit 2 *blocks* in Claude Code
(every tool call, every prompt).  The bootstrap catches the failed import and
exits 0, so a broken install degrades to "no rotation", never to a blocked
session.  It costs the same as a script (``__main__`` code is never cached).
"""

import ast
import copy
import hashlib
import json
import os
import shlex

from .. import errors, statusline

HOOK_MARK = "from cc_continuity.hosts.claude.hooks import main"
# The entry before Claude Code's hooks moved into hosts/claude/ (issue 35): an install made by an earlier
# version runs it (``cc_continuity/hooks/`` is its alias for one release).  Install, uninstall and doctor
# know our groups by either, so a re-install replaces the old group where it stands instead of wiring the
# event twice.
OLD_HOOK_MARK = "from cc_continuity.hooks import main"
CLAUDE_MARKS = (HOOK_MARK, OLD_HOOK_MARK)
# gc.disable(): a hook process lives for milliseconds (its budget at most) and frees what it made by
# reference counting and at exit; the cyclic collector only ran during its imports, about 1 % of a
# PostToolUse by instructions (bench/hotpath.py).
BOOT = (
    "import gc, sys\n"
    "gc.disable()\n"
    "if sys.version_info < (3, 11):\n"
    "    raise SystemExit(0)\n"
    "sys.path[0] = %r\n"
    "sys.path.append(%r)\n"
    "try:\n"
    "    " + HOOK_MARK + "\n"
    "except BaseException:\n"
    "    raise SystemExit(0)\n"
    "main(sys.argv[1:])\n"
)
STATUS_MARK = "/cc_continuity/statusmain.py"
# The hook table, as the plugin ships it (one fact, two ways to install it).
PLUGIN_HOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "data", "hooks", "hooks.json")
# The plugin cannot know the interpreter: hooks/python.sh (sh, on every hook but a tool call's) chooses one
# and keeps it as a link in the plugin's data folder, which the hooks of a tool call run.
PLUGIN_PYTHON = "${CLAUDE_PLUGIN_DATA}/python"
PLUGIN_CHOOSER = ("/bin/sh", "${CLAUDE_PLUGIN_ROOT}/hooks/python.sh")
PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"  # substituted by Claude Code into each exec-form arg
STATUS_LINE = {"type": "command", "command": "@PYTHON@ -S @APP@" + STATUS_MARK, "padding": 0,
               "refreshInterval": statusline.REFRESH_S}

_MISSING = object()


SettingsError = errors.SettingsError  # (defined with every error class, in errors.py)


# -- parsing and serialising ---------------------------------------------------

def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise SettingsError("duplicate key %s" % json.dumps(key))
        seen[key] = value
    return seen


def _no_constants(name):
    raise SettingsError("%s is not valid JSON" % name)


class Number:
    """A JSON number exactly as written.

    Python would read ``1e400`` as ``inf`` (and write it back as ``Infinity``, which is
    not JSON), ``-0`` as ``0``; JavaScript, which reads the file, has its own ideas
    about a 30-digit integer.  Keeping the text means writing back what was there.
    Equal to another Number of the same text, and to an int or float of ours whose
    JSON spelling is that text.
    """

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def value(self):
        """The Python number (lossy for the cases above; for reading, never for writing)."""
        try:
            return int(self.text)
        except ValueError:
            return float(self.text)

    def __eq__(self, other):
        if isinstance(other, Number):
            return self.text == other.text
        if isinstance(other, bool) or not isinstance(other, (int, float)):
            return NotImplemented
        return self.text == json.dumps(other)

    def __hash__(self):
        v = self.value()
        return hash(v) if v == v and v not in (float("inf"), float("-inf")) else hash(self.text)

    def __bool__(self):
        return self.value() != 0

    def __repr__(self):
        return "Number(%r)" % self.text

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def plain(value):
    """``value`` with every :class:`Number` as a Python number (a non-finite one as its text), for json.dumps."""
    if isinstance(value, Number):
        v = value.value()
        return value.text if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))) else v
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def parse(text, where="settings.json"):
    """The JSON object in ``text``; SettingsError (with line/column) for anything else.

    Numbers come back as :class:`Number` (exact text).  A file holding only
    whitespace counts as ``{}``: there is nothing in it to lose.
    """
    if not text.strip():
        return {}
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants,
                         parse_int=Number, parse_float=Number)
    except json.JSONDecodeError as e:
        raise SettingsError("%s: not valid JSON at line %d column %d: %s" % (where, e.lineno, e.colno, e.msg)) from None
    except SettingsError as e:
        raise SettingsError("%s: %s" % (where, e)) from None
    except RecursionError:
        raise SettingsError("%s: nested too deeply" % where) from None
    if not isinstance(doc, dict):
        raise SettingsError("%s: the top level must be a JSON object, not %s" % (where, type(doc).__name__))
    return doc


def decode(data, where="settings.json"):
    """Bytes to text: UTF-8 only (Claude Code writes UTF-8; a BOM is not JSON)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SettingsError("%s: not UTF-8 (byte %d)" % (where, e.start)) from None


def detect_indent(text):
    """The indent unit of a pretty-printed JSON text (spaces count or a tab); 2 if unknown."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if not stripped:
            continue
        lead = line[: len(line) - len(stripped)]
        if lead.startswith("\t"):
            return "\t"
        if lead:
            return len(lead)
        return 2
    return 2


def dumps(doc, indent=2):
    """Pretty JSON with a trailing newline, as ``json.dumps(indent=..., ensure_ascii=False)`` writes it.

    Except: a :class:`Number` is written as its text, and a string holding a lone
    surrogate (valid in JSON and JavaScript, not encodable as UTF-8) keeps it as an
    escape.  A float of ours that is not finite is an error, never ``Infinity``.
    """
    out = []
    _encode(doc, indent if indent is None or isinstance(indent, str) else " " * indent, "", out)
    return "".join(out) + "\n"


def dumps_compact(value):
    """One line, no spaces (for a value carried in a command line)."""
    out = []
    _encode(value, None, "", out, compact=True)
    return "".join(out)


def _string(s):
    if any("\ud800" <= c <= "\udfff" for c in s):
        return json.dumps(s)  # ASCII escapes keep the surrogate
    return json.dumps(s, ensure_ascii=False)


def _encode(v, unit, pad, out, compact=False):
    if isinstance(v, Number):
        out.append(v.text)
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif v is None:
        out.append("null")
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, (int, float)):
        out.append(json.dumps(v, allow_nan=False))
    elif isinstance(v, (dict, list)):
        items = list(v.items()) if isinstance(v, dict) else list(v)
        opener, closer = ("{", "}") if isinstance(v, dict) else ("[", "]")
        if not items:
            out.append(opener + closer)
            return
        inner = None if unit is None else pad + unit
        item_sep = "," if compact else (", " if unit is None else ",\n" + inner)
        out.append(opener if unit is None else opener + "\n" + inner)
        for i, item in enumerate(items):
            if i:
                out.append(item_sep)
            if isinstance(v, dict):
                key, item = item
                if not isinstance(key, str):
                    raise TypeError("keys must be strings, not %r" % (key,))
                out.append(_string(key) + (":" if compact else ": "))
            _encode(item, unit, inner, out, compact)
        out.append(closer if unit is None else "\n" + pad + closer)
    else:
        raise TypeError("%r is not a JSON value" % (v,))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# -- the fragment --------------------------------------------------------------

def load_fragment(path=PLUGIN_HOOKS):
    """The hook table (from the plugin's hooks.json) with placeholders, plus our status line."""
    with open(path, encoding="utf-8") as f:
        plugin = json.load(f)
    hooks = {}
    for event, groups in plugin["hooks"].items():
        hooks[event] = []
        for group in groups:
            g = dict(group)
            g["hooks"] = []
            for h in group["hooks"]:
                h = dict(h)
                args = h.get("args", [])
                if (h.get("command"), args[:1]) == (PLUGIN_CHOOSER[0], [PLUGIN_CHOOSER[1]]):
                    h["command"], h["args"] = PLUGIN_PYTHON, args[1:]  # a settings install has its Python
                if h.get("command") == PLUGIN_PYTHON:
                    h["command"] = "@PYTHON@"
                h["args"] = ["@BOOT@" if a == boot_code(PLUGIN_ROOT) else a for a in h.get("args", [])]
                g["hooks"].append(h)
            hooks[event].append(g)
    return {"hooks": hooks, "statusLine": dict(STATUS_LINE)}


def render_fragment(fragment, python, app):
    """The fragment with placeholders filled.

    Exec-form handlers (``command`` + ``args``) get the raw paths; the status
    line is shell form, so each of its words is quoted after substitution.
    """
    def fill(s):
        if s == "@BOOT@":
            return boot_code(app)
        return s.replace("@PYTHON@", python).replace("@APP@", app)

    out = {"hooks": {}}
    for event, groups in fragment["hooks"].items():
        out["hooks"][event] = []
        for group in groups:
            g = {k: v for k, v in group.items() if k != "hooks"}
            g["hooks"] = []
            for h in group["hooks"]:
                h = dict(h)
                h["command"] = fill(h["command"])
                h["args"] = [fill(a) for a in h.get("args", [])]
                g["hooks"].append(h)
            out["hooks"][event].append(g)
    status = dict(fragment["statusLine"])
    status["command"] = shlex.join(fill(w) for w in shlex.split(status["command"]))
    out["statusLine"] = status
    return out


def boot_code(app, mark=HOOK_MARK):
    """The ``-c`` program of every hook: put the app on sys.path and dispatch, or exit 0.

    ``mark``: the import of the hook entry (Claude Code's by default; Codex CLI's hooks run
    ``cc_continuity.hosts.codex.hooks.HOOK_MARK``)."""
    return BOOT.replace(HOOK_MARK, mark) % (app, app + "/lib")


def app_of_handler(handler):
    """The app directory a handler of ours runs from, or None."""
    for a in handler.get("args") or ():
        if isinstance(a, str) and carries(a):
            for line in a.splitlines():
                if line.startswith("sys.path[0] = "):
                    try:
                        return ast.literal_eval(line.split("=", 1)[1].strip())
                    except (ValueError, SyntaxError):
                        return None
    return None


# -- recognising ours ----------------------------------------------------------

def is_our_handler(handler, mark=CLAUDE_MARKS):
    """Does ``handler`` run our bootstrap?  ``mark`` is the entry's import (Claude Code's by default;
    a Codex hooks.json entry carries ``hosts.codex.hooks.HOOK_MARK`` in its shell command)."""
    if not isinstance(handler, dict):
        return False
    words = [handler.get("command")]
    args = handler.get("args")
    if isinstance(args, list):
        words.extend(args)
    return any(isinstance(w, str) and carries(w, mark) for w in words)


def carries(text, mark=CLAUDE_MARKS):
    """Does ``text`` hold our entry's import: ``mark`` (one) or any of ``mark`` (a tuple)?"""
    return any(m in text for m in ((mark,) if isinstance(mark, str) else mark))


def is_our_statusline(value):
    return isinstance(value, dict) and isinstance(value.get("command"), str) and STATUS_MARK in value["command"]


def embedded_chain(value):
    """The user's own statusLine our status line command carries (``--chain JSON``), or None."""
    if not is_our_statusline(value):
        return None
    try:
        words = shlex.split(value["command"])
    except ValueError:
        return None
    if statusline.CHAIN_FLAG not in words[:-1]:
        return None
    try:
        chain = parse(words[words.index(statusline.CHAIN_FLAG) + 1], "the --chain of our status line")
    except SettingsError:
        return None
    return None if is_our_statusline(chain) or not chain else chain


def with_chain(status, chain):
    """Our statusLine value, its command carrying ``chain`` (the user's statusLine) exactly."""
    if chain is None:
        return status
    out = dict(status)
    out["command"] = status["command"] + " " + shlex.join([statusline.CHAIN_FLAG, dumps_compact(chain)])
    theirs = plain(chain.get("refreshInterval")) if isinstance(chain, dict) else None
    if type(theirs) is int and 1 <= theirs < out.get("refreshInterval", theirs + 1):
        out["refreshInterval"] = theirs  # their timer, if faster: theirs re-runs as often as it asked
    return out


def _handlers(group):
    if isinstance(group, dict) and isinstance(group.get("hooks"), list):
        return group["hooks"]
    return None


def _group_kind(group, mark=CLAUDE_MARKS):
    """'ours' (only our handlers), 'mixed', or 'theirs'."""
    hs = _handlers(group)
    if not hs:
        return "theirs"
    mine = [is_our_handler(h, mark) for h in hs]
    if all(mine):
        return "ours"
    return "mixed" if any(mine) else "theirs"


def _strip_ours(groups, mark=CLAUDE_MARKS):
    """``groups`` without our handlers: our groups dropped, mixed groups keep theirs."""
    out = []
    for g in groups:
        kind = _group_kind(g, mark)
        if kind == "ours":
            continue
        if kind == "mixed":
            g = dict(g)
            g["hooks"] = [h for h in g["hooks"] if not is_our_handler(h, mark)]
        out.append(g)
    return out


def has_ours(doc, mark=CLAUDE_MARKS):
    """Does the document contain any handler or status line of ours?"""
    if is_our_statusline(doc.get("statusLine")):
        return True
    hooks = doc.get("hooks")
    if isinstance(hooks, dict):
        for groups in hooks.values():
            if isinstance(groups, list) and any(_group_kind(g, mark) != "theirs" for g in groups):
                return True
    return False


# -- merge / unmerge -----------------------------------------------------------

def merge(doc, rendered, mark=CLAUDE_MARKS):
    """A copy of ``doc`` with our hook groups and status line in it.

    Our existing group for an event is replaced where it stands; stray copies
    of our handlers elsewhere are removed; an event without ours gets our
    group appended.  A ``rendered`` without ``statusLine`` (Codex's hooks.json)
    leaves the status line alone.
    """
    doc = copy.deepcopy(doc)
    if "hooks" not in doc and rendered["hooks"]:
        doc["hooks"] = {}
    hooks = doc.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError('"hooks" is not a JSON object; fix or remove it, then run install again')
    for event, (ours,) in rendered["hooks"].items():
        groups = hooks.get(event, _MISSING)
        if groups is _MISSING:
            hooks[event] = [copy.deepcopy(ours)]
            continue
        if not isinstance(groups, list):
            raise SettingsError('"hooks.%s" is not a JSON array; fix or remove it, then run install again' % event)
        out, placed = [], False
        for g in groups:
            kind = _group_kind(g, mark)
            if kind == "ours":
                if not placed:
                    out.append(copy.deepcopy(ours))
                    placed = True
            elif kind == "mixed":
                out.extend(_strip_ours([g], mark))
            else:
                out.append(g)
        if not placed:
            out.append(copy.deepcopy(ours))
        hooks[event] = out
    if "statusLine" in rendered:
        doc["statusLine"] = copy.deepcopy(rendered["statusLine"])
    _add_allow(doc, rendered.get("allow") or ())
    return doc


def _allow_list(doc):
    perms = doc.get("permissions")
    allow = perms.get("allow") if isinstance(perms, dict) else None
    return allow if isinstance(allow, list) else None


def _add_allow(doc, rules):
    """Our permission rules (``permissions.allow``) appended, each once; the user's rules stay where they are."""
    if not rules:
        return
    perms = doc.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise SettingsError('"permissions" is not a JSON object; fix or remove it, then run install again')
    allow = perms.setdefault("allow", [])
    if not isinstance(allow, list):
        raise SettingsError('"permissions.allow" is not a JSON array; fix or remove it, then run install again')
    for rule in rules:
        if rule not in allow:
            allow.append(rule)


def _drop_allow(doc, rules, record):
    """``doc`` (changed in place) without ``rules`` in ``permissions.allow``; the containers we made (the record
    says; without one, those the removal emptied) dropped once empty."""
    allow = _allow_list(doc)
    if allow is None or not rules:
        return
    perms = doc["permissions"]
    perms["allow"] = [r for r in allow if r not in rules]
    emptied = len(perms["allow"]) < len(allow) and record is None  # no record: what we emptied goes too
    if not perms["allow"] and (emptied or (record or {}).get("created_allow_key")):
        del perms["allow"]
    if not perms and (emptied or (record or {}).get("created_permissions_key")):
        del doc["permissions"]


def unmerge(doc, record=None, mark=CLAUDE_MARKS, allow=()):
    """A copy of ``doc`` without anything of ours.

    ``record`` is the install record (see :func:`plan_install`): it says which
    containers we created (dropped again once empty), which permission rules we
    added and which status line to restore.  Without one, containers emptied by
    the removal are dropped, ``allow`` (the rules we would add) are taken out and
    our status line is simply removed.
    """
    doc = copy.deepcopy(doc)
    known = record is not None
    _drop_allow(doc, record.get("allow_added") or () if known else allow, record)
    created_events = set(record.get("created_events", ())) if known else set()
    hooks = doc.get("hooks")
    if isinstance(hooks, dict):
        removed = False
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept = _strip_ours(groups, mark)
            changed = kept != groups
            removed = removed or changed
            if not kept and ((known and event in created_events) or (not known and changed)):
                del hooks[event]
            else:
                hooks[event] = kept
        if not hooks and ((known and record.get("created_hooks_key")) or (not known and removed)):
            del doc["hooks"]
    if is_our_statusline(doc.get("statusLine")):
        carried = embedded_chain(doc["statusLine"])
        if carried is not None:
            doc["statusLine"] = carried  # exact, and whatever the record says
        elif known and record.get("statusline_had_key"):
            doc["statusLine"] = copy.deepcopy(record.get("statusline_chain"))
        else:
            del doc["statusLine"]
    return doc


# -- whole-file plans ----------------------------------------------------------

def plan_install(old, rendered, previous=None, where="settings.json", mark=CLAUDE_MARKS):
    """What install writes: ``(new_bytes, record)``.

    ``old`` is the file's bytes (None when absent); ``previous`` the record of
    an earlier install.  ``new_bytes == old`` means nothing to do.  The record
    holds what uninstall needs: the original bytes when they are known exactly,
    the sha256 of what we wrote, which containers we created, and the user's
    status line (``statusline_chain``) for ours to run.

    Codex's hooks.json has the same hook table and no status line: ``rendered``
    without ``statusLine``, and ``mark`` the Codex entry's import.
    """
    if old is None:
        text, doc, indent = None, {}, 2
    else:
        text = decode(old, where)
        doc = parse(text, where)
        indent = detect_indent(text)
    prev = previous or None

    # The user's own status line: from the file itself first (ours carries it), then the record.
    current = doc.get("statusLine", _MISSING)
    if current is _MISSING:
        had, chain = False, None
    elif is_our_statusline(current):
        chain = embedded_chain(current)
        had = chain is not None
        if chain is None and prev:
            chain, had = prev.get("statusline_chain"), bool(prev.get("statusline_had_key"))
        if is_our_statusline(chain):
            chain, had = None, False  # never chain to ourselves
    else:
        had, chain = True, current
    status = "statusLine" in rendered
    if status:
        rendered = dict(rendered, statusLine=with_chain(rendered["statusLine"], chain if had else None))

    target = copy.deepcopy(doc)
    _drop_allow(target, (prev or {}).get("allow_added") or (), prev)  # (merge adds back those still wanted)
    if not rendered["hooks"]:
        # A cc-continuity plugin carries the hooks: none of ours in settings.json (Claude Code
        # does not deduplicate the two, so both would run every event twice).
        target = unmerge(target, prev, mark)
        if "statusLine" in doc:
            target["statusLine"] = doc["statusLine"]
        elif "statusLine" in target:
            del target["statusLine"]
    try:
        new_doc = merge(target, rendered, mark)
    except SettingsError as e:
        raise SettingsError("%s: %s" % (where, e)) from None
    if text is not None and new_doc == doc:
        new = old
    else:
        new = dumps(new_doc, indent).encode("utf-8")

    base = unmerge(doc, prev, mark)  # the document as it would be without us
    base_hooks = base.get("hooks")
    base_allow = _allow_list(base) or []
    record = {
        "created_hooks_key": "hooks" not in base,
        "created_events": [e for e in rendered["hooks"]
                           if not (isinstance(base_hooks, dict) and e in base_hooks)],
    }
    if rendered.get("allow"):
        record.update(allow_added=[r for r in rendered["allow"] if r not in base_allow],
                      created_permissions_key="permissions" not in base,
                      created_allow_key=not isinstance(base.get("permissions"), dict)
                      or "allow" not in base["permissions"])
    if status:  # json-able copy for older readers; the exact one travels in the status line command
        record.update(statusline_had_key=had, statusline_chain=plain(chain) if had else None)

    if not has_ours(doc, mark):
        record["original"] = text
        record["original_known"] = True
    elif prev and prev.get("original_known") and prev.get("written_sha256") == sha256(old):
        record["original"] = prev.get("original")
        record["original_known"] = True
    else:
        record["original"], record["original_known"] = None, False
    record["written_sha256"] = sha256(new)
    return new, record


def plan_uninstall(current, record=None, where="settings.json", mark=CLAUDE_MARKS, allow=()):
    """What uninstall leaves: bytes to write, ``None`` to delete the file, or ``current`` (nothing to do).

    Exact original bytes when the file is still what we wrote; otherwise only
    our parts are removed from whatever is there now.
    """
    if current is None:
        return None
    if record and record.get("original_known") and record.get("written_sha256") == sha256(current):
        original = record.get("original")
        return None if original is None else original.encode("utf-8")
    text = decode(current, where)
    doc = parse(text, where)
    new_doc = unmerge(doc, record, mark, allow)
    if new_doc == doc:
        return current
    if not new_doc and record and record.get("original_known") and record.get("original") is None:
        return None  # we created the file and nothing else is left in it
    return dumps(new_doc, detect_indent(text)).encode("utf-8")
