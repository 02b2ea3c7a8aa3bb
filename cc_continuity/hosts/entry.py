"""What the per-call hosts' hook entries share (Codex CLI's, Gemini CLI's): one :class:`PayloadError`, the two
readers of a payload their wires parse with, and the fail-open entry around the one runner (``run_hook``).

Not in ``hosts/__init__``: every line there runs at every Claude Code tool call (P1: this class and these
functions cost it ~0.13 M instructions, +0.4 %).
"""

import posix

from .. import fastjson
from . import run_hook

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, NoReturn

    from collections.abc import Mapping

    from . import Answer


class PayloadError(ValueError):
    """A hook's stdin that is not what its host sends; the message names the field.

    Not an ``errors.Error``: a hook never tells the user; its entry logs this and fails open
    (exit 0, nothing on stdout).  Each host's wire parses its own payloads with the two readers
    below (``hosts/<name>/wire.py``)."""


def getenv(env: "Mapping[str, str] | None", name: "str") -> "str | None":
    """``name`` from ``env``, or from this process's environment (``posix``: ``os`` is not on a tool call's path)."""
    if env is not None:
        return env.get(name)
    v = posix.environ.get(name.encode())
    return None if v is None else v.decode("utf-8", "surrogateescape")


def payload_object(raw: "bytes | str", limit: "int") -> "dict[str, Any]":
    """A hook's stdin as a JSON object; :class:`PayloadError` past ``limit`` bytes, or for anything else."""
    if len(raw) > limit:
        raise PayloadError("payload over %d bytes" % limit)
    try:
        d = fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise PayloadError("not JSON: %s" % e) from None
    if not isinstance(d, dict):
        raise PayloadError("expected a JSON object, got %s" % type(d).__name__)
    return d


def payload_event(raw: "bytes | str", limit: "int", expect: "str | None") -> "tuple[dict[str, Any], str]":
    """(the payload, its ``hook_event_name``); ``expect``: the event this hook was installed for (a payload for
    another is an error)."""
    d = payload_object(raw, limit)
    event = payload_str(d, "hook_event_name")
    if expect is not None and event != expect:
        raise PayloadError("hook_event_name: %r, but this hook is for %s" % (event, expect))
    return d, event  # type: ignore[return-value]  # (a non-empty string: payload_str raised otherwise)


def payload_str(d: "dict[str, Any]", key: "str", optional: "bool" = False) -> "str | None":
    """``d[key]``: a non-empty string (``optional``: a string or null/absent, as None)."""
    v = d.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str) or (not optional and not v):
        raise PayloadError("%s: expected %sa string, got %s" % (key, "null or " if optional else "a non-empty ",
                                                                type(v).__name__ if v is not None else "nothing"))
    return v


def payload_choice(d: "dict[str, Any]", key: "str", choices: "tuple[str, ...]") -> "str":
    """``d[key]``: one of ``choices``."""
    v = payload_str(d, key)
    if v not in choices:
        raise PayloadError("%s: %r is not one of %s" % (key, v, ", ".join(choices)))
    return v


def payload_field(d: "dict[str, Any]", key: "str", kind: "type") -> "Any":
    """``d[key]``, of ``kind`` (``str``: any string, empty too; ``bool``; ``dict``: an object)."""
    v = d.get(key)
    if not isinstance(v, kind):
        raise PayloadError("%s: expected %s" % (key, {str: "a string", bool: "true or false", dict: "an object"}[kind]))
    return v


def run_entry(host: "str", event: "str", budget: "float",
              answer: "Callable[[str, bytes], tuple[str | None, str, Any, Iterable[Callable[[], Any]]]]",
              limit: "int") -> "NoReturn":
    """A per-call host's hook entry (Codex CLI's, Gemini CLI's): ``answer(event, stdin)`` under :func:`run_hook`,
    logged as ``<host>:<event>``; a payload that is not the host's (:class:`PayloadError`) is one log line."""
    def call(raw: "bytes") -> "Answer":
        try:
            out, outcome, sid, after = answer(event, raw)
        except PayloadError as e:
            return None, "bad payload: %s" % str(e)[:120], None, (), None
        return out, outcome, sid, after, None

    run_hook(host + ":" + event, budget, call, limit)
