"""No self-certification: what a handoff says about verification, checked against the ledger.

A handoff is the model's own account.  When it says "the tests pass", "the build
is green", "deployed" or "pushed", :func:`check` looks in the session's ledger
(the ``tool`` lines: the command, its exit code, the files edited after it) for
the last command that would show it, and gives each claim a status:

- ``confirmed``: that command ran, exited 0, and (for tests and builds) no file
  was changed after it;
- ``contradicted``: it exited non-zero, or files changed after it (the claim is
  older than the code), or it never ran at all.

The writer sees the contradictions while it can still fix the handoff
(turn.check_handoff), and the successor's bootstrap lists them as "claimed,
not confirmed" apart from what the machine confirmed (:func:`section`).
"""

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from typing import Any

# claim -> (phrases that make it, words of a command that would show it, whether a later edit voids it)
CLAIMS: "dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]]" = {
    "tests pass": (("tests pass", "tests are passing", "tests passing", "tests passed", "tests are green",
                    "tests green", "test suite passes", "suite is green", "all green", "tests now pass",
                    "tests all pass", "tests succeed"),
                   ("pytest", "npm test", "npm run test", "yarn test", "pnpm test", "go test", "cargo test",
                    "make test", "make check", "tox", "jest", "vitest", "unittest", "rspec", "phpunit", "ctest",
                    "mvn test", "gradle test", "dotnet test", "mix test", "bun test"), True),
    "build is green": (("build is green", "build passes", "build succeeds", "build is passing", "builds cleanly",
                        "build succeeded", "build passed", "ci is green", "compiles cleanly"),
                       ("make", "npm run build", "yarn build", "pnpm build", "cargo build", "go build", "tsc",
                        "gradle build", "mvn package", "mvn install", "python -m build", "python3 -m build",
                        "dotnet build", "bazel build", "cmake --build", "ninja"), True),
    "deployed": (("deployed", "is live", "released to"),
                 ("deploy", "fly deploy", "vercel", "netlify deploy", "firebase deploy", "wrangler", "kubectl apply",
                  "helm upgrade", "terraform apply", "release"), False),
    "pushed": (("pushed",), ("git push",), False),
}
NEGATIONS = ("not ", "n't", "never", "fail", "yet to", "still need", "todo", "to do:", "unable", "until", "once ",
             "before ", "should ", "will ", "would ", "must ", "need to", "next:")
EDIT_TOOLS = frozenset(("Write", "Edit", "MultiEdit", "NotebookEdit"))


def _sentences(text: str) -> "list[str]":
    out: "list[str]" = []
    for line in text.lower().replace("\r", "").split("\n"):
        for s in line.replace("; ", ". ").split(". "):
            if s.strip():
                out.append(s.strip())
    return out


def claimed(text: str) -> "list[str]":
    """The claims a handoff makes (an affirmative sentence with one of the phrases), in CLAIMS order."""
    found = set()
    for s in _sentences(text):
        if any(n in s for n in NEGATIONS):
            continue
        for name, (phrases, _, _) in CLAIMS.items():
            if any(p in s for p in phrases):
                found.add(name)
    return [n for n in CLAIMS if n in found]


def _matches(target: str, words: "tuple[str, ...]") -> bool:
    low = " " + target.lower().replace("&&", ";").replace("|", ";") + " "
    for part in low.split(";"):
        p = " " + part.strip() + " "
        for w in words:
            if (" " + w + " ") in p or p.startswith(" " + w) or ("/" + w) in p or (" -m " + w) in p:
                return True
    return False


def check(text: str, tools: "list[dict[str, Any]]", skip_path: "str | None" = None) -> "list[dict[str, Any]]":
    """Each claim of ``text`` with its status and evidence, from ``tools`` (the ``tool`` ledger lines, oldest first).

    ``skip_path``: a file whose edits do not count (the handoff itself).
    """
    out: "list[dict[str, Any]]" = []
    for name in claimed(text):
        _, words, edits_void = CLAIMS[name]
        last = None
        for i, r in enumerate(tools):
            tgt = r.get("target")
            if r.get("tool") == "Bash" and isinstance(tgt, str) and _matches(tgt, words):
                last = i
        if last is None:
            out.append({"claim": name, "status": "contradicted",
                        "evidence": "no command that would show it ran in this session"})
            continue
        r = tools[last]
        cmd = "`%s`" % str(r.get("target"))[:80].replace("`", "'")
        code = r.get("exit")
        failed = bool(r.get("failed")) or (isinstance(code, int) and code != 0)
        edited = [t.get("target") for t in tools[last + 1:] if t.get("tool") in EDIT_TOOLS
                  and isinstance(t.get("target"), str) and t.get("target") != skip_path]
        if failed:
            status, why = "contradicted", "the last %s exited %s" % (cmd, code if code is not None else "with a failure")
        elif code is None:
            status, why = "contradicted", "the last %s has no recorded exit code" % cmd
        elif edits_void and edited:
            status, why = "contradicted", "the last %s exited 0, but %d file%s changed after it (%s)" % (
                cmd, len(set(edited)), "" if len(set(edited)) == 1 else "s",
                ", ".join(sorted(set(p.rsplit("/", 1)[-1] for p in edited))[:5]))
        else:
            status, why = "confirmed", "the last %s exited 0%s" % (cmd, ", nothing changed after it" if edits_void else "")
        out.append({"claim": name, "status": status, "evidence": why})
    return out


def problems(results: "list[dict[str, Any]]") -> "list[str]":
    """The contradictions, one line each, for the writer."""
    return ["the handoff says %s, but %s" % (r["claim"], r["evidence"]) for r in results if r["status"] != "confirmed"]


def section(results: "list[dict[str, Any]]") -> str:
    """The bootstrap's "checked against the record" section ("" when the handoff claims nothing checkable)."""
    if not results:
        return ""
    lines = ["## The handoff's claims, checked against the record",
             "The handoff is the predecessor's own account; this is what its tool record shows."]
    for r in results:
        if r["status"] == "confirmed":
            lines.append("- confirmed by the machine: %s (%s)" % (r["claim"], r["evidence"]))
        else:
            lines.append("- claimed, not confirmed: %s — %s" % (r["claim"], r["evidence"]))
    return "\n".join(lines)


def tool_lines(recs: "list[dict[str, Any]]", checkpoint_id: "str | None" = None) -> "list[dict[str, Any]]":
    """The ``tool`` lines of a session's ledger up to its checkpoint ``checkpoint_id`` (all when it is not there)."""
    out = []
    for r in recs:
        if checkpoint_id is not None and r.get("ev") == "checkpoint" and r.get("id") == checkpoint_id:
            break
        if r.get("ev") == "tool":
            out.append(r)
    return out
