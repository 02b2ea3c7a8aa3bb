"""What a plausible secret value is: not a stand-in, machine-made when it must be, judged under its name.

A name that says secret still needs a value that could be one: ``password = None``, ``token: ${TOKEN}``,
``api_key = os.environ["API_KEY"]``, ``secret: ****``, ``key: <your key>`` and ``Token: expired`` hold
none (:func:`_plausible_value`).  This module knows those stand-ins, the mark a masked value carries
(``MARK``: a value that starts with it is no secret any more) and what is made to be published (a Stripe
publishable key, an SSH public key, a certificate).

A value under a weak name (``session``, ``key``) or under no name at all is a secret only when it looks
machine-made: digits and letters, both cases, a character entropy close to that of random base62 at its
length (:func:`_random_token`); a whole string with no name clears a higher bar and must not be base64 of
plain text, the opening of a binary file or public key material (:func:`_neutral_string`).

A value found apart from its name -- on the lines under a key, in an element's text, in a heredoc's body,
in a ``{"name": ..., "value": ...}`` pair -- is judged by :func:`_named_value` as the assignment rule
would judge ``name = value``; under a name that says nothing only one machine-made token on lines of its
own counts (:func:`_blob_value`); an item of a list has its own bar (:func:`_item_value`).

The stand-ins, the thresholds and these judgements change here; which names say secret is
:mod:`.names`' question, where a value sits in a text the rules' and the passes'.
"""

import binascii
import math
import re

from .names import _NOT_SECRET_CONTEXT, _password_family, name_tier

MARK = "[REDACTED:%s]"
_MARK_PREFIX = "[REDACTED:"

_PLACEHOLDERS = frozenset("""
none null nil undefined true false yes no empty unset str string bytes int bool required optional
default example sample placeholder redacted hidden masked secret secrets password passwd token
tokens changeme change_me your_token your_password your_api_key xxx todo tbd fixme env dummy
prompt stdin ask fake test testing demo
""".split())
# Words a config or a message puts where a password would go without being one.
_STATUS_WORDS = frozenset("""
required optional expired invalid missing hidden set unset see ask prompt none vault keychain keyring
secret secrets redacted changed reset sent stored encrypted generated random auto manual
""".split())
_WORDISH = re.compile(r"[A-Za-z_.\-]+\Z")   # plain words, snake/kebab/dotted names
_CODE_CHARS = set("()[]{}<>$|")
_MASK_CHARS = frozenset("*xX.-_#•·")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+\Z")   # SHAs, digests, UUIDs
_NUMBERISH = re.compile(r"[+-]?\d[\d_,]*(?:\.\d+)?(?:[eE][+-]?\d+)?[kKmMgGbB%]?\Z")   # 100_000, 1.5e6, 200k
_VERSIONISH = re.compile(r"v?\d+(?:[.\-]\d+)+\Z")   # 1.2.3, v20.11.1, 2024-05-01


def _code_reference(v: str) -> bool:
    """``${X}``, ``$(cmd)``, ``$VAR``, ``f(x)``, ``a[b]``, ``<your key>``, ``{{ secret }}``.

    A ``$`` is a reference only as a shell variable would be one: ``$NAME`` ending the value
    or followed by a path or a separator (``$ecretPa55!`` and ``Y0ur$tr0ng!`` are not).
    """
    if any(c in _CODE_CHARS for c in v.replace("$", "")):
        return True
    return "$" in v and any(_VAR_REF.match(v, i) for i, c in enumerate(v) if c == "$")


_VAR_REF = re.compile(r"\$(?:[{(]|[A-Za-z_][A-Za-z0-9_]*(?:[/:.,\-]|\Z))")
_TEMPLATE = re.compile(r"\$\{|\$\(|\{\{|\{%|%\(\w+\)s|\A\$[A-Za-z_][A-Za-z0-9_]*\Z")
_PHRASE_SYMBOLS = frozenset("!@#$%^&*()+=[]{}|;~_-'\"")


_ELLIPSIS = re.compile(r"\.{3,}|\u2026")
_ALNUM_RUNS = re.compile(r"[A-Za-z0-9]+")


def _elided(v: str) -> bool:
    """A placeholder that shows the shape of a secret, not a secret: an ellipsis standing for the value or
    most of it (``sk-...``, ``sk-...Ab12``), or runs of one repeated letter (``xxxxxxxx.yyyyyyyy``)."""
    parts = _ELLIPSIS.split(v)
    if len(parts) > 1 and all(len(p) < 12 for p in parts):
        return True
    runs = _ALNUM_RUNS.findall(v)  # (letters only: "A=222222" may be someone's password)
    return bool(runs) and all(r.isalpha() and len(set(r)) == 1 for r in runs) and sum(map(len, runs)) >= 4


