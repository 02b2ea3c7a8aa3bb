"""A secret cut in two: wrapped onto the next lines, or built from string literals joined in code.

A secret that ends its line may go on on the next ones (a wrapped token or key: :func:`_continued`);
a provider token may be wrapped with a backslash (``ghp_abc\\`` + ``def``) or built from literals
(``"sk_live_" + "..."``).  The pieces are read as one string, searched with the provider rules, and
masked piece by piece, so the text keeps its lines.
"""

import bisect
import re

from .table import _PROVIDER_RULES, _hits
from .tokens import _looks_random
from .values import _WORDISH

_CONTINUATION = re.compile(r"""(?:\\)?\r?\n[ \t]*([A-Za-z0-9+/_\-]{8,300}={0,2})[ \t]*["'`]?[,;)\]}]?[ \t]*(?=\r?\n|\Z)""")
# After a secret with dots in it (a JWT, a bearer token) the wrapped rest may hold dots too, and be long.
_CONTINUATION_DOTTED = re.compile(r"""(?:\\)?\r?\n[ \t]*([A-Za-z0-9+/_\-.]{8,4000}+={0,2})[ \t]*["'`]?[,;)\]}]?[ \t]*(?=\r?\n|\Z)""")


def _continued(text: str, start: int, end: int) -> "list[tuple[int, int]]":
    """The lines that only continue a secret ending its line (a wrapped token or key), one span each.

    Each is masked on its own line, so the text keeps its line structure.
    """
    spans = []
    pattern = _CONTINUATION_DOTTED if text.find(".", start, end) != -1 else _CONTINUATION
    for _ in range(64):
        m = pattern.match(text, end)
        if m is None or not _looks_random(m.group(1)) or _WORDISH.match(m.group(1)):
            break
        spans.append(m.span(1))
        end = m.end()
    return spans


# -- a token cut in two: across a line break, or into string literals joined in code -----------------
_TOKEN_RUN = r"[A-Za-z0-9_\-.=+/$]"
# A run that starts like a known provider token and ends its line, the next line going on with token text.
_SPLIT = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:gh[pousr]_|github_pat_|gl[a-z]{2,6}-|GR1348941|xox[a-z]-|xapp-|sk-|sk_|rk_|whsec_|npm_"
    r"|pypi-|dckr_|hf_|api_org_|hv[sbr]\.|do[por]_v1_|shp[a-z]{2}_|lin_|gl(?:c|sa)_|NR[A-Z]{2}-|dp\.|pul-|PMAK-"
    r"|ATATT|AKIA|ASIA|AIza|SG\.|key-|dapi|sntry[su]_|ya29\.|GOCSPX-|figd_|ntn_|gsk_|r8_|xai-|pplx-|sq0|EAAA|cio"
    r"|sq[upa]_|dt0c01\.|tskey-|HRKU-|AKCp|LTAI|AKID|shippo_|ops_|xkeysib-|bkua_|CFPAT-|sbp_|sb_secret_|pscale_|nfp_"
    r"|rnd_|pcsk_|oy2|ATBB|FLWSECK|1//0|pat-|phx_|lsv2_|tvly-|hc[ax]i|EZ[AT]K|eyJ)"
    + _TOKEN_RUN + r"{0,300}+(?P<brk>[ \t]*\\?\r?\n[ \t]*)(?=" + _TOKEN_RUN + r"{4})")
_RUN = re.compile(_TOKEN_RUN + "+")
_LIT = r"""(?:"[^"\\\n]{0,400}+"|'[^'\\\n]{0,400}+')"""
_JOIN = r"""[ \t]*+(?:(?:\+|\.\.?|&|\|\|)[ \t]*+)?(?:\\?\r?\n[ \t]*+(?:(?:\+|\.\.?|&|\|\|)[ \t]*+)?)?"""
# String literals joined by +, . (PHP), .. (Lua), & (VB), || (SQL) or written side by side (Python, C).
_CHAIN = re.compile(_LIT + r"(?:" + _JOIN + _LIT + r")++")
_ONE_LIT = re.compile(_LIT)


def _stitched_hits(text: str, groups: "list[list[tuple[int, int]]]") -> "list[tuple[int, int, int, str]]":
    """Provider tokens that only appear once each group's pieces are read as one string.

    The groups are joined (kept apart, so no token runs from one into the next) and searched with
    the provider rules once; a match that spans two pieces or more is masked piece by piece.
    """
    buf: list[str] = []
    starts: list[int] = []          # where each piece begins in the joined text
    pieces: "list[tuple[int, int, int]]" = []  # (original start, original end, group)
    pos = 0
    for g, group in enumerate(groups):
        for a, b in group:
            starts.append(pos)
            pieces.append((a, b, g))
            buf.append(text[a:b])
            pos += b - a
        buf.append("\n\n")
        pos += 2
    if not pieces:
        return []
    joined = "".join(buf)
    out = []
    for x, y, prio, kind in _hits(joined, _PROVIDER_RULES):
        first = bisect.bisect_right(starts, x) - 1
        last = bisect.bisect_right(starts, y - 1) - 1
        if first == last or pieces[first][2] != pieces[last][2] or not _looks_random(joined[x:y]):
            continue  # inside one piece (the main pass saw it), across groups, or a word
        for k in range(first, last + 1):
            a, b, _ = pieces[k]
            lo = a + max(0, x - starts[k])
            hi = a + min(b - a, y - starts[k])
            if hi > lo:
                out.append((lo, hi, prio, kind))
    return out


def _split_hits(text: str, ends: "set[int]") -> "list[tuple[int, int, int, str]]":
    """A provider token wrapped onto the next line (``ghp_abc\\`` + ``def``), a piece on each line."""
    if "\n" not in text:
        return []
    groups = []
    for m in _SPLIT.finditer(text):
        if m.start("brk") in ends:
            continue  # the first line already holds a whole token: the next line is something else
        nxt = _RUN.match(text, m.end())
        if nxt:
            groups.append([(m.start(), m.start("brk")), nxt.span()])
    return _stitched_hits(text, groups)


def _concat_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """A provider token built from string literals: ``"sk_live_" + "..."``, ``("ghp_..." "...")``."""
    if '"' not in text and "'" not in text:
        return []
    groups = []
    for m in _CHAIN.finditer(text):
        group = [(lit.start() + 1, lit.end() - 1) for lit in _ONE_LIT.finditer(text, m.start(), m.end())]
        group = [(a, b) for a, b in group if b > a]
        if len(group) > 1:
            groups.append(group)
    return _stitched_hits(text, groups)
