"""The rule table in its order, and one scan of a text with it.

Provider formats first (:mod:`.providers`), then the generic shapes (:mod:`.generic`): a rule's index
is its priority, and where matches overlap the lower one names the span.  ``KINDS`` is every name a
mark can carry.  The other passes (decoded text, multi-line values, wrapped tokens) scan with
:func:`_hits` and name their finds by these priorities.
"""

from .generic import _GENERIC_SPECS
from .judges import _assignment
from .providers import _PROVIDER_SPECS
from .rule import _Rule
from .values import _MARK_PREFIX

_RULE_SPECS = _PROVIDER_SPECS + _GENERIC_SPECS
_RULES = [_Rule(k, p, a, i) for i, (k, p, a) in enumerate(_RULE_SPECS)]
# The exact provider formats (and key material) come before the first generic shape.
_PROVIDER_END = len(_PROVIDER_SPECS)
_PROVIDER_RULES = _RULES[:_PROVIDER_END]
_ASSIGNMENT_PRIORITY = next(i for i, (_, _, a) in enumerate(_RULE_SPECS) if a is _assignment)
_NEUTRAL_PRIORITY = next(i for i, (k, _, _) in enumerate(_RULE_SPECS) if k == "high-entropy-value")

KINDS = frozenset(name for kind, _, _ in _RULE_SPECS
                  for name in ([kind] if isinstance(kind, str) else
                               ["password-assignment", "secret-assignment"] if callable(kind[1])
                               else kind[1].values())) | {"base64-secret", "url-encoded-secret", "kubernetes-secret"}


def _hits(text: str, rules: "list[_Rule] | None" = None) -> "list[tuple[int, int, int, str]]":
    hits: list[tuple[int, int, int, str]] = []
    lower = text.lower()
    for rule in _RULES if rules is None else rules:
        if not rule.wanted(text, lower):
            continue
        for m in rule.regex.finditer(text):
            if rule.accept is not None and not rule.accept(m):
                continue
            start, end = rule.span(m)
            if end > start and not text.startswith(_MARK_PREFIX, start):
                hits.append((start, end, rule.priority, rule.name(m)))
    return hits
