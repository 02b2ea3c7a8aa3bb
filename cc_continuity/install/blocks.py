"""A marked, versioned block of ours inside someone else's text file.

Used for ``~/.claude/CLAUDE.md`` and the shell rc files::

    # >>> cc-continuity wrapper v0.1.0 >>>
    ...body...
    # <<< cc-continuity wrapper <<<

(``<!-- ... -->`` around the same words for Markdown.)  Adding is idempotent
and an existing block is replaced where it stands.  Removing gives back the
original text exactly, which is why the separator we add before an appended
block is chosen so it can be recognised afterwards: one blank line when the
text ended with a newline, a bare newline when it did not.  A file whose
markers do not pair up is refused (BlockError) and left alone.

Text is handled as ``str`` decoded with ``surrogateescape`` so any bytes
round-trip unchanged.
"""

import re

from .. import errors

STYLES = {
    "hash": ("# ", ""),
    "html": ("<!-- ", " -->"),
}


BlockError = errors.BlockError  # (defined with every error class, in errors.py)


def _marker_res(name, style):
    pre, post = (re.escape(x) for x in STYLES[style])
    n = re.escape(name)
    start = re.compile(r"^%s>>> cc-continuity %s v(\S+) >>>%s[ \t]*$" % (pre, n, post))
    end = re.compile(r"^%s<<< cc-continuity %s <<<%s[ \t]*$" % (pre, n, post))
    return start, end


def start_marker(name, version, style):
    pre, post = STYLES[style]
    return "%s>>> cc-continuity %s v%s >>>%s" % (pre, name, version, post)


def end_marker(name, style):
    pre, post = STYLES[style]
    return "%s<<< cc-continuity %s <<<%s" % (pre, name, post)


class Block:
    """Where a block sits: ``text[start:end]`` runs from its start marker through the end marker's newline."""

    def __init__(self, start, end, version, line):
        self.start, self.end, self.version, self.line = start, end, version, line


def _lines(text):
    """Lines split on "\n" only (str.splitlines also splits on form feeds and the like)."""
    pos = 0
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl + 1
        yield text[pos:end]
        pos = end


def find(text, name, style, where="file"):
    """The block named ``name`` in ``text``, or None.  BlockError when markers don't pair up."""
    start_re, end_re = _marker_res(name, style)
    found, open_at = None, None
    pos = 0
    for number, line in enumerate(_lines(text), 1):
        bare = line.rstrip("\r\n")
        m = start_re.match(bare)
        if m:
            if open_at is not None:
                raise BlockError("%s: line %d: a second cc-continuity %s start marker before the end of the one on line %d"
                                 % (where, number, name, open_at[2]))
            if found is not None:
                raise BlockError("%s: line %d: a second cc-continuity %s block (the first is on line %d)"
                                 % (where, number, name, found.line))
            open_at = (pos, m.group(1), number)
        elif end_re.match(bare):
            if open_at is None:
                raise BlockError("%s: line %d: cc-continuity %s end marker without a start marker" % (where, number, name))
            found = Block(open_at[0], pos + len(line), open_at[1], open_at[2])
            open_at = None
        pos += len(line)
    if open_at is not None:
        raise BlockError("%s: line %d: cc-continuity %s start marker without an end marker" % (where, open_at[2], name))
    return found


def render(name, version, body, style):
    """The block text, ending with a newline."""
    start_re, end_re = _marker_res(name, style)
    body = body.rstrip("\n")
    lines = body.split("\n") if body else []
    if any(start_re.match(line) or end_re.match(line) for line in lines):
        raise ValueError("block body contains our own marker")
    inner = "".join(line + "\n" for line in lines)
    return "%s\n%s%s\n" % (start_marker(name, version, style), inner, end_marker(name, style))


def add(text, name, version, body, style, where="file"):
    """``text`` with the block in it: replaced in place if present, else appended."""
    block = render(name, version, body, style)
    b = find(text, name, style, where)
    if b is not None:
        return text[:b.start] + block + text[b.end:]
    if not text:
        return block
    # After a final newline this makes one blank line; without one it only ends their last line.
    return text + "\n" + block


def remove(text, name, style, where="file"):
    """``text`` without the block, restoring the bytes that were there before :func:`add`."""
    b = find(text, name, style, where)
    if b is None:
        return text
    before, after = text[:b.start], text[b.end:]
    # Drop the separator add() put there, unless that would join their line to what follows us.
    if before.endswith("\n") and (not after or before.endswith("\n\n") or before == "\n"):
        before = before[:-1]
    return before + after


def decode(data):
    return data.decode("utf-8", "surrogateescape")


def encode(text):
    return text.encode("utf-8", "surrogateescape")
