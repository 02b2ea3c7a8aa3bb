"""The handoff: its template, its validation, and the machine-written fallback.

A handoff is only as good as what can be checked: every required section is
present and non-empty, the size is within bounds, the files it names exist,
and it carries no secrets.  Problems are reported as an exact list, so the
model can fix precisely what is wrong on its next try.
"""

import os
import re

from ..digest import sha256

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (the Stop hook runs this)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# Path-like tokens worth checking: in backticks, or list items in "Files touched".
BACKTICK = re.compile(r"`([^`\n]{1,300})`")
PATHISH = re.compile(r"^(?:\.{0,2}/)?[\w@.+-]+(?:/[\w@.+-]+)*\.?[\w+-]*$")
# A token without "/" is a path only if it ends in one of these (else it is code: `os.path.join`).
FILE_EXTENSIONS = frozenset("""
py pyi js mjs cjs ts tsx jsx md rst txt json jsonl yaml yml toml ini cfg conf env lock sh bash zsh fish
go rs c h cc cpp hpp cxx java kt kts scala rb php cs swift m mm r jl lua pl ex exs erl hs ml vue svelte
html htm css scss sass less sql proto graphql gradle xml csv tsv ipynb dockerfile makefile mk cmake
tf hcl nix el clj dart zig v sv vhd asm s bat ps1 pem crt txt log patch diff
""".split())
NOT_A_PATH = frozenset(("n/a", "na", "none", "-", "--", "tbd", "todo", "nothing"))
GONE_WORDS = ("deleted", "removed", "renamed from", "(gone)", "will create", "to create", "new file", "(planned)")


SOURCED = ("current state", "how to verify")  # sections whose claims cite a source (sources.py)
SOURCE_HINT = "<text: each claim with its source, e.g. `src/app.py:42`, `src/app.py:parse`, a commit, `pytest -q` (exit 1)>"


def template(sections: list[str]) -> str:
    """The skeleton the model fills in."""
    lines = ["# Handoff", ""]
    for name in sections:
        lines += ["## %s" % name, SOURCE_HINT if normalise(name) in SOURCED else "<text>", ""]
    return "\n".join(lines)


def sections_of(text: str) -> dict[str, str]:
    """{normalised heading: body text} for every markdown heading in ``text``."""
    out: dict[str, str] = {}
    current: str | None = None
    body: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else HEADING.match(line)
        if m:
            if current is not None:
                out.setdefault(current, "\n".join(body).strip())
            current = normalise(m.group(2))
            body = []
        elif current is not None:
            body.append(line)
    if current is not None:
        out.setdefault(current, "\n".join(body).strip())
    return out


def normalise(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", heading.lower()).strip()


def named_paths(text: str, sections: dict[str, str]) -> list[str]:
    """Tokens in the handoff that look like file paths (backticked, or listed under Files touched)."""
    found: list[tuple[str, str]] = []
    for m in BACKTICK.finditer(text):
        tok = m.group(1).strip()
        line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end()) if text.find("\n", m.end()) != -1 else len(text)]
        found.append((tok, line))
    files = sections.get(normalise("Files touched"), "")
    for line in files.splitlines():
        item = line.strip().lstrip("-*+").strip()
        tok = item.split()[0].strip("`,;:") if item.split() else ""
        if tok:
            found.append((tok, line))
    out: list[str] = []
    seen: set[str] = set()
    for tok, line in found:
        tok = tok.split(":")[0] if re.search(r":\d+$", tok) else tok  # file.py:42
        if tok in seen or "://" in tok or " " in tok or tok.lower() in NOT_A_PATH or not PATHISH.match(tok):
            continue
        if "/" not in tok and tok.rsplit(".", 1)[-1].lower() not in FILE_EXTENSIONS:
            continue  # a bare word or a dotted code name, not a file
        if any(w in line.lower() for w in GONE_WORDS):
            continue
        seen.add(tok)
        out.append(tok)
    return out


class Validation:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.missing_paths: list[str] = []
        self.sha256: str | None = None
        self.chars = 0
        self.sources: "dict[str, Any] | None" = None  # sources.apply: claims, cited, uncited, wrong

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> "dict[str, Any]":
        out = {"ok": self.ok, "problems": self.problems, "missing_paths": self.missing_paths,
               "sha256": self.sha256, "chars": self.chars}
        if self.sources is not None:
            out["sources"] = self.sources
        return out


