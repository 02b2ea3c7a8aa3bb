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
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, whichever folder a test is in
REPO = os.path.dirname(TESTS)


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

    def pid(self):
        """The fake prompt's own pid (it draws it on its first line)."""
        for line in self.pane.capture().splitlines():
            if line.startswith("fake-prompt pid "):
                return int(line.split()[2])
        raise RuntimeError("fake prompt pid not on screen")


class Keyboard:
    """A person at a terminal: a real tmux client attached through a pty, typing into it.

    Keys typed here reach the pane the way a user's do (through a client, so
    tmux stamps ``session_activity``), unlike ``send-keys``.
    """

    def __init__(self, tmux_cmd, session, env=None, size=(200, 50)):
        import fcntl
        import pty
        import struct
        import termios

        pid, fd = pty.fork()
        if pid == 0:  # child: become the attached client
            try:
                # A terminal type of its own: tmux will not attach a client without one, and a run
                # with no TERM (cron, a bare CI job, README line 2 under env -i) must type all the same.
                env = dict(env or os.environ)
                env.setdefault("TERM", "xterm-256color")
                os.execvpe(tmux_cmd[0], tmux_cmd + ["attach-session", "-t", session], env)
            finally:
                os._exit(127)
        # The terminal's size: tmux fits the window to its clients, so it must match the pane's.
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.pid, self.fd = pid, fd
        self._drain_until = 0.0
        import threading

        self._stop = False
        self.output = bytearray()  # what the client drew (its last MiB): tmux's own messages show here
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        """Keep reading the client's output so tmux never blocks on a full pty."""
        import select

        while not self._stop:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if ready:
                    got = os.read(self.fd, 65536)
                    if not got:
                        return
                    self.output += got
                    del self.output[:-(1 << 20)]
            except OSError:
                return

    def type(self, text, cps=12.0):
        """Type ``text`` at ``cps`` characters a second (a person: ~8-15)."""
        for ch in text:
            os.write(self.fd, ch.encode("utf-8"))
            time.sleep(1.0 / cps)

    def press(self, data):
        os.write(self.fd, data)

    def close(self):
        self._stop = True
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
        # The reader first: once closed, the fd's number is free and the next file opened gets it (a test's
        # event log, read right after this); a reader still between its select and its read would read that.
        # With the client gone its read ends at once (EIO); one that does not end keeps the fd open.
        self._reader.join(timeout=10)
        if self._reader.is_alive():
            return
        try:
            os.close(self.fd)
        except OSError:
            pass


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

    def keyboard(self, session="work"):
        """A client attached to ``session`` that types like a person (see :class:`Keyboard`)."""
        return Keyboard([self.tmux_bin, "-S", self.socket, "-f", "/dev/null"], session)

    def kill(self):
        self.tmux("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
