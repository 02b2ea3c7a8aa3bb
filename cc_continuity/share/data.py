"""What a git remote carries, read as data: names and fields checked by shape, type and range.

A remote, and whoever can push to it, is not the user.  Everything a claim reads from it passes
through here before it is stored, shown or used: a ref's machine id, project key and checkpoint
id must have the shapes this program makes (anything else is refused, one line); the JSON files
of a publish commit keep only the fields the claim uses, each of its own type and range (a bad
field is dropped, with one line in ``share.log``, never a crash); the publisher's effect records
keep their digests and outcomes only, never an override.  Free text that survives (an author, a
commit subject, a todo, a prompt) is made plain (no control or direction characters), cut to a
length, and is shown to the successor only inside the fence (``texts.fenced``), labelled as the
remote's.  Standard library only.
"""

import re

from .. import log
from ..rotation.texts import MACHINE_ID_LEN, MACHINE_ID_PATTERN, plain as plain  # (plain: where callers look)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

LOG = "share.log"
MACHINE_RE = re.compile(MACHINE_ID_PATTERN + r"\Z")  # (its one definition: rotation/texts.py)
KEY_RE = re.compile(r"(?:[a-z0-9](?:[a-z0-9_-]{0,38}[a-z0-9])?)-[0-9a-f]{10}\Z")  # paths.project_key
CID_RE = re.compile(r"cp-[0-9]{3,7}(?:-[0-9]{1,4})?\Z")  # session.checkpoint_id, and a taken one's -k
FORK_RE = re.compile(r"(cp-[0-9]{3,7}(?:-[0-9]{1,4})?)-fork-(%s)\Z" % MACHINE_ID_PATTERN)
SHA_RE = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
DIGEST_RE = re.compile(r"[0-9a-f]{64}\Z")  # effects.key
TOOL_ID_RE = re.compile(r"[A-Za-z0-9_.:-]{1,100}\Z")
NAME_MAX = 200  # a ref name's part longer than this is refused (git worktree add fails on long names)

def name_problem(machine: str, key: str, cid: str) -> "str | None":
    """Why a published ref's parts are not ours to take (None: they have our shapes)."""
    if not MACHINE_RE.match(machine):
        return "its machine id is not %d hex digits" % MACHINE_ID_LEN
    if not KEY_RE.match(key):
        return "its project key is not <slug>-<10 hex digits>"
    if not CID_RE.match(cid):
        return "its checkpoint id is not cp-NNN or cp-NNN-k"
    return None


def refused(ref: str, why: str) -> str:
    """The one line that says a remote's ref was refused (logged; returned for the caller to show)."""
    line = "refused %s: %s" % (plain(ref, NAME_MAX), why)
    log.write(LOG, line)
    return line


# -- fields ----------------------------------------------------------------------------------------

def _num(lo: float, hi: float) -> "Callable[[object], bool]":
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi


def _int(lo: int, hi: int) -> "Callable[[object], bool]":
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _str(limit: int, pattern: "re.Pattern[str] | None" = None) -> "Callable[[object], bool]":
    return lambda v: isinstance(v, str) and len(v) <= limit and (pattern is None or bool(pattern.match(v)))


_TIME = _num(0, 4e10)  # seconds since the epoch, up to the year 3237
_BOOL = (lambda v: isinstance(v, bool))
_SHA = _str(64, SHA_RE)
_BRANCH = _str(255, re.compile(r"[^\x00-\x20\x7f~^:?*\[\\]+\Z"))
_PATH = _str(4096, re.compile(r"[^\x00]+\Z"))


