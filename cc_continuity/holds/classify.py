"""Which effects of a Bash command would harm if repeated: :func:`classify`.

Every simple command :func:`.shell.read` finds is judged on its own words: curl/wget/httpie by method
(a method glued to other short flags too: ``-sXPOST``) and body, ``gh`` by subcommand (its options
before it skipped; ``gh api graphql`` by whether the query is a mutation), publishers, deploy and
release tools (their options before the subcommand skipped; ``--dry-run`` is not a run), version bumps
(``npm version`` with no argument only prints), mail, database clients by the SQL they are given (an
option, a here-document, a file: the statement's verb, never a word inside a string or an option's
name), and the user's own declared commands.  An alias (from Claude Code's shell snapshot) is expanded
once; a script named as the command, or sourced (``source f``, ``. f``), is read (at most ``SCRIPT_MAX``
bytes, one level deep) and its commands count as the call's; only a script that cannot be read counts
by its name.  Each effect says whether a repeat harms (``harm``) and whether its identity includes the
git state (a publish of the same HEAD and work tree is the same publish).
"""

import posix

from .. import digest
from . import shell

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (PreToolUse's slow path)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCRIPT_MAX = 64 * 1024
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
FROM_STDIN = "(its target from stdin)"

_METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
_WRITE_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
_CURL_DATA = frozenset(("-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode",
                        "-F", "--form", "--form-string", "--json"))
_CURL_ARG = frozenset(("-H", "--header", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-e", "--referer",
                       "-b", "--cookie", "-c", "--cookie-jar", "-m", "--max-time", "--connect-timeout", "-w",
                       "--write-out", "--retry", "-x", "--proxy", "--cacert", "--cert", "--key", "-K", "--config",
                       "--resolve", "--url", "-T", "--upload-file", "-X", "--request", "-r", "--range", "-Y",
                       "-y", "-z", "--limit-rate", "--oauth2-bearer", "-E", "-Q", "--quote", "-P", "--ftp-port",
                       "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--form",
                       "--form-string", "--json", "-d", "-F", "--max-filesize", "--interface", "--dns-servers"))
# curl's short options that take a value (the rest of a cluster, or the next word): -sXPOST, -sfd@x
_CURL_SHORT_VALUE = frozenset("XdHouAebcmwxKrTFYyzEQP")
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
_READS = {("kubectl", "rollout"): ("status", "history")}  # a write subcommand's read-only second word
# Options that take a value, per program, so that the subcommand after them is found (gh -R o/r pr create).
_VALUE_OPTS = {
    "gh": ("-R", "--repo", "--hostname"),
    "npm": ("--prefix", "-w", "--workspace", "--registry", "--userconfig", "--cache", "--loglevel", "--tag",
            "--access", "--otp", "-C"),
    "pnpm": ("--prefix", "-C", "--dir", "--filter", "-F", "--registry", "--tag", "--access", "--otp"),
    "yarn": ("--cwd", "--registry", "--tag", "--access", "--otp"),
    "bun": ("--cwd", "--registry", "--tag", "--access", "--otp"),
    "cargo": ("--manifest-path", "-p", "--package", "--registry", "--token", "--index", "--config", "-Z", "--color",
              "--target-dir"),
    "make": ("-C", "-f", "--file", "--makefile", "--directory", "-I", "--include-dir", "-o", "-W", "--old-file",
             "--what-if", "-j", "--jobs", "-l", "--load-average"),
    "kubectl": ("-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-s", "--server", "--token",
                "-l", "--selector", "-o", "--output", "-f", "--filename", "-c", "--container"),
    "helm": ("-n", "--namespace", "--kube-context", "--kubeconfig", "-f", "--values", "--set", "--set-string",
             "--version", "--repo"),
    "docker": ("-H", "--host", "--context", "--config", "-c", "--log-level"),
    "podman": ("--url", "--connection", "-c"),
    "git": ("-C", "-c", "--git-dir", "--work-tree", "--namespace"),
    "aws": ("--profile", "--region", "--output", "--endpoint-url", "--query", "--cli-read-timeout"),
    "gcloud": ("--project", "--account", "--configuration", "--format", "--region"),
    "az": ("--subscription", "-g", "--resource-group", "--output", "-o", "--query"),
    "fly": ("-a", "--app", "-c", "--config", "-t", "--access-token"),
    "flyctl": ("-a", "--app", "-c", "--config", "-t", "--access-token"),
    "vercel": ("--cwd", "-A", "--local-config", "-Q", "--global-config", "-t", "--token", "--scope", "-S"),
    "poetry": ("-C", "--directory", "-P", "--project"),
    "uv": ("--directory", "--project", "--index", "--publish-url", "--token", "-t"),
    "terraform": (),
    "pulumi": ("-s", "--stack", "-C", "--cwd"),
    "dotnet": (),
}
_MAIL = frozenset(("mail", "mailx", "sendmail", "mutt", "msmtp", "swaks"))
_DB = frozenset(("psql", "mysql", "mariadb", "sqlite3", "mongosh", "mongo", "redis-cli", "clickhouse-client", "cqlsh"))
_SQL_WRITE = frozenset(("insert", "update", "delete", "create", "drop", "alter", "truncate", "grant", "revoke", "replace",
                        "merge", "upsert", "copy", "vacuum", "reindex", "cluster", "comment", "rename", "load",
                        "import", "call", "do", "refresh", "lock", "set"))
_SQL_READ_SET = ("set statement_timeout", "set search_path", "set role", "set session", "set local", "set time zone",
                 "set timezone", "set client_encoding", "set application_name", "set names", "set @@session")
_REDIS_WRITE = frozenset(("set", "setex", "setnx", "mset", "del", "unlink", "hset", "hmset", "hdel", "lpush", "rpush",
                          "lpop", "rpop", "sadd", "srem", "zadd", "zrem", "expire", "pexpire", "persist", "flushdb",
                          "flushall", "incr", "incrby", "decr", "decrby", "append", "rename", "publish", "xadd",
                          "getdel", "getset", "hincrby", "zincrby", "eval", "evalsha", "restore", "move", "copy"))
# A database client's options that carry the statement, and those that take some other value.
_SQL_OPTS = {"psql": ("-c", "--command"), "mysql": ("-e", "--execute"), "mariadb": ("-e", "--execute"),
             "clickhouse-client": ("-q", "--query"), "cqlsh": ("-e", "--execute"), "mongosh": ("--eval",),
             "mongo": ("--eval",)}
_SQL_FILE_OPTS = {"psql": ("-f", "--file"), "cqlsh": ("-f", "--file"), "mongosh": ("--file", "-f")}
_DB_VALUE_OPTS = frozenset(("-h", "--host", "-p", "--port", "-U", "--username", "-d", "--dbname", "-u", "--user",
                            "-P", "-v", "--set", "--variable", "-o", "--output", "-P", "--pset", "-T", "-F", "-R",
                            "--default-character-set", "-D", "--database", "-S", "--socket", "-n", "-a", "--auth",
                            "--tls-cert-file", "--cmd", "-init", "-separator", "-newline", "--config-file"))
_NAME_WORDS = ("deploy", "publish", "release")


def _effect(kind: str, norm: "list[Any]", harm: bool, git: bool = False, what: str = "") -> "dict[str, Any]":
    return {"kind": kind, "norm": norm, "harm": harm, "git": git, "what": what or kind}


def host_of(url: str) -> str:
    """The host of ``url``: after its scheme and userinfo, before its port, path, query and fragment."""
    rest = url.strip()
    at = rest.find("://")
    if at > 0 and rest[:at].replace("+", "").replace("-", "").replace(".", "").isalnum():
        rest = rest[at + 3:]  # the scheme
    for stop in "/?#":
        rest = rest.split(stop, 1)[0]
    rest = rest.rsplit("@", 1)[-1]  # userinfo: only the authority's own
    if rest.startswith("["):
        return rest.split("]", 1)[0] + "]"
    return rest.split(":", 1)[0].lower()


def _host_local(url: str) -> bool:
    return host_of(url) in LOCAL_HOSTS


def _norm_url(url: str) -> str:
    u = url.strip()
    if "://" not in u:
        u = "http://" + u
    scheme, rest = u.split("://", 1)
    host, _, path = rest.partition("/")
    return "%s://%s/%s" % (scheme.lower(), host.lower(), path)


def read_file(path: str, cwd: "str | None", limit: int) -> "bytes | None":
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


def _body_of(value: str, cwd: "str | None") -> str:
    """A ``-d`` value; ``@file`` stands for the file's content (its digest: a changed file is a new body)."""
    if value.startswith("@") and len(value) > 1 and value != "@-":
        data = read_file(value[1:], cwd, SCRIPT_MAX)
        return "@" + digest.sha256(data).hexdigest() if data is not None else value
    return value


def _dry(args: "list[str]") -> bool:
    """``--dry-run`` (or ``--dry-run=client|server|true``, ``--dryrun``): nothing is done."""
    for a in args:
        name, eq, val = a.partition("=")
        if name in ("--dry-run", "--dryrun") and (not eq or val.lower() not in ("none", "false", "0", "no")):
            return True
    return False


def _curl(args: "list[str]", cwd: "str | None") -> "dict[str, Any] | None":
    method = None
    bodies: "list[str]" = []
    urls: "list[str]" = []
    get = False
    upload = False
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        step = 2
        if a.startswith("--") and "=" in a:
            a, _, nxt = a.partition("=")
            step = 1
        elif a.startswith("-") and not a.startswith("--") and len(a) > 2:
            # a cluster of short options: the first that takes a value takes the rest of the word (or the next)
            for j, ch in enumerate(a[1:], 1):
                if ch == "G":
                    get = True
                if ch in _CURL_SHORT_VALUE:
                    rest = a[j + 1:]
                    a = "-" + ch
                    if rest:
                        nxt, step = rest, 1
                    break
            else:
                i += 1
                continue
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
    return {"method": method, "urls": urls, "bodies": sorted(bodies), "harm": method in _WRITE_METHODS}


def _httpie(args: "list[str]") -> "dict[str, Any] | None":
    rest = [a for a in args if not a.startswith("-")]
    method = None
    if rest and rest[0].upper() in _METHODS:
        method = rest.pop(0).upper()
    url, items = (rest[0], rest[1:]) if rest else ("", [])
    data = sorted(x for x in items if ("=" in x and "==" not in x) or ":=" in x or "@" in x.split("=", 1)[0])
    method = method or ("POST" if data or "--form" in args or "-f" in args else "GET")
    if url.startswith(":"):
        url = "localhost" + url
    return {"method": method, "urls": [url] if url else [], "bodies": data, "harm": method in _WRITE_METHODS}


def _wget(args: "list[str]", cwd: "str | None") -> "dict[str, Any] | None":
    method, bodies, urls = None, [], []
    for a in args:
        name, _, val = a.partition("=")
        if name == "--method":
            method = val.upper()
        elif name in ("--post-data", "--body-data"):
            bodies.append(val)
        elif name in ("--post-file", "--body-file"):
            bodies.append(_body_of("@" + val, cwd))
        elif not a.startswith("-") and "://" in a:
            urls.append(a)
    method = method or ("POST" if bodies else "GET")
    return {"method": method, "urls": urls, "bodies": sorted(bodies), "harm": method in _WRITE_METHODS}


def subcommand(prog: str, args: "list[str]") -> "tuple[int, str | None]":
    """Where ``prog``'s subcommand is in ``args``, and which: the first word that is not an option, past the
    values of the options that take one (``gh -R o/r pr``, ``npm --prefix pkg publish``, ``make -C infra``)."""
    takes = _VALUE_OPTS.get(prog, ())
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return (i + 1, args[i + 1]) if i + 1 < len(args) else (i, None)
        if a.startswith("-") and len(a) > 1:
            if a in takes and "=" not in a:
                nxt = args[i + 1] if i + 1 < len(args) else ""
                if a in ("-j", "--jobs", "-l", "--load-average") and not nxt.replace(".", "").isdigit():
                    i += 1  # make's -j with no number
                    continue
                i += 2
                continue
            i += 1
            continue
        if prog == "make" and "=" in a:
            i += 1  # VAR=value
            continue
        return i, a
    return i, None


def _gh(args: "list[str]") -> "dict[str, Any] | None":
    at, sub = subcommand("gh", args)
    if sub is None:
        return None
    rest = args[at + 1:]
    if sub == "api":
        method = None
        endpoint = next((a for a in rest if not a.startswith("-")), "")
        fields = []
        i = 0
        while i < len(rest):
            a = rest[i]
            if a in ("-X", "--method") and i + 1 < len(rest):
                method = rest[i + 1].upper()
                i += 1
            elif a.startswith("--method="):
                method = a.split("=", 1)[1].upper()
            elif a.startswith("-X") and len(a) > 2:
                method = a[2:].upper()
            elif a in ("-f", "-F", "--field", "--raw-field") and i + 1 < len(rest):
                fields.append(rest[i + 1])
                i += 1
            elif a.startswith(("--field=", "--raw-field=")):
                fields.append(a.split("=", 1)[1])
            elif a == "--input":
                fields.append("@input")
                i += 1
            i += 1
        if endpoint.strip("/") == "graphql":
            query = " ".join(f.split("=", 1)[1] for f in fields if f.startswith("query="))
            mutation = query.lstrip().lower().startswith("mutation") or "@input" in fields
            return {"harm": mutation, "what": "gh api graphql %s" % ("mutation" if mutation else "query")}
        method = method or ("POST" if fields else "GET")
        return {"harm": method in _WRITE_METHODS, "what": "gh api %s" % method}
    second = next((a for a in rest if not a.startswith("-")), None)
    if second in _GH_WRITE.get(sub, ()):
        return {"harm": True, "what": "gh %s %s" % (sub, second)}
    return None


def _sub(table: "Mapping[str, tuple[str, ...]]", prog: str, args: "list[str]") -> "str | None":
    subs = table.get(prog)
    if not subs:
        return None
    if "*" in subs:
        return "*"
    if prog == "make":  # every target counts
        targets = [a for a in args[subcommand(prog, args)[0]:] if not a.startswith("-") and "=" not in a]
        return next((t for t in targets if t in subs), None)
    flags = [a for a in args if a in subs and a.startswith("-")]
    at, sub = subcommand(prog, args)
    if sub in subs:
        second = next((a for a in args[at + 1:] if not a.startswith("-")), None)
        if second is not None and second in _READS.get((prog, sub), ()):
            return None
        return sub
    return flags[0] if flags else None


def sql_of(prog: str, args: "list[str]", stdin: "str | None", cwd: "str | None") -> "list[str]":
    """The statements a database client is given: its statement option, its file, its stdin, or (sqlite3,
    redis-cli, a bare mysql/psql positional) its positional words."""
    texts = []
    takes = _SQL_OPTS.get(prog, ())
    files = _SQL_FILE_OPTS.get(prog, ())
    positional = []
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, val = a.partition("=")
        if name in takes:
            texts.append(val if eq else (args[i + 1] if i + 1 < len(args) else ""))
            i += 1 if eq else 2
            continue
        if len(a) > 2 and a[:2] in takes and not a.startswith("--"):
            texts.append(a[2:])  # -e'select 1'
            i += 1
            continue
        if name in files:
            data = read_file(val if eq else (args[i + 1] if i + 1 < len(args) else ""), cwd, SCRIPT_MAX)
            texts.append(data.decode("utf-8", "replace") if data else "")
            i += 1 if eq else 2
            continue
        if name in _DB_VALUE_OPTS and not eq:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        positional.append(a)
        i += 1
    if stdin:
        texts.append(stdin)
    if prog == "sqlite3" and len(positional) > 1:
        texts.append(" ".join(positional[1:]))
    if prog == "redis-cli" and positional:
        texts.append(" ".join(positional))
    return texts


def _strip_sql(text: str) -> str:
    """SQL without its string literals, quoted names and comments (a verb inside them is no statement)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        elif text.startswith("--", i) or text.startswith("#", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text.startswith("$$", i):
            j = text.find("$$", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sql_writes(prog: str, text: str) -> bool:
    """Does ``text`` (what ``prog`` is given) write: a statement whose verb writes (WITH … INSERT too)?"""
    if prog == "redis-cli":
        first = text.strip().split(None, 1)
        return bool(first) and first[0].lower() in _REDIS_WRITE
    if prog in ("mongosh", "mongo"):
        low = text.lower()
        return any(w in low for w in (".insert", ".update", ".delete", ".remove", ".drop", ".replace",
                                      ".bulkwrite", ".findoneandupdate", ".findoneanddelete", ".createindex",
                                      ".renamecollection", "dropdatabase"))
    for stmt in _strip_sql(text).split(";"):
        low = " ".join(stmt.lower().split())
        if not low:
            continue
        if low.startswith("\\copy") or low.startswith("\\i "):
            return True
        verb = low.split(None, 1)[0]
        if verb == "with":
            if any((" %s " % v) in " %s " % low for v in ("insert", "update", "delete", "merge")):
                return True
            continue
        if verb == "set" and low.startswith(_SQL_READ_SET):
            continue
        if verb == "copy" and " to " in " %s " % low and " from " not in " %s " % low:
            continue  # COPY … TO: a read
        if verb in _SQL_WRITE or (verb == "select" and " into " in " %s " % low):
            return True
    return False


def _declared(words: "list[str]", patterns: "list[str]") -> bool:
    line = " ".join(words)
    return any(line == p or line.startswith(p.rstrip() + " ") for p in patterns)


def _name_says(path: str) -> bool:
    """A deploy/publish/release word among the name's parts (``deploy.sh``, ``release-it``)."""
    name = path.rsplit("/", 1)[-1].lower()
    parts = "".join(c if c.isalnum() else " " for c in name).split()
    return any(p in _NAME_WORDS or p.startswith(_NAME_WORDS) for p in parts)


def _aws(args: "list[str]") -> bool:
    at, service = subcommand("aws", args)
    if service is None:
        return False
    rest = [a for a in args[at + 1:] if not a.startswith("-")]
    op = rest[0] if rest else ""
    if service == "s3":
        if op in ("rm", "mb", "rb", "mv"):
            return True
        if op in ("cp", "sync"):
            return bool(rest) and rest[-1].startswith("s3://")  # an upload; a download writes only here
        return False
    return op.startswith(("put-", "create-", "delete-", "update-", "invoke", "send-", "publish", "deploy",
                          "start-", "stop-", "terminate-", "run-", "modify-", "attach-", "detach-", "associate-",
                          "disassociate-", "register-", "deregister-", "tag-", "untag-", "reboot-", "restore-",
                          "import-", "upload-", "execute-", "batch-write", "remove-", "add-", "set-", "enable-",
                          "disable-", "revoke-", "authorize-", "copy-", "reset-", "cancel-", "replace-"))


def _one(cmd: "shell.Command", env: "dict[str, Any]", depth: int, out: "list[dict[str, Any]]") -> None:
    words = cmd.words
    if not words:
        return
    aliases = env.get("aliases") or {}
    if depth == 0 and words[0] in aliases:
        for alias_cmd in shell.read(aliases[words[0]] + " " + " ".join(shell.quote(w) for w in words[1:])).commands:
            _one(alias_cmd, env, depth + 1, out)
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
    if prog in ("source", ".") and args:
        if not _script(args[0], args[1:], env, depth, out) and _name_says(args[0]):
            out.append(_effect("deploy", ["script", args[0]] + args[1:], True, git=True,
                               what="%s (a deploy/release script)" % args[0]))
        return
    if prog in shell.SHELLS:
        script = next((a for a in args if not a.startswith("-")), None)
        if script is not None and not _script(script, args[args.index(script) + 1:], env, depth, out) \
                and _name_says(script):
            out.append(_effect("deploy", ["script", script], True, git=True, what="%s (a deploy/release script)" % script))
        return
    if "/" in words[0]:
        if _script(words[0], args, env, depth, out):
            return
    if prog in ("curl", "wget", "http", "https", "xh", "xhs"):
        got = _curl(args, env.get("cwd")) if prog == "curl" else (
            _wget(args, env.get("cwd")) if prog == "wget" else _httpie(args))
        if not got or not got["harm"]:
            return
        urls = got["urls"]
        if not urls and not cmd.fed:
            return
        if urls and all(_host_local(u) for u in urls) and env.get("local_exempt", True):
            return
        norm_urls = [_norm_url(u) for u in urls] or [FROM_STDIN, cmd.line]
        out.append(_effect("http", ["http", got["method"], norm_urls, got["bodies"]], True,
                           what="%s %s" % (got["method"], " ".join(urls or [FROM_STDIN])[:120])))
        return
    if prog == "gh":
        gh = _gh(args)
        if gh and gh["harm"]:
            out.append(_effect("gh", ["gh"] + args + ([cmd.line] if cmd.fed else []), True, what=gh["what"]))
        return
    if prog in _MAIL:
        out.append(_effect("mail", [prog] + args, True, what="a message sent (%s)" % prog))
        return
    if prog in _DB:
        texts = sql_of(prog, args, cmd.stdin, env.get("cwd"))
        if any(sql_writes(prog, t) for t in texts):
            out.append(_effect("db", [prog] + args + [digest.sha256((cmd.stdin or "").encode()).hexdigest()], True,
                               what="a database write (%s)" % prog))
        return
    if _dry(args):
        return  # --dry-run: nothing is done
    if _sub(_IDEMPOTENT, prog, args) is not None:
        return  # the same push, the same manifest applied again: no harm in a repeat
    sub = _sub(_PUBLISH, prog, args)
    if sub is not None:
        out.append(_effect("publish", [prog, sub] + args, True, git=True, what="%s %s" % (prog, sub)))
        return
    sub = _sub(_BUMP, prog, args)
    if sub is not None:
        at, _ = subcommand(prog, args)
        if prog in ("npm", "pnpm", "yarn", "poetry", "hatch") and not [a for a in args[at + 1:] if not a.startswith("-")]:
            return  # `npm version` with no argument prints the versions
        out.append(_effect("bump", [prog] + args, True, what="a version bump (%s %s)" % (prog, sub)))
        return
    sub = _sub(_DEPLOY, prog, args)
    if sub is not None and not (prog == "aws" and not _aws(args)):
        out.append(_effect("deploy", [prog] + args, True, git=True, what="%s %s" % (prog, " ".join(args[:2]))))
        return
    if depth == 0 and "/" not in words[0] and _name_says(prog):
        out.append(_effect("deploy", [prog] + args, True, git=True, what="%s (a deploy/release command)" % prog))


def _script(path: str, args: "list[str]", env: "dict[str, Any]", depth: int, out: "list[dict[str, Any]]") -> bool:
    """A script run or sourced: its commands are the call's (one level deep).  False: not a readable script."""
    data = read_file(path, env.get("cwd"), SCRIPT_MAX)
    if data is None or b"\0" in data[:4096]:
        return False
    if depth > 0:
        if _name_says(path):
            out.append(_effect("deploy", ["script", digest.sha256(data).hexdigest()] + args, True, git=True,
                               what="%s (a deploy/release script)" % path))
        return True
    inner: "list[dict[str, Any]]" = []
    for cmd in shell.read(data.decode("utf-8", "replace")).commands:
        _one(cmd, env, depth + 1, inner)
    if args:
        for e in inner:
            e["norm"] = e["norm"] + ["args"] + args  # the script's own arguments are part of what it does
    out.extend(inner)
    return True


def classify(command: str, env: "dict[str, Any] | None" = None) -> "list[dict[str, Any]]":
    """The harmful-to-repeat effects of one Bash command (``[]``: run it, record nothing).

    ``env``: ``cwd`` (scripts and ``@file`` bodies are read relative to it), ``aliases``
    (name -> expansion), ``harmful`` / ``harmless`` (the user's declared command
    prefixes), ``local_exempt`` (calls to 127.0.0.1 / localhost are not held).
    """
    env = env or {}
    out: "list[dict[str, Any]]" = []
    for cmd in shell.read(command).commands:
        _one(cmd, env, 0, out)
    return out
