"""Sources: each claim of a handoff's "Current state" and "How to verify", checked for something re-checkable.

A handoff that keeps its conclusions but drops their sources helps a successor little, so
every claim (a list item, or a sentence) in those sections should cite one of:

- a file with a line or a symbol: `src/app.py:42`, `src/app.py:12-30`, `src/app.py:parse`;
- a commit: `1a2b3c4` (7 to 40 hex digits; without backticks it counts only when it is one);
- a command with its exit code: `python3 -m pytest -q` ... exit 1.

:func:`check` looks at the citations given: the file exists and has that line, the symbol
occurs in it, the commit is in the repository, the command's last run in this session's
record (the ``tool`` ledger lines, effects.py / claims.py) exited with the code cited.  A
citation that does not hold is a problem (like a named path that does not exist); a claim
that cites nothing is *uncited*: reported, and a problem only with
``handoff_require_sources`` (the user's config: a rejection costs a model turn).
"""

import os
import re

from . import claims
from .. import ledger, safefile, session
from ..snapshot import worktree
from .handoff import BACKTICK, PATHISH, normalise, sections_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SECTIONS = ("Current state", "How to verify")
AT_LINE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?$")
AT_SYMBOL = re.compile(r"^(.+?):([A-Za-z_][\w.]*)(?:\(\))?$")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
BARE_COMMIT = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-]|\.\w)")
EXIT = re.compile(r"\bexit(?:s|ed)?(?: code| status)?:?\s+(?:with\s+)?(-?\d+)", re.I)
TRIVIAL = frozenset(("none", "n/a", "na", "nothing", "-", "nothing yet", "none yet"))
READ_CAP = 1 << 20
MAX_COMMITS = 10


class Result:
    def __init__(self) -> None:
        self.claims = 0
        self.cited = 0
        self.uncited: "list[str]" = []
        self.wrong: "list[str]" = []

    def as_dict(self) -> "dict[str, Any]":
        return {"claims": self.claims, "cited": self.cited, "uncited": self.uncited[:10], "wrong": self.wrong[:10]}


def claims_in(body: str) -> "list[str]":
    """The claims of a section: its list items, and the sentences of its other lines."""
    out: "list[str]" = []
    for line in body.splitlines():
        text = line.strip().lstrip("-*+").strip()
        if not text or text.startswith("#"):
            continue
        spans: "list[str]" = []
        masked = BACKTICK.sub(lambda m: "\0%d\0" % (spans.append(m.group(0)) or len(spans) - 1), text)
        for part in re.split(r"(?<=[.!?;])\s+(?=[A-Z`\0])", masked):
            part = re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], part).strip()
            if len(part) >= 12 and part.lower().rstrip(".") not in TRIVIAL:
                out.append(part)
    return out


def _lines_of(path: str, root: str) -> "list[str] | None":
    """The file's lines (a repository's file: links only inside ``root``, no FIFO, a size cap); None: not there."""
    try:
        return safefile.read_bounded(path, READ_CAP, inside=root).decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return None
    except OSError:
        return []  # a link out, a FIFO, too large...: cited, and nothing to check it against


def _path_cite(tok: str, root: str) -> "tuple[bool, str | None] | None":
    """(cited, problem) for `path:line` / `path:symbol`, None when ``tok`` is neither."""
    m = AT_LINE.match(tok) or AT_SYMBOL.match(tok)
    if not m or not PATHISH.match(m.group(1)) or "." not in m.group(1).rsplit("/", 1)[-1] and "/" not in m.group(1):
        return None
    rel = m.group(1)
    full = os.path.normpath(rel if rel.startswith("/") else os.path.join(root, rel))
    if os.path.commonpath([full, os.path.normpath(root)]) != os.path.normpath(root):
        return True, None  # outside the project: not read
    lines = _lines_of(full, root)
    if lines is None:
        return True, "`%s` cites %s, which does not exist" % (tok, rel)
    if not lines:
        return True, None
    if m.re is AT_LINE:
        last = int(m.group(3) or m.group(2))
        if not 1 <= int(m.group(2)) <= last <= len(lines):
            return True, "`%s` cites line %s of %s, which has %d lines" % (tok, m.group(3) and "%s-%s" % (
                m.group(2), m.group(3)) or m.group(2), rel, len(lines))
        return True, None
    sym = m.group(2).rsplit(".", 1)[-1]
    if not any(re.search(r"(?<!\w)%s(?!\w)" % re.escape(sym), ln) for ln in lines):
        return True, "`%s` cites %s in %s, which does not contain it" % (tok, sym, rel)
    return True, None


