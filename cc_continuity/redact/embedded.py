"""Values another syntax frames and names: a here-document's body, an XML element's text, a Kubernetes Secret.

What says the value is secret is not a key on its line but the frame around it: the line that opens the
heredoc (``X=$(cat <<EOF``, HCL ``default = <<EOT``, ``cat > /etc/app/api.key <<EOF``, ``docker login
--password-stdin <<EOF``), the element's name or its ``key=``/``name=`` attribute (``<password>``,
``<entry key="db.password">``; XML Signature and Encryption elements and markup inside a string literal
of code pass), a manifest of ``kind: Secret`` (every value under its ``data:`` and ``stringData:``, as
YAML or as the JSON kubectl prints).  Their lines are read as :mod:`.multiline` reads them and judged by
:mod:`.values`; a frame is added here when one more turns up.
"""

import bisect
import re

from .multiline import _MULTI_LINES, _indent, _line_spans, _lines, _trimmed
from .names import _NOT_SECRET_CONTEXT, name_tier
from .rules import _ASSIGNMENT_PRIORITY, _STDIN_SECRET
from .values import (_BLOB_PIECE, _PUBLIC_MATERIAL, _TEMPLATE, _blob_value, _looks_random, _named_value,
                     _neutral_string, _plain_value, _plausible_value, _random_token)

# -- here-documents -----------------------------------------------------------------------------------
# A here-document: "<<EOF", "<<-EOF", "<<~EOS" (Ruby), "<<'EOF'", HCL "<<EOT", PHP "<<<EOT"; its body ends at the line that
# holds only the tag.
_HEREDOC = re.compile(r"""(?<!<)<<<?(?!<)(?P<dash>[-~]?)[ \t]*(?P<hq>["']?)(?P<tag>[A-Za-z_][A-Za-z0-9_]{0,40})(?P=hq)(?P<rest>[^\n]{0,300}+)\n""")
# The line that opens it says what the body is: a value assigned to a name (HCL "default = <<EOT", Ruby, Perl,
# PHP, shell "X=$(cat <<EOF"), the content of a file ("cat > path <<EOF", "tee -a path <<EOF", "cat <<EOF >
# path"), or what a command that reads a secret from its standard input reads.
_HEREDOC_NAME = re.compile(r"""(?P<name>[A-Za-z_][\w.\-]{0,80})["']?[ \t]*(?:=|:|=>)[ \t]*(?:\$\([ \t]*cat[ \t]*)?\Z""")
_HEREDOC_FILE = re.compile(r"""(?:(?<![<>&\d])>>?|\btee(?:[ \t]+-a)?)[ \t]*(?P<fq>["']?)(?P<path>[^\s;&|<>"'$]{1,300})(?P=fq)""")
# ... or any path on it ("install -m 600 /dev/stdin /etc/app/token <<EOF", "sponge ~/.config/app/api_key"), not a URL.
_PATH_ARG = re.compile(r"""(?<![\w:/.~\-])(?P<path>(?:~|\.{1,2})?/(?!/)[^\s;&|<>"'$:]{1,300})""")
# A file whose name says secret holds its secret raw only without an extension or with one of these; in a
# config file (.env, .json, .yaml...) each line is judged by the ordinary rules.
_RAW_FILE_EXT = frozenset("txt key pem token secret secrets pass pw pwd b64 asc cred creds".split())
_LINE_KEY = re.compile(r"[A-Za-z_][\w.\-]*[ \t]*[:=]")


def _file_name(path: str) -> "str | None":
    """The name a heredoc's target file gives its content (its base name), None when that says nothing."""
    base = path.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    if dot and stem and ext.lower() not in _RAW_FILE_EXT:
        return None
    return base if base not in ("null", "stdout", "stderr") else None


def _raw_secret_lines(name: str, tier: str, text: str, spans: "list[tuple[int, int]]") -> "list[tuple[int, int]]":
    """The lines of a file or standard input that is all secret: each one a token on its own (a line that is
    itself an assignment is judged by its own name)."""
    out = []
    for a, b in spans:
        v = text[a:b]
        if any(c.isspace() for c in v) or _LINE_KEY.match(v) or _TEMPLATE.search(v) or _PUBLIC_MATERIAL.search(v):
            continue
        if (_random_token(v) if tier == "weak" else
                len(v) >= 8 and _looks_random(v) and _named_value(name, v, False, line_value=False)):
            out.append((a, b))
    return out


