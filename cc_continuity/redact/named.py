"""A value found apart from a one-line rule's match, judged: under its name, or as a blob under none.

The multi-line passes (:mod:`.nextline`, :mod:`.heredoc`, :mod:`.xmltext`) and two rules of
:mod:`.generic` find a name and its value apart -- on the lines under the key, in an element's text,
in a ``{"name": ..., "value": ...}`` pair.  :func:`_named_value` judges such a value as
:func:`.judges._assignment` would judge ``name = value``; under a name that says nothing only one
machine-made token on lines of its own counts (:func:`_blob_value`); an item of a list has its own bar
(:func:`_item_value`).
"""

import re

from .names import _NOT_SECRET_CONTEXT, _password_family, name_tier
from .tokens import _neutral_string, _random_token
from .values import (_MARK_PREFIX, _PUBLIC_MATERIAL, _STATUS_WORDS, _TEMPLATE, _plausible_value,
                     _public_value)


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
