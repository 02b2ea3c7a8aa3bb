"""Side effects outside the work tree: which calls have one, whether repeating it would harm, and their records.

A call that reached outside the work tree (a POST to an API, a release, a
publish, a message sent, a database write) must not happen twice because a
session restarted, rotated or recovered a crashed one.  Three parts:

- :func:`classify` — the effects of one Bash command, with string operations
  only (a small shell tokenizer of our own): curl/wget/httpie by method and body, ``gh`` by subcommand,
  publishers, deploy and release scripts, version bumps, mail, database clients,
  and the user's own declared commands.  An alias (from Claude Code's shell
  snapshot) is expanded once; a script named as the command is read (at most
  ``SCRIPT_MAX`` bytes, one level deep) and its commands count as the call's.
  Each effect says whether a repeat harms (``harm``) and whether its identity
  includes the git state (a publish of the same HEAD and work tree is the same
  publish; a new commit or a new version is a new one).
- :func:`key` — a SHA-256 of the normalised harmful effects (never their text:
  commands carry secrets).
- The two-phase record, in the project's ``effects.jsonl`` (shared by every session
  of the project, so a restart, a successor and a recovering session all see it):
  ``intent`` (PreToolUse, before the call runs), ``done`` (PostToolUse /
  PostToolUseFailure, with the exit code), ``override`` (the user's own prompt lets
  one repeat through).  An intent with no outcome is *uncertain* unless the
  transcript shows the call never ran (denied by a hook, declined at the prompt).

:func:`decide` puts it together for PreToolUse: None (run, nothing to say), or a
hold — ``deny`` when no one is there to answer, else ``ask`` — with a reason that
names when and in which session the effect happened and what to say to do it anyway.

Only calls PreToolUse's pre-filter (``card.may_have_effect``) lets through come
here; nothing is written for a call with no harmful effect.
"""

import posix
import time

