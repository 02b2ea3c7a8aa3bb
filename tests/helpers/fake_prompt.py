"""A stand-in for Claude Code's input box, run inside a real tmux pane by the tests.

It draws what cc_continuity.tmux looks for - a ``───`` rule, ``❯ <typed text>``, a
footer saying ``esc to interrupt`` while busy - reads raw keys from its tty and
records everything, so tests can prove what really arrived:

* ``--raw FILE``: every byte read from the tty, appended as is;
* ``--out FILE``: one JSON line per event: ``{"ev": "submit", "line": …}`` for an
  accepted line, ``{"ev": "swallowed", "line": …}`` for Enter pressed while busy
  (like ``/clear`` typed during generation), ``{"ev": "dropped_enter", …}`` for
  an Enter ignored on purpose (``--drop-enter K``).

``--read-delay S`` waits S seconds before handling each read: a program that reads
its keys late, as any does on a loaded machine.

Keys (as Claude Code 2.1.328/2.1.332 handle them, observed): printable text
is inserted at the cursor; Backspace (DEL or ^H) deletes before it, Delete
(``ESC [3~``) after it; C-a/Home and C-e/End move to the start/end; C-u kills to
the start and C-w kills one word back, both into a kill ring (consecutive kills
add up) that C-y yanks back; Enter (CR) submits; other escape sequences and
control bytes are ignored (but recorded in --raw). Submitting ``/clear`` empties the history and
writes ``--started-marker`` ``--marker-delay`` seconds later (what the
successor's SessionStart hook does); any other line writes
``--delivered-marker`` once a ``/clear`` was submitted (what the successor's
UserPromptSubmit hook does for its first prompt).
"""

import argparse
import codecs
import json
import os
import select
import signal
import sys
import termios
import time
import tty

RULE_CHAR = "─"


def _atomic_write(path, text):
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _visible(text):
    """Never echo a control character to the terminal."""
    return "".join(ch if ch.isprintable() else "\\x%02x" % ord(ch) for ch in text)


