"""The names that say "secret": which words make a key, a flag or an element name hold one.

``DB_PASS``, ``authToken``, ``client-secret`` and ``api_key`` hold a secret; ``token_count``,
``max_tokens``, ``password_file`` and ``public_key`` do not (:func:`name_tier`).  ``_NOT_SECRET_CONTEXT``
is the other side: names and nearby words that say a random-looking value is a hash, an id or a nonce.
The word sets change here when a new naming habit is met; nothing in this module looks at a value.
"""

import functools
import re

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


# Names and nearby words that say a random-looking value is a hash, an id or a nonce -- not a credential.
_NOT_SECRET_CONTEXT = re.compile(
    r"(?i)(?:hash|sha\d*|md5|digest|checksum|integrity|fingerprint|nonce|etag|commit|revision|\brev\b|cursor"
    r"|uuid|guid|\bids?\b|_id\b|[a-z]Id\b|version|\bh1|cache[_\-]?key|public|publishable|cert)")