def _plausible_value(value: str, quoted: bool, strict_words: bool = True) -> bool:
    """False for values that are clearly not a literal secret.

    Catches placeholders (``None``, ``${TOKEN}``, ``<your key>``), code
    references (``self.token``, ``os.environ[...]``, ``api_key``), masks
    (``****``), paths, versions and plain words in prose (``Token: expired``).
    ``strict_words=False`` lets a plain word through (``PW=letmein`` in an env file).
    A value of digits only is never taken (it is a count, a port or a size far more often than a PIN).
    """
    v = value.strip()
    if not v or v.startswith(_MARK_PREFIX):
        return False
    low = v.lower()
    if low in _PLACEHOLDERS or low.strip("<>[]{}*._-") in _PLACEHOLDERS:
        return False
    if set(v) <= _MASK_CHARS:  # ****, xxxx, ...., x-x-x
        return False
    if _elided(v):  # sk-..., sk-...Ab12, xxxxxxxx.yyyyyyyy.zzzzzzzz
        return False
    if quoted:
        # A quoted literal may hold anything (spaces, brackets, $): only a template is no secret.
        if _TEMPLATE.search(v) or v[0] in "%./~" or (v[0] == "<" and v[-1] == ">"):
            return False
        if any(c.isspace() for c in v):  # a pass phrase, not a sentence: a digit or a symbol, a few words
            return (len(v.split()) <= 6 and v[-1] not in ".?:"
                    and any(c.isdigit() or c in _PHRASE_SYMBOLS for c in v))
        return len(v) >= 4
    if _code_reference(v) or v[0] in "%@*./~&#=" or _YAML_TAG.match(v):
        return False  # (a YAML tag: "token: !vault |" is Ansible ciphertext, "!secret db_pw" a reference)
    if len(v) < 4:
        return False
    if _NUMBERISH.match(v) or _VERSIONISH.match(v):  # a count, a size, a port, a date, a version (a PIN is missed)
        return False
    if _WORDISH.match(v):
        return not strict_words and "." not in v  # (a dotted word is an attribute or a file name)
    return True


# Keys made to be published, whatever their name says: Stripe publishable keys (Stripe docs, "API keys": pk_test_ /
# pk_live_ "can be publicly accessible in your web or mobile app's client-side code"; Clerk and WorkOS use the same
# prefix), Mapbox public tokens (pk.eyJ...), Supabase publishable keys, PostHog project keys (phc_).  ClickUp's
# personal tokens (pk_<digits>_...) are secret: its own rule catches them.
_PUBLIC_VALUE = re.compile(r"(?:pk_(?:live|test)_|pk\.eyJ|sb_publishable_|phc_)")


def _public_value(v: str) -> bool:
    return _PUBLIC_VALUE.match(v.strip("\"'` ")) is not None


# A YAML tag in place of a value (letters only: "!Pa55word" in a .env file is a password).
_YAML_TAG = re.compile(r"!!?[A-Za-z][A-Za-z_\-]*\Z")
_PUBLIC_MATERIAL = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh|ecdsa)-[\w@.\-]+) AAAA"
                              r"|-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY|CERTIFICATE)")


# -- a machine-made value: a random token, not a word, an identifier, a hash or a version --------------
def _looks_random(s: str) -> bool:
    """A token, not a word: has a digit, an inner capital, or base64 punctuation."""
    return (any(c.isdigit() for c in s) or any(c.isupper() for c in s[1:])
            or any(c in "+/=_~" for c in s))


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    n = float(len(s))
    return -sum(k / n * math.log2(k / n) for k in counts.values())


_WORD_RUNS = re.compile(r"[A-Z]?[a-z]{3,}")


def _random_token(s: str) -> bool:
    """A machine-made secret, not a word, identifier, hash, UUID or version.

    Needs a digit and letters, both cases unless it is long, and a character
    entropy close to that of random base62 at its length (identifiers such as
    ``AbstractSingletonProxyFactoryBean`` or ``gpt-4o-mini-2024-07-18`` fall short, and so does
    a string mostly made of words).
    """
    n = len(s)
    if n < 16 or _HEXISH.match(s) or _VERSIONISH.match(s):
        return False
    upper = any(c.isupper() for c in s)
    lower = any(c.islower() for c in s)
    if not any(c.isdigit() for c in s) or not (upper or lower):
        return False
    if not (upper and lower) and n < 32:
        return False
    if sum(len(w) for w in _WORD_RUNS.findall(s)) > 0.75 * n:
        return False  # made of words: HttpClient5Builder, Python311Interpreter
    return _entropy(s) >= min(math.log2(n) - 1.2, 4.2)  # (random base62 falls below 1.0/4.3 6 times in 100,000)


# Base64 that opens like binary files and public key material: PNG, JPEG, GIF, PDF, WebP/RIFF, an SSH wire
# key (AAAA), a DER certificate or public key (MII), a PEM text (LS0t), an integrity hash (sha512-...).
_NOT_SECRET_START = ("iVBOR", "/9j/", "R0lGOD", "JVBER", "UklGR", "AAAA", "MII", "LS0t", "sha1-", "sha256-",
                     "sha384-", "sha512-", "md5-")


_SEQUENCE = re.compile(r"abcde|bcdef|cdefg|ABCDE|BCDEF|CDEFG|01234|12345|23456|34567|45678|56789")


