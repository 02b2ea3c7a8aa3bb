"""Find and mask secrets in text before it leaves the machine or lands in a handoff.

Push notifications, watchdog log digests and handoffs all pass through here.
Each rule knows one credential shape -- a provider's token prefix, a PEM armour
line, a ``password=`` assignment -- and a match is replaced by
``[REDACTED:<kind>]``: the reader still learns *that* something was there and
what it was, never the value.

Exact provider formats come first and win over the generic rules.  The
generic rules do not need to have seen a format before:

- an assignment or a command-line flag whose *name* says secret (``DB_PASS=``,
  ``Pwd=``, ``"auth":``, ``--password X``, ``keyStorePassword=``), judged by
  the words of the name (:func:`name_tier`: ``token_count``, ``max_tokens``,
  ``password_file`` are not secret holders);
- credentials in any userinfo (``scheme://user:pass@host``, ``user:pass@host``,
  ``curl -u user:pass``, ``.pgpass`` lines) and in well-known command options
  (``mysql -p…``, ``sshpass -p``, ``docker login -p``, ``redis-cli -a`` …);
- a high-entropy token in the context of a secret word (``the API token is …``,
  a bare AWS secret key beside its ``AKIA…`` id, a DER key body).

They filter out code references, placeholders and plain words, so prose,
paths, hashes, UUIDs, versions and identifiers pass untouched (the test corpus
of ordinary text holds them to that).  Overlapping matches are merged, so a
secret is never left half-masked.

A value need not sit on its key's line (issue 34): YAML block scalars and
plain scalars on or continued onto the next lines, a JSON value on the next
line, TOML/Python triple-quoted strings, quoted .env/YAML values spanning
lines, ``NAME=\\`` continuations, a provider token wrapped onto the next line
or built from string literals (``"sk_live_" + "..."``).  Those are masked line
by line: a text keeps its line count (only a PEM/PuTTY key block and a bare
DER key body still collapse into one mark, as before).

Standard library only.  Not on the per-tool-call hot path, so ``re`` is fine;
every pattern stays linear (possessive runs, bounded repeats), and a rule
whose literal prefix is absent from a text is not run on it.
"""

import binascii
import bisect
import functools
import math
import re

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Accept = Callable[[re.Match[str]], bool]  # does this match hold a secret?
    # A rule's kind: a name, or (group, {lower-cased group value: name} or a function of the match).
    Kind = str | tuple[str, dict[str, str] | Callable[[re.Match[str]], str]]

MARK = "[REDACTED:%s]"
_MARK_PREFIX = "[REDACTED:"