class FakePrompt:
    def __init__(self, opts):
        self.opts = opts
        self.buffer = opts.initial
        self.cursor = len(self.buffer)
        self.killed = ""        # the kill ring's newest entry
        self.cleared = False    # /clear was submitted: the next line is the successor's first
        self.last_was_kill = False
        self.history = []
        now = time.monotonic()
        self.busy_until = now + opts.busy_start
        self.marker_due = None
        self.enters_seen = 0
        self.esc_state = None  # None, "esc", "csi", "ss3"
        self.csi = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def busy(self):
        return time.monotonic() < self.busy_until

    def record(self, **event):
        event["t"] = time.time()
        with open(self.opts.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, ensure_ascii=False) + "\n")

    # -- input ------------------------------------------------------------

    def feed(self, data):
        if self.opts.raw:
            with open(self.opts.raw, "ab") as f:
                f.write(data)
        for ch in self.decoder.decode(data):
            self.key(ch)

    def key(self, ch):
        if self.esc_state == "esc":
            self.esc_state = {"[": "csi", "O": "ss3"}.get(ch)
            self.csi = ""
            return
        if self.esc_state == "csi":
            if "\x40" <= ch <= "\x7e":
                self.esc_state = None
                self.csi_key(self.csi + ch)
            else:
                self.csi += ch
            return
        if self.esc_state == "ss3":
            self.esc_state = None
            self.csi_key(ch)
            return
        kill = False
        if ch == "\x1b":
            self.esc_state = "esc"
            return
        elif ch == "\r":
            self.enter()
        elif ch in ("\x7f", "\x08"):
            if self.cursor:
                self.buffer = self.buffer[:self.cursor - 1] + self.buffer[self.cursor:]
                self.cursor -= 1
        elif ch == "\x15":  # C-u
            self.kill(0)
            kill = True
        elif ch == "\x17":  # C-w
            i = self.cursor
            while i and self.buffer[i - 1].isspace():
                i -= 1
            while i and not self.buffer[i - 1].isspace():
                i -= 1
            self.kill(i)
            kill = True
        elif ch == "\x19":  # C-y
            self.insert(self.killed)
        elif ch == "\x01":  # C-a
            self.cursor = 0
        elif ch == "\x05":  # C-e
            self.cursor = len(self.buffer)
        elif ch.isprintable():
            self.insert(ch)
        self.last_was_kill = kill

    def csi_key(self, seq):
        if seq == "3~":  # Delete
            self.buffer = self.buffer[:self.cursor] + self.buffer[self.cursor + 1:]
        elif seq in ("H", "1~"):
            self.cursor = 0
        elif seq in ("F", "4~"):
            self.cursor = len(self.buffer)
        self.last_was_kill = False

    def insert(self, text):
        self.buffer = self.buffer[:self.cursor] + text + self.buffer[self.cursor:]
        self.cursor += len(text)

    def kill(self, start):
        """Cut buffer[start:cursor] into the kill ring (appending to a run of kills)."""
        cut = self.buffer[start:self.cursor]
        self.killed = (cut + self.killed) if self.last_was_kill else cut
        self.buffer = self.buffer[:start] + self.buffer[self.cursor:]
        self.cursor = start

    def enter(self):
        line, now = self.buffer, time.monotonic()
        self.enters_seen += 1
        if self.enters_seen in self.opts.drop_enter:
            self.record(ev="dropped_enter", line=line)  # the text stays in the box
            return
        self.buffer = ""
        self.cursor = 0
        if now < self.busy_until:
            self.record(ev="swallowed", line=line)
            return
        self.record(ev="submit", line=line)
        self.busy_until = now + self.opts.busy_after
        if line.strip() == "/clear":
            self.history = []
            self.cleared = True
            if self.opts.started_marker:
                self.marker_due = now + self.opts.marker_delay
        else:
            self.history.append(line)
            # The successor's first prompt (the continuation, or one the user typed) is what
            # its UserPromptSubmit hook confirms; a prompt before /clear goes to the predecessor.
            if self.opts.delivered_marker and not line.startswith("/") and self.cleared:
                _atomic_write(self.opts.delivered_marker, line)

    def tick(self):
        if self.marker_due is not None and time.monotonic() >= self.marker_due:
            self.marker_due = None
            _atomic_write(self.opts.started_marker, json.dumps({"pid": os.getpid()}))

    # -- output -----------------------------------------------------------

    def draw(self):
        width = max(20, os.get_terminal_size(sys.stdout.fileno()).columns)
        rows = ["fake-prompt pid %d" % os.getpid(), ""]
        for line in self.history[-8:]:
            rows.append("❯ " + _visible(line)[: width - 3])  # an echo, not under a rule
        rows.append("")
        rows.append(RULE_CHAR * width)
        text = _visible(self.buffer)
        inner = width - 2
        chunks = [text[i:i + inner] for i in range(0, len(text), inner)] or [""]
        rows.append("❯ " + chunks[0])
        rows.extend("  " + chunk for chunk in chunks[1:])
        rows.append(RULE_CHAR * width)
        rows.append("  ✻ Working… (esc to interrupt)" if self.busy() else "  ? for shortcuts")
        sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(rows))
        sys.stdout.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON-lines event log")
    p.add_argument("--raw", help="append every byte read from the tty here")
    p.add_argument("--busy-start", type=float, default=0.0, help="busy seconds at start")
    p.add_argument("--busy-after", type=float, default=0.3, help="busy seconds after each submit")
    p.add_argument("--started-marker", help="written after /clear is submitted")
    p.add_argument("--marker-delay", type=float, default=0.1)
    p.add_argument("--delivered-marker", help="written when a non-slash line is submitted")
    p.add_argument("--initial", default="", help="half-typed text already in the box")
    p.add_argument("--drop-enter", type=int, action="append", default=[], metavar="K",
                   help="ignore the K-th Enter press (repeatable)")
    p.add_argument("--read-delay", type=float, default=0.0, metavar="S",
                   help="wait S seconds before handling each read (a loaded machine)")
    return p.parse_args(argv)


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(0))
    prompt = FakePrompt(opts)
    try:
        tty.setraw(fd)
        was_busy = None
        prompt.draw()
        while True:
            ready, _, _ = select.select([fd], [], [], 0.05)
            changed = False
            if ready:
                time.sleep(opts.read_delay)
                data = os.read(fd, 4096)
                if not data:
                    return 0
                prompt.feed(data)
                changed = True
            prompt.tick()
            busy = prompt.busy()
            if changed or busy != was_busy:
                prompt.draw()
                was_busy = busy
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    sys.exit(main())
