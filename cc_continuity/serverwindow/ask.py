"""Ask one server for its window: each shape of :mod:`.shapes` in turn, bounded.

One request per shape (Ollama's two), each at most :data:`TIMEOUT_S`, stopping at the first answer in
shape.  A server that refuses the connection or does not answer in time is not asked again (every other
shape would wait as long): the whole ask then takes one timeout.  Other failures (404, HTML from a proxy,
JSON of another shape) move on to the next shape.  A credential is sent only to a server that asked for
one (401 or 403 on a request without it), and only the one the host itself sends to that same URL
(:mod:`.sources`); redirects are not followed (a credential never leaves for another host).
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import requests

from . import shapes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TIMEOUT_S = 2.0        # one request's bound (connect and read)
MAX_BODY = 4 << 20     # an answer read at most this far (a models list of a big server is ~100 KiB)


class Asked:
    """The outcome: ``answer`` (a :class:`.shapes.Answer`, or None), ``tried`` (one line per request: what it
    got), ``seconds`` (the whole ask) and ``why`` (when nothing was found: the last reason)."""

    __slots__ = ("answer", "tried", "seconds", "why")

    def __init__(self) -> None:
        self.answer: shapes.Answer | None = None
        self.tried: list[str] = []
        self.seconds = 0.0
        self.why = ""

    def to_json(self) -> dict[str, Any]:
        return {"answer": self.answer.to_json() if self.answer else None, "tried": self.tried,
                "seconds": round(self.seconds, 3), "why": self.why}


def root_of(base_url: str) -> str:
    """The server's root for ``base_url`` as a host is given it (``http://h:8000``, ``http://h:8000/v1``,
    a proxy's ``https://h/llm/v1/``): without a trailing ``/v1`` and slash."""
    url = base_url.strip().rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def ask(base_url: str, model: str | None, credential: Mapping[str, str] | None = None,
        timeout_s: float = TIMEOUT_S) -> Asked:
    """What the server at ``base_url`` says of the context it runs ``model`` with (the first shape it answers
    in); ``credential``: the headers the host sends it, used only after a 401/403."""
    out, t0 = Asked(), time.monotonic()
    root = root_of(base_url)
    if urlsplit(root).scheme not in ("http", "https"):
        out.why = "not an http(s) URL: %r" % base_url
        return out
    with requests.Session() as http:
        http.trust_env = False  # no proxy or netrc from the environment: the URL is the user's, as given
        for shape in shapes.SHAPES:
            if shape.needs_model and not model:
                continue
            got = _one(http, root, shape, model, credential, timeout_s, out)
            if got == "stop":
                break
            if isinstance(got, shapes.Answer):
                out.answer = got
                if got.server == "Ollama" and got.kind == shapes.NOT_LOADED and model:
                    more = _one(http, root, shapes.OLLAMA_SHOW, model, credential, timeout_s, out)
                    if isinstance(more, shapes.Answer):
                        more.note = "not loaded; %s" % more.note
                        out.answer = more
                break
    out.seconds = time.monotonic() - t0
    return out


def _one(http: Any, root: str, shape: shapes.Shape, model: str | None, credential: Mapping[str, str] | None,
         timeout_s: float, out: Asked) -> shapes.Answer | str | None:
    """One shape's request (again with the credential after a 401/403): its answer, "stop" (the server is
    down or silent), or None (not this shape)."""
    where = shape.url_path(model)
    url = root + where
    headers = {"accept": "application/json"}
    for attempt in (0, 1):
        try:
            r = http.request(shape.method, url, headers=headers, timeout=timeout_s, allow_redirects=False,
                             stream=True, json={"model": model} if shape.body else None)
        except requests.Timeout:
            out.tried.append("%s %s: no answer in %.0f s" % (shape.method, where, timeout_s))
            out.why = "the server did not answer in %.0f s" % timeout_s
            return "stop"
        except requests.RequestException as e:
            out.tried.append("%s %s: %s" % (shape.method, where, type(e).__name__))
            out.why = "no server answers at %s (%s)" % (root, type(e).__name__)
            return "stop"
        with r:
            if r.status_code in (401, 403) and attempt == 0 and credential:
                out.tried.append("%s %s: %d; again with the host's credential" % (shape.method, where, r.status_code))
                headers = dict(headers, **credential)
                continue
            body = r.raw.read(MAX_BODY + 1, decode_content=True) if r.status_code == 200 else b""
        break
    if r.status_code != 200:
        out.tried.append("%s %s: HTTP %d" % (shape.method, where, r.status_code))
        out.why = "HTTP %d from %s" % (r.status_code, where) if r.status_code in (401, 403) else out.why
        return None
    try:
        doc = json.loads(body[:MAX_BODY].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        out.tried.append("%s %s: not JSON (%s)" % (shape.method, where, r.headers.get("content-type", "?")))
        return None
    got = shape.read(doc, model, where)
    out.tried.append("%s %s: %s" % (shape.method, where, "%s %s" % (got.server, got.tokens or got.kind) if got
                                    else "not this shape"))
    return got
