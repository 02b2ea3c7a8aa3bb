"""The generic rules: shapes that need no known format, each with its judge.

Credentials in userinfo and query strings, passwords on command lines, an assignment or a flag whose
name says secret, a password in prose (in several languages), a random token after a secret word, and
last a random token under no name at all.  They come after the provider formats (:mod:`.providers`),
in priority order; their judges are in :mod:`.judges`.  The list changes when a new way of writing a
credential is met.
"""

from .judges import (_assignment, _assignment_kind, _context_token, _flag, _here_string_secret, _literal,
                     _neutral_token, _piped_secret, _query_value, _url_password, _userinfo)
from .named import _named_value
from .names import name_tier
from .tokens import _looks_random
from .values import _VERSIONISH, _code_reference, _plausible_value

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from .rule import Accept, Kind

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
