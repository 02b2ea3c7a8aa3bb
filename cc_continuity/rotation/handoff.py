"""The handoff: its template, its validation, what it says checked, and the machine-written fallback.

A handoff is only as good as what can be checked: every required section is
present and non-empty, the size is within bounds, the files it names exist,
and it carries no secrets.  Problems are reported as an exact list, so the
model can fix precisely what is wrong on its next try.  Two checks look at what
it says (below, "What it claims" and "Where its claims come from"):

* no self-certification: "the tests pass", "the build is green", "deployed",
  "pushed" are checked against the session's tool record (:func:`check_claims`);
* sources: each claim of "Current state" and "How to verify" should cite something
  re-checkable, and what it cites is checked (:func:`check_sources`).
"""

import os
import re

from .. import ledger, safefile, session
from ..holds import classify, shell
from ..digest import sha256
from .texts import SOURCE_HINT, SOURCED_SECTIONS

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
        self.sources: "dict[str, Any] | None" = None  # apply_sources: claims, cited, uncited, wrong

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




# -- What it claims -----------------------------------------------------------------------------
#
# No self-certification: what a handoff says about verification, checked against the ledger.
#
# A handoff is the model's own account.  When it says "the tests pass", "the build is green",
# "deployed" or "pushed", :func:`check_claims` looks in the session's ledger (the ``tool`` lines: the
# command, its exit code, what ran after it) for the last command that would show it, read as a shell
# reads it (:mod:`cc_continuity.holds.shell`), and gives each claim a status:
#
# - ``confirmed``: the runner itself (a test runner, a build, a deploy, ``git push``; not ``echo``,
#   ``grep``, an install, ``--collect-only``, ``--dry-run``, ``--version``, ``clean``) is among what the
#   call's exit status proves (not behind ``||``, not before a ``|`` without ``pipefail``), it exited 0,
#   and (tests, builds) nothing after it may have changed files: no Edit or Write, no Bash call the
#   shell reading cannot show to be read-only;
# - ``contradicted``: it exited non-zero, or a file was edited after it;
# - ``unchecked``: nothing in the record proves it (no such command, one whose exit status is not its
#   own, or a later command that may have changed files).
#
# Only affirmative sentences make claims: a negation ("none of the tests pass"), a condition ("merge
# when tests pass") or an instruction ("make sure tests pass") does not.  The writer sees what is not
# confirmed while it can still fix the handoff (turn.check_handoff); the successor's bootstrap lists it
# apart from what the machine confirmed (:func:`claims_section`).

# claim -> (phrases that make it, whether a later change voids it)
CLAIMS: "dict[str, tuple[tuple[str, ...], bool]]" = {
    "tests pass": (("tests pass", "tests are passing", "tests passing", "tests passed", "tests are green",
                    "tests green", "test suite passes", "suite is green", "all green", "tests now pass",
                    "tests all pass", "tests succeed"), True),
    "build is green": (("build is green", "build passes", "build succeeds", "build is passing", "builds cleanly",
                        "build succeeded", "build passed", "ci is green", "compiles cleanly"), True),
    "deployed": (("deployed", "is live", "released to"), False),
    "pushed": (("pushed",), False),
}
# Words that make a sentence no claim: negations, conditions, instructions, hedges.
NOT_A_CLAIM = frozenset((
    "not", "no", "none", "never", "neither", "nor", "without", "cannot", "can't", "cant", "don't", "dont", "doesn't",
    "doesnt", "didn't", "didnt", "isn't", "isnt", "aren't", "arent", "wasn't", "wasnt", "weren't", "werent", "won't",
    "wont", "haven't", "havent", "hasn't", "hasnt", "fail", "fails", "failing", "failed", "if", "when", "whenever",
    "once", "until", "unless", "after", "before", "should", "must", "need", "needs", "will", "would", "could",
    "might", "may", "expect", "expected", "expecting", "hopefully", "assuming", "todo", "yet", "whether", "until",
    "ensure", "unable", "pending", "next", "wait", "waiting"))
IMPERATIVE = frozenset(("make", "ensure", "verify", "check", "run", "merge", "confirm", "get", "keep", "have",
                        "let", "see", "wait", "do", "try", "push", "deploy"))
EDIT_TOOLS = frozenset(("Write", "Edit", "MultiEdit", "NotebookEdit"))
_NO_RUN = ("--collect-only", "--co", "--dry-run", "--dryrun", "--version", "-V", "--help", "-h", "--list",
           "--list-tests", "--setup-plan", "--fixtures", "-n")
