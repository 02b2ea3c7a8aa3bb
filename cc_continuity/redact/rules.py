"""The rule table: one rule and its needles, the generic rules with their judges, the scan of a text.

Each rule knows one shape: its compiled pattern, the literals a match needs (its needles: a rule whose
needles are all absent from a text is not run on it), its kind, the span it masks and its judge (does
this match hold a secret?).  The table is the provider formats (:mod:`.providers`) then the generic
shapes here -- credentials in userinfo and query strings, passwords on command lines, an assignment or a
flag whose name says secret, a password in prose, a random token after a secret word, last a random
token under no name at all -- with the generic rules' judges just above them.  A rule's index is its
priority: where matches overlap the lower one names the span.  ``KINDS`` is every name a mark can carry.

:func:`_hits` is one scan of a text with the table (or a part of it); the encoded-text pass
(:func:`_decoded_hits`) scans decoded base64 and percent-encoding with it once more.  A rule or a judge
changes here when a new way of writing a credential is met, or a shape's false positives or misses do.
"""

import binascii
import re

from .names import _NOT_SECRET_CONTEXT, _password_family, name_tier
from .providers import _PROVIDER_SPECS
from .values import (_CODE_CHARS, _HEXISH, _MARK_PREFIX, _NUMBERISH, _PUBLIC_MATERIAL, _STATUS_WORDS, _TEMPLATE,
                     _VERSIONISH, _code_reference, _looks_random, _named_value, _neutral_string, _plausible_value,
                     _public_value, _random_token)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from .providers import Accept, Kind


# -- one rule and its needles --------------------------------------------------------------------------
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
    """One row of the table.  Its regex is compiled the first time a text holds its literals: compiling
    all ~150 at import cost 20-45 ms in every process that redacts (the verifying Stop, the claim)."""
    __slots__ = ("kind", "pattern", "_regex", "accept", "priority", "icase", "needles")

    def __init__(self, kind: "Kind", pattern: str, accept: "Accept | None", priority: int) -> None:
        self.kind = kind
        self.pattern = pattern
        self._regex: "re.Pattern[str] | None" = None
        self.accept = accept
        self.priority = priority
        self.icase, self.needles = _needles(pattern)

    @property
    def regex(self) -> "re.Pattern[str]":
        if self._regex is None:
            self._regex = re.compile(self.pattern)
        return self._regex

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


# -- the generic rules' judges: does this match of a generic shape hold a secret? ----------------------
def _assignment(m: re.Match[str]) -> bool:
    if m.string.endswith("://", 0, m.start()):
        return False  # "user:password@" of a URL: the url-password rule owns it
    name = m.group("name")
    if m.group("op").strip() == ":" and (m.string.startswith(":", m.end("op")) or m.string.endswith(":", 0, m.start())):
        return False  # tests/test_api.py::TestAuth::test_token: a path of names, not an assignment
    tier = name_tier(name)
    if tier is None:
        return False
    quoted = m.group("q") is not None
    value = m.group("qv") if quoted else m.group("bv")
    if value.lower().replace("-", "_") == name.lower().replace("-", "_"):
        return False  # {"rotate_tokens": "rotate_tokens"}: a name mapped to itself
    if _public_value(value) or _PUBLIC_MATERIAL.search(value):
        return False  # a publishable key, an SSH public key, a certificate
    if quoted and _CONCAT.match(m.string, m.end()):
        return False  # "ghp_" + filler: a string being built in code
    if tier == "weak":
        return _random_token(value.strip())
    # An env-file style line (NAME=value, the name in capitals) may hold a plain word or a PIN, and so may
    # a password key whose value is all that is left of its line (YAML, ini: "password: letmein").
    env_style = "=" in m.group("op") and name.upper() == name and not quoted and name[0].isalpha()
    line_value = not quoted and _password_family(name) and _rest_of_line_empty(m.string, m.end())
    if line_value and value.strip().lower() in _STATUS_WORDS:
        return False
    return _plausible_value(value, quoted, strict_words=not (env_style or line_value))


_CONCAT = re.compile(r"""[ \t]*[+*%][ \t]*["'\w(]""")


def _rest_of_line_empty(text: str, pos: int) -> bool:
    end = text.find("\n", pos)
    rest = text[pos:end if end != -1 else len(text)].strip()
    return not rest or rest.startswith("#")


def _assignment_kind(m: re.Match[str]) -> str:
    return "password-assignment" if _password_family(m.group("name")) else "secret-assignment"


