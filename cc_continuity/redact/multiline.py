"""The multi-line pass (issue 34): every shape of a value that is not on its key's line, in one list.

Each shape has its own finder (:mod:`.nextline`, :mod:`.heredoc`, :mod:`.xmltext`,
:mod:`.kubernetes`); this pass runs them and names what they found: a value under a name that says
secret as that name's assignment, a machine-made token under a neutral name as a high-entropy value.
A shape is added here once its finder exists.
"""

from .heredoc import _heredoc_hits
from .kubernetes import _kubernetes_secret_hits
from .names import _password_family
from .nextline import _array_values, _next_line_values, _open_quote_values, _plain_continued_values
from .table import _ASSIGNMENT_PRIORITY, _NEUTRAL_PRIORITY
from .xmltext import _xml_hits


def _multiline_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """Values that start on the line after their key or run over several lines, masked line by line.

    YAML block scalars (``key: |``, ``>-``, ``|2`` ...: the more-indented block is the value), a YAML
    plain scalar on the next line or continued there, a YAML sequence or JSON array of values, a JSON
    value on the next line, TOML and Python triple-quoted strings, Go raw strings, a quoted .env or YAML
    value spanning lines, a shell ``NAME=\\`` continuation.  Under a name that says secret the value is
    judged as that name's value; under any other name only a machine-made token on lines of its own
    counts (:func:`.named._blob_value`).  Each line keeps its newline: the masked text has as many lines as the
    original.
    """
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = _xml_hits(text)   # (name, spans); None: a neutral name
    out = _kubernetes_secret_hits(text)
    if "\n" not in text:
        return out + [(a, b, prio, kind) for name, spans in found for a, b in spans for prio, kind in [_found_kind(name)]]
    found += _next_line_values(text)     # block scalars, next-line values, quoted, continued, sequences
    found += _open_quote_values(text)    # triple-quoted and other quoted values spanning lines
    found += _array_values(text)         # the items of an array under a secret name
    found += _plain_continued_values(text)  # a plain scalar continued on deeper lines
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