_TEST_PROGS = frozenset(("pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest", "tox", "nox",
                         "ava", "karma", "cypress", "playwright", "bats", "prove", "nosetests", "trial"))
_BUILD_PROGS = frozenset(("tsc", "ninja", "webpack", "vite", "esbuild", "rollup", "javac", "gcc", "g++", "clang",
                          "cc", "rustc"))
_BUILD_TARGET_SKIP = frozenset(("clean", "distclean", "test", "check", "lint", "fmt", "format", "help", "install"))


def _sentences(text: str) -> "list[str]":
    out: "list[str]" = []
    for line in text.lower().replace("\r", "").split("\n"):
        for s in line.replace("; ", ". ").replace("? ", "?. ").replace("! ", ". ").split(". "):
            if s.strip():
                out.append(s.strip())
    return out


def _affirms(sentence: str) -> bool:
    """Is ``sentence`` a statement of fact: no negation, condition, instruction or question?"""
    if sentence.rstrip().endswith("?"):
        return False
    words = "".join(c if c.isalnum() or c in "'" else " " for c in sentence.replace("\u2019", "'")).split()
    if not words or words[0].strip("'") in IMPERATIVE or (words[0] == "please"):
        return False
    return not any(w.strip("'") in NOT_A_CLAIM for w in words)


def claimed(text: str) -> "list[str]":
    """The claims a handoff makes (an affirmative sentence with one of the phrases), in CLAIMS order."""
    found = set()
    for s in _sentences(text):
        if not _affirms(s):
            continue
        for name, (phrases, _) in CLAIMS.items():
            if any(p in s for p in phrases):
                found.add(name)
    return [n for n in CLAIMS if n in found]


def _runs(claim: str, words: "list[str]") -> bool:
    """Do ``words`` (one command, unwrapped) run what would show ``claim``?"""
    if not words:
        return False
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("python", "python3", "py") and args[:1] == ["-m"] and len(args) > 1:
        prog, args = args[1], args[2:]
    if prog in ("bundle", "poetry", "pipenv", "uv", "hatch", "pdm") and args[:1] in (["exec"], ["run"]) and len(args) > 1:
        return _runs(claim, args[1:])
    if any(a in _NO_RUN or a.startswith("--dry-run=") for a in args):
        return False
    at, sub = classify.subcommand(prog, args)
    rest = [a for a in args[at + 1:] if not a.startswith("-")] if sub is not None else []
    if claim == "tests pass":
        if prog in _TEST_PROGS or prog == "unittest":
            return True
        if prog in ("npm", "yarn", "pnpm", "bun"):
            return sub in ("test", "t") or (sub == "run" and bool(rest) and rest[0].startswith("test"))
        if prog in ("go", "cargo", "mix", "dotnet", "deno", "zig", "swift", "flutter", "dart", "mvn", "gradle",
                    "./gradlew", "gradlew", "rake", "lein", "sbt", "stack", "cabal"):
            return sub in ("test", "check", "verify") or (prog == "rake" and sub == "spec")
        if prog == "make":
            targets = [a for a in args[at:] if not a.startswith("-") and "=" not in a]
            return any(t in ("test", "tests", "check", "ci") for t in targets)
        return False
    if claim == "build is green":
        if prog in _BUILD_PROGS:
            return True
        if prog in ("npm", "yarn", "pnpm", "bun"):
            return sub == "build" or (sub == "run" and bool(rest) and rest[0].startswith("build"))
        if prog in ("cargo", "go", "dotnet", "bazel", "gradle", "./gradlew", "swift", "zig", "stack", "cabal"):
            return sub in ("build", "assemble")
        if prog == "mvn":
            return sub in ("package", "install", "compile", "verify")
        if prog == "make":
            targets = [a for a in args[at:] if not a.startswith("-") and "=" not in a]
            return not targets or any(t not in _BUILD_TARGET_SKIP for t in targets)
        if prog == "build":  # python -m build
            return True
        if prog == "cmake":
            return "--build" in args
        return False
    if claim == "pushed":
        return prog == "git" and sub == "push" and "-n" not in args
    if claim == "deployed":
        return any(e["kind"] in ("deploy", "publish") for e in classify.classify(" ".join(
            shell.quote(w) for w in words), {"local_exempt": False}))
    return False


