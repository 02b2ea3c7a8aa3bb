"""Reading a value's lines: where each line starts and ends, its indentation, a quote's close, YAML structure.

The passes over values that do not sit on their key's line (issue 34) walk a text line by line; this
is their shared reading of it, bounded (``_MULTI_LINES``) and judging nothing.
"""

import re

from .values import _MARK_PREFIX

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from typing import Any


# A line that is YAML structure rather than a value's text: a mapping entry, a sequence item, a comment, a
# flow collection.
_STRUCTURE = re.compile(r"""(?:-(?:[ \t]|$)|#|[{\[]|["']?[\w.\-/]+["']?[ \t]*:(?:[ \t]|$))""", re.M)
_DQ_CLOSE = re.compile(r'(?:[^"\\]|\\.)*+"')
_VALUE_END = re.compile(r"[ \t]*(?:[,;}\])]|#|\r?\n|\Z)")
_MULTI_LINES = 500  # a value is looked for this many lines down at most


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
