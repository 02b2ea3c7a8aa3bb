"""Find and mask secrets in text before it leaves the machine or lands in a handoff.

Push notifications, watchdog log digests and handoffs all pass through here.
Each rule knows one credential shape -- a provider's token prefix, a PEM armour
line, a ``password=`` assignment -- and a match is replaced by
``[REDACTED:<kind>]``: the reader still learns *that* something was there and
what it was, never the value.

Exact provider formats come first and win over the generic rules; the generic
rules (assignments, URLs, auth headers) filter out code references,
placeholders and plain words, so prose, paths, hashes, UUIDs and identifiers
pass untouched.  Overlapping matches are merged, so a secret is never left
half-masked.

Standard library only.  Not on the per-tool-call hot path, so ``re`` is fine.
"""

import re

MARK = "[REDACTED:%s]"
_MARK_PREFIX = "[REDACTED:"

# A token starts and ends where its alphabet does.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# An assignment operator as written in env files, YAML, JSON, TOML, code.
_SET = r"""["']?[ \t]*(?:=>|:=|=|:)[ \t]*"""
# The assigned value: quoted (group q/qv) or bare (group bv).
_VALUE = r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300}?)(?P=q)|(?P<bv>[^\s"'`,;)}\]]{1,300}))"""

_PLACEHOLDERS = frozenset("""
none null nil undefined true false yes no empty unset str string bytes int bool required optional
default example sample placeholder redacted hidden masked secret secrets password passwd token
tokens changeme change_me your_token your_password your_api_key xxx todo tbd fixme env dummy
""".split())
_WORDISH = re.compile(r"[A-Za-z_.\-]+\Z")   # plain words, snake/kebab/dotted names
_CODE_CHARS = set("()[]{}<>$")


def _plausible_value(value, quoted):
    """False for values that are clearly not a literal secret.

    Catches placeholders (``None``, ``${TOKEN}``, ``<your key>``), code
    references (``self.token``, ``os.environ[...]``, ``api_key``), masks
    (``****``), paths and plain words in prose (``Token: expired``).
    """
    v = value.strip()
    if not v or v.startswith(_MARK_PREFIX):
        return False
    low = v.lower()
    if low in _PLACEHOLDERS or low.strip("<>[]{}*._-") in _PLACEHOLDERS:
        return False
    if len(set(v)) <= 2:                          # ****, xxxx, ....
        return False
    if any(c in _CODE_CHARS for c in v) or v[0] in "%@*./~&#":
        return False
    if quoted:
        return len(v) >= 4 and not any(c.isspace() for c in v)
    if len(v) < 6 or v.isdigit():
        return False
    return not _WORDISH.match(v)


def _assignment(m):
    if m.string.endswith("://", 0, m.start()):
        return False  # "user:password@" of a URL: the url-password rule owns it
    quoted = m.group("q") is not None
    return _plausible_value(m.group("qv") if quoted else m.group("bv"), quoted)


def _looks_random(s):
    """A token, not a word: has a digit, an inner capital, or base64 punctuation."""
    return (any(c.isdigit() for c in s) or any(c.isupper() for c in s[1:])
            or any(c in "+/=_~" for c in s))


def _discord(m):
    first = m.group(0).split(".", 1)[0]
    return any(c.isdigit() for c in first)


def _url_password(m):
    """Skip templated URLs (``${PGPASSWORD}``, ``<password>``) and already-masked ones."""
    s = m.group("s")
    return not s.startswith(_MARK_PREFIX) and not any(c in _CODE_CHARS for c in s)


# (kind, pattern, accept) -- kind is a name, or (group, {group value: name}).
# Order is priority: when matches overlap, the earlier rule names the span.
_RULE_SPECS = [  # group values are looked up lower-cased
    # --- armoured key material: swallows everything inside it --------------
    ("gcp-service-account-key", r'"private_key"\s*:\s*"(?P<s>-----BEGIN[^"]*)"?', None),
    (("label", {"rsa ": "rsa-private-key", "ec ": "ec-private-key", "dsa ": "dsa-private-key",
                "openssh ": "openssh-private-key", "pgp ": "pgp-private-key",
                "encrypted ": "encrypted-private-key", "": "private-key"}),  # "": any other label
     r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----"
     r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", None),
    ("putty-private-key", r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC:\s*[0-9a-fA-F]+|\Z)", None),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None),
    # --- cloud providers ----------------------------------------------------
    ("aws-access-key-id",
     r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?![A-Z0-9])",
     None),
    ("aws-secret-access-key",
     r"(?i)(?<![A-Za-z0-9])(?:aws_?)?(?:secret_?access_?key|aws_?secret_?key)" + _SET
     + r"""["']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", None),
    ("aws-session-token",
     r"(?i)(?<![A-Za-z0-9])aws_?session_?token" + _SET + r"""["']?(?P<s>[A-Za-z0-9/+=]{100,})""", None),
    ("gcp-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, None),
    ("google-oauth-client-secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, None),
    ("google-oauth-access-token", _B + r"ya29\.[A-Za-z0-9_\-]{30,}", None),
    ("azure-storage-account-key", r"(?i)(?<![A-Za-z])AccountKey\s*=\s*(?P<s>[A-Za-z0-9+/]{40,}={0,2})", None),
    ("azure-shared-access-key", r"(?i)(?<![A-Za-z])SharedAccessKey\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})", None),
    ("azure-sas-token", r"(?i)[?&]sig=(?P<s>[A-Za-z0-9%+/]{30,}(?:=|%3D){0,2})", None),
    ("azure-ad-client-secret",
     r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", None),
    ("digitalocean-token", _B + r"do[por]_v1_[a-f0-9]{64}" + _E, None),
    ("heroku-api-key", _B + r"HRKU-[A-Za-z0-9_\-]{40,}" + _E, None),
    ("heroku-api-key",
     r"(?i)heroku[_\-]?api[_\-]?key" + _SET
     + r"""["']?(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})""", None),
    ("datadog-key",
     r"(?i)(?:dd|datadog)[_\-]?(?:api|app|application)[_\-]?key" + _SET
     + r"""["']?(?P<s>[a-f0-9]{32,40})(?![a-f0-9])""", None),
    ("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d+)?" + _E, None),
    ("vault-token", _B + r"hv[sb]\.[A-Za-z0-9_\-]{24,}", None),
    ("doppler-token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", None),
    ("tailscale-key", _B + r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}" + _E, None),
    # --- code hosting and package registries ------------------------------
    (("p", {"p": "github-pat", "o": "github-oauth-token", "u": "github-app-token",
            "s": "github-app-token", "r": "github-refresh-token"}),
     _B + r"gh(?P<p>[pousr])_[A-Za-z0-9]{36,251}" + _E, None),
    ("github-fine-grained-pat", _B + r"github_pat_[A-Za-z0-9_]{60,}" + _E, None),
    ("gitlab-pat", _B + r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*" + _E, None),
    ("gitlab-token",
     _B + r"gl(?:dt|rt|ptt|cbt|oas|imt|agent|soat|ffct|ft|wt|cicdt)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*"
     + _E, None),
    ("atlassian-api-token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}", None),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, None),
    ("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E, None),
    ("rubygems-api-key", _B + r"rubygems_[a-f0-9]{48}" + _E, None),
    ("dockerhub-token", _B + r"dckr_pat_[A-Za-z0-9_\-]{27,}" + _E, None),
    ("huggingface-token", _B + r"hf_[A-Za-z0-9]{34,}" + _E, None),
    # --- chat and push ------------------------------------------------------
    (("x", {"xoxb": "slack-bot-token", "xoxp": "slack-user-token", "xoxe.xoxb": "slack-config-token",
            "xoxe.xoxp": "slack-config-token", "": "slack-token"}),
     _B + r"(?P<x>xoxe\.xox[bp]|xox[bpaers])-[0-9A-Za-z\-]{10,}" + _E, None),
    ("slack-app-token", _B + r"xapp-\d-[0-9A-Za-z\-]{20,}" + _E, None),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}", None),
    ("discord-webhook",
     r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}", None),
    ("discord-bot-token",
     r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E, _discord),
    ("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, None),
    ("ntfy-token", _B + r"tk_[a-z0-9]{29}" + _E, None),
    # --- AI providers -------------------------------------------------------
    ("anthropic-api-key", _B + r"sk-ant-[A-Za-z0-9_\-]{32,}" + _E, None),
    ("openai-api-key", _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{32,}" + _E, None),
    ("groq-api-key", _B + r"gsk_[A-Za-z0-9]{52}" + _E, None),
    ("replicate-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, None),
    # --- payments, mail, SaaS ----------------------------------------------
    ("stripe-secret-key", _B + r"sk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-restricted-key", _B + r"rk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{24,}", None),
    ("square-token", _B + r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}" + _E, None),
    ("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, None),
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("twilio-auth-token", r"(?i)twilio[_\-]?auth[_\-]?token" + _SET + r"""["']?(?P<s>[a-f0-9]{32})(?![a-f0-9])""",
     None),
    ("sendgrid-api-key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, None),
    ("mailgun-api-key", r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("mailchimp-api-key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])", None),
    ("postman-api-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E, None),
    ("linear-api-key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E, None),
    ("grafana-token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})" + _E, None),
    ("sentry-token", _B + r"(?:sntrys_[A-Za-z0-9+/=_\-]{40,}|sntryu_[a-f0-9]{64})", None),
    ("newrelic-api-key", _B + r"NRAK-[A-Z0-9]{27}" + _E, None),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*" + _E, None),
    # --- generic shapes -----------------------------------------------------
    ("url-password",
     r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/?#@'\"<>]*:(?P<s>[^\s@/?#'\"<>]+)@(?=[A-Za-z0-9\[])", _url_password),
    (("scheme", {"bearer": "bearer-token", "token": "bearer-token", "bot": "bearer-token",
                 "basic": "basic-auth"}),
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>bearer|token|basic|bot)\s+"
     r"(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)", None),
    ("bearer-token", r"(?i)(?<![A-Za-z])bearer\s+(?P<s>[A-Za-z0-9._~+/\-]{20,}=*)",
     lambda m: _looks_random(m.group("s"))),
    ("netrc-password", r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<s>\S+)", None),
    ("password-assignment",
     r"(?i)(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]*(?:password|passwd|passphrase)" + _SET + _VALUE, _assignment),
    ("secret-assignment",
     r"(?i)(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]*(?:secret|secret[_\-]?key|encryption[_\-]?key|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
     r"|auth[_\-]?key|signing[_\-]?key|credentials?)" + _SET + _VALUE, _assignment),
]


class _Rule:
    __slots__ = ("kind", "regex", "accept", "priority")

    def __init__(self, kind, pattern, accept, priority):
        self.kind = kind
        self.regex = re.compile(pattern)
        self.accept = accept
        self.priority = priority

    def name(self, m):
        if isinstance(self.kind, str):
            return self.kind
        group, names = self.kind
        return names.get(m.group(group).lower()) or names[""]

    def span(self, m):
        """The part to mask: the value group when the rule has one, else the whole match."""
        for g in ("s", "qv", "bv"):
            if g in self.regex.groupindex and m.group(g) is not None:
                return m.span(g)
        return m.span()


_RULES = [_Rule(k, p, a, i) for i, (k, p, a) in enumerate(_RULE_SPECS)]

KINDS = frozenset(name for kind, _, _ in _RULE_SPECS
                  for name in ([kind] if isinstance(kind, str) else kind[1].values()))


def find_secrets(text):
    """``[(kind, start, end), ...]`` of every secret in ``text``, in order.

    Overlapping hits are merged into one span named by the most specific rule.
    Callers report the kind and position only -- never echo ``text[start:end]``.
    """
    if not text:
        return []
    hits = []
    for rule in _RULES:
        for m in rule.regex.finditer(text):
            if rule.accept is not None and not rule.accept(m):
                continue
            start, end = rule.span(m)
            if end > start and not text.startswith(_MARK_PREFIX, start):
                hits.append((start, end, rule.priority, rule.name(m)))
    hits.sort()
    merged = []
    for start, end, prio, kind in hits:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = [last[0], max(last[1], end)] + (last[2:] if last[2] <= prio else [prio, kind])
        else:
            merged.append([start, end, prio, kind])
    return [(kind, start, end) for start, end, _, kind in merged]


def redact(text):
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` (idempotent)."""
    if not text:
        return "" if text is None else text
    out = []
    pos = 0
    for kind, start, end in find_secrets(text):
        out.append(text[pos:start])
        out.append(MARK % kind)
        pos = end
    out.append(text[pos:])
    return "".join(out)
