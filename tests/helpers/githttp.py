"""A real git server over smart HTTP on 127.0.0.1: ``git http-backend`` behind a tiny CGI bridge.

Claude Code takes a git marketplace only as an ``https://…/x.git`` / ``http://…/x.git`` URL or
an ``user@host:path`` (ssh) one, and clones it shallow, which git's dumb HTTP cannot serve; so
the tests serve bare repositories the way a git host does.
"""

import http.server
import os
import subprocess
import threading


class GitHTTP:
    """``with GitHTTP(root) as srv: srv.url("cc.git")`` serves every bare repository under ``root``."""

    def __init__(self, root):
        self.root = root
        backend = os.path.join(subprocess.run(["git", "--exec-path"], capture_output=True, text=True,
                                              check=True).stdout.strip(), "git-http-backend")
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _cgi(self):
                path, _, query = self.path.partition("?")
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                env = {"GIT_PROJECT_ROOT": outer.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                       "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                       "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": os.environ.get("PATH", "")}
                out = subprocess.run([backend], input=body, env=env, capture_output=True, timeout=60).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _cgi

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, name):
        return "http://127.0.0.1:%d/%s" % (self.server.server_address[1], name)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