def _neutral_string(s: str, alone: bool = False) -> bool:
    """Mixed case, a digit and the character entropy of random base62/base64 at its length (4.5 bits or
    more); not hex (hashes, ids), not a binary file or public key in base64, not base64 of plain text.

    ``alone``: the value has lines of its own (a block scalar, a triple-quoted string, a heredoc), where code
    and config put blobs rather than identifiers -- :func:`_random_token`'s bar at its length is enough there.
    """
    if s.startswith(_NOT_SECRET_START) or _public_value(s) or s.startswith(_MARK_PREFIX):
        return False
    if not (any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)):
        return False
    if not _random_token(s) or _SEQUENCE.search(s) or not alone and _entropy(s) < 4.5:
        return False  # (an alphabet, "abcdef...0123456789", is no secret)
    if len(s) % 4 == 0:
        try:
            raw = binascii.a2b_base64(s)
        except (binascii.Error, ValueError):
            raw = b""
        if raw and all(32 <= b < 127 or b in (9, 10, 13) for b in raw):
            return False  # base64 of plain text: the decoded pass judges what it says
    return True


# -- a value found apart from its name (the lines under a key, an element's text, a heredoc's body) -----
def _named_value(name: str, value: str, quoted: bool, line_value: bool = True) -> bool:
    """Would ``name = value`` be masked?  The judgement of :func:`.rules._assignment`, for a value found elsewhere."""
    tier = name_tier(name)
    v = value.strip()
    if tier is None or not v or _public_value(v) or v.lower().replace("-", "_") == name.lower().replace("-", "_"):
        return False
    if _PUBLIC_MATERIAL.search(v):
        return False
    if tier == "weak":
        return any(_random_token(w) for w in v.split())
    family = line_value and _password_family(name)
    if family and v.lower() in _STATUS_WORDS:
        return False
    return _plausible_value(v, quoted, strict_words=not family)


def _plain_value(name: str, pieces: "list[str]") -> bool:
    """A YAML plain scalar on the next line(s): one word per line (a token, a password), or a short pass
    phrase under a password key -- not the prose of a Markdown list (``- token: the refresh flow``)."""
    if any(len(p.split()) > 1 for p in pieces):
        return _password_family(name) and _named_value(name, " ".join(pieces), True)
    return _named_value(name, "".join(pieces), False)


def _value_lines(name: str, text: str, spans: "list[tuple[int, int]]", quoted: bool) -> bool:
    """Several lines are one value: a secret when one of them is, none of them a template or public key."""
    pieces = [text[a:b] for a, b in spans]
    if any(_TEMPLATE.search(p) or _PUBLIC_MATERIAL.search(p) for p in pieces):
        return False
    return any(_named_value(name, p, quoted) for p in pieces)


_BLOB_PIECE = re.compile(r"[A-Za-z0-9+/=_\-.~]+\Z")
_PATHISH = re.compile(r"[a-z]{2,}/")
_FILE_EXT = re.compile(r"\.[a-z][a-z0-9]{0,4}\Z")


def _blob_value(name: str, pieces: "list[str]") -> bool:
    """Under a name that says nothing: one machine-made token on lines of its own (a block scalar, a triple-
    quoted or raw string, a heredoc, a value on the line after its key), possibly wrapped over several."""
    if not pieces or len(pieces) > 200 or _NOT_SECRET_CONTEXT.search(name):
        return False
    if not all(_BLOB_PIECE.match(p) for p in pieces):
        return False  # words, a command, a path with a colon, a template: text, not a token
    s = "".join(pieces)
    if _PATHISH.match(s) or _FILE_EXT.search(s):
        return False  # dist/App2Bundle.tar.gz, src/..., Report2024.pdf: a path or a file name
    return _neutral_string(s, alone=True)


def _lines_value(name: str, tier: "str | None", text: str, spans: "list[tuple[int, int]]", quoted: bool) -> bool:
    """The value on these lines is a secret: judged by its name when that says secret, else as a blob."""
    if tier is not None:
        return _value_lines(name, text, spans, quoted)
    return _blob_value(name, [text[a:b] for a, b in spans])


_LONG_HEX = re.compile(r"[0-9a-fA-F]{32,}\Z")


def _item_value(name: str, tier: "str | None", v: str) -> bool:
    """One item of a YAML sequence or JSON array under ``name``: a machine-made token, or under a name that
    says secret also 32 hex digits or more (a key).  A list holds names and options far more often than a
    single value does: ["+i6t-inline", ...] under "token_variants", tokenizer tokens under "tokens" pass."""
    if not v or not v.isascii() or any(c.isspace() for c in v) or v.startswith(_MARK_PREFIX):
        return False
    if tier is None:
        return 32 <= len(v) <= 400 and not _NOT_SECRET_CONTEXT.search(name) and _neutral_string(v)
    if _public_value(v) or _PUBLIC_MATERIAL.search(v) or _TEMPLATE.search(v):
        return False
    return _random_token(v) or tier == "strong" and _LONG_HEX.match(v) is not None