def _heredoc_hits(text: str) -> "list[tuple[str | None, list[tuple[int, int]]]]":
    """Here-document bodies: assigned to a name (judged as that name's value, or as a blob under a neutral
    name), written to a file whose name says secret (``cat > /etc/app/api.key <<EOF``), or fed to a command
    that reads a secret from its standard input (``docker login --password-stdin <<EOF``)."""
    if "<<" not in text:
        return []
    line_starts: "list[int]" = []
    ends: "dict[str, list[int]]" = {}  # a line that is a bare identifier -> the numbers of the lines it is on
    at = 0
    for n, line in enumerate(text.split("\n")):
        line_starts.append(at)
        at += len(line) + 1
        s = line.strip().rstrip(";,)")  # (PHP ends one with "EOT;", code with "EOT)")
        if 0 < len(s) <= 41 and s.isidentifier():
            ends.setdefault(s, []).append(n)
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = []
    covered = 0  # a heredoc inside another one's body is that body's text
    for m in _HEREDOC.finditer(text):
        if m.start() < covered:
            continue
        first = bisect.bisect_right(line_starts, m.end()) - 1  # the body's first line
        lines = ends.get(m.group("tag"), [])
        k = bisect.bisect_left(lines, first)
        if k == len(lines) or lines[k] - first > _MULTI_LINES:
            continue
        term = line_starts[lines[k]]
        covered = term
        spans = _line_spans(text, m.end(), term)
        if not spans:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        head, rest = text[line_start:m.start()], m.group("rest")
        named = _HEREDOC_NAME.search(head)
        if named:
            name = named.group("name")
            tier = name_tier(name)
            pieces = [text[a:b] for a, b in spans]
            if tier is None and not any(_TEMPLATE.search(p) for p in pieces) and _blob_value(name, pieces):
                found.append((None, spans))
            elif tier and not any(_TEMPLATE.search(p) or _PUBLIC_MATERIAL.search(p) for p in pieces) \
                    and _plain_value(name, pieces):
                found.append((name, spans))
            continue
        target = _HEREDOC_FILE.search(head) or _HEREDOC_FILE.search(rest)
        if target is None:
            paths = [p for p in _PATH_ARG.finditer(head + " " + rest) if p.group("path") != "/dev/stdin"]
            target = paths[-1] if paths else None
        name = _file_name(target.group("path")) if target else None
        if name is None and _STDIN_SECRET.search(head + " " + rest):
            name = "password"
        tier = name_tier(name) if name else None
        if tier and name:
            found.extend((name, [span]) for span in _raw_secret_lines(name, tier, text, spans))
    return found


# -- XML element text ---------------------------------------------------------------------------------
# An XML element whose text is its whole value: <password>...</password>, on its line or on lines of its own.
_XML_ELEMENT = re.compile(r"<(?P<tag>(?:[A-Za-z_][\w.\-]{0,40}:)?(?P<name>[A-Za-z_][\w.\-]{0,80}))(?P<attrs>[ \t][^<>\n]{0,300}+)?>"
                          r"(?P<v>[^<]{1,4000}+)</(?P=tag)[ \t]*>")


_XML_NAME_ATTR = re.compile(r"""\b(?:key|name)[ \t]*=[ \t]*["'](?P<name>[A-Za-z_][\w.\-]{0,80})["']""")
_IN_CODE = re.compile(r"""\\[nrt"']|%[sdr]\b|["'][ \t]*[,+)]""")
# XML Signature and Encryption elements: a signature, a digest, ciphertext, public key material.
_XML_PUBLIC = re.compile(r"(?i)signature|digest|cipher|modulus|exponent|x509|certificate")


def _xml_hits(text: str) -> "list[tuple[str | None, list[tuple[int, int]]]]":
    """The text of an XML element, judged by the element's name like an assignment's value (a neutral name's
    text only when it is a machine-made token)."""
    if "</" not in text:
        return []
    found: "list[tuple[str | None, list[tuple[int, int]]]]" = []
    for m in _XML_ELEMENT.finditer(text):
        name = m.group("name")
        tier = name_tier(name)
        named = _XML_NAME_ATTR.search(m.group("attrs") or "") if tier is None else None
        if named:  # <entry key="db.password">, <string name="api_token">, <add key="ApiKey"> ... </...>
            name = named.group("name")
            tier = name_tier(name)
        if _XML_PUBLIC.search(name) or tier is None and _NOT_SECRET_CONTEXT.search(name):
            continue
        spans = _line_spans(text, m.start("v"), m.end("v"))
        pieces = [text[a:b] for a, b in spans]
        if not pieces or any(_TEMPLATE.search(p) or _PUBLIC_MATERIAL.search(p) or _IN_CODE.search(p) for p in pieces):
            continue  # (a template, or markup inside a string literal of code: "<password>\\n%s</password>")
        if len(pieces) > 1 or "\n" in m.group("v"):  # the value on lines of its own
            if _plain_value(name, pieces) if tier else _blob_value(name, pieces):
                found.append((name if tier else None, spans))
        elif tier:
            v = pieces[0]
            if _named_value(name, v, any(c.isspace() for c in v), line_value=False):
                found.append((name, spans))
        elif 32 <= len(pieces[0]) <= 400 and _BLOB_PIECE.match(pieces[0]) and _neutral_string(pieces[0]):
            found.append((None, spans))
    return found