def check_claims(text: str, tools: "list[dict[str, Any]]", skip_path: "str | None" = None) -> "list[dict[str, Any]]":
    """Each claim of ``text`` with its status and evidence, from ``tools`` (the ``tool`` ledger lines, oldest first).

    ``skip_path``: a file whose edits do not count (the handoff itself).
    """
    out: "list[dict[str, Any]]" = []
    readings: "dict[int, Any]" = {}

    def read(i: int) -> "Any":
        if i not in readings:
            readings[i] = shell.read(str(tools[i].get("target")))
        return readings[i]

    bash = [i for i, r in enumerate(tools) if r.get("tool") == "Bash" and isinstance(r.get("target"), str)]
    for name in claimed(text):
        _, changes_void = CLAIMS[name]
        last = None
        for i in bash:
            if any(_runs(name, c.words) for c in read(i).commands):
                last = i
        if last is None:
            out.append({"claim": name, "status": "unchecked",
                        "evidence": "no command that would show it ran in this session"})
            continue
        r = tools[last]
        cmd = "`%s`" % str(r.get("target"))[:80].replace("`", "'")
        code = r.get("exit")
        failed = bool(r.get("failed")) or (isinstance(code, int) and code != 0)
        proves = any(_runs(name, c.words) for c in read(last).proven)
        edited = [t.get("target") for t in tools[last + 1:] if t.get("tool") in EDIT_TOOLS
                  and isinstance(t.get("target"), str) and t.get("target") != skip_path]
        later = next((tools[i] for i in bash if i > last and shell.changes_files(read(i))), None)
        if failed and proves:
            status, why = "contradicted", "the last %s exited %s" % (cmd, code if code is not None else "with a failure")
        elif code is None and not failed:
            status, why = "unchecked", "the last %s has no recorded exit code" % cmd
        elif not proves:
            status, why = "unchecked", ("the last %s does not show it: its exit status is not the runner's own "
                                        "(a pipe without pipefail, `||`, or not the last command)" % cmd)
        elif changes_void and edited:
            status, why = "contradicted", "the last %s exited 0, but %d file%s changed after it (%s)" % (
                cmd, len(set(edited)), "" if len(set(edited)) == 1 else "s",
                ", ".join(sorted({str(p).rsplit("/", 1)[-1] for p in edited})[:5]))
        elif changes_void and later is not None:
            status, why = "unchecked", "the last %s exited 0, but a later command (`%s`) may have changed files" % (
                cmd, str(later.get("target"))[:60].replace("`", "'"))
        else:
            status, why = "confirmed", "the last %s exited 0%s" % (cmd, ", nothing changed after it" if changes_void else "")
        out.append({"claim": name, "status": status, "evidence": why})
    return out


def claim_problems(results: "list[dict[str, Any]]") -> "list[str]":
    """The contradictions, one line each, for the writer."""
    return ["the handoff says %s, but %s" % (r["claim"], r["evidence"]) for r in results if r["status"] != "confirmed"]


def claims_section(results: "list[dict[str, Any]]") -> str:
    """The bootstrap's "checked against the record" section ("" when the handoff claims nothing checkable)."""
    if not results:
        return ""
    lines = ["## The handoff's claims, checked against the record",
             "The handoff is the predecessor's own account; this is what its tool record shows."]
    for r in results:
        if r["status"] == "confirmed":
            lines.append("- confirmed by the machine: %s (%s)" % (r["claim"], r["evidence"]))
        elif r["status"] == "contradicted":
            lines.append("- claimed, not confirmed: %s — %s" % (r["claim"], r["evidence"]))
        else:
            lines.append("- claimed, not checked: %s — %s" % (r["claim"], r["evidence"]))
    return "\n".join(lines)


def tool_lines(recs: "list[dict[str, Any]]", checkpoint_id: "str | None" = None) -> "list[dict[str, Any]]":
    """The ``tool`` lines of a session's ledger up to its checkpoint ``checkpoint_id`` (all when it is not there).

    A call whose exit code was not known when its line was written (Codex records it in its rollout after
    the hook ran) has it from a later ``tool_exit`` line naming its call (``tu``)."""
    exits = {r["tu"]: r.get("exit") for r in recs if r.get("ev") == "tool_exit" and isinstance(r.get("tu"), str)}
    out = []
    for r in recs:
        if checkpoint_id is not None and r.get("ev") == "checkpoint" and r.get("id") == checkpoint_id:
            break
        if r.get("ev") == "tool":
            if r.get("exit") is None and r.get("tu") in exits:
                r = dict(r, exit=exits[r["tu"]])
            out.append(r)
    return out


