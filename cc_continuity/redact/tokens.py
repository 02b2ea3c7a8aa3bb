"""What a machine-made value is: a random token, not a word, an identifier, a hash or a version.

A value under a weak name (``session``, ``key``) or under no name at all is a secret only when it
looks random: digits and letters, both cases, a character entropy close to that of random base62 at
its length (:func:`_random_token`).  A whole string with no name clears a higher bar and must not be
base64 of plain text, the opening of a binary file or public key material (:func:`_neutral_string`).
The thresholds change here and nowhere else.
"""

import binascii
import math
import re

from .values import _HEXISH, _MARK_PREFIX, _VERSIONISH, _public_value


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


# (kind, pattern, accept) -- kind is a name, or (group, {group value: name}).