def _flag(m: re.Match[str]) -> bool:
    tier = name_tier(m.group("name"))
    v = m.group("s")
    if _public_value(v):
        return False
    if tier == "weak":
        return _random_token(v)
    return tier == "strong" and _plausible_value(v, False, strict_words=False) and not v.startswith("-")


def _url_password(m: re.Match[str]) -> bool:
    """Skip templated URLs (``${PGPASSWORD}``, ``<password>``) and already-masked ones."""
    s = m.group("s")
    if re.match(r"\d+[?#][^@]*=", s):
        return False  # host:port?next=a@b: a port, then a query that holds an "@"
    return not s.startswith(_MARK_PREFIX) and not any(c in _CODE_CHARS for c in s)


_NOT_USERS = frozenset("mailto sip sips tel xmpp im news urn data cid mid http https".split())
_DIGESTS = frozenset("sha1 sha224 sha256 sha384 sha512 md5 blake2b blake3".split())


def _userinfo(m: re.Match[str]) -> bool:
    """``user:password@host`` with no scheme: a password-like middle, a host-like end."""
    user, pw, host = m.group("user"), m.group("s"), m.group("host")
    if user.lower() in _NOT_USERS or host.lower() in _DIGESTS or pw.startswith(_MARK_PREFIX):
        return False
    if _VERSIONISH.match(pw) or pw.isdigit() or _code_reference(pw):
        return False
    return _looks_random(pw) or any(not c.isalnum() for c in pw)


def _context_token(m: re.Match[str]) -> bool:
    s = m.group("s")
    before = m.string[max(0, m.start("s") - 8):m.start("s")].lower()
    if before.endswith(("sha256:", "sha512:", "sha1:", "md5:", "sha256-", "sha512-")):
        return False  # a fingerprint or an integrity hash, not a credential
    return _random_token(s) and not _public_value(s)


_QUERY_WEAK = frozenset("code key sig signature auth sid sessionid jwt".split())


def _query_value(m: re.Match[str]) -> bool:
    """A query parameter that carries a credential, unless its value is a template, a word or a number."""
    v = m.group("s")
    if _public_value(v) or _code_reference(v) or _TEMPLATE.search(v) or v.startswith(_MARK_PREFIX):
        return False
    if m.group("name").lower() in _QUERY_WEAK:  # ?code=200, ?key=name: only a machine-made value
        return len(v) >= 10 and _looks_random(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v) \
            and not (_NUMBERISH.match(v) or _VERSIONISH.match(v) or _HEXISH.match(v) and len(v) < 20)
    return _plausible_value(v, False, strict_words=False)


# A command that reads a secret from its standard input (a pipe or a here-string feeds it).
_STDIN_SECRET = re.compile(
    r"--password-stdin|--with-token|--token-stdin|--passphrase-stdin|--stdin-password|-pass(?:in)?[ \t]+stdin"
    r"|--passphrase-fd[ \t]+0|\bgh[ \t]+secret[ \t]+set\b|\bglab[ \t]+auth[ \t]+login\b[^\n]*--stdin"
    r"|\bsecret[ \t]+put\b|\bdocker[ \t]+secret[ \t]+create\b|\bchpasswd\b|\bpasswd\b[^\n]*--stdin"
    r"|\bsudo\b[^\n]*?[ \t]-S\b|\bvault[ \t]+login\b[^\n]*?[ \t]-(?=[ \t]|\Z)")


def _literal(m: re.Match[str]) -> str:
    return m.group("qv") if m.group("q") else m.group("bv")


def _piped_secret(m: re.Match[str]) -> bool:
    v = _literal(m)
    return (_STDIN_SECRET.search(m.group("cmd")) is not None and not _code_reference(v)
            and _plausible_value(v, m.group("q") is not None, strict_words=False))


def _here_string_secret(m: re.Match[str]) -> bool:
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    before = m.string[max(line_start, m.start() - 300):m.start()]
    v = _literal(m)
    return (_STDIN_SECRET.search(before) is not None and not _code_reference(v)
            and _plausible_value(v, m.group("q") is not None, strict_words=False))


def _neutral_token(m: re.Match[str]) -> bool:
    """A whole string literal or assigned value that is a machine-made secret although no name says so.

    :func:`.values._neutral_string`, and nothing on its line before it saying hash, digest, id, nonce or the like.
    """
    s = m.group("s")
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    return _neutral_string(s) and not _NOT_SECRET_CONTEXT.search(m.string, max(line_start, m.start() - 60), m.start("s"))