def validate(path: str, root: str, cfg: "Config | Mapping[str, Any]", max_read: int = 1 << 21) -> Validation:
    """Check the handoff at ``path`` against ``cfg``; paths resolve against ``root``."""
    from .. import safefile

    v = Validation()
    try:
        raw = safefile.read_regular(path, max_read + 1)  # never through a link, never from a FIFO
    except FileNotFoundError:
        v.problems.append("the handoff file %s does not exist yet" % path)
        return v
    except safefile.NotRegular as e:
        v.problems.append("the handoff must be a plain file written with the Write tool: %s" % e)
        return v
    except OSError as e:
        v.problems.append("the handoff file %s cannot be read (%s)" % (path, e.strerror))
        return v
    v.sha256 = sha256(raw).hexdigest()
    text = raw.decode("utf-8", "replace")
    v.chars = len(text)
    if v.chars < cfg["handoff_min_chars"]:
        v.problems.append("it is %d characters; the minimum is %d" % (v.chars, cfg["handoff_min_chars"]))
    if v.chars > cfg["handoff_max_chars"]:
        v.problems.append("it is %d characters; the maximum is %d (shorten it)" % (v.chars, cfg["handoff_max_chars"]))
    secs = sections_of(text)
    for name in cfg["handoff_sections"]:
        body = secs.get(normalise(name))
        if body is None:
            v.problems.append('section "## %s" is missing' % name)
        elif not _has_content(body):
            v.problems.append('section "## %s" is empty (write "none" if there is nothing)' % name)
    for tok in named_paths(text, secs):
        full = tok if tok.startswith("/") else os.path.join(root, tok)
        if not os.path.exists(full):
            v.missing_paths.append(tok)
    if v.missing_paths:
        v.problems.append("these named paths do not exist (relative to %s): %s" % (root, ", ".join(v.missing_paths[:20])))
    from .. import redact

    hits = redact.find_secrets(text)
    if hits:
        where = ["%s on line %d" % (kind, text.count("\n", 0, start) + 1) for kind, start, _ in hits[:10]]
        v.problems.append("it contains what looks like a secret (%s); replace it with a description" % "; ".join(where))
    return v


def _has_content(body: str) -> bool:
    stripped = re.sub(r"<!--.*?-->", "", body, flags=re.S).strip()
    return bool(stripped) and stripped not in ("<text>", SOURCE_HINT, "...", "…", "TODO", "TBD")


def machine_handoff(snap: "dict[str, Any]", sections: list[str], draft_problems: list[str] | None = None) -> str:
    """A handoff written from snapshot facts when the model could not produce a valid one."""
    g = snap.get("git") or {}
    prompts = snap.get("prompts") or []
    todos = snap.get("todos") or []
    fill = {
        "goal": "\n".join("- %s" % p["text"] for p in prompts[-3:]) or "unknown (no user prompts recorded)",
        "done so far": "\n".join("- %s %s" % (c.get("sha", "")[:9], c.get("subject", ""))
                                 for c in (g.get("recent_commits") or [])[:8]) or "unknown",
        "current state": _git_state(g),
        "next steps": "\n".join("- [%s] %s" % (t["status"], t["content"]) for t in todos)
                      or "Re-read the goal above and the changed files, then continue the most recent request.",
        "decisions and constraints": "not recorded (machine handoff)",
        "open questions": "none recorded",
        "files touched": "\n".join("- %s (%s)" % (d.get("path"), d.get("status")) for d in (g.get("dirty") or [])[:40])
                         or "none",
        "how to verify": "git status; git diff; run the project's tests",
    }
    lines = ["# Handoff (machine-written)", "",
             "The session's model did not produce a valid handoff%s; this one was written from "
             "machine-collected facts and is marked degraded." %
             (" (%s)" % "; ".join(draft_problems[:5]) if draft_problems else "")]
    for name in sections:
        lines += ["", "## %s" % name, fill.get(normalise(name), "not recorded (machine handoff)")]
    from .. import redact  # prompts, commit subjects and todo items can all hold a secret

    return redact.redact("\n".join(lines) + "\n")


def _git_state(g: "dict[str, Any]") -> str:
    if not g.get("git"):
        return "not a git repository"
    parts = ["branch %s at %s" % (g.get("branch") or "(detached)", (g.get("head") or "no commits")[:12])]
    if g.get("dirty_count"):
        parts.append("%d changed or untracked files" % g["dirty_count"])
    ds = g.get("diffstat") or {}
    if isinstance(ds, dict) and ds.get("files"):
        parts.append("diff: %s files, +%s -%s" % (ds.get("files"), ds.get("insertions"), ds.get("deletions")))
    return "; ".join(parts)