# A token starts and ends where its alphabet does.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# An assignment operator as written in env files, YAML, JSON, TOML, code.
_SET = r"""["']?[ \t]*(?:=>|:=|=|:)[ \t]*"""
# The assigned value: quoted (group q/qv) or bare (group bv).
# A command-line value: quoted (spaces and all) or bare.
_CLI_VALUE = r"""(?:(?P<q>['"])(?P<qv>(?:(?!(?P=q))[^\n]){3,200})(?P=q)|(?P<bv>[^\s'"\-][^\s'"]{2,}))"""
# (In a query string -- the name right after "?", "&" or "#", group qs -- a bare value stops at the next "&".)
_VALUE = r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300}?)(?P=q)|(?P<bv>(?(qs)[^\s"'`,;)}\]&#]|[^\s"'`,;)}\]]){1,300}))"""

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

# -- names that say "secret" -------------------------------------------------------
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A word that makes a name a secret holder; compounds ending in the first group count too
# (pgpassword, authtoken, clientsecret).
_STRONG = frozenset("""
pass passwd password passwords passphrase pwd pw passcode secret secrets token tokens auth
credential credentials creds apikey apikeys privatekey secretkey accesskey signingkey
""".split())
_STRONG_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token", "apikey")
# "key" is strong after one of these (api_key, AccountKey, private-key), weak on its own.
_KEY_OWNERS = frozenset("""
api access secret private signing encryption decryption master account storage license client app
service subscription shared auth hmac jwt deploy consumer session cookie crypt
""".split())
# Names that only hold a secret when the value looks random.
_WEAK = frozenset("key keys cookie session sessionid sid jwt signature sig salt hmac bearer csrf xsrf otp".split())
# After the secret word these say the value is *about* the secret, not the secret.
_QUALIFIERS = frozenset("""
count counts limit limits length len max min size ttl timeout seconds secs minutes ms expiry expires
expiration expire age lifetime id ids type types kind file files path paths dir url uri endpoint name
names field fields header env var variable prefix suffix format method mode provider scheme strategy
backend required enabled enable version user username login email policy hint label regex pattern
usage used rate stdin prompt command cmd helper store manager index idx valid validity reset change
changed request response status error errors message msg text placeholder example template schema
class scope scopes audience issuer algorithm alg encoding location source ref reference number
budget estimate total chars bytes domain host hostname
""".split())
# As a name's first word these say the same (max_tokens, is_secret, no_password).
_NEGATORS = frozenset("""
max min num total count is has use enable enabled disable disabled require required allow no skip show
hide reset forgot validate check verify public publishable
""".split())


# Anywhere before the secret word: the name counts or bounds it (CLAUDE_CODE_MAX_CONTEXT_TOKENS).
_COUNTERS = frozenset("max min num total count limit".split())


def _strong_word(w: str) -> bool:
    return w in _STRONG or any(w.endswith(x) and len(w) > len(x) for x in _STRONG_SUFFIXES)


@functools.lru_cache(maxsize=4096)
def name_tier(name: str) -> str | None:
    """"strong" when ``name`` holds a secret, "weak" when only a random-looking value would be one, else None.

    Judged by its words (snake, kebab, dotted, camelCase): the last secret word
    must not be followed by a qualifier (``token_count``, ``password_file``) nor the
    name start with a negator (``max_tokens``, ``public_key``).
    """
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    last: int | None = None
    tier: str | None = None
    for i, w in enumerate(words):
        if _strong_word(w) or (w in ("key", "keys") and i and words[i - 1] in _KEY_OWNERS):
            last, tier = i, "strong"
        elif w in _WEAK:
            last, tier = i, tier or "weak"
    if last is None or words[0] in _NEGATORS or any(w in _COUNTERS for w in words[:last]):
        return None
    if "publishable" in words or ("public" in words[:last] and words[0] == "next"):
        return None  # STRIPE_PUBLISHABLE_KEY, NEXT_PUBLIC_STRIPE_KEY: meant to be shipped to browsers
    if any(w in _QUALIFIERS for w in words[last + 1:]):
        return None
    return tier


@functools.lru_cache(maxsize=4096)
def _password_family(name: str) -> bool:
    return any(w.startswith(("pass", "pw")) or "passw" in w for w in (x.lower() for x in _NAME_WORDS.findall(name)))


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
# A YAML tag in place of a value (letters only: "!Pa55word" in a .env file is a password).
_YAML_TAG = re.compile(r"!!?[A-Za-z][A-Za-z_\-]*\Z")


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
    return _entropy(s) >= min(math.log2(n) - 1.0, 4.3)


def _discord(m: re.Match[str]) -> bool:
    first = m.group(0).split(".", 1)[0]
    return any(c.isdigit() for c in first)


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


# Names and nearby words that say a random-looking value is a hash, an id or a nonce -- not a credential.
_NOT_SECRET_CONTEXT = re.compile(
    r"(?i)(?:hash|sha\d*|md5|digest|checksum|integrity|fingerprint|nonce|etag|commit|revision|\brev\b|cursor"
    r"|uuid|guid|\bids?\b|_id\b|[a-z]Id\b|version|\bh1|cache[_\-]?key|public|publishable|cert)")
# Base64 that opens like binary files and public key material: PNG, JPEG, GIF, PDF, WebP/RIFF, an SSH wire
# key (AAAA), a DER certificate or public key (MII), a PEM text (LS0t), an integrity hash (sha512-...).
_NOT_SECRET_START = ("iVBOR", "/9j/", "R0lGOD", "JVBER", "UklGR", "AAAA", "MII", "LS0t", "sha1-", "sha256-",
                     "sha384-", "sha512-", "md5-")


_SEQUENCE = re.compile(r"abcde|bcdef|cdefg|ABCDE|BCDEF|CDEFG|01234|12345|23456|34567|45678|56789")


def _neutral_token(m: re.Match[str]) -> bool:
    """A whole string literal or assigned value that is a machine-made secret although no name says so.

    :func:`_neutral_string`, and nothing on its line before it saying hash, digest, id, nonce or the like.
    """
    s = m.group("s")
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    return _neutral_string(s) and not _NOT_SECRET_CONTEXT.search(m.string, max(line_start, m.start() - 60), m.start("s"))


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


# (kind, pattern, accept) -- kind is a name, or (group, {group value: name}).
# Order is priority: when matches overlap, the earlier rule names the span.
_RULE_SPECS: "list[tuple[Kind, str, Accept | None]]" = [  # group values are looked up lower-cased
    # --- armoured key material: swallows everything inside it --------------
    ("gcp-service-account-key", r'"private_key"\s*:\s*"(?P<s>-----BEGIN[^"]*)"?', None),
    # GCP docs, "Create and delete service account keys": the key file's private_key_id is 40 hex
    ("gcp-service-account-key", r"""\bprivate_key_id["']?[ \t]*[:=][ \t]*["']?(?P<s>[0-9a-f]{40})(?![0-9A-Za-z])""", None),
    (("label", {"rsa ": "rsa-private-key", "ec ": "ec-private-key", "dsa ": "dsa-private-key",
                "openssh ": "openssh-private-key", "pgp ": "pgp-private-key",
                "encrypted ": "encrypted-private-key", "": "private-key"}),  # "": any other label
     r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----"
     r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", None),
    ("putty-private-key", r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC:\s*[0-9a-fA-F]+|\Z)", None),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None),
    # --- cloud providers ----------------------------------------------------
    ("aws-access-key-id",
     r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?![A-Z0-9])",
     None),
    ("aws-secret-access-key",
     r"(?i)(?<![A-Za-z0-9])(?:aws_?)?(?:secret_?access_?key|aws_?secret_?key)" + _SET
     + r"""["']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", None),
    ("aws-session-token",
     r"(?i)(?<![A-Za-z0-9])aws_?session_?token" + _SET + r"""["']?(?P<s>[A-Za-z0-9/+=]{100,})""", None),
    ("gcp-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, None),
    ("google-oauth-client-secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, None),
    ("google-oauth-access-token", _B + r"ya29\.[A-Za-z0-9_\-]{30,}", None),
    ("azure-storage-account-key", r"(?i)(?<![A-Za-z])AccountKey\s*=\s*(?P<s>[A-Za-z0-9+/]{40,}={0,2})", None),
    ("azure-shared-access-key", r"(?i)(?<![A-Za-z])SharedAccessKey\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})", None),
    ("azure-sas-token", r"(?i)[?&]sig=(?P<s>[A-Za-z0-9%+/]{30,}(?:=|%3D){0,2})", None),
    ("azure-ad-client-secret",
     r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", None),
    ("digitalocean-token", _B + r"do[por]_v1_[a-f0-9]{64}" + _E, None),
    ("heroku-api-key", _B + r"HRKU-[A-Za-z0-9_\-]{40,}" + _E, None),
    ("heroku-api-key",
     r"(?i)heroku[_\-]?api[_\-]?key" + _SET
     + r"""["']?(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})""", None),
    ("datadog-key",
     r"(?i)(?:dd|datadog)[_\-]?(?:api|app|application)[_\-]?key" + _SET
     + r"""["']?(?P<s>[a-f0-9]{32,40})(?![a-f0-9])""", None),
    ("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d+)?" + _E, None),
    # HashiCorp Vault docs, "Tokens": service hvs., batch hvb., recovery hvr.; before Vault 1.10 a service
    # token was "s." and 24 characters (the legacy form is taken only when it looks random).
    ("vault-token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", None),
    ("vault-token", r"(?<![\w.\-/])s\.[A-Za-z0-9]{24}(?![\w.\-/])", lambda m: _random_token(m.group()[2:])),
    # Doppler docs, "Auth Token Formats": dp.ct./dp.pt./dp.sa./dp.said./dp.scim./dp.audit. + 40-44 alphanumerics,
    # a service token dp.st.[<environment>.]...
    ("doppler-token",
     _B + r"dp\.(?:pt|st(?:\.[a-z0-9\-_]{2,35})?|sa|said|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E, None),
    # HashiCorp Terraform docs, "API tokens": user/team/organization tokens <14 alphanumerics>.atlasv1.<60-70>
    ("terraform-cloud-token", r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}(?![A-Za-z0-9])", None),
    ("tailscale-key", _B + r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}" + _E, None),
    # --- code hosting and package registries ------------------------------
    (("p", {"p": "github-pat", "o": "github-oauth-token", "u": "github-app-token",
            "s": "github-app-token", "r": "github-refresh-token"}),
     _B + r"gh(?P<p>[pousr])_[A-Za-z0-9]{36,251}" + _E, None),
    ("github-fine-grained-pat", _B + r"github_pat_[A-Za-z0-9_]{60,}" + _E, None),
    ("gitlab-pat", _B + r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*" + _E, None),
    # GitLab docs, "Token overview" (token prefixes): deploy gldt-, runner glrt-/glrtr-, pipeline trigger glptt-,
    # CI/CD job glcbt-, OAuth app secret gloas-, incoming mail glimt-, agent glagent-, SCIM glsoat-, feature
    # flags glffct-, feed glft-, workspace glwt-; and the legacy runner registration token GR1348941...
    ("gitlab-token",
     _B + r"gl(?:dt|rtr|rt|ptt|cbt|oas|imt|agent|soat|ffct|ft|wt|cicdt)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*"
     + _E, None),
    ("gitlab-token", _B + r"GR1348941[A-Za-z0-9_\-]{20,}" + _E, None),
    ("atlassian-api-token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}", None),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, None),
    ("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E, None),
    ("rubygems-api-key", _B + r"rubygems_[a-f0-9]{48}" + _E, None),
    # Docker docs, "Access tokens": personal dckr_pat_, organization dckr_oat_
    ("dockerhub-token", _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}" + _E, None),
    ("huggingface-token", _B + r"(?:hf_|api_org_)[A-Za-z0-9]{34,}" + _E, None),
    ("jfrog-token", _B + r"AKCp[A-Za-z0-9]{60,}" + _E, None),
    ("pulumi-token", _B + r"pul-[a-f0-9]{40}" + _E, None),
    ("figma-token", _B + r"figd_[A-Za-z0-9_\-]{40,}" + _E, None),
    ("notion-token", _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})" + _E, None),
    ("alibaba-access-key-id", r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,20}(?![A-Za-z0-9])", None),
    ("facebook-access-token", _B + r"EAA[A-Za-z0-9]{6}[A-Za-z0-9]{80,}" + _E, None),
    # --- chat and push ------------------------------------------------------
    (("x", {"xoxb": "slack-bot-token", "xoxp": "slack-user-token", "xoxe.xoxb": "slack-config-token",
            "xoxe.xoxp": "slack-config-token", "": "slack-token"}),
     _B + r"(?P<x>xoxe\.xox[bp]|xox[abcdeoprs])-[0-9A-Za-z\-]{10,}" + _E, None),  # Slack docs, "Tokens"
    ("slack-app-token", _B + r"xapp-\d-[0-9A-Za-z\-]{20,}" + _E, None),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}", None),
    ("discord-webhook",
     r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}", None),
    ("discord-bot-token",
     r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E, _discord),
    ("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, None),
    ("ntfy-token", _B + r"tk_[a-z0-9]{29}" + _E, None),
    # --- AI providers -------------------------------------------------------
    ("anthropic-api-key", _B + r"sk-ant-[A-Za-z0-9_\-]{32,}" + _E, None),
    ("openai-api-key", _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{32,}" + _E, None),
    ("groq-api-key", _B + r"gsk_[A-Za-z0-9]{52}" + _E, None),
    ("replicate-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, None),
    ("xai-api-key", _B + r"xai-[A-Za-z0-9]{70,}" + _E, None),
    ("perplexity-api-key", _B + r"pplx-[A-Za-z0-9]{40,}" + _E, None),
    # --- payments, mail, SaaS ----------------------------------------------
    ("stripe-secret-key", _B + r"sk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-restricted-key", _B + r"rk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{24,}", None),
    ("square-token", _B + r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}" + _E, None),
    # Square docs (ObtainToken reference): access tokens are 64 characters; production and sandbox ones start EAAA
    ("square-token", _B + r"EAAA[A-Za-z0-9_\-]{60}" + _E, None),
    ("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, None),
    # Twilio docs: an Account SID is AC + 32 hex (error 21470), an API key SID SK + 32 hex; the auth token
    # (32 hex) and the API key secret (32 alphanumerics) have no prefix: taken beside their SID.
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])[^\n]{0,80}?(?:\n[^\n]{0,80}?)?"
     r"(?<![A-Za-z0-9])(?P<s>[A-Za-z0-9]{32})(?![A-Za-z0-9])", lambda m: _random_token(m.group("s"))),
    ("twilio-auth-token", r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])[^\n]{0,80}?(?:\n[^\n]{0,80}?)?"
     r"(?<![A-Za-z0-9])(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])", None),
    ("twilio-auth-token", r"(?i)twilio[_\-]?auth[_\-]?token" + _SET + r"""["']?(?P<s>[a-f0-9]{32})(?![a-f0-9])""",
     None),
    ("sendgrid-api-key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, None),
    ("mailgun-api-key", r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("mailchimp-api-key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])", None),
    ("postman-api-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E, None),
    ("linear-api-key", _B + r"lin_(?:api_[A-Za-z0-9]{40}|oauth_[a-f0-9]{64})" + _E, None),  # Linear API docs
    ("grafana-token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})" + _E, None),
    ("sentry-token", _B + r"(?:sntrys_[A-Za-z0-9+/=_\-]{40,}|sntryu_[a-f0-9]{64})", None),
    # New Relic docs, "New Relic API keys": user key NRAK-, insert key NRII-, license key 36 hex + NRAL
    ("newrelic-api-key", _B + r"(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_\-]{32})" + _E, None),
    ("newrelic-api-key", r"(?<![A-Za-z0-9])[a-f0-9]{36}NRAL(?![A-Za-z0-9])", None),
    ("resend-api-key", _B + r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}" + _E, None),
    ("cloudflare-origin-ca-key", _B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + _E, None),
    ("crates-io-token", _B + r"cio[A-Za-z0-9]{32}" + _E, None),
    ("sonarqube-token", _B + r"sq[upa]_[a-f0-9]{40}" + _E, None),
    ("dynatrace-token", _B + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _E, None),
    ("dropbox-token", _B + r"sl\.[A-Za-z0-9_\-]{120,}" + _E, None),
    ("asana-token", r"(?<![\w/])[12]/\d{12,20}(?:/\d{12,20})?:[a-f0-9]{32}" + _E, None),
    ("plaid-access-token", _B + r"access-(?:production|sandbox|development)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}"
     r"-[0-9a-f]{4}-[0-9a-f]{12}" + _E, None),
    ("shippo-token", _B + r"shippo_(?:live|test)_[a-f0-9]{40}" + _E, None),
    ("easypost-api-key", _B + r"EZ[AT]K[a-f0-9]{54}" + _E, None),
    ("tencent-secret-id", r"(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])", None),
    ("ngrok-authtoken", r"(?i)(?:ngrok\b[^\n]{0,40}?\badd-authtoken|NGROK_AUTHTOKEN[\s=:]+)\s*['\"]?"
     r"(?P<s>[A-Za-z0-9_]{30,})", None),
    ("vault-unseal-key", r"(?i)\b(?:unseal|recovery) key(?: \d+)?\s*:\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})", None),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*" + _E, None),
    # --- issue 34: prefixed formats from each vendor's own token documentation ------
    ("mapbox-secret-token", _B + r"sk\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{20,}" + _E, None),  # Mapbox: sk. secret
    ("airtable-token", _B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _E, None),  # Airtable: personal access tokens
    ("1password-service-account-token", _B + r"ops_eyJ[A-Za-z0-9+/=_\-]{100,}", None),  # 1Password: service accounts
    ("brevo-api-key", _B + r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _E, None),  # Brevo (Sendinblue): API keys
    ("buildkite-token", _B + r"bkua_[a-f0-9]{40}" + _E, None),  # Buildkite: API access tokens
    ("contentful-token", _B + r"CFPAT-[A-Za-z0-9_\-]{43}" + _E, None),  # Contentful: personal access tokens
    ("supabase-token", _B + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})" + _E, None),  # Supabase: access, secret keys
    ("planetscale-token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}" + _E, None),  # PlanetScale
    ("netlify-token", _B + r"nfp_[A-Za-z0-9]{36}" + _E, None),  # Netlify: personal access tokens
    ("render-api-key", _B + r"rnd_[A-Za-z0-9]{32}" + _E, None),  # Render: API keys
    ("fly-token", _B + r"f[mo][12]_[A-Za-z0-9+/=_\-]{40,}", None),  # Fly.io: macaroon tokens (FlyV1 fm2_...)
    ("pinecone-api-key", _B + r"pcsk_[A-Za-z0-9]{5}_[A-Za-z0-9]{40,}" + _E, None),  # Pinecone: API keys
    ("nuget-api-key", r"(?<![A-Za-z0-9])oy2[a-z0-9]{43}(?![A-Za-z0-9])", None),  # NuGet.org: API keys
    ("bitbucket-app-password", r"(?<![A-Za-z0-9])ATBB[A-Za-z0-9_\-=]{32,}(?![A-Za-z0-9])", None),  # Bitbucket
    ("flutterwave-secret-key", _B + r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X" + _E, None),  # Flutterwave: secret keys
    ("google-oauth-refresh-token", r"(?<![A-Za-z0-9/])1//0[A-Za-z0-9_\-]{40,}" + _E, None),  # Google OAuth 2.0
    ("firebase-server-key", _B + r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}" + _E, None),  # Firebase FCM
    ("hubspot-token", _B + r"pat-(?:na|eu|ap)\d-[0-9a-f]{8,9}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + _E,
     None),  # HubSpot docs, "Intro to auth": private app tokens pat-<region>-<uuid> (the docs mask 9 digits, not 8)
    ("clickup-token", _B + r"pk_\d{3,12}_[A-Z0-9]{32}" + _E, None),  # ClickUp: personal API tokens
    ("posthog-personal-key", _B + r"phx_[A-Za-z0-9]{35,}" + _E, None),  # PostHog docs: personal keys (phc_ public)
    ("langsmith-api-key", _B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _E, None),  # LangSmith: API keys
    ("tavily-api-key", _B + r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}" + _E, None),  # Tavily: API keys
    ("stytch-secret", _B + r"secret-(?:live|test)-[A-Za-z0-9_\-=]{36}" + _E, None),  # Stytch: project secrets
    ("honeycomb-api-key", _B + r"hc[ax]i[kc]_[A-Za-z0-9]{50,}" + _E, None),  # Honeycomb: ingest keys
    ("braintree-access-token", _B + r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}" + _E,
     None),  # Braintree (PayPal): access tokens
    # --- key material and credentials in context --------------------------
    ("private-key",  # a DER body (PKCS#8 / PKCS#1 / SEC1) pasted without its armour lines
     r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{1,4}?(?:IBADANBgkqhkiG9w0BAQEFAASC|IBAAKCA)|MHcCAQEE"
     r"|MIG[A-Za-z0-9+/]{1,3}?AgEAMBMGByqGSM49|MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE)"
     r"[A-Za-z0-9+/]{20,}={0,2}(?:(?:\\n|\s)+[A-Za-z0-9+/]{16,}={0,2})*", None),
    ("aws-secret-access-key",  # the bare 40-character secret next to its key id (CSV, prose, env dumps)
     r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])[^\n]{0,120}?(?:\n[^\n]{0,120}?){0,2}"
     r"(?<![A-Za-z0-9/+])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", lambda m: _random_token(m.group("s"))),
    # --- generic shapes -----------------------------------------------------
    ("url-password",
     r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/?#@'\"<>]*:(?P<s>[^\s@/'\"<>]+)@(?=[A-Za-z0-9\[])", _url_password),
    ("url-password",  # userinfo without a scheme: user:pass@host
     r"(?<![\w@/:.%+\-])(?P<user>[A-Za-z0-9._%+\-]{1,64}):(?P<s>[^\s@/:'\"<>]{3,128})@"
     r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9\-]{1,63})*)(?![A-Za-z0-9\-])",
     _userinfo),
    ("pgpass-password",  # hostname:port:database:username:password
     r"(?m)^[ \t]*(?:\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.\-*]+):(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<s>[^\s/][^\s]{2,})[ \t]*$",
     lambda m: not _VERSIONISH.match(m.group("s"))),
    (("scheme", {"bearer": "bearer-token", "token": "bearer-token", "bot": "bearer-token", "ssws": "bearer-token",
                 "basic": "basic-auth"}),
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>bearer|token|basic|bot|ssws)\s+"
     r"(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)", None),
    ("bearer-token", r"(?i)(?<![A-Za-z])bearer\s+(?P<s>[A-Za-z0-9._~+/\-]{20,}=*)",
     lambda m: _looks_random(m.group("s"))),
    ("basic-auth",  # requests.get(url, auth=("user", "pass"))
     r"""\bauth\s*=\s*\(\s*["'][^"'\n]{1,64}["']\s*,\s*["'](?P<s>[^"'\n]{3,128})["']\s*\)""",
     lambda m: _plausible_value(m.group("s"), True)),
    ("netrc-password", r"(?i)\b(?:machine\s+\S+|default)\s+login\s+\S+\s+password\s+(?P<s>\S+)", None),
    ("url-query-secret",  # ?code=..., &access_token=..., #id_token=..., &sig=...: up to the next parameter
     r"(?i)[?&#;](?P<name>code|(?:access|id|refresh|auth|private|session)_?token|token|auth|api[_\-]?key|key|sig"
     r"|signature|secret|client_secret|password|passwd|pwd|pass|x-amz-signature|x-amz-security-token"
     r"|x-goog-signature|jwt|sessionid|sid)=(?P<s>[^&#\s'\"<>`]{6,600})", _query_value),
    ("github-actions-mask",  # echo "::add-mask::<value>": the value a workflow asks to be hidden
     r"::add-mask::(?P<s>[^\s'\"`]{4,600})", lambda m: _plausible_value(m.group("s"), True)
     and not _code_reference(m.group("s"))),
    # --- passwords in command lines ---------------------------------------
    ("cli-password", r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b"
                     r"[^\n|;&]*?\s(?:-p|--password=)" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:sshpass|mongo|mongosh|mongodump|mongorestore)\b[^\n|;&]*?\s-p\s*""" + _CLI_VALUE, None),
    ("cli-password", r"""\bhtpasswd\b[^\n|;&]*?\s-[a-zA-Z]*b[a-zA-Z]*\s+(?:-\S+\s+)*\S+\s+\S+\s+""" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|az|oc|cf)\b[^\n|;&]*?\blogin\b[^\n|;&]*?"""
                     r"""\s(?:-p|--password)[ =]['"]?(?P<s>[^\s'"-][^\s'"]{2,})""", None),
    ("cli-password", r"""\bredis-cli\b[^\n|;&]*?\s-a\s+['"]?(?P<s>[^\s'"-][^\s'"]{2,})""", None),
    ("cli-password", r"""(?i)\b(?:curl|wget|http|httpie)\b[^\n|;&]*?\s(?:-u|--user|-U|--proxy-user)[ =]?['"]?"""
                     r"""[^\s:'"]{1,64}:(?P<s>[^\s'"]{3,128})""", lambda m: not m.group("s").startswith("$")),
    ("cli-password", r"""-pass(?:in|out)?\s+['"]?pass:""" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:zip|7z|7za|unzip|rar|unrar)\b[^\n|;&]*?\s-[pP]\s?['"]?(?P<s>[^\s'"-][^\s'"]{2,})""",
     lambda m: not m.group("s").startswith(("/", "."))),
    ("cli-password", r"""\s-(?:storepass|keypass|srcstorepass|deststorepass)\s+""" + _CLI_VALUE, None),
    ("cli-password", r"""\bldap\w*\b[^\n|;&]*?\s-w\s+""" + _CLI_VALUE, None),
    ("cli-password",  # aws configure set aws_secret_access_key X, git config credential.password X
     r"""\b(?:aws\s+configure\s+set|git\s+config(?:\s+--\w+)*)\s+(?P<name>[\w.\-]+)\s+""" + _CLI_VALUE,
     lambda m: name_tier(m.group("name").rsplit(".", 1)[-1]) == "strong"),
    ("secret-assignment",  # define('AUTH_KEY', '...'), setenv("TOKEN", "..."), os.environ.setdefault(...)
     r"""\b(?:define|setenv|putenv|setdefault|Setenv|SetEnvironmentVariable)\s*\(\s*["'](?P<name>[A-Za-z_][\w.\-]{0,80})["']"""
     r"""\s*,\s*(?P<q>["'])(?P<qv>(?:(?!(?P=q))[^\n]){4,300})(?P=q)""",
     lambda m: name_tier(m.group("name")) == "strong" and _plausible_value(m.group("qv"), True)),
    ("password-in-prose",  # labels in other languages: "Passwort:", "mot de passe :", "密码："
     r"(?i)(?:passwort|kennwort|mot de passe|contrase[ñn]a|senha|пароль|密码|密碼|口令|パスワード|비밀번호|wachtwoord"
     r"|has[łl]o|parola(?: d'ordine)?|l[öo]senord|salasana|adgangskode|passord|heslo|jelsz[óo]|[şs]ifre|m[ậa]t kh[ẩa]u"
     r"|كلمة المرور|סיסמה|κωδικός|api[- ]?schl[üu]ssel|cl[ée] (?:d'|de l')?api|clave (?:de )?api|chave (?:de )?api"
     r"|api ?密钥|密钥|秘密鍵|api ?キー|トークン|令牌|ключ api|токен|password [èe]|la password)"
     r"""\s*(?:[:：=]|\bist\b|\best\b|\bes\b|\bé\b|\bè\b)\s*["'`]?(?P<s>[^\s"'`，。]{4,100})""",
     lambda m: _plausible_value(m.group("s").rstrip(".,;:!?)"), False, strict_words=False)
     and _looks_random(m.group("s"))),
    ("cli-password",  # echo <token> | docker login --password-stdin, printf '%s' <token> | gh auth login --with-token
     r"""\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})?(?:[ \t]+(?P<fq>['"])%s(?:\\n)?(?P=fq))?[ \t]+"""
     r"""(?:(?P<q>['"])(?P<qv>[^'"\n]{4,300})(?P=q)|(?P<bv>[^\s'"|;&<>]{4,300}))[ \t]*\|[ \t]*(?P<cmd>[^\n|;&]{1,300})""",
     _piped_secret),
    ("cli-password",  # docker login --password-stdin <<< <token>: the here-string a login reads
     r"""<<<[ \t]*(?:(?P<q>['"])(?P<qv>[^'"\n]{4,300})(?P=q)|(?P<bv>[^\s'"|;&<>]{4,300}))""", _here_string_secret),
    ("cli-password", r"""\b(?:smbclient|rpcclient|smbmap)\b[^\n|;&]*?\s-U\s+['"]?[^\s%'"]+%(?P<s>[^\s'"]{3,})""", None),
    ("secret-flag",  # --password X, --api-key=X, --auth-token "X": a flag whose name says secret
     r"""(?<![\w\-])--(?P<name>[A-Za-z][A-Za-z0-9\-]{1,40})(?:=|[ \t]+)["']?(?P<s>[^\s"'`\-][^\s"'`]{2,300})""",
     _flag),
    # --- assignments whose name says secret --------------------------------
    (("name", _assignment_kind),
     r"(?:(?<![A-Za-z0-9_.\-])|(?<=\s-D))"  # -Dkey.store.password=... (Java system properties)
     r"(?P<qs>(?<=[?&#]))?(?P<name>(?=[A-Za-z0-9_.\-]{0,80}?(?i:pass|pw|pwd|secret|token|auth|cred|key"
     r"|cookie|session|sid|jwt|sig|salt|hmac|bearer|csrf|xsrf|otp))[A-Za-z_][A-Za-z0-9_.\-]{0,80})"
     r"""(?P<op>["']?[ \t]*(?:=>|:=|=|:)[ \t]*)""" + _VALUE, _assignment),
    (("name", _assignment_kind),  # {"name": "DB_PASSWORD", "value": "..."}, Kubernetes' "- name: X" / "value: ..."
     r"""(?<![\w\-])["']?name["']?[ \t]*[:=][ \t]*["']?(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*,?[ \t]*"""
     r"""(?:\r?\n[ \t]*)?["']?value["']?[ \t]*[:=][ \t]*"""
     r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300})(?P=q)|(?P<bv>[^\s"',}|>][^\s"',}]{0,299}))""",
     lambda m: _named_value(m.group("name"), _literal(m), m.group("q") is not None)),
    (("name", _assignment_kind),  # TOML / Python: password = """...""" on one line
     r"""(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]{0,80})[ \t]*=[ \t]*(?P<tq>\"\"\"|''')(?P<s>[^\n"']{1,300})(?P=tq)""",
     lambda m: _named_value(m.group("name"), m.group("s"), True)),
    ("password-in-prose",  # "the wifi password is X", "pw for the db: X"
     r"""(?i)\b(?:password|passwd|passphrase|passcode|pwd|pw)\b(?:\s+(?:for|of|to|on)\s+(?:the\s+)?[^\s]{1,40})?"""
     r"""\s*(?:\bis\b|\bwas\b|=|:)\s*["'`]?(?P<s>[^\s"'`]{4,100})""",
     lambda m: _plausible_value(m.group("s").rstrip(".,;:!?)"), False)),
    ("secret-in-context",  # "the API token is X", "use key X": a random token shortly after a secret word
     r"(?i)\b(?:api[ _\-]?key|access[ _\-]?key|secret(?:[ _\-]?key)?|token|password|passwd|passphrase"
     r"|credentials?|private[ _\-]?key|auth(?:entication|orization)?|bearer|api)\b[^\n]{0,40}?"
     r"(?<![A-Za-z0-9+/=_\-])(?P<s>[A-Za-z0-9+/_\-]{16,300}={0,2})(?![A-Za-z0-9+/=_\-])", _context_token),
    # --- a random token with no name that says secret: a whole quoted string, or a whole assigned value --
    ("high-entropy-value",
     r"""(?P<q>["'`])(?P<s>[A-Za-z0-9+/_\-]{32,128}={0,2})(?P=q)""", _neutral_token),
    ("high-entropy-value",
     r"""(?<=[=:])[ \t]{0,4}(?P<s>[A-Za-z0-9+/_\-]{32,128}={0,2})(?=[ \t]*(?:[\r\n,;]|\Z))""", _neutral_token),
]


_LEAD_ASSERTION = re.compile(r"\(\?i\)|\(\?<[!=](?:\[(?:\\.|[^\]\\])*\]|\\.|[^()\[\\])*\)|\\b")
_LITERAL_ESCAPES = frozenset(".-$/_")


def _leading_literal(p: str, i: int) -> tuple[str, int]:
    """The literal text ``p`` must match from ``i`` on (escapes ``\\.`` ``\\-`` included), and where it stops."""
    lit = ""
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p) and p[i + 1] in _LITERAL_ESCAPES:
            c, step = p[i + 1], 2
        elif c.isalnum() or c in "_-:/~ ":
            step = 1
        else:
            break
        if p[i + step:i + step + 1] in ("?", "*") or p.startswith("{0", i + step):
            break  # an optional last character is not required
        lit += c
        i += step
        if p[i:i + 1] in ("+", "{"):
            break
    return lit, i


def _needles(pattern: str) -> tuple[bool, tuple[str, ...]]:
    """(case-insensitive?, literals one of which every match must contain) -- () when none can be told.

    Read from the pattern's start: a literal, or a group of alternatives that each start with one
    (``(?:mysql|mysqldump|...)``).  A rule whose needles are all absent from a text is not run on it:
    the vendor rules cost a scan of the text each, and most texts hold none of their prefixes.
    """
    icase = pattern.startswith("(?i)")
    i = 0
    while True:
        m = _LEAD_ASSERTION.match(pattern, i)
        if m is None:
            break
        i = m.end()
    lit, j = _leading_literal(pattern, i)
    if len(lit) >= 2:
        return icase, (lit.lower() if icase else lit,)
    if not pattern.startswith(("(?:", "(?P<"), i):
        return icase, ()
    depth, k, alts, start = 0, i, [], pattern.index(":" if pattern.startswith("(?:", i) else ">", i) + 1
    while k < len(pattern):
        c = pattern[k]
        if c == "\\":
            k += 2
            continue
        if c == "[":
            k = pattern.index("]", k + 2) + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                alts.append(pattern[start:k])
                break
        elif c == "|" and depth == 1:
            alts.append(pattern[start:k])
            start = k + 1
        k += 1
    else:
        return icase, ()
    if pattern[k + 1:k + 2] in ("?", "*") or pattern.startswith("{0", k + 1):
        return icase, ()
    found = []
    for a in alts:
        lit, _ = _leading_literal(a, 0)
        if len(lit) < 2:
            return icase, ()
        found.append(lit.lower() if icase else lit)
    return icase, tuple(found)


class _Rule:
    __slots__ = ("kind", "regex", "accept", "priority", "icase", "needles")

    def __init__(self, kind: "Kind", pattern: str, accept: "Accept | None", priority: int) -> None:
        self.kind = kind
        self.regex = re.compile(pattern)
        self.accept = accept
        self.priority = priority
        self.icase, self.needles = _needles(pattern)

    def wanted(self, text: str, lower: str) -> bool:
        """False when ``text`` lacks every literal a match needs (the regex would find nothing)."""
        if not self.needles:
            return True
        hay = lower if self.icase else text
        return any(n in hay for n in self.needles)

    def name(self, m: re.Match[str]) -> str:
        if isinstance(self.kind, str):
            return self.kind
        group, names = self.kind
        if callable(names):
            return names(m)
        return names.get(m.group(group).lower()) or names[""]

    def span(self, m: re.Match[str]) -> tuple[int, int]:
        """The part to mask: the value group when the rule has one, else the whole match."""
        for g in ("s", "qv", "bv"):
            if g in self.regex.groupindex and m.group(g) is not None:
                return m.span(g)
        return m.span()


_RULES = [_Rule(k, p, a, i) for i, (k, p, a) in enumerate(_RULE_SPECS)]
# The exact provider formats (and key material) come before the first generic shape.
_PROVIDER_END = next(i for i, (k, _, _) in enumerate(_RULE_SPECS) if k == "url-password")
_PROVIDER_RULES = _RULES[:_PROVIDER_END]
_ASSIGNMENT_PRIORITY = next(i for i, (_, _, a) in enumerate(_RULE_SPECS) if a is _assignment)
_NEUTRAL_PRIORITY = next(i for i, (k, _, _) in enumerate(_RULE_SPECS) if k == "high-entropy-value")

KINDS = frozenset(name for kind, _, _ in _RULE_SPECS
                  for name in ([kind] if isinstance(kind, str) else
                               ["password-assignment", "secret-assignment"] if callable(kind[1])
                               else kind[1].values())) | {"base64-secret", "url-encoded-secret", "kubernetes-secret"}


def _hits(text: str, rules: "list[_Rule] | None" = None) -> "list[tuple[int, int, int, str]]":
    hits: list[tuple[int, int, int, str]] = []
    lower = text.lower()
    for rule in _RULES if rules is None else rules:
        if not rule.wanted(text, lower):
            continue
        for m in rule.regex.finditer(text):
            if rule.accept is not None and not rule.accept(m):
                continue
            start, end = rule.span(m)
            if end > start and not text.startswith(_MARK_PREFIX, start):
                hits.append((start, end, rule.priority, rule.name(m)))
    return hits


_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
_PCT_PIECE = re.compile(r"[^\s'\"<>?&]*%[0-9A-Fa-f]{2}[^\s'\"<>?&]*")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_DECODED = len(_RULES)  # the priority of a hit found in decoded text: below every rule's


def _decoded_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """Secrets inside base64 (an encoded ``.env`` line, a ``user:pass``) and URL-encoded values.

    The encoded run is decoded and searched once more (not deeper); when it holds a
    secret the whole run is masked.  Binary (hashes, keys) and plain text without an
    assignment in it are not searched.
    """
    out = []
    for m in _B64_RUN.finditer(text):
        run = m.group()
        if len(run) % 4:
            continue
        try:
            raw = binascii.a2b_base64(run)
        except (binascii.Error, ValueError):
            continue
        if not raw or any(b < 32 and b not in (9, 10, 13) or b > 126 for b in raw) or not (b"=" in raw or b":" in raw):
            continue
        inner = _hits(raw.decode("ascii"))
        if inner:
            out.append((m.start(), m.end(), _DECODED, "base64-secret"))
    if "%" in text:
        for m in _PCT_PIECE.finditer(text):
            piece = m.group()
            try:
                plain = _PCT.sub(lambda x: chr(int(x.group(1), 16)), piece)
            except ValueError:
                continue
            inner = _hits(plain) if plain != piece else []
            if inner:
                start = m.start() + (piece.index("=") + 1 if "=" in piece.split("%", 1)[0] else 0)
                out.append((start, m.end(), _DECODED, "url-encoded-secret"))
    return out


_CONTINUATION = re.compile(r"""(?:\\)?\r?\n[ \t]*([A-Za-z0-9+/_\-]{8,300}={0,2})[ \t]*["'`]?[,;)\]}]?[ \t]*(?=\r?\n|\Z)""")
# After a secret with dots in it (a JWT, a bearer token) the wrapped rest may hold dots too, and be long.
_CONTINUATION_DOTTED = re.compile(r"""(?:\\)?\r?\n[ \t]*([A-Za-z0-9+/_\-.]{8,4000}+={0,2})[ \t]*["'`]?[,;)\]}]?[ \t]*(?=\r?\n|\Z)""")


def _continued(text: str, start: int, end: int) -> "list[tuple[int, int]]":
    """The lines that only continue a secret ending its line (a wrapped token or key), one span each.

    Each is masked on its own line, so the text keeps its line structure.
    """
    spans = []
    pattern = _CONTINUATION_DOTTED if text.find(".", start, end) != -1 else _CONTINUATION
    for _ in range(64):
        m = pattern.match(text, end)
        if m is None or not _looks_random(m.group(1)) or _WORDISH.match(m.group(1)):
            break
        spans.append(m.span(1))
        end = m.end()
    return spans


# -- values that do not sit on their key's line (issue 34) ------------------------------------------
# A key and its operator, as YAML, JSON, TOML, .env, shell and code write them: first on its line (after "- ",
# "export ", a declaration word: "var ", "const ", Dockerfile "ENV "), or after the "{" or "," of a JSON object
# -- not "if x == TOKEN:" in code.
_KEY = r"""(?m:^|(?<=[{,]))[ \t]*(?:-[ \t]+)?(?:(?:export|var|const|let|local|readonly|val|ENV|ARG)[ \t]+)?(?P<kq>["']?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=kq)[ \t]*(?P<op>:=|=>|=|:)[ \t]*"""
# The value starts on the next line: after a YAML block indicator (| > |- >+ |2 ...), after nothing at all
# (YAML, JSON), after a shell line continuation or an opening parenthesis; a comment may end the line.
_OPEN_NEXT = re.compile(_KEY + r"""(?P<ind>[|>](?:[1-9][+\-]?|[+\-][1-9]?)?|\\|\()?[ \t]*+(?:#[^\n]{0,200}+)?(?=\r?\n)""")
# A quote opened after the key and not closed on its line: TOML or Python triple quotes, a Go raw string, a
# .env value or a YAML quoted scalar spanning lines.
_OPEN_QUOTE = re.compile(_KEY + r"""(?P<oq>\"\"\"|'''|"|'|`)(?P<first>[^\n"'`]{0,300}+)(?=\r?\n)""")
# A JSON array or YAML flow sequence after its key, and one item of it, quoted or bare (the next one after a comma).
_OPEN_ARRAY = re.compile(_KEY + r"\[")
_ARRAY_ITEM = re.compile(r"""\s{0,200}+(?:(?P<q>["'])(?P<v>[^"'\\\n]{0,400}+)(?P=q)|(?P<bv>[^\s,\[\]{}"'#]{1,400}+))"""
                         r"""\s{0,200}+(?P<sep>[,\]])?""")
# A YAML plain scalar whose value starts on the key's line and goes on, more indented, on the next.
_YAML_PLAIN = re.compile(r"""(?m)^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<kq>["']?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=kq):"""
                         r"""[ \t]+(?P<v>[^\s#"'|>&*!%@`{\[][^\n]{0,300}+)(?=\r?\n[ \t]+\S)""")
# A line that is YAML structure rather than a value's text: a mapping entry, a sequence item, a comment, a
# flow collection.
_STRUCTURE = re.compile(r"""(?:-(?:[ \t]|$)|#|[{\[]|["']?[\w.\-/]+["']?[ \t]*:(?:[ \t]|$))""", re.M)
_DQ_CLOSE = re.compile(r'(?:[^"\\]|\\.)*+"')
_VALUE_END = re.compile(r"[ \t]*(?:[,;}\])]|#|\r?\n|\Z)")
_PUBLIC_MATERIAL = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh|ecdsa)-[\w@.\-]+) AAAA"
                              r"|-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY|CERTIFICATE)")