class Reader:
    """Checks one file's fields; what it drops is logged, one line each (``what``: the file's name)."""

    def __init__(self, what: str, source: str) -> None:
        self.what, self.source, self.dropped = what, source, []  # type: ignore[var-annotated]

    def drop(self, field: str, why: str) -> None:
        self.dropped.append(field)
        log.write(LOG, "%s of %s: field %s dropped (%s)" % (self.what, plain(self.source, NAME_MAX), field, why))

    def pick(self, doc: "Mapping[str, Any]", out: "dict[str, Any]", field: str, ok: "Callable[[object], bool]",
             fix: "Callable[[Any], Any] | None" = None) -> None:
        if field not in doc or doc[field] is None:
            return
        v = doc[field]
        if ok(v):
            out[field] = fix(v) if fix else v
        else:
            self.drop(field, "a %s, not of its type or range" % type(v).__name__)

    def rows(self, doc: "Mapping[str, Any]", field: str, limit: int,
             row: "Callable[[Any], dict[str, Any] | None]") -> "list[dict[str, Any]]":
        """A list of objects, each checked by ``row`` (None: dropped); a list that is not one is dropped whole."""
        v = doc.get(field)
        if v is None:
            return []
        if not isinstance(v, list):
            self.drop(field, "a %s, not a list" % type(v).__name__)
            return []
        out = []
        bad = 0
        for x in v[:limit]:
            got = row(x) if isinstance(x, dict) else None
            if got is None:
                bad += 1
            else:
                out.append(got)
        if bad:
            self.drop("%s[%d of %d]" % (field, bad, min(len(v), limit)), "items not of their shape")
        return out


def _obj(v: object) -> "Mapping[str, Any]":
    return v if isinstance(v, dict) else {}


def facts(doc: "Mapping[str, Any]", source: str) -> "dict[str, Any]":
    """A remote facts.json (the checkpoint's snapshot.json): only what the claim and bootstrap read."""
    r = Reader("facts.json", source)
    out: "dict[str, Any]" = {}
    r.pick(doc, out, "requested_at", _TIME)
    r.pick(doc, out, "at", _TIME)
    reading = doc.get("reading")
    if reading is not None:
        if isinstance(reading, dict):
            got: "dict[str, Any]" = {}
            r.pick(reading, got, "percent", _num(0, 1000))
            r.pick(reading, got, "tokens", _int(0, 1 << 40))
            r.pick(reading, got, "window", _int(1, 1 << 40))
            out["reading"] = got
        else:
            r.drop("reading", "a %s, not an object" % type(reading).__name__)
    g0 = doc.get("git")
    if g0 is not None and not isinstance(g0, dict):
        r.drop("git", "a %s, not an object" % type(g0).__name__)
    g = _obj(g0)
    if g:
        git: "dict[str, Any]" = {}
        r.pick(g, git, "git", _BOOL)
        r.pick(g, git, "branch", _BRANCH)
        r.pick(g, git, "head", _SHA)
        r.pick(g, git, "dirty_count", _int(0, 1 << 31))

        def commit(c: "Mapping[str, Any]") -> "dict[str, Any] | None":
            if not (_SHA(c.get("sha")) and isinstance(c.get("subject"), str)):
                return None
            return {"sha": c["sha"], "subject": plain(c["subject"], 200)}

        def dirty(d: "Mapping[str, Any]") -> "dict[str, Any] | None":
            if not _PATH(d.get("path")):
                return None
            return {"path": d["path"], **({"status": d["status"]} if _str(4)(d.get("status")) else {})}

        git["recent_commits"] = r.rows(g, "recent_commits", 20, commit)
        git["dirty"] = r.rows(g, "dirty", 2000, dirty)
        out["git"] = git

    def todo(t: "Mapping[str, Any]") -> "dict[str, Any] | None":
        if not (_str(40)(t.get("status")) and isinstance(t.get("content"), str)):
            return None
        return {"status": plain(t["status"], 40), "content": plain(t["content"], 300)}

    def prompt(p: "Mapping[str, Any]") -> "dict[str, Any] | None":
        if not isinstance(p.get("text"), str):
            return None
        return {"text": plain(p["text"], 600)}

    out["todos"] = r.rows(doc, "todos", 50, todo)
    out["prompts"] = r.rows(doc, "prompts", 20, prompt)
    return out


def manifest(doc: "Mapping[str, Any]", source: str) -> "dict[str, Any]":
    """A remote manifest.json: its times, validation summary and degraded flag (its git entry is made here)."""
    r = Reader("manifest.json", source)
    out: "dict[str, Any]" = {}
    r.pick(doc, out, "verified_at", _TIME)
    r.pick(doc, out, "degraded", _BOOL)
    r.pick(doc, out, "session", _str(80, re.compile(r"[A-Za-z0-9_.-]+\Z")))
    h = doc.get("handoff")
    if h is not None:
        if isinstance(h, dict):
            got: "dict[str, Any]" = {}
            r.pick(h, got, "tries", _int(0, 100))
            r.pick(h, got, "validation", _str(40, re.compile(r"[a-z_ -]+\Z")))
            out["handoff"] = got
        else:
            r.drop("handoff", "a %s, not an object" % type(h).__name__)
    return out


