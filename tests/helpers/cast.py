"""Reading an asciinema v2 cast strictly (what `rehearse --record` writes)."""

import json
import re

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()][A-Z0-9]|.)")


def read_cast(path):
    """(header, [(t, text)]) of a valid v2 cast; AssertionError naming what is wrong otherwise."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", "the cast does not end with a newline"
    header = json.loads(lines[0])
    assert isinstance(header, dict) and header.get("version") == 2, header
    for key in ("width", "height", "timestamp"):
        assert isinstance(header.get(key), int) and not isinstance(header[key], bool) and header[key] > 0, (key, header)
    events, last = [], 0.0
    for n, line in enumerate(lines[1:-1], 2):
        ev = json.loads(line)
        assert isinstance(ev, list) and len(ev) == 3, (n, ev)
        t, kind, text = ev
        assert isinstance(t, (int, float)) and t >= last, (n, t, last)
        assert kind == "o" and isinstance(text, str) and text, (n, ev)
        last = t
        events.append((t, text))
    return header, events


def plain_text(events):
    """Everything the program wrote, escape sequences removed."""
    return _ANSI.sub("", "".join(text for _, text in events))