_MULTI_LINES = 500  # a value is looked for this many lines down at most
_NAME_ABOVE = re.compile(r"""["']?name["']?[ \t]*:[ \t]*["']?(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*,?[ \t]*\r?\n[ \t]*\Z""")
_NONBLANK = re.compile(r"(?:[ \t\r]*\n)*+(?P<line>[ \t]*+)(?=\S)")


def _lines(text: str, pos: int) -> "Any":
    """(start, end) of each line from ``pos`` (a line start) on, ``end`` before its newline."""
    n = len(text)
    for _ in range(_MULTI_LINES):
        if pos > n:
            return
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl
        yield pos, end - (1 if end > pos and text[end - 1] == "\r" else 0)
        if nl == -1:
            return
        pos = nl + 1


def _indent(text: str, start: int, end: int) -> int:
    i = start
    while i < end and text[i] in " \t":
        i += 1
    return i - start


def _trimmed(text: str, start: int, end: int) -> "tuple[int, int] | None":
    """The span without its surrounding blanks, None for a blank piece or one already masked."""
    while start < end and text[start] in " \t\r":
        start += 1
    while end > start and text[end - 1] in " \t\r":
        end -= 1
    if start == end or text.startswith(_MARK_PREFIX, start):
        return None
    return start, end


def _named_value(name: str, value: str, quoted: bool, line_value: bool = True) -> bool:
    """Would ``name = value`` be masked?  The judgement of :func:`_assignment`, for a value found elsewhere."""
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


