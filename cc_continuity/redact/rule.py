"""One rule: its compiled pattern, the literals a match needs (its needles), its kind and the span it masks.

A rule whose needles are all absent from a text is not run on it: the vendor rules cost a scan of the
text each, and most texts hold none of their prefixes.  The needles are read from the pattern itself
(:func:`_needles`), so a rule added to a table needs no list of its own.
"""

import re

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable

    Accept = Callable[[re.Match[str]], bool]  # does this match hold a secret?
    # A rule's kind: a name, or (group, {lower-cased group value: name} or a function of the match).
    Kind = str | tuple[str, dict[str, str] | Callable[[re.Match[str]], str]]


_LEAD_ASSERTION = re.compile(r"\(\?i\)|\(\?<[!=](?:\[(?:\\.|[^\]\\])*\]|\\.|[^()\[\\])*\)|\\b")
_LITERAL_ESCAPES = frozenset(".-$/_")


def _leading_literal(p: str, i: int) -> tuple[str, int]:
    """The literal text ``p`` must match from ``i`` on (escapes ``\\.`` ``\\-`` included), and where it stops."""
    lit = ""
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p) and p[i + 1] in _LITERAL_ESCAPES:
            c, step = p[i + 1], 2
        elif c.isalnum() or c in "_-:/~ ":
            step = 1
        else:
            break
        if p[i + step:i + step + 1] in ("?", "*") or p.startswith("{0", i + step):
            break  # an optional last character is not required
        lit += c
        i += step
        if p[i:i + 1] in ("+", "{"):
            break
    return lit, i


def _needles(pattern: str) -> tuple[bool, tuple[str, ...]]:
    """(case-insensitive?, literals one of which every match must contain) -- () when none can be told.

    Read from the pattern's start: a literal, or a group of alternatives that each start with one
    (``(?:mysql|mysqldump|...)``).  A rule whose needles are all absent from a text is not run on it:
    the vendor rules cost a scan of the text each, and most texts hold none of their prefixes.
    """
    icase = pattern.startswith("(?i)")
    i = 0
    while True:
        m = _LEAD_ASSERTION.match(pattern, i)
        if m is None:
            break
        i = m.end()
    lit, j = _leading_literal(pattern, i)
    if len(lit) >= 2:
        return icase, (lit.lower() if icase else lit,)
    if not pattern.startswith(("(?:", "(?P<"), i):
        return icase, ()
    depth, k, alts, start = 0, i, [], pattern.index(":" if pattern.startswith("(?:", i) else ">", i) + 1
    while k < len(pattern):
        c = pattern[k]
        if c == "\\":
            k += 2
            continue
        if c == "[":
            k = pattern.index("]", k + 2) + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                alts.append(pattern[start:k])
                break
        elif c == "|" and depth == 1:
            alts.append(pattern[start:k])
            start = k + 1
        k += 1
    else:
        return icase, ()
    if pattern[k + 1:k + 2] in ("?", "*") or pattern.startswith("{0", k + 1):
        return icase, ()
    found = []
    for a in alts:
        lit, _ = _leading_literal(a, 0)
        if len(lit) < 2:
            return icase, ()
        found.append(lit.lower() if icase else lit)
    return icase, tuple(found)


class _Rule:
    __slots__ = ("kind", "regex", "accept", "priority", "icase", "needles")

    def __init__(self, kind: "Kind", pattern: str, accept: "Accept | None", priority: int) -> None:
        self.kind = kind
        self.regex = re.compile(pattern)
        self.accept = accept
        self.priority = priority
        self.icase, self.needles = _needles(pattern)

    def wanted(self, text: str, lower: str) -> bool:
        """False when ``text`` lacks every literal a match needs (the regex would find nothing)."""
        if not self.needles:
            return True
        hay = lower if self.icase else text
        return any(n in hay for n in self.needles)

    def name(self, m: re.Match[str]) -> str:
        if isinstance(self.kind, str):
            return self.kind
        group, names = self.kind
        if callable(names):
            return names(m)
        return names.get(m.group(group).lower()) or names[""]

    def span(self, m: re.Match[str]) -> tuple[int, int]:
        """The part to mask: the value group when the rule has one, else the whole match."""
        for g in ("s", "qv", "bv"):
            if g in self.regex.groupindex and m.group(g) is not None:
                return m.span(g)
        return m.span()