# -- the generic rules: shapes that need no known format, after the provider formats -------------------
# A command-line value: quoted (spaces and all) or bare.
_CLI_VALUE = r"""(?:(?P<q>['"])(?P<qv>(?:(?!(?P=q))[^\n]){3,200})(?P=q)|(?P<bv>[^\s'"\-][^\s'"]{2,}))"""
# The assigned value: quoted (group q/qv) or bare (group bv).
# (In a query string -- the name right after "?", "&" or "#", group qs -- a bare value stops at the next "&".)
_VALUE = r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300}?)(?P=q)|(?P<bv>(?(qs)[^\s"'`,;)}\]&#]|[^\s"'`,;)}\]]){1,300}))"""


_GENERIC_SPECS: "list[tuple[Kind, str, Accept | None]]" = [  # (as the provider specs; priority goes on)
    # --- generic shapes -----------------------------------------------------
    ("url-password",
     r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/?#@'\"<>]*:(?P<s>[^\s@/'\"<>]+)@(?=[A-Za-z0-9\[])", _url_password),
    ("url-password",  # userinfo without a scheme: user:pass@host
     r"(?<![\w@/:.%+\-])(?P<user>[A-Za-z0-9._%+\-]{1,64}):(?P<s>[^\s@/:'\"<>]{3,128})@"
     r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9\-]{1,63})*)(?![A-Za-z0-9\-])",
     _userinfo),
    ("pgpass-password",  # hostname:port:database:username:password
     r"(?m)^[ \t]*(?:\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.\-*]+):(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<s>[^\s/][^\s]{2,})[ \t]*$",
     lambda m: not _VERSIONISH.match(m.group("s"))),
    (("scheme", {"bearer": "bearer-token", "token": "bearer-token", "bot": "bearer-token", "ssws": "bearer-token",
                 "basic": "basic-auth"}),
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>bearer|token|basic|bot|ssws)\s+"
     r"(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)", None),
    ("bearer-token", r"(?i)(?<![A-Za-z])bearer\s+(?P<s>[A-Za-z0-9._~+/\-]{20,}=*)",
     lambda m: _looks_random(m.group("s"))),
    ("basic-auth",  # requests.get(url, auth=("user", "pass"))
     r"""\bauth\s*=\s*\(\s*["'][^"'\n]{1,64}["']\s*,\s*["'](?P<s>[^"'\n]{3,128})["']\s*\)""",
     lambda m: _plausible_value(m.group("s"), True)),
    ("netrc-password", r"(?i)\b(?:machine\s+\S+|default)\s+login\s+\S+\s+password\s+(?P<s>\S+)", None),
    ("url-query-secret",  # ?code=..., &access_token=..., #id_token=..., &sig=...: up to the next parameter
     r"(?i)[?&#;](?P<name>code|(?:access|id|refresh|auth|private|session)_?token|token|auth|api[_\-]?key|key|sig"
     r"|signature|secret|client_secret|password|passwd|pwd|pass|x-amz-signature|x-amz-security-token"
     r"|x-goog-signature|jwt|sessionid|sid)=(?P<s>[^&#\s'\"<>`]{6,600})", _query_value),
    ("github-actions-mask",  # echo "::add-mask::<value>": the value a workflow asks to be hidden
     r"::add-mask::(?P<s>[^\s'\"`]{4,600})", lambda m: _plausible_value(m.group("s"), True)
     and not _code_reference(m.group("s"))),
    # --- passwords in command lines ---------------------------------------
    ("cli-password", r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b"
                     r"[^\n|;&]*?\s(?:-p|--password=)" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:sshpass|mongo|mongosh|mongodump|mongorestore)\b[^\n|;&]*?\s-p\s*""" + _CLI_VALUE, None),
    ("cli-password", r"""\bhtpasswd\b[^\n|;&]*?\s-[a-zA-Z]*b[a-zA-Z]*\s+(?:-\S+\s+)*\S+\s+\S+\s+""" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|az|oc|cf)\b[^\n|;&]*?\blogin\b[^\n|;&]*?"""
                     r"""\s(?:-p|--password)[ =]['"]?(?P<s>[^\s'"-][^\s'"]{2,})""", None),
    ("cli-password", r"""\bredis-cli\b[^\n|;&]*?\s-a\s+['"]?(?P<s>[^\s'"-][^\s'"]{2,})""", None),
    ("cli-password", r"""(?i)\b(?:curl|wget|http|httpie)\b[^\n|;&]*?\s(?:-u|--user|-U|--proxy-user)[ =]?['"]?"""
                     r"""[^\s:'"]{1,64}:(?P<s>[^\s'"]{3,128})""", lambda m: not m.group("s").startswith("$")),
    ("cli-password", r"""-pass(?:in|out)?\s+['"]?pass:""" + _CLI_VALUE, None),
    ("cli-password", r"""\b(?:zip|7z|7za|unzip|rar|unrar)\b[^\n|;&]*?\s-[pP]\s?['"]?(?P<s>[^\s'"-][^\s'"]{2,})""",
     lambda m: not m.group("s").startswith(("/", "."))),
    ("cli-password", r"""\s-(?:storepass|keypass|srcstorepass|deststorepass)\s+""" + _CLI_VALUE, None),
    ("cli-password", r"""\bldap\w*\b[^\n|;&]*?\s-w\s+""" + _CLI_VALUE, None),
    ("cli-password",  # aws configure set aws_secret_access_key X, git config credential.password X
     r"""\b(?:aws\s+configure\s+set|git\s+config(?:\s+--\w+)*)\s+(?P<name>[\w.\-]+)\s+""" + _CLI_VALUE,
     lambda m: name_tier(m.group("name").rsplit(".", 1)[-1]) == "strong"),
    ("secret-assignment",  # define('AUTH_KEY', '...'), setenv("TOKEN", "..."), os.environ.setdefault(...)
     r"""\b(?:define|setenv|putenv|setdefault|Setenv|SetEnvironmentVariable)\s*\(\s*["'](?P<name>[A-Za-z_][\w.\-]{0,80})["']"""
     r"""\s*,\s*(?P<q>["'])(?P<qv>(?:(?!(?P=q))[^\n]){4,300})(?P=q)""",
     lambda m: name_tier(m.group("name")) == "strong" and _plausible_value(m.group("qv"), True)),
    ("password-in-prose",  # labels in other languages: "Passwort:", "mot de passe :", "密码："
     r"(?i)(?:passwort|kennwort|mot de passe|contrase[ñn]a|senha|пароль|密码|密碼|口令|パスワード|비밀번호|wachtwoord"
     r"|has[łl]o|parola(?: d'ordine)?|l[öo]senord|salasana|adgangskode|passord|heslo|jelsz[óo]|[şs]ifre|m[ậa]t kh[ẩa]u"
     r"|كلمة المرور|סיסמה|κωδικός|api[- ]?schl[üu]ssel|cl[ée] (?:d'|de l')?api|clave (?:de )?api|chave (?:de )?api"
     r"|api ?密钥|密钥|秘密鍵|api ?キー|トークン|令牌|ключ api|токен|password [èe]|la password)"
     r"""\s*(?:[:：=]|\bist\b|\best\b|\bes\b|\bé\b|\bè\b)\s*["'`]?(?P<s>[^\s"'`，。]{4,100})""",
     lambda m: _plausible_value(m.group("s").rstrip(".,;:!?)"), False, strict_words=False)
     and _looks_random(m.group("s"))),
    ("cli-password",  # echo <token> | docker login --password-stdin, printf '%s' <token> | gh auth login --with-token
     r"""\b(?:echo|printf)(?:[ \t]+-[neE]{1,3})?(?:[ \t]+(?P<fq>['"])%s(?:\\n)?(?P=fq))?[ \t]+"""
     r"""(?:(?P<q>['"])(?P<qv>[^'"\n]{4,300})(?P=q)|(?P<bv>[^\s'"|;&<>]{4,300}))[ \t]*\|[ \t]*(?P<cmd>[^\n|;&]{1,300})""",
     _piped_secret),
    ("cli-password",  # docker login --password-stdin <<< <token>: the here-string a login reads
     r"""<<<[ \t]*(?:(?P<q>['"])(?P<qv>[^'"\n]{4,300})(?P=q)|(?P<bv>[^\s'"|;&<>]{4,300}))""", _here_string_secret),
    ("cli-password", r"""\b(?:smbclient|rpcclient|smbmap)\b[^\n|;&]*?\s-U\s+['"]?[^\s%'"]+%(?P<s>[^\s'"]{3,})""", None),
    ("secret-flag",  # --password X, --api-key=X, --auth-token "X": a flag whose name says secret
     r"""(?<![\w\-])--(?P<name>[A-Za-z][A-Za-z0-9\-]{1,40})(?:=|[ \t]+)["']?(?P<s>[^\s"'`\-][^\s"'`]{2,300})""",
     _flag),
    # --- assignments whose name says secret --------------------------------
    (("name", _assignment_kind),
     r"(?:(?<![A-Za-z0-9_.\-])|(?<=\s-D))"  # -Dkey.store.password=... (Java system properties)
     r"(?P<qs>(?<=[?&#]))?(?P<name>(?=[A-Za-z0-9_.\-]{0,80}?(?i:pass|pw|pwd|secret|token|auth|cred|key"
     r"|cookie|session|sid|jwt|sig|salt|hmac|bearer|csrf|xsrf|otp))[A-Za-z_][A-Za-z0-9_.\-]{0,80})"
     r"""(?P<op>["']?[ \t]*(?:=>|:=|=|:)[ \t]*)""" + _VALUE, _assignment),
    (("name", _assignment_kind),  # {"name": "DB_PASSWORD", "value": "..."}, Kubernetes' "- name: X" / "value: ..."
     r"""(?<![\w\-])["']?name["']?[ \t]*[:=][ \t]*["']?(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*,?[ \t]*"""
     r"""(?:\r?\n[ \t]*)?["']?value["']?[ \t]*[:=][ \t]*"""
     r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,300})(?P=q)|(?P<bv>[^\s"',}|>][^\s"',}]{0,299}))""",
     lambda m: _named_value(m.group("name"), _literal(m), m.group("q") is not None)),
    (("name", _assignment_kind),  # TOML / Python: password = """...""" on one line
     r"""(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]{0,80})[ \t]*=[ \t]*(?P<tq>\"\"\"|''')(?P<s>[^\n"']{1,300})(?P=tq)""",
     lambda m: _named_value(m.group("name"), m.group("s"), True)),
    ("password-in-prose",  # "the wifi password is X", "pw for the db: X"
     r"""(?i)\b(?:password|passwd|passphrase|passcode|pwd|pw)\b(?:\s+(?:for|of|to|on)\s+(?:the\s+)?[^\s]{1,40})?"""
     r"""\s*(?:\bis\b|\bwas\b|=|:)\s*["'`]?(?P<s>[^\s"'`]{4,100})""",
     lambda m: _plausible_value(m.group("s").rstrip(".,;:!?)"), False)),
    ("secret-in-context",  # "the API token is X", "use key X": a random token shortly after a secret word
     r"(?i)\b(?:api[ _\-]?key|access[ _\-]?key|secret(?:[ _\-]?key)?|token|password|passwd|passphrase"
     r"|credentials?|private[ _\-]?key|auth(?:entication|orization)?|bearer|api)\b[^\n]{0,40}?"
     r"(?<![A-Za-z0-9+/=_\-])(?P<s>[A-Za-z0-9+/_\-]{16,300}={0,2})(?![A-Za-z0-9+/=_\-])", _context_token),
    # --- a random token with no name that says secret: a whole quoted string, or a whole assigned value --
    ("high-entropy-value",
     r"""(?P<q>["'`])(?P<s>[A-Za-z0-9+/_\-]{32,128}={0,2})(?P=q)""", _neutral_token),
    ("high-entropy-value",
     r"""(?<=[=:])[ \t]{0,4}(?P<s>[A-Za-z0-9+/_\-]{32,128}={0,2})(?=[ \t]*(?:[\r\n,;]|\Z))""", _neutral_token),
]