def _quoted_close(text: str, quote: str, pos: int, shell: bool = False) -> int:
    """Where the quote opened before ``pos`` closes (-1: not within 50 lines, or not at a value's end).

    In a shell line (``shell``) a blank may follow the value: the command goes on after it.
    """
    limit = min(len(text), pos + 40 * _MULTI_LINES)
    if len(quote) == 3:
        return text.find(quote, pos, limit)
    if quote == '"':
        m = _DQ_CLOSE.match(text, pos, limit)
        close = m.end() - 1 if m else -1
    else:
        close = text.find(quote, pos, limit)  # ' and ` (a Go raw string) have no escapes
    if close == -1 or text.count("\n", pos, close) > 50:
        return -1
    if not (_VALUE_END.match(text, close + 1) or shell and text[close + 1:close + 2] in (" ", "\t")):
        return -1
    return close


def _line_spans(text: str, start: int, end: int) -> "list[tuple[int, int]]":
    """[start, end) cut at its newlines into trimmed, non-blank pieces."""
    spans = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        piece = _trimmed(text, pos, stop)
        if piece:
            spans.append(piece)
        pos = stop + 1
    return spans


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


def _sequence_values(name: str, tier: "str | None", text: str, pos: int, dash: int) -> "list[list[tuple[int, int]]]":
    """The scalar items of the YAML sequence whose first "- " line starts at ``pos`` (indented ``dash``) that
    hold a secret under ``name``: "- value" on the dash's line, or "-" alone over the value's lines."""
    items: "list[list[tuple[int, int]]]" = []
    cur: "list[tuple[int, int]] | None" = None  # the item whose value is on the lines under its "-"
    for a, b in _lines(text, pos):
        i = a + _indent(text, a, b)
        if i >= b:
            continue
        if i - a < dash:
            break
        if i - a == dash:
            if text[i] != "-" or (i + 1 < b and text[i + 1] not in " \t"):
                break  # the next key: the sequence has ended
            j = i + 1
            while j < b and text[j] in " \t":
                j += 1
            cur = None
            if j >= b or text[j] == "#":
                cur = []
                items.append(cur)
            elif not _STRUCTURE.match(text, j, b):  # not "- key: value", "- - x", "- [a, b]"
                stop = text.find(" #", j, b)
                piece = _trimmed(text, j, b if stop == -1 else stop)
                if piece:
                    items.append([piece])
            continue
        if cur is not None:  # deeper: the value of a "-" alone, unless it is a mapping
            if _STRUCTURE.match(text, i, b):
                cur.append((-1, -1))
            else:
                piece = _trimmed(text, i, b)
                if piece:
                    cur.append(piece)
    out = []
    for spans in items:
        if not spans or (-1, -1) in spans:
            continue
        inner = [(x + 1, y - 1) if y - x > 2 and text[x] in "\"'" and text[y - 1] == text[x] else (x, y) for x, y in spans]
        if _item_value(name, tier, "".join(text[x:y] for x, y in inner)):
            out.append(inner)
    return out


