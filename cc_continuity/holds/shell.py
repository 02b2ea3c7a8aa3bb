"""One reading of a shell command, for side-effect holds and for the handoff's claims.

:func:`read` gives

* ``commands``: every simple command the text would run, wherever it is nested (a loop, ``if``, ``{ }``,
  ``!``, a pipeline, backticks, ``$( )``), each as its words (quotes removed, expansions as written) and
  the text fed to it on stdin (a here-document or here-string).  Wrappers are taken off with their own
  options (``sudo -u deploy``, ``nice -n 10``, ``timeout -s KILL 5``, ``env -i -u X``, ``stdbuf -oL``,
  ``xargs -I{}``, ``npx -y``); a string that is shell again is read again, to ``MAX_DEPTH`` levels
  (``sh -c "…"``, ``eval "…"``, ``ssh host '…'``, ``env -S "…"``, a here-document fed to a shell);
* ``proven``: the commands whose success an exit status of 0 proves: the last statement's ``&&``
  chain (``||`` proves nothing; a pipeline only its last command, all of it under ``pipefail``; after
  ``set -e`` the statements before too); nothing through ``!``, a loop or a condition.

tree-sitter's bash grammar reads it where it can be imported (a binary wheel: the app copy's ``lib/``
or a plugin's built packages, :mod:`cc_continuity.deps`); its parse is bounded in time (a C parse does
not see the hook's alarm) and the text in size.  Where it cannot be imported, or the text is too large,
the tokenizer of our own reads it (``how`` says which, ``problem`` why); where the tree has errors
(zsh syntax, a cut text) both readings count: the commands of both, the proof of neither.
"""

import sys
import time
from importlib.machinery import PathFinder
from types import ModuleType

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (a tool call's slow path)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MAX_INPUT = 64 * 1024  # bytes the tree reads; a longer text is read by the tokenizer alone
PARSE_BUDGET_S = 0.25  # the longest the C parse may run (its progress callback stops it)
MAX_DEPTH = 3  # strings that are shell again, read again this deep
OPERATORS = ";&|()<>"
SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "busybox"))


class Command:
    """One simple command: ``words`` (the program first), ``stdin`` (a here-document's or here-string's
    text, else None), ``fed`` (it takes more arguments from stdin: after ``xargs``), ``line`` (the
    statement it is part of, as written: a target that comes through a pipe is only there)."""

    __slots__ = ("words", "stdin", "fed", "line")

    def __init__(self, words: "list[str]", stdin: "str | None" = None, fed: bool = False, line: str = "") -> None:
        self.words, self.stdin, self.fed, self.line = words, stdin, fed, line

    def __repr__(self) -> str:
        return "Command(%r%s%s)" % (self.words, ", stdin=%r" % self.stdin[:40] if self.stdin else "",
                                    ", fed" if self.fed else "")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Command) and (self.words, self.stdin, self.fed) == (other.words, other.stdin, other.fed)

    def __hash__(self) -> int:
        return hash((tuple(self.words), self.stdin, self.fed))


class Reading:
    """What :func:`read` found (see the module's docstring)."""

    __slots__ = ("commands", "proven", "how", "problem", "writes")

    def __init__(self, commands: "list[Command]", proven: "list[Command]", how: str, problem: "str | None",
                 writes: "list[str] | None" = None) -> None:
        self.commands, self.proven, self.how, self.problem = commands, proven, how, problem
        self.writes = writes or []  # the files its output redirections write (>, >>, &>), /dev/null left out


# -- the tokenizer of our own ---------------------------------------------------------------------------

