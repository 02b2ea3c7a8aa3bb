"""Here-document bodies: assigned to a name, written to a file whose name says secret, fed to a login.

``X=$(cat <<EOF``, HCL ``default = <<EOT``, ``cat > /etc/app/api.key <<EOF``, ``docker login
--password-stdin <<EOF``: what the line that opens the heredoc says its body is decides how each line
of the body is judged.
"""

import bisect
import re

from .judges import _STDIN_SECRET
from .lines import _MULTI_LINES, _line_spans
from .named import _blob_value, _named_value, _plain_value
from .names import name_tier
from .tokens import _looks_random, _random_token
from .values import _PUBLIC_MATERIAL, _TEMPLATE

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
