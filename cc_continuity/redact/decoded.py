"""Secrets inside encoded text: base64 (an encoded ``.env`` line, a ``user:pass``) and percent-encoding.

An encoded run is decoded and searched once more with the whole rule table (not deeper); when it
holds a secret, the whole run is masked.
"""

import binascii
import re

from .table import _RULES, _hits

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
