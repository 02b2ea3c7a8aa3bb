"""SHA-256 from the interpreter's builtin module: ``hashlib`` costs ~9 ms to import (its
OpenSSL binding), too much for a hook that runs on every tool call.

The builtin moved in Python 3.12 (``_sha256`` -> ``_sha2``); both are tried, then hashlib.
"""

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (hot path)
if TYPE_CHECKING:
    from hashlib import sha256  # the builtins have no stubs; this is their signature
else:
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:  # pragma: no cover - depends on the interpreter
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