def _commit_cite(sha: str, root: str) -> "str | None":
    try:
        done = worktree._git(["cat-file", "-e", sha + "^{commit}"], root, timeout=5)
    except (OSError, ValueError):
        return None  # git unavailable: nothing to say against the citation
    return None if done.returncode == 0 else "commit %s is not in this repository" % sha


def _last_exit(cmd: str, tools: "list[dict[str, Any]]") -> "tuple[bool, Any]":
    want = " ".join(cmd.split())
    found, code = False, None
    for r in tools:
        tgt = r.get("target")
        if r.get("tool") == "Bash" and isinstance(tgt, str) and " ".join(tgt.split()) == want:
            found, code = True, r.get("exit")
    return found, code


def check(text: str, root: str, tools: "list[dict[str, Any]]", sections: "tuple[str, ...]" = SECTIONS) -> Result:
    """The citations of ``text``'s claims in ``sections``, checked against ``root`` and the record ``tools``."""
    res = Result()
    commits = 0  # git calls made: at most MAX_COMMITS a handoff (each is a process in the Stop hook)
    secs = sections_of(text)
    for name in sections:
        for claim in claims_in(secs.get(normalise(name), "")):
            res.claims += 1
            cited = False
            exit_m = EXIT.search(claim)
            for m in BACKTICK.finditer(claim):
                tok = m.group(1).strip()
                got = _path_cite(tok, root)
                if got is not None:
                    cited = True
                    if got[1]:
                        res.wrong.append(got[1])
                elif COMMIT.match(tok):
                    cited = True
                    why = _commit_cite(tok, root) if commits < MAX_COMMITS else None
                    commits += 1
                    if why:
                        res.wrong.append(why)
                elif exit_m and " " in tok:
                    cited = True
                    found, code = _last_exit(tok, tools)
                    if found and code is not None and str(code) != exit_m.group(1):
                        res.wrong.append("`%s` is cited with exit %s, but its last run in this session exited %s" % (
                            tok[:80], exit_m.group(1), code))
            for sha in BARE_COMMIT.findall(BACKTICK.sub("", claim))[:3]:
                if commits < MAX_COMMITS and not _commit_cite(sha, root):
                    cited = True  # a bare hex word counts only when it is a commit (it may be any digest)
                commits += 1
            if cited:
                res.cited += 1
            else:
                res.uncited.append(claim[:160])
    return res


def problems(res: Result, required: bool) -> "list[str]":
    """The writer's problems: every citation that does not hold, and (``required``) every uncited claim."""
    out = ["a citation does not hold: %s" % w for w in res.wrong]
    if required and res.uncited:
        out.append("these claims cite nothing re-checkable (a file with a line or symbol like `src/app.py:42` or "
                   "`src/app.py:parse`, a commit, or a command with its exit code like `pytest -q` (exit 1)): %s"
                   % "; ".join('"%s"' % c for c in res.uncited[:8]))
    return out


def apply(v: "Any", path: str, root: str, sdir: str, cfg: "Any") -> "Result | None":
    """Add the sources' verdict to ``v``, the handoff.Validation of the file at ``path``."""
    if v.sha256 is None:
        return None  # no file to read
    try:
        text = safefile.read_regular(path, cfg["handoff_max_chars"] * 4 + 1).decode("utf-8", "replace")
    except OSError:
        return None
    res = check(text, root, claims.tool_lines(ledger.read(session.ledger_path(sdir))))
    required = bool(cfg.get("handoff_require_sources"))
    found = problems(res, required)
    if not required and v.problems and res.uncited:  # going back to the writer anyway: say it now, for free
        found.append("(optional) these claims cite nothing re-checkable: %s" % "; ".join(
            '"%s"' % c for c in res.uncited[:8]))
    v.problems.extend(found)
    v.sources = res.as_dict()
    return res