def split(line: str) -> "list[str]":
    """The words of one shell line, quotes removed, ``;&|()<>`` runs as words of their own, a ``#`` comment dropped.

    A POSIX shell's quoting (``'…'``, ``"…"`` with ``\\`` escapes, ``\\`` outside quotes); with an
    unterminated quote the line's plain words.  No expansion: ``$X`` stays as written.
    """
    words: "list[str]" = []
    cur: "list[str]" = []
    started = False
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "'":
            j = line.find("'", i + 1)
            if j < 0:
                return line.split()  # an unterminated quote (a masked target cut inside one): plain words
            cur.append(line[i + 1:j])
            started, i = True, j + 1
            continue
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    i += 1
                cur.append(line[i])
                i += 1
            if i >= n:
                return line.split()
            started, i = True, i + 1
            continue
        if c == "\\" and i + 1 < n:
            cur.append(line[i + 1])
            started, i = True, i + 2
            continue
        if c in " \t" or c in OPERATORS or (c == "#" and not started):
            if started:
                words.append("".join(cur))
            cur, started = [], False
            if c == "#":
                break
            if c in OPERATORS:
                j = i
                while j < n and line[j] in OPERATORS:
                    j += 1
                words.append(line[i:j])
                i = j
                continue
            i += 1
            continue
        cur.append(c)
        started, i = True, i + 1
    if started:
        words.append("".join(cur))
    return words


def quote(word: str) -> str:
    """``word`` as one shell word."""
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


_KEYWORDS = frozenset(("if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case",
                       "esac", "{", "}", "!", "function", "select", "time"))


def token_statements(text: str, writes: "list[str] | None" = None
                     ) -> "list[tuple[list[tuple[list[str], str | None]], list[str]]]":
    """The tokenizer's statements: each its simple commands (words, and the here-document fed to it) and the
    operators between them.  ``writes`` gets the files output redirections write."""
    out: "list[tuple[list[tuple[list[str], str | None]], list[str]]]" = []
    writes = [] if writes is None else writes
    lines = text.replace("\\\n", " ").split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        k += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cmds: "list[tuple[list[str], str | None]]" = []
        ops: "list[str]" = []
        cur: "list[str]" = []
        fed: "list[tuple[list[str], str]]" = []  # (the command, its here-document's delimiter)
        skip = heredoc = writing = False
        for t in split(line):
            if t and all(c in OPERATORS for c in t):
                if t in ("<<", "<<-", "<<<"):
                    heredoc, skip = t != "<<<", True
                    continue
                if "<" in t or ">" in t:  # a redirection: its fd (2>) goes, the next word is a file (or &1)
                    if cur and cur[-1].isdigit():
                        cur.pop()
                    skip, writing = True, ">" in t and not t.endswith(">&")
                    continue
                if t in (";", "&", ";;"):
                    if cur:
                        cmds.append((cur, None))
                    if cmds:
                        out.append((cmds, ops))
                    cmds, ops, cur = [], [], []
                    continue
                if cur:
                    cmds.append((cur, None))
                    ops.append(t)
                cur = []
            elif skip:
                if heredoc:
                    fed.append((cur, t))
                elif writing and t != "/dev/null":
                    writes.append(t)
                skip = heredoc = writing = False
            else:
                cur.append(t)
        if cur:
            cmds.append((cur, None))
        for target, delim in fed:  # the lines up to the delimiter are its stdin, not commands
            body = []
            while k < len(lines) and lines[k].strip() != delim:
                body.append(lines[k])
                k += 1
            k += 1
            cmds = [(w, "\n".join(body) + "\n") if w is target else (w, s) for w, s in cmds]
        if cmds:
            out.append((cmds, ops))
    return out


def _token_reading(text: str) -> "tuple[list[Command], list[Command], list[str]]":
    commands: "list[Command]" = []
    proven: "list[Command]" = []
    writes: "list[str]" = []
    stmts = token_statements(text, writes)
    errexit = pipefail = False
    for k, (cmds, ops) in enumerate(stmts):
        mine = []
        for words, stdin in cmds:
            while words and words[0] in _KEYWORDS:
                words = words[1:]
            if not words:
                continue
            cmd = Command(words, stdin, line=" ".join(words))
            mine.append(cmd)
            commands.append(cmd)
        errexit, pipefail = _set_flags([c.words for c in mine], errexit, pipefail)
        plain = len(mine) == len(cmds) and not any(w and w[0] in _KEYWORDS for w, _ in cmds)
        if (k == len(stmts) - 1 or errexit) and plain and all(op == "&&" for op in ops):
            proven.extend(mine)
    return commands, proven, writes


