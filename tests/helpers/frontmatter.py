"""The YAML subset of our skills' frontmatter, read strictly: the tests check every SKILL.md we ship with it."""


class FrontmatterError(ValueError):
    pass


_SPECIAL_START = tuple("[]{}&*!|>'\"%@`#,?:-")


def parse_frontmatter(text):
    """``(fields, body)`` of a SKILL.md.

    Only the YAML subset our skills use: ``key: value`` lines, values plain or
    double/single quoted.  Anything a YAML parser could read differently (a
    plain value containing ``": "`` or ``" #"``, or starting with an indicator
    character) is an error rather than a guess.
    """
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        raise FrontmatterError("no frontmatter: the first line must be ---")
    fields = {}
    for i, line in enumerate(lines[1:], 2):
        if line == "---":
            return fields, "\n".join(lines[i:])
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key or key != key.strip() or " " in key:
            raise FrontmatterError("line %d: expected 'key: value', got %r" % (i, line))
        if key in fields:
            raise FrontmatterError("line %d: duplicate key %r" % (i, key))
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            inner = value[1:-1]
            if '"' in inner.replace('\\"', "") or "\\" in inner.replace('\\"', ""):
                raise FrontmatterError("line %d: escapes in quoted values are not supported" % i)
            value = inner.replace('\\"', '"')
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            inner = value[1:-1]
            if "'" in inner.replace("''", ""):
                raise FrontmatterError("line %d: stray quote in %r" % (i, value))
            value = inner.replace("''", "'")
        else:
            if not value or value.startswith(_SPECIAL_START) or ": " in value or " #" in value or value.endswith(":"):
                raise FrontmatterError("line %d: value of %r must be quoted" % (i, key))
        fields[key] = value
    raise FrontmatterError("frontmatter is not closed with ---")
