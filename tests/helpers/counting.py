"""A counting HTTP server on 127.0.0.1: how many times each path was asked for (holds, shared effects)."""

import http.server
import threading


class Counter:
    """Counts the requests for each path, whatever the method."""

    def __init__(self):
        self.hits = {}
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _count(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                owner.hits.setdefault(self.path.split("?")[0], []).append(self.command)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _count

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