# A here-document: "<<EOF", "<<-EOF", "<<~EOS" (Ruby), "<<'EOF'", HCL "<<EOT", PHP "<<<EOT"; its body ends at the line that
# holds only the tag.
_HEREDOC = re.compile(r"""(?<!<)<<<?(?!<)(?P<dash>[-~]?)[ \t]*(?P<hq>["']?)(?P<tag>[A-Za-z_][A-Za-z0-9_]{0,40})(?P=hq)(?P<rest>[^\n]{0,300}+)\n""")
# The line that opens it says what the body is: a value assigned to a name (HCL "default = <<EOT", Ruby, Perl,
# PHP, shell "X=$(cat <<EOF"), the content of a file ("cat > path <<EOF", "tee -a path <<EOF", "cat <<EOF >
# path"), or what a command that reads a secret from its standard input reads.
_HEREDOC_NAME = re.compile(r"""(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*(?:=|:|=>)[ \t]*(?:\$\([ \t]*cat[ \t]*)?\Z""")
_HEREDOC_FILE = re.compile(r"""(?:(?<![<>&\d])>>?|\btee(?:[ \t]+-a)?)[ \t]*(?P<fq>["']?)(?P<path>[^\s;&|<>"'$]{1,300})(?P=fq)""")
# ... or any path on it ("install -m 600 /dev/stdin /etc/app/token <<EOF", "sponge ~/.config/app/api_key"), not a URL.
_PATH_ARG = re.compile(r"""(?<![\w:/.~\-])(?P<path>(?:~|\.{1,2})?/(?!/)[^\s;&|<>"'$:]{1,300})""")
# A file whose name says secret holds its secret raw only without an extension or with one of these; in a
# config file (.env, .json, .yaml...) each line is judged by the ordinary rules.
_RAW_FILE_EXT = frozenset("txt key pem token secret secrets pass pw pwd b64 asc cred creds".split())
_LINE_KEY = re.compile(r"[A-Za-z_][\w.\-]*[ \t]*[:=]")


