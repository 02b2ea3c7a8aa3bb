"""A tiny ntfy stand-in: a real HTTP server on 127.0.0.1 that records every request."""

import http.server
import threading
import time


class Ntfy:
    """A tiny ntfy stand-in that records every request exactly as received.

    ``status`` is the answer code, ``delay`` how long to stall before answering.
    The socket is bound at once but only listens after ``start()``, so until
    then connections are refused on a port nobody else can take.
    """

    def __init__(self):
        owner = self
        self.requests = []
        self.status = 200
        self.delay = 0.0
        self.headers = {}
        self.release = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers),
                                       "body": body.decode("utf-8")})
                if owner.delay:
                    owner.release.wait(owner.delay)
                self.send_response(owner.status)
                for k, v in owner.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server.daemon_threads = True
        self.server.server_bind()
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d/cc-demo-topic" % self.port
        self.thread = None

    def start(self):
        self.server.server_activate()
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        if self.thread:
            self.server.shutdown()
        self.server.server_close()

    def wait_for(self, n, timeout=15.0):
        deadline = time.time() + timeout
        while len(self.requests) < n and time.time() < deadline:
            time.sleep(0.02)
        return self.requests
