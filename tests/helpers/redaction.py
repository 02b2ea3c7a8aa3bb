"""How the redaction corpora measure a leak: one rule for every corpus test."""

import re

from cc_continuity import redact

MARK = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


def leaked(text, secrets):
    """The secrets of which an 8-character piece survives redaction (a mark's kind name is no piece: it may
    repeat a vendor's prefix)."""
    out = MARK.sub("\0", redact.redact(text))
    return [s for s in secrets if any(s[i:i + 8] in out for i in range(max(1, len(s) - 7)))]
