"""Ask the real Codex binary, through ``codex app-server`` (stdio JSON-RPC), what it makes of a hooks.json.

``hooks/list`` names each entry's key, source, command, ``currentHash`` and trust: the
hash Codex itself wants in ``trusted_hash``.  Asked in a throwaway ``HOME`` and
``CODEX_HOME`` holding only a copy of the hooks.json bytes and a config that turns off
what would go on the network: a Codex start writes its own state where it runs (an
installation id, sqlite databases, its system skills), and none of that belongs in the
user's CODEX_HOME because we asked; no repository folder is loaded either.  The hash
does not depend on where the file lives, so the scratch copy's hashes are the real one's.
Bounded: the process is killed at ``timeout`` whatever it does.
"""

import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from typing import Any

ENV_CODEX = "CC_CONTINUITY_CODEX"  # absolute path of the codex to ask, when it is not on PATH
SCRATCH_CONFIG = ('check_for_update_on_startup = false\nanalytics.enabled = false\nfeatures.plugins = false\n')
TIMEOUT_S = 10.0


class AppServerError(RuntimeError):
    """Codex did not answer as 0.171 does (no binary, no answer in time, an error); the message says which."""


def find_codex(env: Mapping[str, str]) -> str | None:
    """``$CC_CONTINUITY_CODEX`` (must be an executable file), else ``codex`` on PATH, else None."""
    given = env.get(ENV_CODEX)
    if given:
        if os.path.isabs(given) and os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        raise AppServerError("%s=%r is not an executable file given by absolute path" % (ENV_CODEX, given))
    return shutil.which("codex", path=env.get("PATH") or os.defpath)


def hooks_list(codex: str, hooks_json: bytes, timeout: float = TIMEOUT_S) -> "tuple[str, list[dict[str, Any]]]":
    """``(which Codex answered, [entry])`` for ``hooks_json`` as the user's hooks.json; an entry's ``key``
    has the hooks.json path cut off (``stop:0:0``)."""
    with tempfile.TemporaryDirectory(prefix="cc-continuity-codex-") as scratch:
        home, cwd = os.path.join(scratch, "codex-home"), os.path.join(scratch, "cwd")
        os.mkdir(home, 0o700)
        os.mkdir(cwd, 0o700)
        with open(os.path.join(home, "hooks.json"), "wb") as f:
            f.write(hooks_json)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(SCRATCH_CONFIG)
        env = {"HOME": scratch, "CODEX_HOME": home, "PATH": os.environ.get("PATH", os.defpath),
               "LANG": "C.UTF-8", "TMPDIR": scratch}
        answers = _call(codex, env, cwd, [("initialize", {"clientInfo": {"name": "cc-continuity", "version": "0"}}),
                                          ("hooks/list", {"cwds": [cwd]})], timeout)
        m = re.search(r"/(\d+(?:\.\d+)+)", str(answers[0].get("userAgent") or ""))  # "<our name>/<its version> ..."
        agent = "Codex %s" % m.group(1) if m else "Codex"
        data = answers[1].get("data") or []
        prefix = os.path.join(os.path.realpath(home), "hooks.json") + ":"
        found = []
        for group in data:
            for entry in group.get("hooks") or []:
                if isinstance(entry, dict) and str(entry.get("key", "")).startswith(prefix):
                    found.append(dict(entry, key=entry["key"][len(prefix):]))
        return agent, found


def _call(codex: str, env: "dict[str, str]", cwd: str, calls: "list[tuple[str, dict[str, Any]]]",
          timeout: float) -> "list[dict[str, Any]]":
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen([codex, "app-server"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError as e:
        raise AppServerError("cannot run %s app-server: %s" % (codex, e.strerror or e)) from None
    assert proc.stdin is not None and proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf, results = b"", []
    try:
        for i, (method, params) in enumerate(calls):
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
                              + "\n").encode())
            proc.stdin.flush()
            while True:  # notifications come in between: read lines up to our answer
                line, sep, rest = buf.partition(b"\n")
                if sep:
                    buf = rest
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict) and msg.get("id") == i:
                        break
                    continue
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AppServerError("%s app-server gave no answer to %s within %gs" % (codex, method, timeout))
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AppServerError("%s app-server exited before answering %s" % (codex, method))
                buf += chunk
            if "error" in msg or not isinstance(msg.get("result"), dict):
                raise AppServerError("%s app-server: %s: %s" % (codex, method, msg.get("error")))
            results.append(msg["result"])
        return results
    except OSError as e:
        raise AppServerError("%s app-server: %s" % (codex, e)) from None
    finally:
        sel.close()
        proc.kill()
        proc.wait(5)
        proc.stdin.close()
        proc.stdout.close()
