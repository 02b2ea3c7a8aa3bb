"""JSON through the C accelerator directly.

``import json`` drags in ``re`` and ``enum`` (~3 ms), a third of the
interpreter's own start.  The hook fast path runs on every tool call, so it
talks to ``_json`` itself and only falls back to ``json`` when the
accelerator is missing (other Pythons).
"""

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]


class _Ctx:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: "dict[str, object] | None" = None

    @staticmethod
    def parse_constant(name: "str") -> "float":
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


class DecodeError(ValueError):
    """Raised for anything that is not exactly one JSON document."""


_WS = " \t\n\r"

if _json is not None:
    _ctx = _Ctx()
    _memo: "dict[str, object]" = {}
    _ctx.memo = _memo
    _scan = _json.make_scanner(_ctx)  # type: ignore[arg-type]  # the stub wants a scanner; any context quacks
    _encode = _json.make_encoder(
        None, None, _json.encode_basestring_ascii, None, ":", ",", False, False, True  # type: ignore[arg-type]
    )
    _encode_pretty = None

    def loads(s: "str | bytes | bytearray") -> "Any":
        """Parse one JSON document; trailing garbage is an error."""
        if isinstance(s, (bytes, bytearray)):
            s = s.decode("utf-8")
        i = 0
        n = len(s)
        while i < n and s[i] in _WS:
            i += 1
        try:
            obj, end = _scan(s, i)
        except StopIteration:
            raise DecodeError("expected a JSON value at offset %d" % i) from None
        except SystemError:
            # CPython's scanner reports errors through json.decoder, which it only
            # looks up in sys.modules; without it the error surfaces as SystemError.
            # Ask the real parser for the precise message (error path only).
            raise DecodeError(_describe_error(s)) from None
        finally:
            _memo.clear()
        while end < n and s[end] in _WS:
            end += 1
        if end != n:
            raise DecodeError("extra data at offset %d" % end)
        return obj

    def _describe_error(s: "str") -> "str":
        import json

        try:
            json.loads(s)
        except ValueError as e:
            return str(e)
        return "invalid JSON"

    def dumps(obj: "object") -> "str":
        """Compact, ASCII-only JSON on one line (safe for JSONL)."""
        return "".join(_encode(obj, 0))

else:  # pragma: no cover
    import json as _stdjson

    def loads(s: "str | bytes | bytearray") -> "Any":
        try:
            return _stdjson.loads(s)
        except ValueError as e:
            raise DecodeError(str(e)) from None

    def dumps(obj: "object") -> "str":
        return _stdjson.dumps(obj, separators=(",", ":"))