def _set_flags(cmds: "list[list[str]]", errexit: bool, pipefail: bool) -> "tuple[bool, bool]":
    """``set -e`` / ``set -o errexit`` / ``set -o pipefail`` (``set -euo pipefail``) among ``cmds``."""
    for w in cmds:
        if w[:1] != ["set"]:
            continue
        for i, a in enumerate(w[1:], 1):
            if a.startswith("-") and not a.startswith("--") and "e" in a[1:]:
                errexit = True
            if a.startswith("+") and "e" in a[1:]:
                errexit = False
            if a in ("-o", "+o") and i + 1 < len(w):
                on = a == "-o"
                if w[i + 1] == "errexit":
                    errexit = on
                elif w[i + 1] == "pipefail":
                    pipefail = on
    return errexit, pipefail


# -- tree-sitter -------------------------------------------------------------------------------------------

_parser: "Any" = None
PROBLEM: "str | None" = None  # why tree-sitter is not used (not importable), once it was tried


def parser() -> "Any":
    """tree-sitter's bash parser, or None (:data:`PROBLEM` says why)."""
    global _parser, PROBLEM
    if _parser is None and PROBLEM is None:
        try:
            _parser = _load()
        except Exception as e:  # not installed, not built yet, a .so of another Python: the tokenizer reads
            PROBLEM = "%s: %s" % (type(e).__name__, str(e)[:200])
    return _parser


def _load() -> "Any":
    from .. import deps  # where the packages are for this interpreter: json & co. +~6 ms, a first parse's only

    deps.activate()  # type: ignore[no-untyped-call]
    import tree_sitter  # optional: a binary wheel (the deps' lock); the tokenizer reads without it

    if "tree_sitter_bash" not in sys.modules:
        # The grammar's own package imports importlib.resources for a query file we never read (+10-16 ms
        # on every classified call): its compiled grammar is loaded through a bare package instead.
        spec = PathFinder.find_spec("tree_sitter_bash", sys.path)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("No module named 'tree_sitter_bash'")
        pkg = ModuleType("tree_sitter_bash")
        pkg.__spec__, pkg.__path__ = spec, list(spec.submodule_search_locations)
        sys.modules["tree_sitter_bash"] = pkg
    from tree_sitter_bash._binding import language  # type: ignore[import-not-found]  # optional: as tree_sitter

    return tree_sitter.Parser(tree_sitter.Language(language()))


def _parse(data: bytes) -> "Any":
    """The tree of ``data``, or None when the parse ran past :data:`PARSE_BUDGET_S`."""
    p = parser()
    deadline = time.monotonic() + PARSE_BUDGET_S

    def chunk(offset: int, _point: "Any") -> bytes:
        return data[offset:offset + 4096]

    def progress(_offset: int, _error: bool) -> bool:
        return time.monotonic() > deadline  # True: stop

    try:
        tree = p.parse(chunk, progress_callback=progress)
    except ValueError:  # "Parsing failed": the callback stopped it
        tree = None
    finally:
        p.reset()
    return tree if tree is not None and time.monotonic() <= deadline + 0.05 else None


