"""Test helpers: a private tmux server and the fake Claude Code prompt running in it."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

FAKE_PROMPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_prompt.py")


class FakeRun:
    """One fake_prompt.py process in a tmux pane, and the files it records."""

    def __init__(self, server, pane_id, workdir):
        from cc_continuity.tmux import Pane

        self.server = server
        self.pane_id = pane_id
        self.pane = Pane(server.socket, pane_id)
        files = self.files(workdir)
        self.out, self.raw, self.err = files["out"], files["raw"], files["err"]

    @staticmethod
    def files(workdir):
        return {"out": os.path.join(workdir, "events.jsonl"),
                "raw": os.path.join(workdir, "raw.bin"),
                "err": os.path.join(workdir, "fake.err")}

    def events(self, ev=None):
        try:
            with open(self.out, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            rows = []
        return [r for r in rows if ev is None or r["ev"] == ev]

    def submitted(self):
        return [r["line"] for r in self.events("submit")]

    def raw_bytes(self):
        try:
            with open(self.raw, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def wait_events(self, count, ev="submit", timeout=5.0):
        """Wait until at least ``count`` events of kind ``ev`` were recorded."""
        deadline = time.monotonic() + timeout
        while len(self.events(ev)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.events(ev)

    def stderr(self):
        try:
            with open(self.err, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""


class TmuxServer:
    """A private tmux server on its own socket (short path: sun_path is ~108 bytes)."""

    def __init__(self):
        self.tmux_bin = shutil.which("tmux")  # absolute: a test may empty PATH
        if self.tmux_bin is None:
            raise RuntimeError("tmux is required for these tests")
        self.dir = tempfile.mkdtemp(prefix="cct-", dir="/tmp")
        self.socket = os.path.join(self.dir, "sock")

    def tmux(self, *args, check=True):
        res = subprocess.run([self.tmux_bin, "-S", self.socket, "-f", "/dev/null", *args],
                             capture_output=True, text=True, timeout=10)
        if check and res.returncode != 0:
            raise RuntimeError("tmux %s failed: %s" % (" ".join(args), res.stderr.strip()))
        return res.stdout

    def start_fake(self, workdir, *fake_args, session="work"):
        """Run fake_prompt.py in a new 200x50 session; return a FakeRun once it has drawn its box."""
        os.makedirs(workdir, exist_ok=True)
        files = FakeRun.files(workdir)
        cmd = shlex.join([sys.executable, FAKE_PROMPT, "--out", files["out"], "--raw", files["raw"],
                          *fake_args])
        pane_id = self.tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", session,
                            "-P", "-F", "#{pane_id}",
                            "%s 2>%s" % (cmd, shlex.quote(files["err"]))).strip()
        run = FakeRun(self, pane_id, workdir)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            screen = run.pane.capture()
            if "❯" in screen and "───" in screen:
                return run
            time.sleep(0.02)
        raise RuntimeError("fake prompt did not come up: %r / %s" % (screen, run.stderr()))

    def kill(self):
        self.tmux("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
