"""What a repository's ``.env`` put into Gemini CLI's environment, taken out of our hook's before anything runs.

Gemini 0.61, in a trusted folder, loads the first env file it finds walking up from its folder (in each
folder ``.gemini/.env``, then ``.env``; at the top the user's ``~/.gemini/.env`` or ``~/.env``) into its
own environment, for every name not already set, and its hooks inherit that environment.  So a
repository could hand our hook ``CC_CONTINUITY_HOME`` (another state dir, another config),
``CC_CONTINUITY=0`` (no holds), ``GIT_CONFIG_*`` (a command run by our snapshot's git) or a proxy.
A repository is not the user: :func:`scrub` finds the file Gemini loaded and unsets each name whose
value is the file's (a value the user set stays: Gemini never overrides one), unless the file is the
user's own.  ``PYTHON*`` names are not needed here: the hook's interpreter runs with ``-E``.

On every Gemini hook call, a tool call's too: ``posix`` only, a few ``stat`` calls, and when a repository's
file is there, our digests of its values (``runtime/gemini/envfile.json``, parsed again only when the file
changed: importing ``re`` costs a hook ~6 ms).  The parse follows the ``dotenv`` package Gemini
uses (``KEY=value``, ``export``, quotes, ``#`` comments, ``\\n`` in double quotes).
"""

import posix

from ... import atomic, fastjson
from ...digest import sha256
from . import generations

MAX_BYTES = 1 << 20
# Names always set in a process's environment (so no file could have set them): never unset, even when equal.
KEEP = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TERM", "LANG"})
# dotenv's line (its v16 rule): a name, = or ": ", a quoted or bare value, an optional comment.
LINE = (r"^\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*\"(?:\\\"|[^\"])*\""
        r"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?$")


def _exists(path: str) -> bool:
    try:
        posix.stat(path)
    except OSError:
        return False
    return True


def _parent(path: str) -> str:
    cut = path.rstrip("/").rfind("/")
    return path[:cut] if cut > 0 else "/"


def loaded_file(cwd: str, home: str) -> "str | None":
    """The env file Gemini loads for a trusted folder ``cwd`` (its ``homedir()`` is ``home``), or None."""
    d = cwd.rstrip("/") or "/"
    while True:
        for path in (d.rstrip("/") + "/.gemini/.env", d.rstrip("/") + "/.env"):
            if _exists(path):
                return path
        if d == "/":
            break
        d = _parent(d)
    for path in (home + "/.gemini/.env", home + "/.env"):
        if _exists(path):
            return path
    return None


def parse(text: str) -> "dict[str, str]":
    """``{name: value}`` of an env file as dotenv reads it."""
    import re  # (only when a repository's env file is there: re costs a tool call's hook 8-11 ms to import)

    found = {}
    for m in re.finditer(LINE, text.replace("\r\n", "\n").replace("\r", "\n"), re.M):
        value = (m.group(2) or "").strip()
        quote = value[:1]
        if len(value) > 1 and quote in "'\"`" and value.endswith(quote):
            value = value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace("\\r", "\r")
        found[m.group(1)] = value
    return found


def _digest(value: bytes) -> str:
    return sha256(value).hexdigest()


def _digests(path: str, st: "posix.stat_result") -> "dict[str, str] | None":
    """``{name: sha256 of its value}`` of the file at ``path`` (``st``: its stat), from our cache when the file
    is the one cached (its device, inode, size and mtime), else parsed and cached.  Digests, never the values:
    a repository's .env holds secrets, and the cache is ours.  None when it cannot be read."""
    ident = [path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    cache = generations.folder() + "/envfile.json"
    try:
        with open(cache, "rb") as f:
            got = fastjson.loads(f.read(1 << 20))
        if isinstance(got, dict) and got.get("file") == ident and isinstance(got.get("names"), dict):
            return got["names"]  # type: ignore[no-any-return]
    except (OSError, ValueError):
        pass
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK)
        try:
            data = posix.read(fd, MAX_BYTES)
        finally:
            posix.close(fd)
    except OSError:
        return None
    names = {k: _digest(v.encode("utf-8", "surrogateescape")) for k, v in parse(data.decode("utf-8", "replace")).items()}
    try:
        generations.private_folder()
        atomic.write_text(cache, fastjson.dumps({"file": ident, "names": names}), fsync=False, follow=False)
    except OSError:
        pass  # (parsed again next time)
    return names


def scrub(cwd: "str | None" = None) -> "list[str]":
    """Unset in this process each name a repository's env file gave Gemini (its value still the file's);
    the names unset.  The user's own files (under their home's top) are theirs: nothing is unset."""
    env = posix.environ
    home = (env.get(b"GEMINI_CLI_HOME") or env.get(b"HOME") or b"").decode("utf-8", "surrogateescape")
    try:
        cwd = cwd or posix.getcwd()
    except OSError:
        return []
    path = loaded_file(cwd, home)
    if path is None or _parent(path) in (home, home + "/.gemini"):
        return []
    try:
        names = _digests(path, posix.stat(path))
    except OSError:
        return []
    gone = []
    for name, digest in (names or {}).items():
        key = name.encode("utf-8", "surrogateescape")
        value = env.get(key)
        if name not in KEEP and value is not None and _digest(value) == digest:
            del env[key]
            posix.unsetenv(key)
            gone.append(name)
    return gone