# -- the table in its order, and one scan of a text with it ----------------------------------------------
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


# -- encoded text: base64 and percent-encoding, decoded and searched once more with the table -----------
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
_PCT_PIECE = re.compile(r"[^\s'\"<>?&]*%[0-9A-Fa-f]{2}[^\s'\"<>?&]*")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_DECODED = len(_RULES)  # the priority of a hit found in decoded text: below every rule's


def _decoded_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """Secrets inside base64 (an encoded ``.env`` line, a ``user:pass``) and URL-encoded values.

    The encoded run is decoded and searched once more (not deeper); when it holds a
    secret the whole run is masked.  Binary (hashes, keys) and plain text without an
    assignment in it are not searched.
    """
    out = []
    for m in _B64_RUN.finditer(text):
        run = m.group()
        if len(run) % 4:
            continue
        try:
            raw = binascii.a2b_base64(run)
        except (binascii.Error, ValueError):
            continue
        if not raw or any(b < 32 and b not in (9, 10, 13) or b > 126 for b in raw) or not (b"=" in raw or b":" in raw):
            continue
        inner = _hits(raw.decode("ascii"))
        if inner:
            out.append((m.start(), m.end(), _DECODED, "base64-secret"))
    if "%" in text:
        for m in _PCT_PIECE.finditer(text):
            piece = m.group()
            try:
                plain = _PCT.sub(lambda x: chr(int(x.group(1), 16)), piece)
            except ValueError:
                continue
            inner = _hits(plain) if plain != piece else []
            if inner:
                start = m.start() + (piece.index("=") + 1 if "=" in piece.split("%", 1)[0] else 0)
                out.append((start, m.end(), _DECODED, "url-encoded-secret"))
    return out
