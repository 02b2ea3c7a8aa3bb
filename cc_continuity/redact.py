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

Standard library only.  Not on the per-tool-call hot path, so ``re`` is fine.
"""

import binascii
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
_VALUE = r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300}?)(?P=q)|(?P<bv>[^\s"'`,;)}\]]{1,300}))"""

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
_WEAK = frozenset("key cookie session sessionid sid jwt signature sig salt hmac bearer csrf xsrf otp".split())
# After the secret word these say the value is *about* the secret, not the secret.
_QUALIFIERS = frozenset("""
count counts limit limits length len max min size ttl timeout seconds secs minutes ms expiry expires
expiration expire age lifetime id ids type types kind file files path paths dir url uri endpoint name
names field fields header env var variable prefix suffix format method mode provider scheme strategy
backend required enabled enable version user username login email policy hint label regex pattern
usage used rate stdin prompt command cmd helper store manager index idx valid validity reset change
changed request response status error errors message msg text placeholder example template schema
class scope scopes audience issuer algorithm alg encoding location source ref reference number
budget estimate total chars bytes
""".split())
# As a name's first word these say the same (max_tokens, is_secret, no_password).
_NEGATORS = frozenset("""
max min num total count is has use enable enabled disable disabled require required allow no skip show
hide reset forgot validate check verify public
""".split())


# Anywhere before the secret word: the name counts or bounds it (CLAUDE_CODE_MAX_CONTEXT_TOKENS).
_COUNTERS = frozenset("max min num total count limit".split())


def _strong_word(w: str) -> bool:
    return w in _STRONG or any(w.endswith(x) and len(w) > len(x) for x in _STRONG_SUFFIXES)


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
        if _strong_word(w) or (w == "key" and i and words[i - 1] in _KEY_OWNERS):
            last, tier = i, "strong"
        elif w in _WEAK:
            last, tier = i, tier or "weak"
    if last is None or words[0] in _NEGATORS or any(w in _COUNTERS for w in words[:last]):
        return None
    if any(w in _QUALIFIERS for w in words[last + 1:]):
        return None
    return tier


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
    if quoted:
        # A quoted literal may hold anything (spaces, brackets, $): only a template is no secret.
        if _TEMPLATE.search(v) or v[0] in "%./~" or (v[0] == "<" and v[-1] == ">"):
            return False
        if any(c.isspace() for c in v):  # a pass phrase, not a sentence: a digit or a symbol, a few words
            return (len(v.split()) <= 6 and v[-1] not in ".?:"
                    and any(c.isdigit() or c in _PHRASE_SYMBOLS for c in v))
        return len(v) >= 4
    if _code_reference(v) or v[0] in "%@*./~&#=":
        return False
    if len(v) < 4:
        return False
    if _NUMBERISH.match(v) or _VERSIONISH.match(v):  # a count, a size, a port, a date, a version (a PIN is missed)
        return False
    if _WORDISH.match(v):
        return not strict_words and "." not in v  # (a dotted word is an attribute or a file name)
    return True


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
    return _random_token(s)