def _text(node: "Any", src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def word(node: "Any", src: bytes) -> str:
    """The value of one argument node: quotes removed, escapes undone, expansions as written."""
    t = node.type
    if t == "raw_string":
        return _text(node, src)[1:-1]
    if t == "string":
        out = []
        for c in node.children:
            if c.type == '"':
                continue
            if c.type == "string_content":
                s = _text(c, src)
                out.append(s.replace('\\"', '"').replace("\\\\", "\\").replace("\\$", "$").replace("\\`", "`"))
            else:
                out.append(_text(c, src))
        return "".join(out)
    if t == "concatenation":
        return "".join(word(c, src) for c in node.children)
    if t == "ansi_c_string":
        body = _text(node, src)[2:-1]
        try:
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, ValueError):
            return body
    if t == "word":
        s = _text(node, src)
        if "\\" in s:
            out, i = [], 0
            while i < len(s):
                if s[i] == "\\" and i + 1 < len(s):
                    out.append(s[i + 1])
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            return "".join(out)
        return s
    return _text(node, src)


_ARG_NODES = frozenset(("word", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
                        "command_substitution", "number", "ansi_c_string", "translated_string", "arithmetic_expansion",
                        "process_substitution"))


def _words_of(cmd: "Any", src: bytes) -> "list[str]":
    words: "list[str]" = []
    for c in cmd.children:
        if c.type == "command_name":
            words.extend(word(x, src) for x in c.children)
        elif c.type in _ARG_NODES:
            words.append(word(c, src))
    return words


def _stdin_of(redirected: "Any", src: bytes) -> "str | None":
    for r in redirected.children:
        if r.type == "heredoc_redirect":
            for b in r.children:
                if b.type == "heredoc_body":
                    return _text(b, src)
        elif r.type == "herestring_redirect":
            vals = [word(x, src) for x in r.children if x.type in _ARG_NODES]
            return vals[0] if vals else ""
    return None


def _walk(node: "Any", src: bytes, stdin: "str | None", line: str, out: "list[tuple[Any, str | None, str]]") -> None:
    """Every ``command`` node under ``node`` with the stdin text it is fed and its statement's text."""
    t = node.type
    if t == "command":
        fed = _stdin_of(node, src)  # a here-string inside the command itself (cmd <<< 'text')
        out.append((node, fed if fed is not None else stdin, line))
        for c in node.children:  # command substitutions inside its arguments
            if c.type != "command_name":
                _walk(c, src, None, line, out)
            else:
                for x in c.children:
                    _walk(x, src, None, line, out)
        return
    if t == "redirected_statement":
        fed = _stdin_of(node, src)
        for c in node.children:
            if c.type in ("heredoc_redirect", "herestring_redirect", "file_redirect"):
                continue
            _walk(c, src, fed if fed is not None else stdin, line, out)
        return
    if t == "pipeline":
        first = True
        for c in node.children:
            if c.is_named:
                _walk(c, src, stdin if first else None, line, out)
                first = False
        return
    for c in node.children:
        _walk(c, src, stdin, _text(c, src) if node.type == "program" else line, out)


def _proven_nodes(node: "Any", pipefail: bool) -> "list[Any]":
    """The command nodes whose success this statement's exit status 0 proves."""
    t = node.type
    if t == "command":
        return [node]
    if t == "redirected_statement":
        body = node.child_by_field_name("body") or next((c for c in node.children if c.is_named), None)
        return _proven_nodes(body, pipefail) if body is not None else []
    if t == "list":
        named = [c for c in node.children if c.is_named]
        ops = [c.type for c in node.children if not c.is_named]
        if len(named) == 2 and ops == ["&&"]:
            return _proven_nodes(named[0], pipefail) + _proven_nodes(named[1], pipefail)
        return []
    if t == "pipeline":
        parts = [c for c in node.children if c.is_named]
        if pipefail:
            return [n for p in parts for n in _proven_nodes(p, pipefail)]
        return _proven_nodes(parts[-1], pipefail) if parts else []
    if t in ("subshell", "compound_statement"):
        stmts = [c for c in node.children if c.is_named and c.type != "comment"]
        return _proven_nodes(stmts[-1], pipefail) if stmts else []
    return []