def _file_name(path: str) -> "str | None":
    """The name a heredoc's target file gives its content (its base name), None when that says nothing."""
    base = path.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    if dot and stem and ext.lower() not in _RAW_FILE_EXT:
        return None
    return base if base not in ("null", "stdout", "stderr") else None


def _raw_secret_lines(name: str, tier: str, text: str, spans: "list[tuple[int, int]]") -> "list[tuple[int, int]]":
    """The lines of a file or standard input that is all secret: each one a token on its own (a line that is
    itself an assignment is judged by its own name)."""
    out = []
    for a, b in spans:
        v = text[a:b]
        if any(c.isspace() for c in v) or _LINE_KEY.match(v) or _TEMPLATE.search(v) or _PUBLIC_MATERIAL.search(v):
            continue
        if (_random_token(v) if tier == "weak" else
                len(v) >= 8 and _looks_random(v) and _named_value(name, v, False, line_value=False)):
            out.append((a, b))
    return out


def _heredoc_hits(text: str) -> "list[tuple[str | None, list[tuple[int, int]]]]":
    """Here-document bodies: assigned to a name (judged as that name's value, or as a blob under a neutral
    name), written to a file whose name says secret (``cat > /etc/app/api.key <<EOF``), or fed to a command
    that reads a secret from its standard input (``docker login --password-stdin <<EOF``)."""
    if "<<" not in text:
        return []
    line_starts: "list[int]" = []
    ends: "dict[str, list[int]]" = {}  # a line that is a bare identifier -> the numbers of the lines it is on
    at = 0
    for n, line in enumerate(text.split("\n")):
        line_starts.append(at)
        at += len(line) + 1
        s = line.strip().rstrip(";,)")  # (PHP ends one with "EOT;", code with "EOT)")
        if 0 < len(s) <= 41 and s.isidentifier():
            ends.setdefault(s, []).append(n)
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = []
    covered = 0  # a heredoc inside another one's body is that body's text
    for m in _HEREDOC.finditer(text):
        if m.start() < covered:
            continue
        first = bisect.bisect_right(line_starts, m.end()) - 1  # the body's first line
        lines = ends.get(m.group("tag"), [])
        k = bisect.bisect_left(lines, first)
        if k == len(lines) or lines[k] - first > _MULTI_LINES:
            continue
        term = line_starts[lines[k]]
        covered = term
        spans = _line_spans(text, m.end(), term)
        if not spans:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        head, rest = text[line_start:m.start()], m.group("rest")
        named = _HEREDOC_NAME.search(head)
        if named:
            name = named.group("name")
            tier = name_tier(name)
            pieces = [text[a:b] for a, b in spans]
            if tier is None and not any(_TEMPLATE.search(p) for p in pieces) and _blob_value(name, pieces):
                found.append((None, spans))
            elif tier and not any(_TEMPLATE.search(p) or _PUBLIC_MATERIAL.search(p) for p in pieces) \
                    and _plain_value(name, pieces):
                found.append((name, spans))
            continue
        target = _HEREDOC_FILE.search(head) or _HEREDOC_FILE.search(rest)
        if target is None:
            paths = [p for p in _PATH_ARG.finditer(head + " " + rest) if p.group("path") != "/dev/stdin"]
            target = paths[-1] if paths else None
        name = _file_name(target.group("path")) if target else None
        if name is None and _STDIN_SECRET.search(head + " " + rest):
            name = "password"
        tier = name_tier(name) if name else None
        if tier and name:
            found.extend((name, [span]) for span in _raw_secret_lines(name, tier, text, spans))
    return found


# An XML element whose text is its whole value: <password>...</password>, on its line or on lines of its own.
_XML_ELEMENT = re.compile(r"<(?P<tag>(?:[A-Za-z_][\w.\-]{0,40}:)?(?P<name>[A-Za-z_][\w.\-]{0,80}))(?P<attrs>[ \t][^<>\n]{0,300}+)?>"
                          r"(?P<v>[^<]{1,4000}+)</(?P=tag)[ \t]*>")


