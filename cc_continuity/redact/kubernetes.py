"""A Kubernetes Secret: every value under its ``data:`` and ``stringData:`` is a secret, whatever its key.

Read as YAML (each ``---`` document on its own) or as the JSON kubectl prints.
"""

import re

from .lines import _MULTI_LINES, _indent, _lines, _trimmed
from .table import _ASSIGNMENT_PRIORITY
from .values import _TEMPLATE, _plausible_value

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
