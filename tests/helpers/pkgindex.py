"""A package index on 127.0.0.1 (the simple API, PEP 503), serving wheels made here, or refusing.

``wheel(dir, name, version, files)`` makes a real wheel (a zip with the dist-info pip and uv check);
``PackageIndex(dir)`` serves every wheel in ``dir`` under ``/simple/<name>/`` with its sha256 in the
link; ``status=403`` refuses every request, as an index that will not serve this user does.  Every
request is recorded (``.requests``: method and path).
"""

import base64
import hashlib
import http.server
import os
import re
import threading
import zipfile


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(where, name, version, files):
    """A pure-Python wheel ``<name>-<version>-py3-none-any.whl`` in ``where`` holding ``files``
    ({path: text}); returns (path, sha256 hex)."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = "%s-%s.dist-info" % (dist, version)
    content = dict(files)
    content[info + "/METADATA"] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    content[info + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: cc-continuity-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join("%s,%s,%d\n" % (p, _record_hash(t.encode()), len(t.encode())) for p, t in content.items())
    content[info + "/RECORD"] = record + "%s/RECORD,,\n" % info
    path = os.path.join(str(where), "%s-%s-py3-none-any.whl" % (dist, version))
    with zipfile.ZipFile(path, "w") as z:
        for p, t in content.items():
            z.writestr(p, t)
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


class PackageIndex:
    def __init__(self, directory, status=200):
        self.directory = str(directory)
        self.status = status
        self.requests = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.requests.append(("GET", self.path))
                if owner.status != 200:
                    return self._send(owner.status, b"refused by this index\n", "text/plain")
                parts = [p for p in self.path.split("?")[0].split("/") if p]
                if len(parts) == 2 and parts[0] == "simple":
                    want = re.sub(r"[-_.]+", "-", parts[1]).lower()
                    links = []
                    for fname in sorted(os.listdir(owner.directory)):
                        if re.sub(r"[-_.]+", "-", fname.split("-")[0]).lower() == want:
                            with open(os.path.join(owner.directory, fname), "rb") as f:
                                digest = hashlib.sha256(f.read()).hexdigest()
                            links.append('<a href="/files/%s#sha256=%s">%s</a>' % (fname, digest, fname))
                    if not links:
                        return self._send(404, b"not here\n", "text/plain")
                    body = "<!DOCTYPE html><html><body>%s</body></html>" % "\n".join(links)
                    return self._send(200, body.encode(), "text/html")
                if len(parts) == 2 and parts[0] == "files" and "/" not in parts[1]:
                    path = os.path.join(owner.directory, parts[1])
                    if os.path.isfile(path):
                        with open(path, "rb") as f:
                            return self._send(200, f.read(), "application/octet-stream")
                return self._send(404, b"not here\n", "text/plain")

            def _send(self, code, body, ctype):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/simple" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def use_index(home, url):
    """The user's own pip.conf and uv.toml in ``home`` name ``url`` as the only index (a machine's
    /etc/pip.conf extra index and find-links are overridden by the user's file, as pip reads them)."""
    empty = os.path.join(str(home), ".no-wheels")
    os.makedirs(empty, exist_ok=True)
    pip_dir = os.path.join(str(home), ".config", "pip")
    os.makedirs(pip_dir, exist_ok=True)
    with open(os.path.join(pip_dir, "pip.conf"), "w") as f:
        f.write("[global]\nindex-url = %s\nextra-index-url = %s\nfind-links = %s\nno-cache-dir = true\n"
                "timeout = 5\nretries = 0\n" % (url, url, empty))
    uv_dir = os.path.join(str(home), ".config", "uv")
    os.makedirs(uv_dir, exist_ok=True)
    with open(os.path.join(uv_dir, "uv.toml"), "w") as f:
        f.write('no-cache = true\n[pip]\nindex-url = "%s"\n' % url)
