"""What a literal secret is not: placeholders, templates, code references, masks, public values.

A name that says secret still needs a value that could be one: ``password = None``, ``token: ${TOKEN}``,
``api_key = os.environ["API_KEY"]``, ``secret: ****``, ``key: <your key>`` and ``Token: expired`` hold
none (:func:`_plausible_value`).  This module knows those stand-ins, the mark a masked value carries
(``MARK``: a value that starts with it is no secret any more) and what is made to be published (a Stripe
publishable key, an SSH public key, a certificate).  It changes when a new stand-in or public value turns
up; whether a value looks machine-made is :mod:`.tokens`' question.
"""

import re

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