def _writes(node: "Any", src: bytes, out: "list[str]") -> None:
    """The targets of the output redirections under ``node`` (``> f``, ``>> f``, ``&> f``; not ``>&1``)."""
    if node.type == "file_redirect":
        ops = [c.type for c in node.children if not c.is_named]
        dest = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        if any(">" in o and o not in (">&", "<&", "<") for o in ops) and dest:
            target = word(dest[-1], src)
            if target != "/dev/null":
                out.append(target)
        return
    for c in node.children:
        _writes(c, src, out)


def _tree_reading(text: str, tree: "Any", src: bytes) -> "tuple[list[Command], list[Command], list[str]]":
    found: "list[tuple[Any, str | None, str]]" = []
    _walk(tree.root_node, src, None, text, found)
    writes: "list[str]" = []
    _writes(tree.root_node, src, writes)
    by_node = {}
    commands = []
    for node, stdin, line in found:
        cmd = Command(_words_of(node, src), stdin, line=line.strip())
        by_node[node.id] = cmd
        if cmd.words:
            commands.append(cmd)
    stmts = [c for c in tree.root_node.children if c.is_named and c.type != "comment"]
    errexit = pipefail = False
    proven: "list[Command]" = []
    for k, stmt in enumerate(stmts):
        if stmt.type == "command":
            errexit, pipefail = _set_flags([by_node[stmt.id].words] if stmt.id in by_node else [], errexit, pipefail)
        if k == len(stmts) - 1 or errexit:
            proven.extend(by_node[n.id] for n in _proven_nodes(stmt, pipefail) if n.id in by_node)
    return commands, [c for c in proven if c.words], writes


# -- unwrapping ----------------------------------------------------------------------------------------------

# wrapper -> (options that take a value, options that end its options and take the rest as a string of shell)
_WRAP: "dict[str, frozenset[str]]" = {
    "sudo": frozenset(("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--host",
                       "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout")),
    "doas": frozenset(("-u", "-C")),
    "nice": frozenset(("-n", "--adjustment")),
    "ionice": frozenset(("-c", "-n", "--class", "--classdata")),
    "timeout": frozenset(("-s", "-k", "--signal", "--kill-after")),
    "stdbuf": frozenset(("-i", "-o", "-e", "--input", "--output", "--error")),
    "time": frozenset(("-f", "-o", "--format", "--output")),
    "env": frozenset(("-u", "-C", "--unset", "--chdir")),
    "nohup": frozenset(),
    "exec": frozenset(("-a",)),
    "command": frozenset(),
    "builtin": frozenset(),
    "setsid": frozenset(),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset(("-t", "-w")),
    "flock": frozenset(("-w", "-E", "--timeout", "--conflict-exit-code")),
    "watch": frozenset(("-n", "--interval", "-d")),
    "taskset": frozenset(),
    "chrt": frozenset(),
    "npx": frozenset(("-p", "--package", "-c", "--call")),
    "pnpx": frozenset(("-p", "--package")),
    "bunx": frozenset(("-p", "--package")),
    "xargs": frozenset(("-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-a", "-s", "--replace", "--max-args",
                        "--max-procs", "--max-lines", "--delimiter", "--eof", "--arg-file", "--max-chars")),
}
_GLUED = frozenset(("-u", "-g", "-n", "-s", "-k", "-i", "-o", "-e", "-I", "-P", "-L", "-d", "-p"))
_SSH_ARG = frozenset(("-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p",
                      "-Q", "-R", "-S", "-W", "-w", "-B"))


