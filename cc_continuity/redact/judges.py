"""The generic rules' judges: does this match of a generic shape hold a secret?

A generic rule's pattern finds a shape (``name = value``, ``--flag value``, ``user:pass@host``, a query
parameter, a value piped into a login); its judge, given the match, says whether the value is a literal
secret by the name (:mod:`.names`), the value (:mod:`.values`, :mod:`.tokens`) and what surrounds it.
A judge changes when a shape's false positives or misses do; the shapes themselves are in :mod:`.generic`.
"""

import re

from .names import _NOT_SECRET_CONTEXT, _password_family, name_tier
from .tokens import _looks_random, _neutral_string, _random_token
from .values import (_CODE_CHARS, _HEXISH, _MARK_PREFIX, _NUMBERISH, _PUBLIC_MATERIAL, _STATUS_WORDS, _TEMPLATE,
                     _VERSIONISH, _code_reference, _plausible_value, _public_value)


def _assignment(m: re.Match[str]) -> bool:
    if m.string.endswith("://", 0, m.start()):
        return False  # "user:password@" of a URL: the url-password rule owns it
    name = m.group("name")
    if m.group("op").strip() == ":" and (m.string.startswith(":", m.end("op")) or m.string.endswith(":", 0, m.start())):
        return False  # tests/test_api.py::TestAuth::test_token: a path of names, not an assignment
    tier = name_tier(name)
    if tier is None:
        return False
    quoted = m.group("q") is not None
    value = m.group("qv") if quoted else m.group("bv")
    if value.lower().replace("-", "_") == name.lower().replace("-", "_"):
        return False  # {"rotate_tokens": "rotate_tokens"}: a name mapped to itself
    if _public_value(value) or _PUBLIC_MATERIAL.search(value):
        return False  # a publishable key, an SSH public key, a certificate
    if quoted and _CONCAT.match(m.string, m.end()):
        return False  # "ghp_" + filler: a string being built in code
    if tier == "weak":
        return _random_token(value.strip())
    # An env-file style line (NAME=value, the name in capitals) may hold a plain word or a PIN, and so may
    # a password key whose value is all that is left of its line (YAML, ini: "password: letmein").
    env_style = "=" in m.group("op") and name.upper() == name and not quoted and name[0].isalpha()
    line_value = not quoted and _password_family(name) and _rest_of_line_empty(m.string, m.end())
    if line_value and value.strip().lower() in _STATUS_WORDS:
        return False
    return _plausible_value(value, quoted, strict_words=not (env_style or line_value))


_CONCAT = re.compile(r"""[ \t]*[+*%][ \t]*["'\w(]""")


def _rest_of_line_empty(text: str, pos: int) -> bool:
    end = text.find("\n", pos)
    rest = text[pos:end if end != -1 else len(text)].strip()
    return not rest or rest.startswith("#")


def _assignment_kind(m: re.Match[str]) -> str:
    return "password-assignment" if _password_family(m.group("name")) else "secret-assignment"


def _flag(m: re.Match[str]) -> bool:
    tier = name_tier(m.group("name"))
    v = m.group("s")
    if _public_value(v):
        return False
    if tier == "weak":
        return _random_token(v)
    return tier == "strong" and _plausible_value(v, False, strict_words=False) and not v.startswith("-")


def _url_password(m: re.Match[str]) -> bool:
    """Skip templated URLs (``${PGPASSWORD}``, ``<password>``) and already-masked ones."""
    s = m.group("s")
    if re.match(r"\d+[?#][^@]*=", s):
        return False  # host:port?next=a@b: a port, then a query that holds an "@"
    return not s.startswith(_MARK_PREFIX) and not any(c in _CODE_CHARS for c in s)


_NOT_USERS = frozenset("mailto sip sips tel xmpp im news urn data cid mid http https".split())
_DIGESTS = frozenset("sha1 sha224 sha256 sha384 sha512 md5 blake2b blake3".split())


def _userinfo(m: re.Match[str]) -> bool:
    """``user:password@host`` with no scheme: a password-like middle, a host-like end."""
    user, pw, host = m.group("user"), m.group("s"), m.group("host")
    if user.lower() in _NOT_USERS or host.lower() in _DIGESTS or pw.startswith(_MARK_PREFIX):
        return False
    if _VERSIONISH.match(pw) or pw.isdigit() or _code_reference(pw):
        return False
    return _looks_random(pw) or any(not c.isalnum() for c in pw)


def _context_token(m: re.Match[str]) -> bool:
    s = m.group("s")
    before = m.string[max(0, m.start("s") - 8):m.start("s")].lower()
    if before.endswith(("sha256:", "sha512:", "sha1:", "md5:", "sha256-", "sha512-")):
        return False  # a fingerprint or an integrity hash, not a credential
    return _random_token(s) and not _public_value(s)


_QUERY_WEAK = frozenset("code key sig signature auth sid sessionid jwt".split())


def _query_value(m: re.Match[str]) -> bool:
    """A query parameter that carries a credential, unless its value is a template, a word or a number."""
    v = m.group("s")
    if _public_value(v) or _code_reference(v) or _TEMPLATE.search(v) or v.startswith(_MARK_PREFIX):
        return False
    if m.group("name").lower() in _QUERY_WEAK:  # ?code=200, ?key=name: only a machine-made value
        return len(v) >= 10 and _looks_random(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v) \
            and not (_NUMBERISH.match(v) or _VERSIONISH.match(v) or _HEXISH.match(v) and len(v) < 20)
    return _plausible_value(v, False, strict_words=False)


# A command that reads a secret from its standard input (a pipe or a here-string feeds it).
_STDIN_SECRET = re.compile(
    r"--password-stdin|--with-token|--token-stdin|--passphrase-stdin|--stdin-password|-pass(?:in)?[ \t]+stdin"
    r"|--passphrase-fd[ \t]+0|\bgh[ \t]+secret[ \t]+set\b|\bglab[ \t]+auth[ \t]+login\b[^\n]*--stdin"
    r"|\bsecret[ \t]+put\b|\bdocker[ \t]+secret[ \t]+create\b|\bchpasswd\b|\bpasswd\b[^\n]*--stdin"
    r"|\bsudo\b[^\n]*?[ \t]-S\b|\bvault[ \t]+login\b[^\n]*?[ \t]-(?=[ \t]|\Z)")


def _literal(m: re.Match[str]) -> str:
    return m.group("qv") if m.group("q") else m.group("bv")


def _piped_secret(m: re.Match[str]) -> bool:
    v = _literal(m)
    return (_STDIN_SECRET.search(m.group("cmd")) is not None and not _code_reference(v)
            and _plausible_value(v, m.group("q") is not None, strict_words=False))


def _here_string_secret(m: re.Match[str]) -> bool:
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    before = m.string[max(line_start, m.start() - 300):m.start()]
    v = _literal(m)
    return (_STDIN_SECRET.search(before) is not None and not _code_reference(v)
            and _plausible_value(v, m.group("q") is not None, strict_words=False))


def _neutral_token(m: re.Match[str]) -> bool:
    """A whole string literal or assigned value that is a machine-made secret although no name says so.

    :func:`_neutral_string`, and nothing on its line before it saying hash, digest, id, nonce or the like.
    """
    s = m.group("s")
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    return _neutral_string(s) and not _NOT_SECRET_CONTEXT.search(m.string, max(line_start, m.start() - 60), m.start("s"))