_XML_NAME_ATTR = re.compile(r"""\b(?:key|name)[ \t]*=[ \t]*["'](?P<name>[A-Za-z_][\w.\-]{0,80})["']""")
_IN_CODE = re.compile(r"""\\[nrt"']|%[sdr]\b|["'][ \t]*[,+)]""")
# XML Signature and Encryption elements: a signature, a digest, ciphertext, public key material.
_XML_PUBLIC = re.compile(r"(?i)signature|digest|cipher|modulus|exponent|x509|certificate")


def _xml_hits(text: str) -> "list[tuple[str | None, list[tuple[int, int]]]]":
    """The text of an XML element, judged by the element's name like an assignment's value (a neutral name's
    text only when it is a machine-made token)."""
    if "</" not in text:
        return []
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = []
    for m in _XML_ELEMENT.finditer(text):
        name = m.group("name")
        tier = name_tier(name)
        named = _XML_NAME_ATTR.search(m.group("attrs") or "") if tier is None else None
        if named:  # <entry key="db.password">, <string name="api_token">, <add key="ApiKey"> ... </...>
            name = named.group("name")
            tier = name_tier(name)
        if _XML_PUBLIC.search(name) or tier is None and _NOT_SECRET_CONTEXT.search(name):
            continue
        spans = _line_spans(text, m.start("v"), m.end("v"))
        pieces = [text[a:b] for a, b in spans]
        if not pieces or any(_TEMPLATE.search(p) or _PUBLIC_MATERIAL.search(p) or _IN_CODE.search(p) for p in pieces):
            continue  # (a template, or markup inside a string literal of code: "<password>\\n%s</password>")
        if len(pieces) > 1 or "\n" in m.group("v"):  # the value on lines of its own
            if _plain_value(name, pieces) if tier else _blob_value(name, pieces):
                found.append((name if tier else None, spans))
        elif tier:
            v = pieces[0]
            if _named_value(name, v, any(c.isspace() for c in v), line_value=False):
                found.append((name, spans))
        elif 32 <= len(pieces[0]) <= 400 and _BLOB_PIECE.match(pieces[0]) and _neutral_string(pieces[0]):
            found.append((None, spans))
    return found


# A Kubernetes Secret: every value under its data: (base64) and stringData: (plain) is a secret, whatever its key.
_KIND_SECRET = re.compile(r"""(?m)^[ \t]*(?:-[ \t]+)?kind:[ \t]*["']?Secret["']?[ \t]*(?:#[^\n]*)?\r?$""")
_DOC_START = re.compile(r"(?m)^---")
_SECRET_DATA = re.compile(r"""(?m)^(?P<ind>[ \t]*)["']?(?:data|stringData)["']?:[ \t]*(?:#[^\n]*)?\r?$""")
_DATA_ENTRY = re.compile(r"""["']?[\w.\-]{1,253}["']?[ \t]*:(?:[ \t]+|(?=\r?\n|\Z))""")
_JSON_KIND = re.compile(r""""kind"[ \t]*:[ \t]*"(?P<k>[A-Za-z]+)\"""")
_JSON_DATA = re.compile(r""""(?:data|stringData)"[ \t]*:[ \t]*\{""")
_JSON_PAIR = re.compile(r"""\s{0,200}+"[\w.\-]{1,253}"[ \t]*:[ \t]*"(?P<v>(?:[^"\\\n]|\\.){0,20000}+)"\s{0,200}+(?P<sep>[,}])?""")


def _kubernetes_secret_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """The values of a Kubernetes Secret's data and stringData, as YAML (each ``---`` document on its own) or
    as the JSON kubectl prints (when every kind in the text is Secret or List)."""
    if "Secret" not in text:
        return []
    spans: "list[tuple[int, int]]" = []
    starts = [0] + [m.start() for m in _DOC_START.finditer(text)] + [len(text)]
    for d in range(len(starts) - 1):
        start, end = starts[d], starts[d + 1]
        if not _KIND_SECRET.search(text, start, end):
            continue
        for m in _SECRET_DATA.finditer(text, start, end):
            base, entry, block = len(m.group("ind")), -1, False
            for a, b in _lines(text, text.find("\n", m.end()) + 1 if text.find("\n", m.end()) != -1 else len(text) + 1):
                i = a + _indent(text, a, b)
                if i >= b:
                    continue
                if i - a <= base or a >= end:
                    break
                if entry == -1:
                    entry = i - a
                if i - a == entry:
                    key = _DATA_ENTRY.match(text, i, b)
                    if key is None:
                        break
                    v = _trimmed(text, key.end(), b)
                    block = v is None or text[v[0]] in "|>" and v[1] - v[0] <= 3
                    if v and not block:
                        x, y = v
                        if y - x > 1 and text[x] in "\"'" and text[y - 1] == text[x]:
                            x, y = x + 1, y - 1
                        if y > x and text[x] != "%" and _plausible_value(text[x:y], True):
                            spans.append((x, y))  # (not a template, a placeholder, <base64-encoded-password>)
                elif block:  # the lines of "key: |" or of "key:" over its value
                    piece = _trimmed(text, i, b)
                    if piece and not _TEMPLATE.search(text, piece[0], piece[1]):
                        spans.append(piece)
    kinds = {k.group("k") for k in _JSON_KIND.finditer(text)}
    if "Secret" in kinds and kinds <= {"Secret", "List"}:
        for m in _JSON_DATA.finditer(text):
            pos = m.end()
            for _ in range(_MULTI_LINES):
                pair = _JSON_PAIR.match(text, pos)
                if pair is None:
                    break
                if pair.end("v") > pair.start("v") and not text.startswith("%", pair.start("v")) \
                        and _plausible_value(pair.group("v"), True):
                    spans.append(pair.span("v"))
                if pair.group("sep") != ",":
                    break
                pos = pair.end()
    return [(a, b, _ASSIGNMENT_PRIORITY, "kubernetes-secret") for a, b in spans]


def _multiline_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """Values that start on the line after their key or run over several lines, masked line by line.

    YAML block scalars (``key: |``, ``>-``, ``|2`` ...: the more-indented block is the value), a YAML
    plain scalar on the next line or continued there, a YAML sequence or JSON array of values, a JSON
    value on the next line, TOML and Python triple-quoted strings, Go raw strings, a quoted .env or YAML
    value spanning lines, a shell ``NAME=\\`` continuation.  Under a name that says secret the value is
    judged as that name's value; under any other name only a machine-made token on lines of its own
    counts (:func:`_blob_value`).  Each line keeps its newline: the masked text has as many lines as the
    original.
    """
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = _xml_hits(text)   # (name, spans); None: a neutral name
    out = _kubernetes_secret_hits(text)
    if "\n" not in text:
        return out + [(a, b, prio, kind) for name, spans in found for a, b in spans for prio, kind in [_found_kind(name)]]
    for m in _OPEN_NEXT.finditer(text):
        name, op, ind = m.group("name"), m.group("op"), m.group("ind") or ""
        if name.lower() == "value":  # "- name: DB_PASSWORD" on the line above names this value
            pair = _NAME_ABOVE.search(text, max(0, m.start() - 200), m.start())
            name = pair.group("name") if pair else name
        # NAME= with nothing after it is an empty .env value, unless a deeper-indented line goes on with it (an
        # INI value continued, as configparser reads it)
        eq_only = op != ":" and ind not in ("\\", "(")
        tier = name_tier(name)
        if tier is None and _NOT_SECRET_CONTEXT.search(name):
            continue  # checksum:, sha256:, commit_id: -- a hash or an id, whatever it looks like
        owner = name if tier else None
        line_start = text.rfind("\n", 0, m.start()) + 1
        base = _indent(text, line_start, m.end())
        if ind[:1] in ("|", ">"):
            spans = []
            for a, b in _lines(text, text.index("\n", m.end()) + 1):
                if a == b or text[a:b].isspace():
                    continue
                if _indent(text, a, b) <= base:
                    break
                piece = _trimmed(text, a, b)
                if piece:
                    spans.append(piece)
            if spans and _lines_value(name, tier, text, spans, True):
                found.append((owner, spans))
            continue
        nxt = _NONBLANK.match(text, text.index("\n", m.end()) + 1)  # the first line that is not blank
        if nxt is None:
            continue
        a, i = nxt.start("line"), nxt.end("line")
        b = text.find("\n", i)
        b = len(text) if b == -1 else b - (text[b - 1] == "\r")
        if eq_only and (i - a <= base or text[i] in "\"'-"):
            continue
        if text[i] in "\"'":
            close = _quoted_close(text, text[i], i + 1, shell=ind == "\\")
            if close != -1:
                spans = _line_spans(text, i + 1, close)
                if spans and _lines_value(name, tier, text, spans, True):
                    found.append((owner, spans))
            continue
        if ind:  # NAME=\ and NAME = ( : the next line's first word
            j = i
            while j < b and not text[j].isspace():
                j += 1
            if ind == "\\" and (_named_value(name, text[i:j], False) if tier else _blob_value(name, [text[i:j]])):
                found.append((owner, [(i, j)]))
            continue
        if text[i] == "-" and (i + 1 == b or text[i + 1] in " \t") and i - a >= base:
            found.extend((owner, spans) for spans in _sequence_values(name, tier, text, a, i - a))
            continue
        if _STRUCTURE.match(text, i, b):
            continue  # a nested mapping, a comment, a flow collection: structure, not a value
        if i - a <= base:
            # "client_key:" over a value at the key's own indentation (a config that is not YAML): one
            # random-looking word, and a key, a blank line or the end after it
            after = _NONBLANK.match(text, b + 1) if b < len(text) else None
            word = text[i:b].rstrip()
            if (tier == "strong" and len(word) >= 12 and not any(c.isspace() for c in word) and _looks_random(word)
                    and (after is None or _STRUCTURE.match(text, after.end("line")))
                    and _named_value(name, word, False, line_value=False)):
                found.append((owner, [(i, i + len(word))]))
            continue
        spans = [(i, b)]
        for a2, b2 in _lines(text, b + 1):
            i2 = a2 + _indent(text, a2, b2)
            if i2 >= b2 or i2 - a2 <= base or _STRUCTURE.match(text, i2, b2):
                break
            spans.append((i2, b2))
        spans = [p for p in (_trimmed(text, x, y) for x, y in spans) if p]
        pieces = [text[x:y] for x, y in spans]
        if spans and (_plain_value(name, pieces) if tier else _blob_value(name, pieces)):
            found.append((owner, spans))
    for m in _OPEN_QUOTE.finditer(text):
        name, quote = m.group("name"), m.group("oq")
        tier = name_tier(name)
        if tier is None and _NOT_SECRET_CONTEXT.search(name):
            continue
        close = _quoted_close(text, quote, m.end())
        if close == -1:
            continue
        spans = _line_spans(text, m.start("first"), close)
        if spans and _lines_value(name, tier, text, spans, True):
            found.append((name if tier else None, spans))
    for m in _OPEN_ARRAY.finditer(text) if "[" in text else ():  # "api_keys": [ "...", "..." ]: each item by the name
        name = m.group("name")
        tier = name_tier(name)
        if tier is None:
            continue  # (a neutral name's items: the high-entropy rule judges each quoted string)
        pos = m.end()
        for _ in range(_MULTI_LINES):
            item = _ARRAY_ITEM.match(text, pos)
            if item is None:
                break
            g = "v" if item.group("q") else "bv"
            if _item_value(name, tier, item.group(g)):
                found.append((name, [item.span(g)]))
            if item.group("sep") != ",":
                break
            pos = item.end()
    for m in _YAML_PLAIN.finditer(text):
        name, base = m.group("name"), len(m.group("indent"))
        if name_tier(name) is None:
            continue
        v = m.group("v")
        cut = v.find(" #")
        first = _trimmed(text, m.start("v"), m.start("v") + (cut if cut != -1 else len(v)))
        spans = [first] if first else []
        for a, b in _lines(text, m.end() + 1):
            i = a + _indent(text, a, b)
            if i >= b or i - a <= base or _STRUCTURE.match(text, i, b):
                break
            piece = _trimmed(text, i, b)
            if piece:
                spans.append(piece)
        if len(spans) > 1 and (_plain_value(name, [text[x:y] for x, y in spans])
                               or any(_random_token(text[x:y]) for x, y in spans[1:])):
            found.append((name, spans))
    found += _heredoc_hits(text)
    for name, spans in found:
        prio, kind = _found_kind(name)
        out.extend((a, b, prio, kind) for a, b in spans)
    return out