def _unwrap_one(words: "list[str]") -> "tuple[list[str], bool, bool]":
    """The command under one wrapper: (words, whether it takes more arguments from stdin, changed)."""
    prog = words[0].rsplit("/", 1)[-1]
    takes = _WRAP.get(prog)
    if takes is None:
        return words, False, False
    i = 1
    if prog == "command" and len(words) > 1 and words[1] in ("-v", "-V"):
        return [], False, True  # a lookup, nothing runs
    while i < len(words):
        a = words[i]
        if a == "--":
            i += 1
            break
        if prog == "env" and "=" in a and not a.startswith("-"):
            i += 1
            continue
        if not a.startswith("-") or a == "-":
            if prog == "nice" and a.lstrip("-").isdigit():
                i += 1
                continue
            break
        name = a.split("=", 1)[0]
        if name in takes and "=" not in a:
            i += 2
        elif len(a) > 2 and a[:2] in _GLUED and a[:2] in takes:
            i += 1  # -n10, -oL, -uroot
        elif prog == "nice" and a[1:].isdigit():
            i += 1  # nice -10
        elif prog == "env" and a in ("-S", "--split-string"):
            return (split(words[i + 1]) + words[i + 2:]) if i + 1 < len(words) else [], False, True
        else:
            i += 1
    rest = words[i:]
    if prog == "timeout" and rest:
        rest = rest[1:]  # its duration
    if prog == "flock" and rest:
        rest = rest[1:]  # the lock file
    if prog in ("taskset", "chrt") and rest:
        rest = rest[1:]  # the mask, the priority
    return rest, prog == "xargs", True


