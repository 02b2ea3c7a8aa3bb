"""A model server's stand-in on 127.0.0.1: fixed answers per request line, every request recorded
(tests/serverwindow, tests/commands/test_configure.py)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class StandIn:
    """A server answering ``routes``: ``{"GET /props": (status, body, content type, delay_s)}`` (or a function of
    the request's headers, lower-cased, giving one); 404 otherwise.
    ``seen``: (method, path, headers) of every request."""

    def __init__(self, routes):
        self.routes, self.seen = routes, []
        stand = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                stand.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                route = stand.routes.get("%s %s" % (self.command, self.path), (404, {"error": "not found"}, None, 0))
                if callable(route):  # an answer that depends on the request's headers (a key asked for)
                    route = route(stand.seen[-1][2])
                status, doc, ctype, delay = route
                if delay:
                    time.sleep(delay)
                data = doc.encode() if isinstance(doc, str) else json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", ctype or "application/json")
                if status in (301, 302, 307):
                    self.send_header("location", doc)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def paths(self):
        return ["%s %s" % (m, p) for m, p, _, _ in self.seen]


@pytest.fixture
def stand_in():
    """``make(routes)`` -> a started :class:`StandIn` (all closed at the test's end)."""
    made = []

    def make(routes):
        s = StandIn(routes)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def ok(doc, delay=0):
    return 200, doc, None, delay