def _found_kind(name: "str | None") -> "tuple[int, str]":
    """(priority, kind) of a value found by its name (None: a neutral name, a random-looking value)."""
    if name is None:
        return _NEUTRAL_PRIORITY, "high-entropy-value"
    return _ASSIGNMENT_PRIORITY, "password-assignment" if _password_family(name) else "secret-assignment"


# -- a token cut in two: across a line break, or into string literals joined in code -----------------
_TOKEN_RUN = r"[A-Za-z0-9_\-.=+/$]"
# A run that starts like a known provider token and ends its line, the next line going on with token text.
_SPLIT = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:gh[pousr]_|github_pat_|gl[a-z]{2,6}-|GR1348941|xox[a-z]-|xapp-|sk-|sk_|rk_|whsec_|npm_"
    r"|pypi-|dckr_|hf_|api_org_|hv[sbr]\.|do[por]_v1_|shp[a-z]{2}_|lin_|gl(?:c|sa)_|NR[A-Z]{2}-|dp\.|pul-|PMAK-"
    r"|ATATT|AKIA|ASIA|AIza|SG\.|key-|dapi|sntry[su]_|ya29\.|GOCSPX-|figd_|ntn_|gsk_|r8_|xai-|pplx-|sq0|EAAA|cio"
    r"|sq[upa]_|dt0c01\.|tskey-|HRKU-|AKCp|LTAI|AKID|shippo_|ops_|xkeysib-|bkua_|CFPAT-|sbp_|sb_secret_|pscale_|nfp_"
    r"|rnd_|pcsk_|oy2|ATBB|FLWSECK|1//0|pat-|phx_|lsv2_|tvly-|hc[ax]i|EZ[AT]K|eyJ)"
    + _TOKEN_RUN + r"{0,300}+(?P<brk>[ \t]*\\?\r?\n[ \t]*)(?=" + _TOKEN_RUN + r"{4})")
_RUN = re.compile(_TOKEN_RUN + "+")
_LIT = r"""(?:"[^"\\\n]{0,400}+"|'[^'\\\n]{0,400}+')"""
_JOIN = r"""[ \t]*+(?:(?:\+|\.\.?|&|\|\|)[ \t]*+)?(?:\\?\r?\n[ \t]*+(?:(?:\+|\.\.?|&|\|\|)[ \t]*+)?)?"""
# String literals joined by +, . (PHP), .. (Lua), & (VB), || (SQL) or written side by side (Python, C).
_CHAIN = re.compile(_LIT + r"(?:" + _JOIN + _LIT + r")++")
_ONE_LIT = re.compile(_LIT)


def _stitched_hits(text: str, groups: "list[list[tuple[int, int]]]") -> "list[tuple[int, int, int, str]]":
    """Provider tokens that only appear once each group's pieces are read as one string.

    The groups are joined (kept apart, so no token runs from one into the next) and searched with
    the provider rules once; a match that spans two pieces or more is masked piece by piece.
    """
    buf: list[str] = []
    starts: list[int] = []          # where each piece begins in the joined text
    pieces: "list[tuple[int, int, int]]" = []  # (original start, original end, group)
    pos = 0
    for g, group in enumerate(groups):
        for a, b in group:
            starts.append(pos)
            pieces.append((a, b, g))
            buf.append(text[a:b])
            pos += b - a
        buf.append("\n\n")
        pos += 2
    if not pieces:
        return []
    joined = "".join(buf)
    out = []
    for x, y, prio, kind in _hits(joined, _PROVIDER_RULES):
        first = bisect.bisect_right(starts, x) - 1
        last = bisect.bisect_right(starts, y - 1) - 1
        if first == last or pieces[first][2] != pieces[last][2] or not _looks_random(joined[x:y]):
            continue  # inside one piece (the main pass saw it), across groups, or a word
        for k in range(first, last + 1):
            a, b, _ = pieces[k]
            lo = a + max(0, x - starts[k])
            hi = a + min(b - a, y - starts[k])
            if hi > lo:
                out.append((lo, hi, prio, kind))
    return out


def _split_hits(text: str, ends: "set[int]") -> "list[tuple[int, int, int, str]]":
    """A provider token wrapped onto the next line (``ghp_abc\\`` + ``def``), a piece on each line."""
    if "\n" not in text:
        return []
    groups = []
    for m in _SPLIT.finditer(text):
        if m.start("brk") in ends:
            continue  # the first line already holds a whole token: the next line is something else
        nxt = _RUN.match(text, m.end())
        if nxt:
            groups.append([(m.start(), m.start("brk")), nxt.span()])
    return _stitched_hits(text, groups)


def _concat_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """A provider token built from string literals: ``"sk_live_" + "..."``, ``("ghp_..." "...")``."""
    if '"' not in text and "'" not in text:
        return []
    groups = []
    for m in _CHAIN.finditer(text):
        group = [(lit.start() + 1, lit.end() - 1) for lit in _ONE_LIT.finditer(text, m.start(), m.end())]
        group = [(a, b) for a, b in group if b > a]
        if len(group) > 1:
            groups.append(group)
    return _stitched_hits(text, groups)


def find_secrets(text: str | None) -> list[tuple[str, int, int]]:
    """``[(kind, start, end), ...]`` of every secret in ``text``, in order.

    Overlapping hits are merged into one span named by the most specific rule.
    Callers report the kind and position only -- never echo ``text[start:end]``.
    """
    if not text:
        return []
    hits = _hits(text)
    ends = {end for start, end, prio, kind in hits if prio < _PROVIDER_END}
    hits += _decoded_hits(text) + _multiline_hits(text) + _split_hits(text, ends) + _concat_hits(text)
    hits += [(a, b, prio, kind) for start, end, prio, kind in hits for a, b in _continued(text, start, end)]
    hits.sort()
    merged: "list[list[Any]]" = []  # [start, end, priority, kind]
    for start, end, prio, kind in hits:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = [last[0], max(last[1], end)] + (last[2:] if last[2] <= prio else [prio, kind])
        else:
            merged.append([start, end, prio, kind])
    return [(kind, start, end) for start, end, _, kind in merged]


def redact(text: str | None) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` (idempotent)."""
    if not text:
        return "" if text is None else text
    out: list[str] = []
    pos = 0
    for kind, start, end in find_secrets(text):
        out.append(text[pos:start])
        out.append(MARK % kind)
        pos = end
    out.append(text[pos:])
    return "".join(out)