# (kind, pattern, accept) -- kind is a name, or (group, {group value: name}).
# Order is priority: when matches overlap, the earlier rule names the span.
_RULE_SPECS: "list[tuple[Kind, str, Accept | None]]" = [  # group values are looked up lower-cased
    # --- armoured key material: swallows everything inside it --------------
    ("gcp-service-account-key", r'"private_key"\s*:\s*"(?P<s>-----BEGIN[^"]*)"?', None),
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
    ("vault-token", _B + r"hv[sb]\.[A-Za-z0-9_\-]{24,}", None),
    ("doppler-token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", None),
    ("tailscale-key", _B + r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}" + _E, None),
    # --- code hosting and package registries ------------------------------
    (("p", {"p": "github-pat", "o": "github-oauth-token", "u": "github-app-token",
            "s": "github-app-token", "r": "github-refresh-token"}),
     _B + r"gh(?P<p>[pousr])_[A-Za-z0-9]{36,251}" + _E, None),
    ("github-fine-grained-pat", _B + r"github_pat_[A-Za-z0-9_]{60,}" + _E, None),
    ("gitlab-pat", _B + r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*" + _E, None),
    ("gitlab-token",
     _B + r"gl(?:dt|rt|ptt|cbt|oas|imt|agent|soat|ffct|ft|wt|cicdt)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*"
     + _E, None),
    ("atlassian-api-token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}", None),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, None),
    ("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E, None),
    ("rubygems-api-key", _B + r"rubygems_[a-f0-9]{48}" + _E, None),
    ("dockerhub-token", _B + r"dckr_pat_[A-Za-z0-9_\-]{27,}" + _E, None),
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
     _B + r"(?P<x>xoxe\.xox[bp]|xox[bpaers])-[0-9A-Za-z\-]{10,}" + _E, None),
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
    ("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, None),
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("twilio-auth-token", r"(?i)twilio[_\-]?auth[_\-]?token" + _SET + r"""["']?(?P<s>[a-f0-9]{32})(?![a-f0-9])""",
     None),
    ("sendgrid-api-key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, None),
    ("mailgun-api-key", r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("mailchimp-api-key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])", None),
    ("postman-api-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E, None),
    ("linear-api-key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E, None),
    ("grafana-token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})" + _E, None),
    ("sentry-token", _B + r"(?:sntrys_[A-Za-z0-9+/=_\-]{40,}|sntryu_[a-f0-9]{64})", None),
    ("newrelic-api-key", _B + r"NRAK-[A-Z0-9]{27}" + _E, None),
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
    (("scheme", {"bearer": "bearer-token", "token": "bearer-token", "bot": "bearer-token",
                 "basic": "basic-auth"}),
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>bearer|token|basic|bot)\s+"
     r"(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)", None),
    ("bearer-token", r"(?i)(?<![A-Za-z])bearer\s+(?P<s>[A-Za-z0-9._~+/\-]{20,}=*)",
     lambda m: _looks_random(m.group("s"))),
    ("basic-auth",  # requests.get(url, auth=("user", "pass"))
     r"""\bauth\s*=\s*\(\s*["'][^"'\n]{1,64}["']\s*,\s*["'](?P<s>[^"'\n]{3,128})["']\s*\)""",
     lambda m: _plausible_value(m.group("s"), True)),
    ("netrc-password", r"(?i)\b(?:machine\s+\S+|default)\s+login\s+\S+\s+password\s+(?P<s>\S+)", None),
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
    ("cli-password", r"""\b(?:smbclient|rpcclient|smbmap)\b[^\n|;&]*?\s-U\s+['"]?[^\s%'"]+%(?P<s>[^\s'"]{3,})""", None),
    ("secret-flag",  # --password X, --api-key=X, --auth-token "X": a flag whose name says secret
     r"""(?<![\w\-])--(?P<name>[A-Za-z][A-Za-z0-9\-]{1,40})(?:=|[ \t]+)["']?(?P<s>[^\s"'`\-][^\s"'`]{2,300})""",
     _flag),
    # --- assignments whose name says secret --------------------------------
    (("name", _assignment_kind),
     r"(?:(?<![A-Za-z0-9_.\-])|(?<=\s-D))"  # -Dkey.store.password=... (Java system properties)
     r"(?P<name>(?=[A-Za-z0-9_.\-]{0,80}?(?i:pass|pw|pwd|secret|token|auth|cred|key"
     r"|cookie|session|sid|jwt|sig|salt|hmac|bearer|csrf|xsrf|otp))[A-Za-z_][A-Za-z0-9_.\-]{0,80})"
     r"""(?P<op>["']?[ \t]*(?:=>|:=|=|:)[ \t]*)""" + _VALUE, _assignment),
    ("password-in-prose",  # "the wifi password is X", "pw for the db: X"
     r"""(?i)\b(?:password|passwd|passphrase|passcode|pwd|pw)\b(?:\s+(?:for|of|to|on)\s+(?:the\s+)?[^\s]{1,40})?"""
     r"""\s*(?:\bis\b|\bwas\b|=|:)\s*["'`]?(?P<s>[^\s"'`]{4,100})""",
     lambda m: _plausible_value(m.group("s").rstrip(".,;:!?)"), False)),
    ("secret-in-context",  # "the API token is X", "use key X": a random token shortly after a secret word
     r"(?i)\b(?:api[ _\-]?key|access[ _\-]?key|secret(?:[ _\-]?key)?|token|password|passwd|passphrase"
     r"|credentials?|private[ _\-]?key|auth(?:entication|orization)?|bearer|api)\b[^\n]{0,40}?"
     r"(?<![A-Za-z0-9+/=_\-])(?P<s>[A-Za-z0-9+/_\-]{16,300}={0,2})(?![A-Za-z0-9+/=_\-])", _context_token),
]


class _Rule:
    __slots__ = ("kind", "regex", "accept", "priority")

    def __init__(self, kind: "Kind", pattern: str, accept: "Accept | None", priority: int) -> None:
        self.kind = kind
        self.regex = re.compile(pattern)
        self.accept = accept
        self.priority = priority

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

KINDS = frozenset(name for kind, _, _ in _RULE_SPECS
                  for name in ([kind] if isinstance(kind, str) else
                               ["password-assignment", "secret-assignment"] if callable(kind[1])
                               else kind[1].values())) | {"base64-secret", "url-encoded-secret"}


def _hits(text: str) -> "list[tuple[int, int, int, str]]":
    hits: list[tuple[int, int, int, str]] = []
    for rule in _RULES:
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


_CONTINUATION = re.compile(r"(?:\\)?\n[ \t]*([A-Za-z0-9+/_\-]{8,300}={0,2})[ \t]*(?=\n|\Z)")


def _continued(text: str, end: int) -> int:
    """``end`` moved over the lines that only continue a secret ending its line (a wrapped token or key)."""
    for _ in range(64):
        m = _CONTINUATION.match(text, end)
        if m is None or not _looks_random(m.group(1)) or _WORDISH.match(m.group(1)):
            return end
        end = m.end()
    return end


def find_secrets(text: str | None) -> list[tuple[str, int, int]]:
    """``[(kind, start, end), ...]`` of every secret in ``text``, in order.

    Overlapping hits are merged into one span named by the most specific rule.
    Callers report the kind and position only -- never echo ``text[start:end]``.
    """
    if not text:
        return []
    hits = _hits(text) + _decoded_hits(text)
    hits = [(start, _continued(text, end), prio, kind) for start, end, prio, kind in hits]
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
