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

A value need not sit on its key's line (issue 34): YAML block scalars and
plain scalars on or continued onto the next lines, a JSON value on the next
line, TOML/Python triple-quoted strings, quoted .env/YAML values spanning
lines, ``NAME=\\`` continuations, a provider token wrapped onto the next line
or built from string literals (``"sk_live_" + "..."``).  Those are masked line
by line: a text keeps its line count (only a PEM/PuTTY key block and a bare
DER key body still collapse into one mark, as before).

The modules: the words of a name that say secret (``names``); what a plausible secret value is --
not a stand-in, machine-made when it must be, judged under its name (``values``); the exact provider
formats (``providers``), then the rule table with the generic rules and their judges, its scan and the
encoded-text pass (``rules``); values off their key's line and secrets cut over lines or into string
literals (``multiline``); values a heredoc, an XML element or a Kubernetes Secret frames (``embedded``).
This module is the public face -- ``redact``, ``find_secrets``, ``KINDS``, ``MARK``, ``name_tier`` --
and runs the passes in their order.

Standard library only.  Not on the per-tool-call hot path, so ``re`` is fine;
every pattern stays linear (possessive runs, bounded repeats), and a rule
whose literal prefix is absent from a text is not run on it.
"""

from .embedded import _heredoc_hits, _kubernetes_secret_hits, _xml_hits
from .multiline import (_array_values, _concat_hits, _continued, _next_line_values, _open_quote_values,
                        _plain_continued_values, _split_hits)
from .names import _password_family, name_tier
from .rules import _ASSIGNMENT_PRIORITY, _NEUTRAL_PRIORITY, _PROVIDER_END, KINDS, _decoded_hits, _hits
from .values import MARK

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KINDS", "MARK", "find_secrets", "name_tier", "redact"]


def find_secrets(text: str | None) -> list[tuple[str, int, int]]:
    """``[(kind, start, end), ...]`` of every secret in ``text``, in order.

    Overlapping hits are merged into one span named by the most specific rule.
    Callers report the kind and position only -- never echo ``text[start:end]``.
    """
    if not text:
        return []
    hits = _hits(text)
    ends = {end for start, end, prio, kind in hits if prio < _PROVIDER_END}
    hits += _decoded_hits(text) + _multiline_hits(text) + _split_hits(text, ends) + _concat_hits(text)
    hits += [(a, b, prio, kind) for start, end, prio, kind in hits for a, b in _continued(text, start, end)]
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


def _multiline_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """Values that start on the line after their key or run over several lines, masked line by line.

    YAML block scalars (``key: |``, ``>-``, ``|2`` ...: the more-indented block is the value), a YAML
    plain scalar on the next line or continued there, a YAML sequence or JSON array of values, a JSON
    value on the next line, TOML and Python triple-quoted strings, Go raw strings, a quoted .env or YAML
    value spanning lines, a shell ``NAME=\\`` continuation.  Under a name that says secret the value is
    judged as that name's value; under any other name only a machine-made token on lines of its own
    counts (:func:`.values._blob_value`).  Each line keeps its newline: the masked text has as many lines as the
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
