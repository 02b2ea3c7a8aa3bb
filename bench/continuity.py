"""The continuity benchmark (issue 24): five failure scenarios and an ordinary replay, through the real hooks.

    python bench/continuity.py [--control | --both] [--json] [--keep]
    python bench/continuity.py --cost N

Runs five failure scenarios (a process crash, the environment changed under the checkpoint, a side
effect of unknown outcome, a partly completed task, a crash before any checkpoint) and a replay of an
ordinary session, each in a throwaway HOME and git repo against a counting HTTP server on 127.0.0.1,
with a scripted model that redoes everything its plan names through the real hooks.  Prints, per
scenario, the side effects attempted again, executed again (must be 0), held, and the handoff's
claims confirmed / contradicted.  Exit 0 when nothing was executed twice and nothing ordinary was
held, else 1.  ``--control`` runs the same with the hold switched off (to see what it prevents);
``--both`` the hold, then the control (the exit status is the hold's); ``--json`` prints the rows as
JSON (``{"hold": [...], "control": [...]}`` with ``--both``); ``--keep`` keeps the throwaway worlds.

``--cost N``: instead, the added wall time of a classified call, N pairs (A, B, A, B …):
PreToolUse of a POST with a new body each time, and of ``npm publish`` (its key takes HEAD
and the work-tree state: one ``git status``), each against PreToolUse of ``ls`` (unclassified);
PostToolUse after a recorded intent against one after ``ls``.  The median of the paired
differences, in ms.

How it works:
Each scenario runs in a throwaway HOME, state dir and git repository (with a bare
``origin``), against a counting HTTP server on 127.0.0.1 that stands in for the
APIs, the channel and the registry (``effects_local_exempt`` is off, so 127.0.0.1
counts like a remote host).  A scripted model makes tool calls the way Claude Code
does: the installed hook command gets PreToolUse (with the call's row already in the
transcript); a call it lets through is run for real by ``bash``, then PostToolUse or
PostToolUseFailure reports it; a crash is a session that stops reporting.  The
successor (a new session in the same project, as after a restart, a rotation or a
recovery) is scripted to redo *everything* its plan names.

Per scenario: side effects attempted again, executed again (what the server counted
twice: must be 0), held, and the handoff's claims confirmed / contradicted
(handoff.check_claims on the record the hooks wrote).  A sixth row replays an ordinary
session (new commits pushed, a commit re-pushed, a version bumped and published
once, reads): nothing may be held there.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from cc_continuity import ledger  # noqa: E402
from cc_continuity.install import settings as install_settings  # noqa: E402
from cc_continuity.rehearse import MODEL  # noqa: E402
from cc_continuity.rotation import handoff  # noqa: E402

APP = REPO  # the hooks import cc_continuity from this checkout
DEAD_PID = 2 ** 22 + 4242


class Counter:
    """A local HTTP server that counts each (method, path, body) it receives (and answers after ``delay_s``)."""

    def __init__(self, delay_s=0.0):
        self.counts = {}
        self.lock = threading.Lock()
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with counter.lock:
                    k = (self.command, self.path, body)
                    counter.counts[k] = counter.counts.get(k, 0) + 1
                if delay_s:
                    time.sleep(delay_s)  # a slow upload: long enough to kill the client mid-call
                self.send_response(201 if self.command != "GET" else 200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def duplicates(self):
        """Writes the server received more than once."""
        return sum(n - 1 for (m, _, _), n in self.counts.items() if m != "GET" and n > 1)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class World:
    """One project, its state dir and HOME, and the hooks as Claude Code runs them."""

    def __init__(self, work, hold=True):
        self.work = work
        self.home = os.path.join(work, "home")
        self.cc = os.path.join(work, "cc")
        self.root = os.path.join(work, "proj")
        self.remote = os.path.join(work, "origin.git")
        for d in (self.home, self.root):
            os.makedirs(d)
        os.makedirs(self.cc, mode=0o700)
        with open(os.path.join(self.cc, "config.json"), "w") as f:
            json.dump({"effects_local_exempt": False, "effects_hold": hold, "tmux": False, "notify_events": []}, f)
        self.env = dict(os.environ, HOME=self.home, CC_CONTINUITY_HOME=self.cc, CLAUDE_PROJECT_DIR=self.root,
                        CLAUDE_PID=str(DEAD_PID), GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@example.com",
                        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@example.com")
        for k in ("CC_CONTINUITY", "CLAUDE_CONFIG_DIR", "CC_CONTINUITY_UNATTENDED", "TMUX", "TMUX_PANE"):
            self.env.pop(k, None)
        self.hook_cmd = [sys.executable, "-S", "-c", install_settings.boot_code(APP)]
        self.git("init", "-q", "-b", "main")
        self.write("README.md", "bench\n")
        # The scenario's test suite needs nothing but the standard library: the bench runs where pytest may
        # not be installed (the app's own venv; a fresh clone run by README line 2, whose PATH python3 has none).
        self.write("tests/test_ok.py", "import unittest\n\n\nclass Ok(unittest.TestCase):\n"
                   "    def test_ok(self):\n        self.assertTrue(True)\n")
        self.write("dist/pkg-1.0.0.tgz", "package 1.0.0\n")
        self.git("add", "-A")
        self.git("commit", "-qm", "initial")
        subprocess.run(["git", "init", "-q", "--bare", self.remote], check=True, capture_output=True)
        self.git("remote", "add", "origin", self.remote)
        self.git("push", "-q", "origin", "main")
        self.held = 0
        self.sessions = {}

    def git(self, *args):
        return subprocess.run(["git", *args], cwd=self.root, env=getattr(self, "env", None), check=True,
                              capture_output=True).stdout

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def _transcript(self, sid):
        munged = "".join(c if c.isascii() and c.isalnum() else "-" for c in self.root)
        p = os.path.join(self.home, ".claude", "projects", munged, sid + ".jsonl")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def _row(self, sid, content):
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 8000,
                 "output_tokens": 50}
        row = {"type": "assistant", "uuid": str(uuid.uuid4()), "sessionId": sid, "cwd": self.root,
               "version": "2.1.332", "isSidechain": False,
               "message": {"id": "msg_" + uuid.uuid4().hex[:20], "role": "assistant", "model": MODEL,
                           "content": [content], "usage": usage, "stop_reason": "tool_use"}}
        with open(self._transcript(sid), "a") as f:
            f.write(json.dumps(row, separators=(",", ":")) + "\n")

    def hook(self, event, sid, **fields):
        p = {"session_id": sid, "transcript_path": self._transcript(sid), "cwd": self.root, "hook_event_name": event,
             "permission_mode": "bypassPermissions"}
        p.update(fields)
        res = subprocess.run(self.hook_cmd + [event], input=json.dumps(p).encode(), env=self.env, cwd=self.root,
                             capture_output=True, timeout=60)
        out = res.stdout.decode()
        return json.loads(out) if out.strip() else None

    def start(self, sid):
        self._row(sid, {"type": "text", "text": "Starting."})
        self.hook("SessionStart", sid, source="startup", model=MODEL)
        self.sessions[sid] = True

    def bash(self, sid, command, report=True):
        """One Bash call: PreToolUse; if let through, run it, then report it (unless ``report`` is False: a crash)."""
        tid = "toolu_bench_" + uuid.uuid4().hex[:16]
        self._row(sid, {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}})
        out = self.hook("PreToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid)
        dec = ((out or {}).get("hookSpecificOutput") or {}).get("permissionDecision")
        if dec in ("deny", "ask"):
            self.held += 1
            return "held"
        res = subprocess.run(["bash", "-c", command], cwd=self.root, env=self.env, capture_output=True, timeout=120)
        if not report:
            return "ran, unreported"
        if res.returncode == 0:
            self.hook("PostToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid,
                      tool_response={"stdout": res.stdout.decode()[-200:], "stderr": "", "interrupted": False})
        else:
            self.hook("PostToolUseFailure", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid,
                      error="Exit code %d\n%s" % (res.returncode, res.stderr.decode()[-200:]), is_interrupt=False)
        return "ran"

    def edit(self, sid, rel, text):
        """An Edit tool call (the file written, the call reported)."""
        self.write(rel, text)
        tid = "toolu_bench_" + uuid.uuid4().hex[:16]
        path = os.path.join(self.root, rel)
        self._row(sid, {"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": path}})
        self.hook("PostToolUse", sid, tool_name="Edit", tool_input={"file_path": path, "old_string": "",
                                                                    "new_string": text},
                  tool_use_id=tid, tool_response={"filePath": path})

    def claims_of(self, sid, handoff_text):
        """The handoff's claims checked against session ``sid``'s tool record: (confirmed, contradicted)."""
        got = handoff.check_claims(handoff_text, handoff.tool_lines(ledger.read(self._ledger(sid))))
        return (sum(1 for g in got if g["status"] == "confirmed"), sum(1 for g in got if g["status"] != "confirmed"))

    def _ledger(self, sid):
        link = os.path.join(self.cc, "projects")
        for key in os.listdir(link):
            p = os.path.join(link, key, "ids", sid)
            if os.path.exists(p):
                return os.path.join(os.path.realpath(p), "ledger.jsonl")
        raise FileNotFoundError(sid)


def _sid():
    return str(uuid.uuid4())


def _redo(w, sid, plan):
    """The successor redoes every call of the plan; (attempted again, held) among those done before."""
    before = w.held
    for cmd in plan:
        w.bash(sid, cmd)
    return len(plan), w.held - before


TESTS = "python3 -m unittest discover -q -s tests"  # the scenario repo's test run (a "tests pass" claim's evidence)


def scenario_crash(w, url):
    s1, s2 = _sid(), _sid()
    plan = ["curl -s -X POST -d 'release v1 is out' %s/notify" % url, "git push -q origin main"]
    w.start(s1)
    w.bash(s1, TESTS)
    w.write("CHANGES.md", "v1\n")
    w.git("add", "-A")
    w.git("commit", "-qm", "v1")
    for cmd in plan:
        w.bash(s1, cmd)
    claims_ = w.claims_of(s1, "All tests pass. Pushed the release commit and notified the channel.")
    w.start(s2)  # the process was killed; a new one in the same project redoes the plan
    attempted, held = _redo(w, s2, plan)
    return attempted, held, claims_


def scenario_environment_changed(w, url):
    s1, s2 = _sid(), _sid()
    plan = ["curl -s -X POST -d 'title=ship v2' %s/issues" % url]
    w.start(s1)
    w.bash(s1, TESTS)
    w.edit(s1, "src/app.py", "x = 2\n")  # changed after the test run: the claim is older than the code
    for cmd in plan:
        w.bash(s1, cmd)
    claims_ = w.claims_of(s1, "The tests pass and the issue is filed.")
    w.write("README.md", "edited by hand under the checkpoint\n")
    w.git("commit", "-qam", "a hand commit")
    w.start(s2)
    attempted, held = _redo(w, s2, plan)
    return attempted, held, claims_


def scenario_unknown_outcome(w, url):
    s1, s2 = _sid(), _sid()
    cmd = "curl -s -X POST -d 'deploy 1.0.0' %s/deploys" % url
    w.start(s1)
    w.bash(s1, cmd, report=False)  # it reached the server; the process died before PostToolUse
    w.start(s2)
    attempted, held = _redo(w, s2, [cmd])
    return attempted, held, None


def scenario_partly_done(w, url):
    s1, s2 = _sid(), _sid()
    plan = ["curl -s -X POST -d 'step=%s' %s/steps" % (n, url) for n in ("a", "b", "c")]
    w.start(s1)
    for cmd in plan[:2]:
        w.bash(s1, cmd)
    claims_ = w.claims_of(s1, "Steps a and b are done and pushed.")
    w.start(s2)
    before = w.held
    for cmd in plan:
        w.bash(s2, cmd)
    return 2, w.held - before, claims_  # (c was never done: running it is no repeat)


def scenario_crash_before_checkpoint(w, url):
    s1, s2 = _sid(), _sid()
    cmd = "curl -s -X PUT --data-binary @dist/pkg-1.0.0.tgz %s/registry/pkg/1.0.0" % url
    w.start(s1)
    w.bash(s1, cmd)
    w.start(s2)  # no checkpoint ever: the next session recovers it and redoes the plan
    attempted, held = _redo(w, s2, [cmd])
    return attempted, held, None


def replay_ordinary(w, url):
    """An ordinary session: commits pushed, a commit re-pushed, a version bumped and published once, reads."""
    s1 = _sid()
    w.start(s1)
    before = w.held
    for i in range(2):
        w.write("src/mod%d.py" % i, "v = %d\n" % i)
        w.git("add", "-A")
        w.git("commit", "-qm", "change %d" % i)
        w.bash(s1, "git push -q origin main")
    w.bash(s1, "git push -q origin main")  # the same commit again: the remote has it
    w.write("VERSION", "1.0.1\n")
    w.write("dist/pkg-1.0.1.tgz", "package 1.0.1\n")
    w.git("add", "-A")
    w.git("commit", "-qm", "1.0.1")
    w.bash(s1, "curl -s -X PUT --data-binary @dist/pkg-1.0.1.tgz %s/registry/pkg/1.0.1" % url)
    for cmd in ("curl -s %s/registry/pkg" % url, "git log --oneline -n 3", "curl -s %s/status" % url,
                "git fetch -q origin", TESTS):
        w.bash(s1, cmd)
        w.bash(s1, cmd)  # reads, twice
    return 0, w.held - before, None


SCENARIOS = [
    ("process crash", scenario_crash),
    ("environment changed", scenario_environment_changed),
    ("side effect of unknown outcome", scenario_unknown_outcome),
    ("partly completed task", scenario_partly_done),
    ("crash before any checkpoint", scenario_crash_before_checkpoint),
    ("ordinary session (replay)", replay_ordinary),
]


def run(keep=False, hold=True):
    """Every scenario in its own world; a list of result rows.  ``hold=False``: the control (no holds)."""
    rows = []
    for name, fn in SCENARIOS:
        work = tempfile.mkdtemp(prefix="cc-continuity-bench-")
        server = Counter()
        try:
            w = World(work, hold)
            t0 = time.monotonic()
            attempted, held, cl = fn(w, server.url)
            rows.append({"scenario": name, "attempted_again": attempted, "executed_again": server.duplicates(),
                         "held": held, "claims_confirmed": None if cl is None else cl[0],
                         "claims_contradicted": None if cl is None else cl[1],
                         "seconds": round(time.monotonic() - t0, 1)})
        finally:
            server.close()
            if not keep:
                shutil.rmtree(work, ignore_errors=True)
    return rows


def table(rows):
    head = "| scenario | attempted again | executed again | held | claims confirmed / contradicted |"
    out = [head, "|---|---|---|---|---|"]
    for r in rows:
        cl = "—" if r["claims_confirmed"] is None else "%d / %d" % (r["claims_confirmed"], r["claims_contradicted"])
        out.append("| %s | %d | %d | %d | %s |" % (r["scenario"], r["attempted_again"], r["executed_again"],
                                                 r["held"], cl))
    return "\n".join(out)



def _pre(w, sid, command):
    tid = "toolu_cost_" + uuid.uuid4().hex[:16]
    w._row(sid, {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}})
    t0 = time.perf_counter()
    w.hook("PreToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid)
    return time.perf_counter() - t0, tid


def _post(w, sid, command, tid):
    t0 = time.perf_counter()
    w.hook("PostToolUse", sid, tool_name="Bash", tool_input={"command": command}, tool_use_id=tid,
           tool_response={"stdout": "", "stderr": "", "interrupted": False})
    return time.perf_counter() - t0


def cost(n):
    work = tempfile.mkdtemp(prefix="cc-continuity-cost-")
    try:
        w = World(work)
        for i in range(30):
            w.write("src/f%d.py" % i, "x = %d\n" % i)  # a work tree with some changes for git status to list
        sid = str(uuid.uuid4())
        w.start(sid)
        out = {}
        for name, make in (("POST, new body", lambda i: "curl -s -X POST -d n=%d http://api.example.com/x" % i),
                           ("npm publish (git state)", lambda i: "npm publish --tag t%d" % i)):
            pre, post = [], []
            for i in range(n + 3):
                a, tid_a = _pre(w, sid, make(i))
                b, tid_b = _pre(w, sid, "ls")
                pa = _post(w, sid, make(i), tid_a)
                pb = _post(w, sid, "ls", tid_b)
                if i >= 3:  # warm-up
                    pre.append((a - b) * 1000)
                    post.append((pa - pb) * 1000)
            out[name] = {"pre_added_ms": round(statistics.median(pre), 1), "post_added_ms": round(statistics.median(post), 1),
                         "runs": n, "load": "%.2f" % os.getloadavg()[0]}
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bad(rows):
    """Something executed twice, or an ordinary call held."""
    return any(r["executed_again"] for r in rows) or any(r["held"] for r in rows if r["attempted_again"] == 0)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/continuity.py", description=__doc__.split("\n\n")[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--control", action="store_true", help="the same with effects_hold off (no holds)")
    which.add_argument("--both", action="store_true", help="with the hold, then the control")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the throwaway worlds for inspection")
    ap.add_argument("--cost", type=int, metavar="N", help="measure the added cost of a classified call instead")
    args = ap.parse_args(argv)
    if args.cost:
        print(json.dumps(cost(args.cost), indent=1))
        return 0
    rows = run(keep=args.keep, hold=not args.control)
    if not args.both:
        sys.stdout.write((json.dumps(rows, indent=2) if args.json else table(rows)) + "\n")
        return 1 if bad(rows) else 0
    control = run(keep=args.keep, hold=False)
    if args.json:
        print(json.dumps({"hold": rows, "control": control}, indent=2))
    else:
        print("with the hold (as installed):")
        print(table(rows))
        print("\ncontrol, effects_hold off:")
        print(table(control))
    return 1 if bad(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
