"""``cc-continuity rehearse [--claude PATH] [--keep] [--json] [--timeout S] [--record FILE]``

Runs one full rotation with your installed ``claude`` and your installed
cc-continuity hooks, offline, in a throwaway HOME and git repo against a
built-in scripted model on 127.0.0.1, and prints each step as it happens
(with the seconds since the start; a spinner while it waits, on a terminal),
then a report with each step's milliseconds and a verdict.  Spends no tokens,
touches none of your files.  ``--record FILE`` writes an asciinema v2 cast of
the Claude Code pane during the rotation (play it with ``asciinema play FILE``).
Exit 0 only when the rotation completed; 1 when it did not; 2 when it could
not start (no claude, nothing installed, no tmux).
"""

import argparse
import sys
import threading
import time

from .. import rehearse
from ._util import print_json


def register(sub):
    p = sub.add_parser("rehearse", description=__doc__.split("\n\n", 1)[1])
    p.add_argument("--claude", metavar="PATH", help="the claude executable (default: the first on PATH)")
    p.add_argument("--keep", action="store_true", help="keep the throwaway sandbox for inspection")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--timeout", type=_seconds, default=120.0, metavar="S",
                   help="give up after S seconds (default 120)")
    p.add_argument("--record", metavar="FILE",
                   help="write an asciinema v2 cast of the Claude Code pane during the rotation to FILE")
    p.set_defaults(func=run)


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("expected a number of seconds in (0, 3600], got %r" % text)
    return value


def run(args):
    # The steps as they happen: on stdout for the human report, on stderr (a terminal only) with --json.
    out = sys.stderr if args.json else sys.stdout
    progress = Progress(out, spinner=out.isatty()) if (not args.json or out.isatty()) else None
    try:
        result = rehearse.rehearse(claude=args.claude, keep=args.keep, timeout=args.timeout,
                                   progress=progress, record=args.record)
    except rehearse.RehearsalError as e:
        sys.stderr.write("cc-continuity rehearse: %s\n" % e)
        return 2
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        print_json(result)
    else:
        sys.stdout.write("\n" + rehearse.format_report(result))
        if result.get("record"):
            sys.stdout.write("recording: %s (%d events; play it with `asciinema play %s`)\n" % (
                result["record"]["path"], result["record"]["events"], result["record"]["path"]))
    return 0 if result.get("ok") else 1


class Progress:
    """Prints each step as the rehearsal reports it: ``[  12.3s] what``; on a terminal, a spinner
    line (elapsed time, the step waited for) redrawn under them until the next one."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, out, spinner=False, interval=0.1):
        self.out = out
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.pending = [what for _, what in rehearse.STEPS]
        self.stop = threading.Event()
        self.thread = None
        if spinner:
            self.thread = threading.Thread(target=self._spin, args=(interval,), daemon=True)
            self.thread.start()

    def __call__(self, key, what, seconds):
        with self.lock:
            if what in self.pending:
                self.pending.remove(what)
            self._clear()
            self.out.write("  [%6.1fs] %s\n" % (seconds, what))
            self.out.flush()

    def _clear(self):
        if self.thread is not None:
            self.out.write("\r\033[K")

    def _spin(self, interval):
        i = 0
        while not self.stop.wait(interval):
            with self.lock:
                nxt = self.pending[0] if self.pending else "the report"
                self.out.write("\r\033[K%s %5.1fs  waiting for: %s" % (
                    self.FRAMES[i % len(self.FRAMES)], time.monotonic() - self.t0, nxt))
                self.out.flush()
            i += 1

    def close(self):
        if self.thread is not None:
            self.stop.set()
            self.thread.join(1.0)
            with self.lock:
                self._clear()
                self.out.flush()
