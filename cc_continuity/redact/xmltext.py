"""The text of an XML element, judged by the element's name (or its ``key=``/``name=`` attribute).

``<password>...</password>``, ``<entry key="db.password">...</entry>``, on the element's line or on
lines of its own; XML Signature and Encryption elements (signatures, digests, public key material) and
markup inside a string literal of code pass.
"""

import re

from .lines import _line_spans
from .named import _BLOB_PIECE, _blob_value, _named_value, _plain_value
from .names import _NOT_SECRET_CONTEXT, name_tier
from .tokens import _neutral_string
from .values import _PUBLIC_MATERIAL, _TEMPLATE

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