def publisher(doc: "Mapping[str, Any]", source: str) -> "dict[str, Any]":
    """A remote publisher.json: who and when (the author is text: shown plain and fenced only)."""
    r = Reader("publisher.json", source)
    out: "dict[str, Any]" = {}
    r.pick(doc, out, "machine", _str(MACHINE_ID_LEN, MACHINE_RE))
    r.pick(doc, out, "author", _str(300), lambda v: plain(v, 120))
    r.pick(doc, out, "session", _str(80, re.compile(r"[A-Za-z0-9_.-]+\Z")))
    r.pick(doc, out, "published_at", _TIME)
    r.pick(doc, out, "verified_at", _TIME)
    r.pick(doc, out, "head", _SHA)
    r.pick(doc, out, "snapshot", _SHA)
    r.pick(doc, out, "branch", _BRANCH, lambda v: plain(v, 120))
    return out


def claim(doc: "Mapping[str, Any]", source: str) -> "dict[str, Any]":
    """A lease's claim.json (who holds it): shown in one line, made plain by ``share.describe``."""
    r = Reader("claim.json", source)
    out: "dict[str, Any]" = {}
    r.pick(doc, out, "machine", _str(MACHINE_ID_LEN, MACHINE_RE))
    r.pick(doc, out, "author", _str(300), lambda v: plain(v, 120))
    r.pick(doc, out, "at", _TIME)
    r.pick(doc, out, "renewed_at", _TIME)
    r.pick(doc, out, "local_successor", _str(80), lambda v: plain(v, 80))
    r.pick(doc, out, "project_key", _str(60, KEY_RE))
    r.pick(doc, out, "checkpoint", _str(20, CID_RE))
    r.pick(doc, out, "published_by", _str(MACHINE_ID_LEN, MACHINE_RE))
    return out


# -- the publisher's effect records (holds/effects.py) -------------------------------------------------

EFFECTS_FILE = "effects.json"
EFFECTS_MAX = 2000  # records published with a checkpoint (the newest)
_PHASES = ("intent", "done", "not_run")


def effect_records(recs: "list[dict[str, Any]]") -> "list[dict[str, Any]]":
    """What of the publisher's effect records travels: digests, phases, outcomes; no text, no override."""
    out = []
    for r in recs:
        if r.get("ph") not in _PHASES or not DIGEST_RE.match(str(r.get("k"))) or not TOOL_ID_RE.match(str(r.get("tu"))):
            continue
        row: "dict[str, Any]" = {"ph": r["ph"], "k": r["k"], "tu": r["tu"]}
        if _TIME(r.get("ts")):
            row["ts"] = r["ts"]
        if r["ph"] == "done":
            row["ok"] = r.get("ok") is True
            if _int(-1 << 31, 1 << 31)(r.get("exit")):
                row["exit"] = r["exit"]
            if r.get("interrupted") is True:
                row["interrupted"] = True
        out.append(row)
    return out[-EFFECTS_MAX:]


def imported_effects(doc: object, source: str, machine: str, cid: str) -> "list[dict[str, Any]]":
    """A remote effects.json as records for this machine's store: they can only add holds.

    An override (``repeat <code>``) never comes from a remote: only intents and their outcomes are
    taken.  Each is named for the publishing machine (the hold's sentence says where it ran), and
    no transcript path or session id of the remote is kept (a hold never reads a file a remote names)."""
    rows = doc.get("records") if isinstance(doc, dict) else None
    if rows is None:
        return []
    if not isinstance(rows, list):
        log.write(LOG, "effects.json of %s: records dropped (not a list)" % plain(source, NAME_MAX))
        return []
    kept = effect_records([x for x in rows[-EFFECTS_MAX:] if isinstance(x, dict)])
    if len(kept) < min(len(rows), EFFECTS_MAX):
        log.write(LOG, "effects.json of %s: %d record(s) dropped (not of their shape)" % (
            plain(source, NAME_MAX), min(len(rows), EFFECTS_MAX) - len(kept)))
    who = "on machine %s (before checkpoint %s was shared)" % (machine, cid)
    for row in kept:
        row["tu"] = "remote-%s-%s" % (machine, row["tu"])  # never equal to a local call's id
        row["remote"] = machine
        if row["ph"] == "intent":
            row["n"] = who
    return kept