def last_failing(tools: "list[dict[str, Any]]") -> "dict[str, Any] | None":
    """The last Bash ``tool`` line that failed, unless the same command passed after it."""
    failing = None
    for r in tools:
        if r.get("tool") != "Bash" or not isinstance(r.get("target"), str):
            continue
        if r.get("failed") or r.get("exit") not in (None, 0):
            failing = r
        elif failing is not None and " ".join(r["target"].lower().split()) == " ".join(failing["target"].lower().split()):
            failing = None  # the same command passed since: nothing is failing
    return failing


# -- Where its claims come from ------------------------------------------------------------------
#
# Sources: each claim of a handoff's "Current state" and "How to verify", checked for something re-checkable.
#
# A handoff that keeps its conclusions but drops their sources helps a successor little, so
# every claim (a list item, or a sentence) in those sections should cite one of:
#
# - a file with a line or a symbol: `src/app.py:42`, `src/app.py:12-30`, `src/app.py:parse`;
# - a commit: `1a2b3c4` (7 to 40 hex digits; without backticks it counts only when it is one);
# - a command with its exit code: `python3 -m pytest -q` ... exit 1.
#
# :func:`check` looks at the citations given: the file exists and has that line, the symbol
# occurs in it, the commit is in the repository, the command's last run in this session's
# record (the ``tool`` ledger lines, effects.py, check_claims) exited with the code cited.  A
# citation that does not hold is a problem (like a named path that does not exist); a claim
# that cites nothing is *uncited*: reported, and a problem only with
# ``handoff_require_sources`` (the user's config: a rejection costs a model turn).

AT_LINE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?$")
AT_SYMBOL = re.compile(r"^(.+?):([A-Za-z_][\w.]*)(?:\(\))?$")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
BARE_COMMIT = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-]|\.\w)")
EXIT = re.compile(r"\bexit(?:s|ed)?(?: code| status)?:?\s+(?:with\s+)?(-?\d+)", re.I)
TRIVIAL = frozenset(("none", "n/a", "na", "nothing", "-", "nothing yet", "none yet"))
READ_CAP = 1 << 20
MAX_COMMITS = 10


class SourcesResult:
    """What :func:`check_sources` found: claims, cited ones, the uncited and the wrong citations."""

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

        def keep(m: "re.Match[str]") -> str:  # a backticked span stays whole: it may hold a ". "
            spans.append(m.group(0))
            return "\0%d\0" % (len(spans) - 1)

        masked = BACKTICK.sub(keep, text)
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
        from ..snapshot import gitrun  # (git: only for a handoff that cites a commit)

        done = gitrun.git(["cat-file", "-e", sha + "^{commit}"], root, timeout=5)
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


def check_sources(text: str, root: str, tools: "list[dict[str, Any]]", sections: "tuple[str, ...]" = SOURCED_SECTIONS) -> SourcesResult:
    """The citations of ``text``'s claims in ``sections``, checked against ``root`` and the record ``tools``."""
    res = SourcesResult()
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


def source_problems(res: SourcesResult, required: bool) -> "list[str]":
    """The writer's problems: every citation that does not hold, and (``required``) every uncited claim."""
    out = ["a citation does not hold: %s" % w for w in res.wrong]
    if required and res.uncited:
        out.append("these claims cite nothing re-checkable (a file with a line or symbol like `src/app.py:42` or "
                   "`src/app.py:parse`, a commit, or a command with its exit code like `pytest -q` (exit 1)): %s"
                   % "; ".join('"%s"' % c for c in res.uncited[:8]))
    return out


def apply_sources(v: "Any", path: str, root: str, sdir: str, cfg: "Any") -> "SourcesResult | None":
    """Add the sources' verdict to ``v``, the handoff.Validation of the file at ``path``."""
    if v.sha256 is None:
        return None  # no file to read
    try:
        text = safefile.read_regular(path, cfg["handoff_max_chars"] * 4 + 1).decode("utf-8", "replace")
    except OSError:
        return None
    res = check_sources(text, root, tool_lines(ledger.read(session.ledger_path(sdir))))
    required = bool(cfg.get("handoff_require_sources"))
    found = source_problems(res, required)
    if not required and v.problems and res.uncited:  # going back to the writer anyway: say it now, for free
        found.append("(optional) these claims cite nothing re-checkable: %s" % "; ".join(
            '"%s"' % c for c in res.uncited[:8]))
    v.problems.extend(found)
    v.sources = res.as_dict()
    return res