def _ssh_remote(words: "list[str]") -> "str | None":
    """The command an ``ssh`` line runs on the other host (its words after the host), or None."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _SSH_ARG else 1
    return " ".join(words[i + 1:]) if i + 1 < len(words) else None


def _expand(cmd: Command, depth: int, out: "list[Command]") -> None:
    """``cmd`` with its wrappers off and its shell strings read again, into ``out``."""
    words, fed = list(cmd.words), cmd.fed
    for _ in range(8):
        while words and "=" in words[0] and not words[0].startswith(("-", "=")) and \
                words[0].split("=", 1)[0].replace("_", "").isalnum():
            words = words[1:]  # FOO=bar cmd
        if not words:
            return
        words, more, changed = _unwrap_one(words)
        fed = fed or more
        if not changed:
            break
    if not words:
        return
    prog = words[0].rsplit("/", 1)[-1]
    again = None
    if prog == "eval":
        again = " ".join(words[1:])
    elif prog in SHELLS:
        at = next((i for i, w in enumerate(words[1:], 1)
                   if w.startswith("-") and not w.startswith("--") and "c" in w[1:]), None)  # -c, -lc, -ec
        if at is not None and at + 1 < len(words):
            again = words[at + 1]
        elif cmd.stdin is not None and not any(not w.startswith("-") for w in words[1:]):
            again = cmd.stdin  # bash <<EOF ... EOF, sh -s <<< "..."
    elif prog == "ssh":
        again = _ssh_remote(words)
        if again is None and cmd.stdin is not None:
            again = cmd.stdin
    if again is not None:
        if depth < MAX_DEPTH:
            for inner in read(again, depth + 1).commands:
                out.append(inner)
        return
    out.append(Command(words, cmd.stdin, fed, cmd.line))


# -- the reading ---------------------------------------------------------------------------------------------

def read(text: str, depth: int = 0) -> Reading:
    """Every command ``text`` runs, unwrapped, and the ones its exit status 0 proves (module docstring)."""
    data = text.encode("utf-8", "surrogateescape")
    tree = None
    problem = None
    if len(data) > MAX_INPUT:
        problem = "longer than %d bytes" % MAX_INPUT
    elif parser() is None:
        problem = "tree-sitter cannot be imported (%s)" % PROBLEM
    else:
        tree = _parse(data)
        if tree is None:
            problem = "its parse ran past %g s" % PARSE_BUDGET_S
    raw_proven: "list[Command]"
    if tree is not None and not tree.root_node.has_error:
        raw, raw_proven, writes = _tree_reading(text, tree, data)
        how = "tree-sitter"
    elif tree is not None:
        t_cmds, _, t_writes = _tree_reading(text, tree, data)
        k_cmds, _, k_writes = _token_reading(text)
        raw, raw_proven, how = t_cmds + [c for c in k_cmds if c not in t_cmds], [], "both"
        writes = t_writes + [w for w in k_writes if w not in t_writes]
        problem = "the tree has errors"
    else:
        raw, raw_proven, writes = _token_reading(text)
        how = "tokenizer"
    commands: "list[Command]" = []
    for c in raw:
        _expand(c, depth, commands)
    proven: "list[Command]" = []
    for c in raw_proven:
        inner: "list[Command]" = []
        _expand(c, MAX_DEPTH, inner)  # its wrappers off (a shell string proves only as a whole: not read again)
        proven.extend(inner)
    return Reading(commands, proven, how, problem, writes)


# Programs that change no file (given no output redirection and none of the options below); a test run is one
# of them (its caches are no source).  Anything else may change the work tree.
_READ_ONLY = frozenset((
    "ls", "cat", "head", "tail", "less", "more", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack", "pwd", "cd", "which",
    "type", "file", "stat", "du", "df", "printenv", "date", "whoami", "id", "uname", "hostname", "diff", "cmp", "comm",
    "uniq", "cut", "tr", "jq", "echo", "printf", "true", "false", "test", "[", "sleep", "tree", "realpath", "readlink",
    "basename", "dirname", "md5sum", "sha256sum", "sha1sum", "shasum", "xxd", "od", "hexdump", "column", "nl", "fold",
    "expr", "seq", "ps", "pgrep", "top", "free", "uptime", "env", "set", "export", "source", ".", "exit", "return",
    "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest", "tox", "nox", "tsc", "mypy", "ruff",
    "eslint", "flake8", "pylint", "shellcheck", "node", "curl", "wget", "http"))
_GIT_READ = frozenset(("status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe",
                       "shortlog", "grep", "cat-file", "rev-list", "reflog", "whatchanged", "merge-base", "name-rev",
                       "for-each-ref", "show-ref", "fetch", "remote", "config", "branch", "tag", "stash", "push"))
_WRITE_OPTS = ("-i", "--in-place", "--fix", "--write", "-w", "-o", "--output", "-delete", "-exec", "-execdir",
               "--inplace")


def changes_files(r: Reading) -> bool:
    """May what ``r`` read change files?  False only when every command is known to leave them as they are."""
    if r.writes:
        return True
    for c in r.commands:
        prog = c.words[0].rsplit("/", 1)[-1]
        args = c.words[1:]
        if prog in ("python", "python3") and args[:1] == ["-m"] and len(args) > 1:
            prog, args = args[1], args[2:]
        if prog == "git":
            sub = next((a for a in args if not a.startswith("-")), "")
            if sub not in _GIT_READ or (sub in ("branch", "tag", "stash", "remote", "config")
                                        and [a for a in args[args.index(sub) + 1:] if not a.startswith("-")]
                                        and sub != "config"):
                return True
            if sub == "stash" and args[args.index(sub) + 1:][:1] not in ([], ["list"], ["show"]):
                return True
            continue
        if prog == "sed" or prog == "awk" or prog == "perl" or prog == "sort" or prog == "find":
            if any(a.startswith(_WRITE_OPTS) for a in args):
                return True
            if prog in ("sed", "sort", "find"):
                continue
            return True  # awk and perl can write from their program
        if prog in ("npm", "yarn", "pnpm", "bun") and args[:1] in (["test"], ["t"]):
            continue
        if prog in ("go", "cargo") and args[:1] == ["test"]:
            continue
        if prog == "make" and any(a in ("test", "check") for a in args) and not any(
                a for a in args if not a.startswith("-") and a not in ("test", "check") and "=" not in a):
            continue
        if prog not in _READ_ONLY or any(a in _WRITE_OPTS for a in args):
            return True
    return False


def iter_words(text: str) -> "Iterator[list[str]]":
    """The words of every command ``text`` runs (unwrapped)."""
    for c in read(text).commands:
        yield c.words