# -- Kubernetes Secrets -------------------------------------------------------------------------------
# A Kubernetes Secret: every value under its data: (base64) and stringData: (plain) is a secret, whatever its key.
_KIND_SECRET = re.compile(r"""(?m)^[ \t]*(?:-[ \t]+)?kind:[ \t]*["']?Secret["']?[ \t]*(?:#[^\n]*)?\r?$""")
_DOC_START = re.compile(r"(?m)^---")
_SECRET_DATA = re.compile(r"""(?m)^(?P<ind>[ \t]*)["']?(?:data|stringData)["']?:[ \t]*(?:#[^\n]*)?\r?$""")
_DATA_ENTRY = re.compile(r"""["']?[\w.\-]{1,253}["']?[ \t]*:(?:[ \t]+|(?=\r?\n|\Z))""")
_JSON_KIND = re.compile(r""""kind"[ \t]*:[ \t]*"(?P<k>[A-Za-z]+)\"""")
_JSON_DATA = re.compile(r""""(?:data|stringData)"[ \t]*:[ \t]*\{""")
_JSON_PAIR = re.compile(r"""\s{0,200}+"[\w.\-]{1,253}"[ \t]*:[ \t]*"(?P<v>(?:[^"\\\n]|\\.){0,20000}+)"\s{0,200}+(?P<sep>[,}])?""")


def _kubernetes_secret_hits(text: str) -> "list[tuple[int, int, int, str]]":
    """The values of a Kubernetes Secret's data and stringData, as YAML (each ``---`` document on its own) or
    as the JSON kubectl prints (when every kind in the text is Secret or List)."""
    if "Secret" not in text:
        return []
    spans: "list[tuple[int, int]]" = []
    starts = [0] + [m.start() for m in _DOC_START.finditer(text)] + [len(text)]
    for d in range(len(starts) - 1):
        start, end = starts[d], starts[d + 1]
        if not _KIND_SECRET.search(text, start, end):
            continue
        for m in _SECRET_DATA.finditer(text, start, end):
            base, entry, block = len(m.group("ind")), -1, False
            for a, b in _lines(text, text.find("\n", m.end()) + 1 if text.find("\n", m.end()) != -1 else len(text) + 1):
                i = a + _indent(text, a, b)
                if i >= b:
                    continue
                if i - a <= base or a >= end:
                    break
                if entry == -1:
                    entry = i - a
                if i - a == entry:
                    key = _DATA_ENTRY.match(text, i, b)
                    if key is None:
                        break
                    v = _trimmed(text, key.end(), b)
                    block = v is None or text[v[0]] in "|>" and v[1] - v[0] <= 3
                    if v and not block:
                        x, y = v
                        if y - x > 1 and text[x] in "\"'" and text[y - 1] == text[x]:
                            x, y = x + 1, y - 1
                        if y > x and text[x] != "%" and _plausible_value(text[x:y], True):
                            spans.append((x, y))  # (not a template, a placeholder, <base64-encoded-password>)
                elif block:  # the lines of "key: |" or of "key:" over its value
                    piece = _trimmed(text, i, b)
                    if piece and not _TEMPLATE.search(text, piece[0], piece[1]):
                        spans.append(piece)
    kinds = {k.group("k") for k in _JSON_KIND.finditer(text)}
    if "Secret" in kinds and kinds <= {"Secret", "List"}:
        for m in _JSON_DATA.finditer(text):
            pos = m.end()
            for _ in range(_MULTI_LINES):
                pair = _JSON_PAIR.match(text, pos)
                if pair is None:
                    break
                if pair.end("v") > pair.start("v") and not text.startswith("%", pair.start("v")) \
                        and _plausible_value(pair.group("v"), True):
                    spans.append(pair.span("v"))
                if pair.group("sep") != ",":
                    break
                pos = pair.end()
    return [(a, b, _ASSIGNMENT_PRIORITY, "kubernetes-secret") for a, b in spans]
