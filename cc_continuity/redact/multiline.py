"""Values that do not sit on their key's line (issue 34), and secrets cut over lines or into pieces.

The line reading the passes share (bounded by ``_MULTI_LINES``, judging nothing), then one finder a
shape of a value under its key: a YAML block scalar (``key: |``, ``>-``, ``|2``: the more-indented block
is the value), a YAML plain scalar on the next line (continued on deeper lines) or starting on the key's
line and continued below, a YAML sequence or a JSON array of values, a JSON value on the next line, a
quoted value opened on the key's line or the next and closed lines later (TOML and Python triple quotes,
Go raw strings, quoted .env and YAML values), a shell ``NAME=\\`` continuation.  Under a name that says
secret the value is judged as that name's value; under any other name only a machine-made token on lines
of its own counts (:func:`.values._blob_value`).  Each finder returns ``(name, spans)``: the name that
owns the value (None: a neutral one) and one span per line.

Last, a secret cut in two: a secret that ends its line and goes on on the next ones (a wrapped token or
key: :func:`_continued`), a provider token wrapped with a backslash (``ghp_abc\\`` + ``def``) or built
from string literals (``"sk_live_" + "..."``), read as one string, searched with the provider rules and
masked piece by piece, so the text keeps its lines.  Values framed by another syntax (heredocs, XML,
Kubernetes Secrets) are :mod:`.embedded`'s.
"""

import bisect
import re

from .names import _NOT_SECRET_CONTEXT, name_tier
from .rules import _PROVIDER_RULES, _hits
from .values import (_MARK_PREFIX, _WORDISH, _blob_value, _item_value, _lines_value, _looks_random, _named_value,
                     _plain_value, _random_token)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from typing import Any

    Found = list[tuple[str | None, list[tuple[int, int]]]]  # (the name that owns a value or None, its spans)


# -- reading a value's lines: where each starts and ends, its indentation, a quote's close ---------------
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


# -- values under their key: one finder a shape, each finds (name, spans) -------------------------------
# A key and its operator, as YAML, JSON, TOML, .env, shell and code write them: first on its line (after "- ",
# "export ", a declaration word: "var ", "const ", Dockerfile "ENV "), or after the "{" or "," of a JSON object
# -- not "if x == TOKEN:" in code.
_KEY = r"""(?m:^|(?<=[{,]))[ \t]*(?:-[ \t]+)?(?:(?:export|var|const|let|local|readonly|val|ENV|ARG)[ \t]+)?(?P<kq>["']?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=kq)[ \t]*(?P<op>:=|=>|=|:)[ \t]*"""
# The value starts on the next line: after a YAML block indicator (| > |- >+ |2 ...), after nothing at all
# (YAML, JSON), after a shell line continuation or an opening parenthesis; a comment may end the line.
_OPEN_NEXT = re.compile(_KEY + r"""(?P<ind>[|>](?:[1-9][+\-]?|[+\-][1-9]?)?|\\|\()?[ \t]*+(?:#[^\n]{0,200}+)?(?=\r?\n)""")
# A quote opened after the key and not closed on its line: TOML or Python triple quotes, a Go raw string, a
# .env value or a YAML quoted scalar spanning lines.
_OPEN_QUOTE = re.compile(_KEY + r"""(?P<oq>\"\"\"|'''|"|'|`)(?P<first>[^\n"'`]{0,300}+)(?=\r?\n)""")
# A JSON array or YAML flow sequence after its key, and one item of it, quoted or bare (the next one after a comma).
_OPEN_ARRAY = re.compile(_KEY + r"\[")
_ARRAY_ITEM = re.compile(r"""\s{0,200}+(?:(?P<q>["'])(?P<v>[^"'\\\n]{0,400}+)(?P=q)|(?P<bv>[^\s,\[\]{}"'#]{1,400}+))"""
                         r"""\s{0,200}+(?P<sep>[,\]])?""")
# A YAML plain scalar whose value starts on the key's line and goes on, more indented, on the next.
_YAML_PLAIN = re.compile(r"""(?m)^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<kq>["']?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=kq):"""
                         r"""[ \t]+(?P<v>[^\s#"'|>&*!%@`{\[][^\n]{0,300}+)(?=\r?\n[ \t]+\S)""")
_NAME_ABOVE = re.compile(r"""["']?name["']?[ \t]*:[ \t]*["']?(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*,?[ \t]*\r?\n[ \t]*\Z""")
_NONBLANK = re.compile(r"(?:[ \t\r]*\n)*+(?P<line>[ \t]*+)(?=\S)")


