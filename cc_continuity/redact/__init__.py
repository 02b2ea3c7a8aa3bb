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

The rules and passes, one module each: the words of a name that say secret (``names``), what a literal
secret is not (``values``) and what a machine-made one is (``tokens``); one rule and its needles
(``rule``); the exact provider formats (``providers``), then the generic shapes (``generic``) with their
judges (``judges``), in one table (``table``); encoded text (``decoded``); values off their key's line
(``multiline``: ``nextline``, ``heredoc``, ``xmltext``, ``kubernetes``, judged by ``named``, read by
``lines``); secrets cut in two (``wrapped``).  This module is the public face: ``redact``,
``find_secrets``, ``KINDS``, ``MARK``, ``name_tier``.

Standard library only.  Not on the per-tool-call hot path, so ``re`` is fine;
every pattern stays linear (possessive runs, bounded repeats), and a rule
whose literal prefix is absent from a text is not run on it.
"""

from .decoded import _decoded_hits
from .multiline import _multiline_hits
from .names import name_tier
from .table import _PROVIDER_END, KINDS, _hits
from .values import MARK
from .wrapped import _concat_hits, _continued, _split_hits

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