from .. import digest, fastjson

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (PreToolUse's slow path)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

SCRIPT_MAX = 64 * 1024
STORE_TAIL = 1 << 20  # the newest MiB of effects.jsonl is what a hold looks at
ALIAS_MAX = 512 * 1024
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
CODE_LEN = 8
WATCHDOG_PREFIX = "[cc-continuity watchdog]"  # (watch/actions.PREFIX: a watchdog nudge is not the user's word)

_WRAPPERS = frozenset(("sudo", "env", "time", "nohup", "exec", "command", "nice", "timeout", "stdbuf"))
_SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh", "fish"))
_METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
_WRITE_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
_CURL_DATA = frozenset(("-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode",
                        "-F", "--form", "--form-string", "--json"))
_CURL_ARG = frozenset(("-H", "--header", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-e", "--referer",
                       "-b", "--cookie", "-c", "--cookie-jar", "-m", "--max-time", "--connect-timeout", "-w",
                       "--write-out", "--retry", "-x", "--proxy", "--cacert", "--cert", "--key", "-K", "--config",
                       "--resolve", "--url", "-T", "--upload-file", "-X", "--request", "-r", "--range", "-Y",
                       "-y", "-z", "--limit-rate", "--oauth2-bearer"))
_GH_WRITE = {"issue": ("create", "comment", "close", "reopen", "edit", "delete", "transfer", "lock"),
             "pr": ("create", "merge", "comment", "close", "reopen", "review", "edit", "ready"),
             "release": ("create", "upload", "delete", "edit"), "repo": ("create", "delete", "fork", "rename", "archive"),
             "workflow": ("run", "enable", "disable"), "run": ("rerun", "cancel"), "gist": ("create", "delete", "edit"),
             "label": ("create", "delete", "edit"), "secret": ("set", "delete"), "variable": ("set", "delete")}
_PUBLISH = {"npm": ("publish", "unpublish", "deprecate"), "pnpm": ("publish",), "yarn": ("publish", "npm"),
            "bun": ("publish",), "twine": ("upload",), "cargo": ("publish", "yank"), "poetry": ("publish",),
            "uv": ("publish",), "gem": ("push", "yank"), "mvn": ("deploy",), "gradle": ("publish",),
            "flit": ("publish",), "hatch": ("publish",), "dotnet": ("nuget",)}
_BUMP = {"npm": ("version",), "pnpm": ("version",), "yarn": ("version",), "poetry": ("version",),
         "cargo": ("set-version", "release"), "bumpversion": ("*",), "bump2version": ("*",), "bump-my-version": ("bump",),
         "hatch": ("version",)}
_DEPLOY = {"fly": ("deploy", "launch"), "flyctl": ("deploy", "launch"), "vercel": ("deploy", "--prod"),
           "netlify": ("deploy",), "firebase": ("deploy",), "wrangler": ("deploy", "publish"),
           "heroku": ("releases:rollback", "run", "ps:restart"), "terraform": ("apply", "destroy", "import"),
           "pulumi": ("up", "destroy"), "kubectl": ("create", "delete", "scale", "rollout", "patch", "replace", "run"),
           "helm": ("install", "uninstall", "rollback"), "make": ("deploy", "release", "publish", "upload"),
           "ansible-playbook": ("*",), "aws": ("*",), "gcloud": ("deploy",), "az": ("create", "delete")}
_IDEMPOTENT = {"kubectl": ("apply", "diff", "get", "describe", "logs"), "helm": ("upgrade", "template", "diff"),
               "git": ("push",), "docker": ("push",), "podman": ("push",), "terraform": ("plan",)}
_MAIL = frozenset(("mail", "mailx", "sendmail", "mutt", "msmtp", "swaks"))
_DB = frozenset(("psql", "mysql", "mariadb", "sqlite3", "mongosh", "mongo", "redis-cli", "clickhouse-client", "cqlsh"))
_SQL_WRITE = frozenset(("insert", "update", "delete", "create", "drop", "alter", "truncate", "grant", "revoke", "replace",
                        "merge", "upsert", "set", "del", "hset", "lpush", "rpush", "sadd", "zadd", "expire", "flushdb",
                        "flushall", "incr", "decr", "copy"))


# -- what a command does ------------------------------------------------------------------------------

def _effect(kind: str, norm: "list[Any]", harm: bool, git: bool = False, what: str = "") -> "dict[str, Any]":
    return {"kind": kind, "norm": norm, "harm": harm, "git": git, "what": what or kind}


OPERATORS = ";&|()<>"


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


def _simple_commands(text: str) -> "list[list[str]]":
    """The words of each simple command of a shell text (split at ``;``, ``&&``, ``||``, ``|``, newlines)."""
    out: "list[list[str]]" = []
    for line in text.replace("\\\n", " ").split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cur: "list[str]" = []
        skip = False
        for t in split(line):
            if t and all(c in OPERATORS for c in t):
                if "<" in t or ">" in t:  # a redirection: its fd (2>) goes, the next word is a file (or &1)
                    if cur and cur[-1].isdigit():
                        cur.pop()
                    skip = True
                    continue
                if cur:
                    out.append(cur)
                cur = []
            elif skip:
                skip = False
            else:
                cur.append(t)
        if cur:
            out.append(cur)
    return out


def _strip(words: "list[str]") -> "list[str]":
    while words and (words[0] in _WRAPPERS or ("=" in words[0] and not words[0].startswith("-")
                                               and words[0].split("=", 1)[0].replace("_", "").isalnum())):
        if words[0] == "timeout" and len(words) > 1:
            words = words[1:]
        words = words[1:]
    return words


def _host_local(url: str) -> bool:
    rest = url.split("://", 1)[-1]
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    else:
        host = host.split(":", 1)[0]
    return host in LOCAL_HOSTS


def _norm_url(url: str) -> str:
    u = url.strip()
    if "://" not in u:
        u = "http://" + u
    scheme, rest = u.split("://", 1)
    host, _, path = rest.partition("/")
    return "%s://%s/%s" % (scheme.lower(), host.lower(), path)


def _body_of(value: str, cwd: str | None) -> str:
    """A ``-d`` value; ``@file`` stands for the file's content (its digest: a changed file is a new body)."""
    if value.startswith("@") and len(value) > 1 and value != "@-":
        data = _read_file(value[1:], cwd, SCRIPT_MAX)
        return "@" + digest.sha256(data).hexdigest() if data is not None else value
    return value


def _curl(args: "list[str]", cwd: str | None) -> "dict[str, Any] | None":
    method = None
    bodies: "list[str]" = []
    urls: "list[str]" = []
    get = False
    upload = False
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a.startswith("--") and "=" in a:
            a, _, nxt = a.partition("=")
            step = 1
        elif a.startswith("-X") and len(a) > 2:
            a, nxt, step = "-X", a[2:], 1
        elif a.startswith("-d") and len(a) > 2:
            a, nxt, step = "-d", a[2:], 1
        else:
            step = 2
        if a in ("-X", "--request"):
            method = nxt.upper()
        elif a in _CURL_DATA:
            bodies.append(_body_of(nxt, cwd))
        elif a in ("-T", "--upload-file"):
            upload = True
            bodies.append(_body_of("@" + nxt, cwd))
        elif a == "--url":
            urls.append(nxt)
        elif a in ("-G", "--get"):
            get, step = True, 1
        elif a in _CURL_ARG:
            pass
        elif a.startswith("-"):
            step = 1
        else:
            urls.append(a)
            step = 1
        i += step
    if method is None:
        method = "GET" if get or not bodies else ("PUT" if upload and len(bodies) == 1 else "POST")
    if not urls:
        return None
    harm = method in _WRITE_METHODS
    return {"method": method, "urls": [_norm_url(u) for u in urls], "bodies": sorted(bodies), "harm": harm,
            "local": all(_host_local(u) for u in urls)}


def _httpie(args: "list[str]") -> "dict[str, Any] | None":
    rest = [a for a in args if not a.startswith("-")]
    method = None
    if rest and rest[0].upper() in _METHODS:
        method = rest.pop(0).upper()
    if not rest:
        return None
    url, items = rest[0], rest[1:]
    data = sorted(x for x in items if ("=" in x and "==" not in x) or ":=" in x or "@" in x.split("=", 1)[0])
    method = method or ("POST" if data or "--form" in args or "-f" in args else "GET")
    if url.startswith(":"):
        url = "localhost" + url
    return {"method": method, "urls": [_norm_url(url)], "bodies": data, "harm": method in _WRITE_METHODS,
            "local": _host_local(url)}


def _wget(args: "list[str]", cwd: str | None) -> "dict[str, Any] | None":
    method, bodies, urls = None, [], []
    for i, a in enumerate(args):
        name, _, val = a.partition("=")
        if name == "--method":
            method = val.upper()
        elif name in ("--post-data", "--body-data"):
            bodies.append(val)
        elif name in ("--post-file", "--body-file"):
            bodies.append(_body_of("@" + val, cwd))
        elif not a.startswith("-") and "://" in a:
            urls.append(a)
    if not urls:
        return None
    method = method or ("POST" if bodies else "GET")
    return {"method": method, "urls": [_norm_url(u) for u in urls], "bodies": sorted(bodies),
            "harm": method in _WRITE_METHODS, "local": all(_host_local(u) for u in urls)}


def _gh(args: "list[str]") -> "dict[str, Any] | None":
    pos = [a for a in args if not a.startswith("-")]
    if not pos:
        return None
    if pos[0] == "api":
        method = None
        for i, a in enumerate(args):
            if a in ("-X", "--method") and i + 1 < len(args):
                method = args[i + 1].upper()
            elif a.startswith("--method="):
                method = a.split("=", 1)[1].upper()
        fields = any(a in ("-f", "-F", "--field", "--raw-field", "--input") or a.startswith(("--field=", "--raw-field="))
                     for a in args)
        method = method or ("POST" if fields else "GET")
        return {"harm": method in _WRITE_METHODS, "what": "gh api %s" % method}
    if len(pos) > 1 and pos[1] in _GH_WRITE.get(pos[0], ()):
        return {"harm": True, "what": "gh %s %s" % (pos[0], pos[1])}
    return None


def _sub(table: "Mapping[str, tuple[str, ...]]", prog: str, args: "list[str]") -> "str | None":
    subs = table.get(prog)
    if not subs:
        return None
    if "*" in subs:
        return "*"
    for a in args:
        if a in subs:
            return a
        if not a.startswith("-"):
            return None  # the subcommand is the first word that is not an option
    return None


def _declared(words: "list[str]", patterns: "list[str]") -> bool:
    line = " ".join(words)
    return any(line == p or line.startswith(p.rstrip() + " ") for p in patterns)


def _one(words: "list[str]", env: "dict[str, Any]", depth: int, out: "list[dict[str, Any]]") -> None:
    words = _strip(list(words))
    if not words:
        return
    aliases = env.get("aliases") or {}
    if depth == 0 and words[0] in aliases:
        for sub in _simple_commands(aliases[words[0]] + " " + " ".join(quote(w) for w in words[1:])):
            _one(sub, env, depth + 1, out)
        return
    if _declared(words, env.get("harmless") or []):
        return
    if _declared(words, env.get("harmful") or []):
        out.append(_effect("declared", words, True, git=True, what="a command you declared harmful to repeat"))
        return
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("python", "python3") and args[:1] == ["-m"] and len(args) > 1:
        prog, args = args[1], args[2:]
    if prog in _SHELLS:
        if args[:1] == ["-c"] and len(args) > 1:
            for sub in _simple_commands(args[1]):
                _one(sub, env, depth, out)
            return
        script = next((a for a in args if not a.startswith("-")), None)
        if script is not None:
            _script(script, args[args.index(script) + 1:], env, depth, out)
        return
    if "/" in words[0]:
        if _script(words[0], args, env, depth, out):
            return
    if prog in ("curl", "wget", "http", "https", "xh", "xhs"):
        got = _curl(args, env.get("cwd")) if prog == "curl" else (
            _wget(args, env.get("cwd")) if prog == "wget" else _httpie(args))
        if got and got["harm"]:
            if got["local"] and env.get("local_exempt", True):
                return
            out.append(_effect("http", ["http", got["method"], got["urls"], got["bodies"]], True,
                               what="%s %s" % (got["method"], " ".join(got["urls"])[:120])))
        return
    if prog == "gh":
        gh = _gh(args)
        if gh and gh["harm"]:
            out.append(_effect("gh", ["gh"] + args, True, what=gh["what"]))
        return
    if prog in _MAIL:
        out.append(_effect("mail", [prog] + args, True, what="a message sent (%s)" % prog))
        return
    if prog in _DB:
        if _words(" ".join(args)) & _SQL_WRITE:
            out.append(_effect("db", [prog] + args, True, what="a database write (%s)" % prog))
        return
    sub = _sub(_IDEMPOTENT, prog, args)
    if sub is not None:
        return  # the same push, the same manifest applied again: no harm in a repeat
    sub = _sub(_PUBLISH, prog, args)
    if sub is not None:
        out.append(_effect("publish", [prog, sub] + args, True, git=True, what="%s %s" % (prog, sub)))
        return
    sub = _sub(_BUMP, prog, args)
    if sub is not None:
        out.append(_effect("bump", [prog] + args, True, what="a version bump (%s %s)" % (prog, sub)))
        return
    sub = _sub(_DEPLOY, prog, args)
    if sub is not None and not (prog == "aws" and not any(w in " ".join(args) for w in (
            " deploy", "put-", "create-", "delete-", "update-", "invoke", " cp ", " sync", " rm ", "send-", "publish"))):
        out.append(_effect("deploy", [prog] + args, True, git=True, what="%s %s" % (prog, " ".join(args[:2]))))
        return
    low = prog.lower()
    if any(w in low for w in ("deploy", "publish", "release")) and depth == 0 and "/" not in words[0]:
        out.append(_effect("deploy", [prog] + args, True, git=True, what="%s (a deploy/release command)" % prog))


def _read_file(path: str, cwd: str | None, limit: int) -> "bytes | None":
    full = path if path.startswith("/") or not cwd else cwd.rstrip("/") + "/" + path
    try:
        fd = posix.open(full, posix.O_RDONLY | posix.O_CLOEXEC | posix.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = posix.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000:
            return None
        return posix.read(fd, limit)
    except OSError:
        return None
    finally:
        posix.close(fd)


def _script(path: str, args: "list[str]", env: "dict[str, Any]", depth: int, out: "list[dict[str, Any]]") -> bool:
    """A script named as the command: its commands are the call's (one level deep).  False: not a readable script."""
    data = _read_file(path, env.get("cwd"), SCRIPT_MAX)
    if data is None or b"\0" in data[:4096]:
        return False
    name = path.rsplit("/", 1)[-1].lower()
    if depth > 0:
        if any(w in name for w in ("deploy", "publish", "release")):
            out.append(_effect("deploy", ["script", digest.sha256(data).hexdigest()] + args, True, git=True,
                               what="%s (a deploy/release script)" % path))
        return True
    inner: "list[dict[str, Any]]" = []
    for words in _simple_commands(data.decode("utf-8", "replace")):
        _one(words, env, depth + 1, inner)
    if inner:
        if args:
            for e in inner:
                e["norm"] = e["norm"] + ["args"] + args  # the script's own arguments are part of what it does
        out.extend(inner)
    elif any(w in name for w in ("deploy", "publish", "release")):
        out.append(_effect("deploy", ["script", digest.sha256(data).hexdigest()] + args, True, git=True,
                           what="%s (a deploy/release script)" % path))
    return True


def classify(command: str, env: "dict[str, Any] | None" = None) -> "list[dict[str, Any]]":
    """The harmful-to-repeat effects of one Bash command (``[]``: run it, record nothing).

    ``env``: ``cwd`` (scripts and ``@file`` bodies are read relative to it), ``aliases``
    (name -> expansion), ``harmful`` / ``harmless`` (the user's declared command
    prefixes), ``local_exempt`` (calls to 127.0.0.1 / localhost are not held).
    """
    env = env or {}
    out: "list[dict[str, Any]]" = []
    for words in _simple_commands(command):
        _one(words, env, 0, out)
    return out


def aliases(text: str) -> "dict[str, str]":
    """``alias name='expansion'`` lines of a shell snapshot, as a dict."""
    out: "dict[str, str]" = {}
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("alias "):
            continue
        body = line[6:].strip()
        if body.startswith("-- "):
            body = body[3:]
        name, eq, value = body.partition("=")
        if not eq or not name or any(c in name for c in " \t'\"$"):
            continue
        parts = split(value)
        if len(parts) == 1:
            out[name] = parts[0]
    return out


def snapshots_dir(env: "Mapping[str, str]") -> str:
    """Where Claude Code keeps its shell snapshots (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then ``shell-snapshots``)."""
    base = env.get("CLAUDE_CONFIG_DIR") or (env.get("HOME") or "") + "/.claude"
    return base.rstrip("/") + "/shell-snapshots"


def snapshot_aliases(d: str) -> "dict[str, str]":
    """The aliases of the newest shell snapshot Claude Code wrote in ``d`` (each Bash call sources one)."""
    try:
        names = [n for n in posix.listdir(d) if n.startswith("snapshot-")]
    except OSError:
        return {}
    best, best_m = None, -1
    for n in names:
        try:
            m = posix.stat(d + "/" + n).st_mtime_ns
        except OSError:
            continue
        if m > best_m:
            best, best_m = n, m
    if best is None:
        return {}
    data = _read_file(d + "/" + best, None, ALIAS_MAX)
    return aliases(data.decode("utf-8", "replace")) if data else {}


def card_words(harmful: "list[str]", alias_map: "Mapping[str, str]") -> "list[str]":
    """What the session card adds to PreToolUse's pre-filter: each alias whose expansion has a harmful effect,
    and the first word of each command the user declared harmful."""
    words = {p.split()[0] for p in harmful if p.split()}
    words |= {n for n, x in alias_map.items() if classify(x, {"local_exempt": False, "harmful": list(harmful)})}
    return sorted(words)


# -- the identity of an effect ---------------------------------------------------------------------------

def git_state(root: str) -> "str | None":
    """HEAD and the state of the work tree (each changed path with its size and mtime), as one digest; None: no git."""
    out = _run(["git", "-C", root, "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z",
                "--untracked-files=all"])
    if out is None:
        return None
    parts = []
    for ent in out.split(b"\0"):
        if not ent:
            continue
        if ent.startswith(b"# branch.oid"):
            parts.append(ent)
            continue
        if ent.startswith(b"#"):
            continue
        path = ent.rsplit(b" ", 1)[-1] if ent[:1] in b"12u" else ent[2:]
        try:
            st = posix.stat(root.encode() + b"/" + path)
            parts.append(ent + b" %d %d" % (st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append(ent + b" gone")
    return digest.sha256(b"\n".join(sorted(parts))).hexdigest()


def _run(argv: "list[str]") -> "bytes | None":
    """``argv``'s stdout when it exits 0, else None: ``posix_spawnp`` and a pipe (``subprocess`` costs ~8 ms to
    import, more than the rest of a classified call).  Bounded by the hook's own budget (hooks/BUDGET)."""
    try:
        r, w = posix.pipe()
    except OSError:
        return None
    try:
        pid = posix.posix_spawnp(argv[0], argv, posix.environ, file_actions=[
            (posix.POSIX_SPAWN_DUP2, w, 1), (posix.POSIX_SPAWN_CLOSE, r),
            (posix.POSIX_SPAWN_OPEN, 2, "/dev/null", posix.O_WRONLY, 0), (posix.POSIX_SPAWN_OPEN, 0, "/dev/null",
                                                                         posix.O_RDONLY, 0)])
    except OSError:
        posix.close(r)
        posix.close(w)
        return None
    posix.close(w)
    chunks = []
    try:
        while True:
            b = posix.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
    finally:
        posix.close(r)
        _, status = posix.waitpid(pid, 0)
    return b"".join(chunks) if posix.WIFEXITED(status) and posix.WEXITSTATUS(status) == 0 else None


def key(effects: "list[dict[str, Any]]", git: "str | None") -> str:
    """The identity of a call's harmful effects: a digest, never their text."""
    norm = [[e["kind"], e["norm"]] + ([git] if e["git"] else []) for e in effects]
    return digest.sha256(fastjson.dumps(sorted(norm, key=fastjson.dumps)).encode()).hexdigest()


# -- the two-phase record --------------------------------------------------------------------------------

def store_path(pdir: str) -> str:
    return pdir.rstrip("/") + "/effects.jsonl"


def pending_dir(pdir: str) -> str:
    """Markers ``<tool_use_id>``: an intent waiting for its outcome (PostToolUse looks for one with a stat)."""
    return pdir.rstrip("/") + "/effects.pending"


def append(pdir: str, line: "dict[str, Any]") -> None:
    line.setdefault("ts", round(time.time(), 3))
    data = (fastjson.dumps(line) + "\n").encode()
    fd = posix.open(store_path(pdir), posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
    try:
        posix.write(fd, data)
    finally:
        posix.close(fd)


def _tail(path: str, nbytes: int) -> "tuple[bytes, int] | None":
    """The last ``nbytes`` of ``path`` and the offset they start at; None when it cannot be read."""
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        start = max(0, posix.fstat(fd).st_size - nbytes)
        posix.lseek(fd, start, 0)
        chunks = []
        while True:
            b = posix.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        posix.close(fd)
    return b"".join(chunks), start


def read(pdir: str) -> "list[dict[str, Any]]":
    """The newest ``STORE_TAIL`` bytes of the project's records (a torn or foreign line is skipped)."""
    got = _tail(store_path(pdir), STORE_TAIL)
    if got is None:
        return []
    raw, start = got
    if start:
        raw = raw.split(b"\n", 1)[-1]
    out = []
    for ln in raw.split(b"\n"):
        if not ln.strip():
            continue
        try:
            r = fastjson.loads(ln)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(r, dict):
            out.append(r)
    return out


def mark_pending(pdir: str, tool_use_id: str, k: str) -> None:
    d = pending_dir(pdir)
    try:
        posix.mkdir(d, 0o700)
    except FileExistsError:
        pass
    fd = posix.open(d + "/" + tool_use_id, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_CLOEXEC, 0o600)
    try:
        posix.write(fd, k.encode())
    finally:
        posix.close(fd)


def outcome(pdir: str, payload: "Mapping[str, Any]", code: "int | None", sid: str | None = None) -> "dict[str, Any] | None":
    """PostToolUse / PostToolUseFailure of a call whose intent is pending: record its outcome and exit code
    (``code``: the tool line's, hooks/post_tool_use.exit_code).  None: no intent pending."""
    tid = payload.get("tool_use_id")
    if not isinstance(tid, str) or not tid or "/" in tid:
        return None
    marker = pending_dir(pdir) + "/" + tid
    try:
        fd = posix.open(marker, posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        k = posix.read(fd, 128).decode("ascii", "replace")
    finally:
        posix.close(fd)
    resp = payload.get("tool_response")
    interrupted = payload.get("is_interrupt") is True or (isinstance(resp, dict) and resp.get("interrupted") is True)
    line: "dict[str, Any]" = {"ph": "done", "k": k, "tu": tid, "exit": code, "ok": code == 0 and not interrupted,
                              "sid": sid}
    if interrupted:
        line["interrupted"] = True
    append(pdir, line)
    try:
        posix.unlink(marker)
    except OSError:
        pass
    return line


def _words(text: str) -> "set[str]":
    """The lower-cased words of ``text`` (letters, digits and ``_``)."""
    return set("".join(c if c.isalnum() or c == "_" else " " for c in text.lower()).split())


def override_codes(prompt: str) -> "set[str]":
    """The codes of ``repeat <code>`` in a prompt (a code: ``CODE_LEN`` lower-case hex digits)."""
    out = set()
    parts = prompt.split("repeat ")
    for i, rest in enumerate(parts[1:], 1):
        before = parts[i - 1][-1:]
        code = rest[:CODE_LEN]
        after = rest[CODE_LEN:CODE_LEN + 1]
        if (not before or not before.isalnum()) and len(code) == CODE_LEN and all(c in "0123456789abcdef" for c in code) \
                and not (after.isalnum() or after == "_"):
            out.add(code)
    return out


def record_override(pdir: str, prompt: str, sid: str | None, name: str | None) -> "list[str]":
    """The user's prompt said ``repeat <code>``: record it (each code lets one repeat through).  The codes seen."""
    codes = sorted(override_codes(prompt))
    for c in codes:
        append(pdir, {"ph": "override", "code": c, "sid": sid, "n": name})
    return codes


# -- a repeat, held -----------------------------------------------------------------------------------------

def history(pdir: str, k: str, transcripts: "Mapping[str, str] | None" = None,
            ran: "Callable[[str | None, str], str | None] | None" = None) -> "dict[str, Any]":
    """What the records say of effect ``k``: the last achieved or uncertain run, and an unused override.

    ``ran`` (the host's :meth:`~.host.Host.call_ran`) settles an intent with no recorded outcome from
    the agent's transcript: a call that never ran is not held against a repeat."""
    recs = read(pdir)
    code = k[:CODE_LEN]
    intents: "dict[str, dict[str, Any]]" = {}
    last_intent_ts = 0.0
    for r in recs:
        if r.get("k") == k and r.get("ph") == "intent" and isinstance(r.get("tu"), str):
            intents[r["tu"]] = dict(r, state="uncertain")
            last_intent_ts = max(last_intent_ts, r.get("ts") or 0)
        elif r.get("k") == k and r.get("ph") in ("done", "not_run") and r.get("tu") in intents:
            i = intents[r["tu"]]
            if r["ph"] == "not_run":
                i["state"] = "not run"
            elif r.get("interrupted"):
                i["state"] = "uncertain"
                i["evidence"] = "it was interrupted while running"
            else:
                i["state"] = "done" if r.get("ok") else "failed"
                i["exit"] = r.get("exit")
    override = any(r.get("ph") == "override" and r.get("code") == code and (r.get("ts") or 0) > last_intent_ts
                   for r in recs)
    achieved = None
    for i in sorted(intents.values(), key=lambda r: r.get("ts") or 0):
        if i["state"] == "uncertain" and "evidence" not in i:
            seen = ran((transcripts or {}).get(i.get("sid") or "") or i.get("tr"), i["tu"]) if ran else None
            if seen == "not run":
                i["state"] = "not run"
            elif seen == "ran":
                i["state"] = "done"
                i["evidence"] = "the transcript has its result, but no outcome was recorded"
            else:
                i["evidence"] = "its intent was recorded, then nothing: the process died or the call was cut short"
        if i["state"] in ("done", "uncertain"):
            achieved = i
    return {"last": achieved, "override": override, "code": code}


def unattended(payload: "Mapping[str, Any]", env_unattended: bool) -> bool:
    """No one to answer a question: ``--dangerously-skip-permissions``, ``dontAsk``, or started unattended."""
    return env_unattended or payload.get("permission_mode") in ("bypassPermissions", "dontAsk")


def _when(ts: "object") -> str:
    if not isinstance(ts, (int, float)):
        return "at an unknown time"
    return time.strftime("at %Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def hold_reason(h: "dict[str, Any]", what: str) -> str:
    last = h["last"]
    who = last.get("n") or last.get("sid") or "an earlier session"
    if last["state"] == "uncertain":
        head = ("cc-continuity: this call (%s) may already have had its effect: the same call was started %s in session "
                "%s, and its outcome is unknown (%s)." % (what, _when(last.get("ts")), who, last.get("evidence")))
        check = " Check whether it took effect (the remote, the API, the registry) before running it again."
    else:
        head = ("cc-continuity: this call (%s) already had its effect: the same call ran %s in session %s%s." % (
            what, _when(last.get("ts")), who,
            "" if last.get("exit") is None else " and exited %s" % last["exit"]))
        check = " Repeating it would do it twice (a second post, release, message or publish)."
    return head + check + (" To do it anyway, the user can type \"repeat %s\" in a prompt of their own; that lets "
                           "exactly one repeat through." % h["code"])


def decide(pdir: str, command: str, env: "dict[str, Any]", payload: "Mapping[str, Any]", sid: str | None,
           name: str | None, root: str | None, env_unattended: bool,
           ran: "Callable[[str | None, str], str | None] | None" = None) -> "tuple[str, dict[str, Any] | None]":
    """PreToolUse for a Bash call: (what happened, the hook output or None to let it run).

    Records the intent (and the pending marker) of a harmful effect that runs; records
    nothing for a call with none, or one that is held (a held call never runs).
    """
    effects = classify(command, env)
    if not effects:
        return "no harmful effect", None
    state = git_state(root) if root and any(e["git"] for e in effects) else None
    k = key(effects, state)
    tr = payload.get("transcript_path")
    h = history(pdir, k, {sid: tr} if sid and isinstance(tr, str) else None, ran)
    what = "; ".join(dict.fromkeys(e["what"] for e in effects))[:200]
    tid = payload.get("tool_use_id")
    intent = {"ph": "intent", "k": k, "tu": tid, "sid": sid, "n": name, "what": what,
              "tr": tr if isinstance(tr, str) else None}
    if h["last"] is not None and not h["override"]:
        reason = hold_reason(h, what)
        if unattended(payload, env_unattended):
            return "held (%s, denied)" % h["last"]["state"], {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}
        intent["asked"] = True  # the user may let it run: the intent is on record, a decline resolves to not run
        _write_intent(pdir, intent)
        return "held (%s, asked)" % h["last"]["state"], {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}}
    if h["override"]:
        intent["override"] = h["code"]
    _write_intent(pdir, intent)
    return ("repeat let through by the user's override" if h["override"] else "intent recorded"), None


def _write_intent(pdir: str, intent: "dict[str, Any]") -> None:
    if not isinstance(intent.get("tu"), str) or not intent["tu"] or "/" in intent["tu"]:
        intent["tu"] = "none-%d" % time.time_ns()
    append(pdir, intent)
    mark_pending(pdir, intent["tu"], intent["k"])