def _sequence_values(name: str, tier: "str | None", text: str, pos: int, dash: int) -> "list[list[tuple[int, int]]]":
    """The scalar items of the YAML sequence whose first "- " line starts at ``pos`` (indented ``dash``) that
    hold a secret under ``name``: "- value" on the dash's line, or "-" alone over the value's lines."""
    items: "list[list[tuple[int, int]]]" = []
    cur: "list[tuple[int, int]] | None" = None  # the item whose value is on the lines under its "-"
    for a, b in _lines(text, pos):
        i = a + _indent(text, a, b)
        if i >= b:
            continue
        if i - a < dash:
            break
        if i - a == dash:
            if text[i] != "-" or (i + 1 < b and text[i + 1] not in " \t"):
                break  # the next key: the sequence has ended
            j = i + 1
            while j < b and text[j] in " \t":
                j += 1
            cur = None
            if j >= b or text[j] == "#":
                cur = []
                items.append(cur)
            elif not _STRUCTURE.match(text, j, b):  # not "- key: value", "- - x", "- [a, b]"
                stop = text.find(" #", j, b)
                piece = _trimmed(text, j, b if stop == -1 else stop)
                if piece:
                    items.append([piece])
            continue
        if cur is not None:  # deeper: the value of a "-" alone, unless it is a mapping
            if _STRUCTURE.match(text, i, b):
                cur.append((-1, -1))
            else:
                piece = _trimmed(text, i, b)
                if piece:
                    cur.append(piece)
    out = []
    for spans in items:
        if not spans or (-1, -1) in spans:
            continue
        inner = [(x + 1, y - 1) if y - x > 2 and text[x] in "\"'" and text[y - 1] == text[x] else (x, y) for x, y in spans]
        if _item_value(name, tier, "".join(text[x:y] for x, y in inner)):
            out.append(inner)
    return out


def _next_line_values(text: str) -> "Found":
    """The values that start on the line after their key: ``key: |``, ``key:`` over its value, ``NAME=\\``."""
    found: "Found" = []
    for m in _OPEN_NEXT.finditer(text):
        found += _under_key(text, m)
    return found


def _under_key(text: str, m: "re.Match[str]") -> "Found":
    """The value under the key ``m`` found, by the shape of the first line below it that is not blank."""
    name, op, ind = m.group("name"), m.group("op"), m.group("ind") or ""
    if name.lower() == "value":  # "- name: DB_PASSWORD" on the line above names this value
        pair = _NAME_ABOVE.search(text, max(0, m.start() - 200), m.start())
        name = pair.group("name") if pair else name
    # NAME= with nothing after it is an empty .env value, unless a deeper-indented line goes on with it (an
    # INI value continued, as configparser reads it)
    eq_only = op != ":" and ind not in ("\\", "(")
    tier = name_tier(name)
    if tier is None and _NOT_SECRET_CONTEXT.search(name):
        return []  # checksum:, sha256:, commit_id: -- a hash or an id, whatever it looks like
    owner = name if tier else None
    line_start = text.rfind("\n", 0, m.start()) + 1
    base = _indent(text, line_start, m.end())
    if ind[:1] in ("|", ">"):
        spans = _block_scalar(text, m.end(), base)
        return [(owner, spans)] if spans and _lines_value(name, tier, text, spans, True) else []
    nxt = _NONBLANK.match(text, text.index("\n", m.end()) + 1)  # the first line that is not blank
    if nxt is None:
        return []
    a, i = nxt.start("line"), nxt.end("line")
    b = text.find("\n", i)
    b = len(text) if b == -1 else b - (text[b - 1] == "\r")
    if eq_only and (i - a <= base or text[i] in "\"'-"):
        return []
    if text[i] in "\"'":
        return _next_quoted(name, tier, text, i, shell=ind == "\\")
    if ind:  # NAME=\ and NAME = ( : the next line's first word (a continued NAME=\ only)
        return _continued_word(name, tier, text, i, b) if ind == "\\" else []
    if text[i] == "-" and (i + 1 == b or text[i + 1] in " \t") and i - a >= base:
        return [(owner, spans) for spans in _sequence_values(name, tier, text, a, i - a)]
    if _STRUCTURE.match(text, i, b):
        return []  # a nested mapping, a comment, a flow collection: structure, not a value
    if i - a <= base:
        return _key_level_word(name, tier, text, i, b)
    return _next_plain(name, tier, text, i, b, base)


def _block_scalar(text: str, end: int, base: int) -> "list[tuple[int, int]]":
    """The lines of a YAML block scalar whose indicator ends at ``end``: those more indented than its key."""
    spans = []
    for a, b in _lines(text, text.index("\n", end) + 1):
        if a == b or text[a:b].isspace():
            continue
        if _indent(text, a, b) <= base:
            break
        piece = _trimmed(text, a, b)
        if piece:
            spans.append(piece)
    return spans


def _next_quoted(name: str, tier: "str | None", text: str, i: int, shell: bool) -> "Found":
    """A quoted value that opens at ``i``, on the line after its key, and may close lines later."""
    close = _quoted_close(text, text[i], i + 1, shell=shell)
    if close == -1:
        return []
    spans = _line_spans(text, i + 1, close)
    return [(name if tier else None, spans)] if spans and _lines_value(name, tier, text, spans, True) else []


def _continued_word(name: str, tier: "str | None", text: str, i: int, b: int) -> "Found":
    """``NAME=\\``: the value is the first word of the next line (``i`` to the line's end ``b``)."""
    j = i
    while j < b and not text[j].isspace():
        j += 1
    if _named_value(name, text[i:j], False) if tier else _blob_value(name, [text[i:j]]):
        return [(name if tier else None, [(i, j)])]
    return []


def _key_level_word(name: str, tier: "str | None", text: str, i: int, b: int) -> "Found":
    """"client_key:" over a value at the key's own indentation (a config that is not YAML): one random-looking
    word, and a key, a blank line or the end after it."""
    after = _NONBLANK.match(text, b + 1) if b < len(text) else None
    word = text[i:b].rstrip()
    if (tier == "strong" and len(word) >= 12 and not any(c.isspace() for c in word) and _looks_random(word)
            and (after is None or _STRUCTURE.match(text, after.end("line")))
            and _named_value(name, word, False, line_value=False)):
        return [(name, [(i, i + len(word))])]
    return []


def _next_plain(name: str, tier: "str | None", text: str, i: int, b: int, base: int) -> "Found":
    """A YAML plain scalar on the line after its key (``i`` to ``b``), going on over the deeper lines after it."""
    spans = [(i, b)]
    for a2, b2 in _lines(text, b + 1):
        i2 = a2 + _indent(text, a2, b2)
        if i2 >= b2 or i2 - a2 <= base or _STRUCTURE.match(text, i2, b2):
            break
        spans.append((i2, b2))
    spans = [p for p in (_trimmed(text, x, y) for x, y in spans) if p]
    pieces = [text[x:y] for x, y in spans]
    if spans and (_plain_value(name, pieces) if tier else _blob_value(name, pieces)):
        return [(name if tier else None, spans)]
    return []


def _open_quote_values(text: str) -> "Found":
    """A quote opened on the key's line and closed lines later: TOML and Python triple quotes, a Go raw string,
    a quoted .env or YAML value spanning lines."""
    found: "Found" = []
    for m in _OPEN_QUOTE.finditer(text):
        name, quote = m.group("name"), m.group("oq")
        tier = name_tier(name)
        if tier is None and _NOT_SECRET_CONTEXT.search(name):
            continue
        close = _quoted_close(text, quote, m.end())
        if close == -1:
            continue
        spans = _line_spans(text, m.start("first"), close)
        if spans and _lines_value(name, tier, text, spans, True):
            found.append((name if tier else None, spans))
    return found


def _array_values(text: str) -> "Found":
    """``"api_keys": [ "...", "..." ]``: each item of a JSON array or YAML flow sequence, by the array's name."""
    found: "Found" = []
    for m in _OPEN_ARRAY.finditer(text) if "[" in text else ():
        name = m.group("name")
        tier = name_tier(name)
        if tier is None:
            continue  # (a neutral name's items: the high-entropy rule judges each quoted string)
        pos = m.end()
        for _ in range(_MULTI_LINES):
            item = _ARRAY_ITEM.match(text, pos)
            if item is None:
                break
            g = "v" if item.group("q") else "bv"
            if _item_value(name, tier, item.group(g)):
                found.append((name, [item.span(g)]))
            if item.group("sep") != ",":
                break
            pos = item.end()
    return found


def _plain_continued_values(text: str) -> "Found":
    """A YAML plain scalar that starts on its key's line and goes on, more indented, on the lines below."""
    found: "Found" = []
    for m in _YAML_PLAIN.finditer(text):
        name, base = m.group("name"), len(m.group("indent"))
        if name_tier(name) is None:
            continue
        v = m.group("v")
        cut = v.find(" #")
        first = _trimmed(text, m.start("v"), m.start("v") + (cut if cut != -1 else len(v)))
        spans = [first] if first else []
        for a, b in _lines(text, m.end() + 1):
            i = a + _indent(text, a, b)
            if i >= b or i - a <= base or _STRUCTURE.match(text, i, b):
                break
            piece = _trimmed(text, i, b)
            if piece:
                spans.append(piece)
        if len(spans) > 1 and (_plain_value(name, [text[x:y] for x, y in spans])
                               or any(_random_token(text[x:y]) for x, y in spans[1:])):
            found.append((name, spans))
    return found


# -- a secret continued on the next lines: a wrapped token or key, each line masked on its own ------------
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
