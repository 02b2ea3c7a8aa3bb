"""The tmux pane Claude Code runs in: read its screen, type into its input box.

Why a module of its own: the rotator must type into Claude Code exactly like a
person would, and each way that goes wrong is handled here once:

* key names (``C-c``, ``Enter``) must not be interpreted: text goes through
  ``send-keys -l --``;
* tmux's own argv parser eats a trailing ``;`` (it ends the command), so such a
  chunk is sent as ``\\;``;
* a newline would submit early and a real ESC is the Escape key (it interrupts
  Claude and can wedge ``send-keys -l``), so :func:`literal_text` flattens both;
* ``/clear`` typed while Claude is generating is swallowed, so callers wait for
  :meth:`Pane.is_idle`; half-typed input is cleared with ``C-u`` (Escape does
  not clear) and verified with capture-pane.

libtmux is imported lazily, inside the functions that need it (adapter layer:
hooks on the fast path import nothing from here until they actually rotate).
"""

import os
import re
import shutil
import time

RULE = "───"
PROMPT = "❯"
BUSY_MARK = "esc to interrupt"
# Claude Code draws its spinner ("… esc to interrupt") just above the input box and
# its hook status in the footer below it; conversation text further up is ignored
# so a transcript that merely mentions the phrase cannot make the pane look busy.
STATUS_LINES_ABOVE = 6
# One send-keys call per chunk keeps each tmux command far below its message size
# limit (16 KiB) even for 4-byte UTF-8 characters.
CHUNK_CHARS = 1000
_PANE_ID = re.compile(r"^%[0-9]+$")
_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


class TmuxError(RuntimeError):
    """tmux is missing, the server or pane is gone, or a tmux command failed."""


def literal_text(text):
    """Return what :meth:`Pane.type_literal` really sends for ``text``.

    The result is one line of plain characters, so typing it can neither submit
    early nor press a key: CR, LF and CRLF become one space (Enter submits; the
    continuation is a single prompt), a tab becomes a space (Tab is a key in
    Claude Code), and every other control character (C0, DEL, C1) becomes its
    visible escape, e.g. a real ESC becomes the four characters ``\\x1b``.
    Everything else - quotes, ``;``, ``$()``, backticks, ``C-c``, ``Enter``,
    non-ASCII - is kept as is.
    """
    out = []
    for ch in text.replace("\r\n", "\n"):
        code = ord(ch)
        if ch in "\r\n\t\u2028\u2029":
            out.append(" ")
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append("\\x%02x" % code)
        else:
            out.append(ch)
    return "".join(out)


def _send_keys_args(text):
    """Split ``text`` into ``send-keys -l`` arguments that tmux passes through unchanged."""
    args = []
    for start in range(0, len(text), CHUNK_CHARS):
        chunk = text[start:start + CHUNK_CHARS]
        if chunk.endswith(";"):
            # tmux treats an argument ending in ';' as a command separator and
            # drops the ';'; a trailing '\;' is turned back into a literal ';'.
            chunk = chunk[:-1] + "\\;"
        args.append(chunk)
    return args


def _is_rule(line):
    return line.strip().startswith(RULE)


def _find_box(lines):
    """Index of the input line (``❯`` right under a rule), the last one on screen, or None."""
    for i in range(len(lines) - 1, 0, -1):
        if lines[i].startswith(PROMPT) and _is_rule(lines[i - 1]):
            return i
    return None


def _lines(screen):
    return screen.split("\n") if isinstance(screen, str) else list(screen)


class Pane:
    """One tmux pane, addressed by its server socket and pane id (``%3``).

    Holds no tmux objects between calls except a lazily made libtmux Server;
    every method talks to tmux afresh, so a pane that died in the meantime
    raises :class:`TmuxError` instead of acting on stale state.
    """

    def __init__(self, socket_path, pane_id, tmux_bin=None):
        if not socket_path:
            raise ValueError("socket_path is required")
        if not isinstance(pane_id, str) or not _PANE_ID.match(pane_id):
            raise ValueError("pane_id must look like %%N, got %r" % (pane_id,))
        self.socket_path = str(socket_path)
        self.pane_id = pane_id
        self.tmux_bin = tmux_bin
        self._server = None

    @classmethod
    def from_env(cls, env=None):
        """The pane named by ``$TMUX`` ("<socket>,<pid>,<idx>") and ``$TMUX_PANE``.

        None when not inside tmux (either variable missing or malformed) or when
        no tmux binary is on PATH. Does not run tmux: liveness is :meth:`exists`.
        """
        env = os.environ if env is None else env
        tmux_var = env.get("TMUX") or ""
        pane_id = env.get("TMUX_PANE") or ""
        parts = tmux_var.rsplit(",", 2)
        if len(parts) != 3 or not parts[0] or not _PANE_ID.match(pane_id):
            return None
        if shutil.which("tmux", path=env.get("PATH")) is None:
            return None
        return cls(parts[0], pane_id)

    def __repr__(self):
        return "Pane(%r, %r)" % (self.socket_path, self.pane_id)

    # -- plumbing ---------------------------------------------------------

    def _libtmux_server(self):
        if self._server is None:
            tmux_bin = self.tmux_bin or shutil.which("tmux")
            if tmux_bin is None:
                raise TmuxError("tmux binary not found on PATH")
            import libtmux

            self._server = libtmux.Server(socket_path=self.socket_path, tmux_bin=tmux_bin)
        return self._server

    def _run(self, *args, target=True):
        """Run one tmux command (optionally ``-t <pane>``); raise TmuxError if it fails."""
        from libtmux import exc

        server = self._libtmux_server()
        try:
            res = server.cmd(args[0], *args[1:], target=self.pane_id if target else None)
        except exc.TmuxCommandNotFound:
            raise TmuxError("tmux binary not found: %s" % server.tmux_bin) from None
        except OSError as e:
            raise TmuxError("cannot run tmux: %s" % e) from None
        if res.returncode != 0:
            why = "; ".join(res.stderr) or "exit status %s" % res.returncode
            raise TmuxError("tmux %s on %s (socket %s) failed: %s"
                            % (args[0], self.pane_id, self.socket_path, why))
        return res.stdout

    def _libtmux_pane(self):
        from libtmux import exc
        from libtmux.pane import Pane as LibPane

        try:
            return LibPane.from_pane_id(server=self._libtmux_server(), pane_id=self.pane_id)
        except exc.TmuxObjectDoesNotExist:
            raise TmuxError("tmux pane %s is gone (socket %s)" % (self.pane_id, self.socket_path)) from None
        except exc.LibTmuxException as e:
            raise TmuxError("tmux server at %s unreachable: %s" % (self.socket_path, e)) from None

    # -- reading ----------------------------------------------------------

    def exists(self):
        """True when the pane is there and its program still runs (not a dead remain-on-exit pane)."""
        try:
            pane = self._libtmux_pane()
        except TmuxError:
            self._libtmux_server()  # a missing binary is an error, not "no pane"
            return False
        return pane.pane_dead in (None, "", "0")

    def capture(self):
        """The visible screen as text (one line per row, trailing blanks trimmed by tmux)."""
        # One tmux call: the dead flag first, then the screen.
        out = self._run("display-message", "-p", "#{pane_dead}", ";",
                        "capture-pane", "-p", "-t", self.pane_id)
        if not out:
            raise TmuxError("tmux returned nothing for pane %s" % self.pane_id)
        if out[0].strip() == "1":
            raise TmuxError("the program in tmux pane %s has exited" % self.pane_id)
        return "\n".join(out[1:])

    @staticmethod
    def is_idle(screen):
        """True when Claude Code waits for input: the input box is shown and nothing is running.

        The box is a line starting with ``❯`` right under a ``───`` rule; busy means
        ``esc to interrupt`` in the few status lines above that rule or anywhere below.
        """
        lines = _lines(screen)
        box = _find_box(lines)
        if box is None:
            return False
        status = lines[max(0, box - 1 - STATUS_LINES_ABOVE):]
        return not any(BUSY_MARK in line for line in status)

    @staticmethod
    def input_text(screen):
        """What is typed in the input box ("" when empty or no box is shown).

        Rows of a wrapped input are joined with newlines: the screen cannot tell a
        wrap from a line break, so compare with whitespace ignored.
        """
        lines = _lines(screen)
        box = _find_box(lines)
        if box is None:
            return ""
        rows = [lines[box][len(PROMPT):].strip()]
        for line in lines[box + 1:]:
            if _is_rule(line):
                break
            rows.append(line.strip())
        return "\n".join(rows).strip()

    def wait_idle(self, timeout, poll=0.1, settle=0.3):
        """Wait until the pane has looked idle for ``settle`` seconds; False after ``timeout``.

        The settle time rides over the short idle-looking gaps between a turn's
        end and its Stop hooks starting.
        """
        deadline = time.monotonic() + timeout
        idle_since = None
        while True:
            now = time.monotonic()
            if self.is_idle(self.capture()):
                if idle_since is None:
                    idle_since = now
                if now - idle_since >= settle:
                    return True
            else:
                idle_since = None
            if now >= deadline:
                return False
            time.sleep(max(0.0, min(poll, deadline - now)))

    # -- typing -----------------------------------------------------------

    def clear_input(self, max_presses=8, poll=0.05, wait=0.5):
        """Empty the input box with ``C-u`` (Escape does not clear it), verifying each press.

        Returns what is left in the box: "" when verified empty, else text that two
        presses in a row did not change (a placeholder, or a box that ignores keys).
        """
        text = self.input_text(self.capture())
        unchanged = 0
        presses = 0
        while text and presses < max_presses and unchanged < 2:
            self.press("C-u")
            presses += 1
            deadline = time.monotonic() + wait
            while True:
                now_text = self.input_text(self.capture())
                if now_text != text or time.monotonic() >= deadline:
                    break
                time.sleep(poll)
            unchanged = unchanged + 1 if now_text == text else 0
            text = now_text
        return text

    def type_literal(self, text):
        """Type ``text`` into the pane without submitting it; return what was sent.

        Sent with ``send-keys -l --`` so nothing is read as a key name or option;
        newlines and control characters are flattened first (:func:`literal_text`).
        """
        sent = literal_text(text)
        for arg in _send_keys_args(sent):
            self._run("send-keys", "-l", "--", arg)
        return sent

    def press(self, key):
        """Press one named key (``Enter``, ``C-u``, ``BSpace`` …) as its own send-keys call."""
        if not isinstance(key, str) or not _KEY_NAME.match(key):
            raise ValueError("not a single tmux key name: %r" % (key,))
        self._run("send-keys", key)

    # -- naming -----------------------------------------------------------

    def rename_session(self, name):
        """Rename the session holding this pane (``.`` and ``:`` become ``_``, as tmux requires)."""
        from libtmux import exc

        try:
            self._libtmux_pane().session.rename_session(tmux_name(name))
        except exc.LibTmuxException as e:
            raise TmuxError("cannot rename session of %s to %r: %s" % (self.pane_id, name, e)) from None

    def rename_window(self, name):
        """Rename the window holding this pane (this also stops tmux's automatic renaming)."""
        from libtmux import exc

        try:
            self._libtmux_pane().window.rename_window(tmux_name(name))
        except exc.LibTmuxException as e:
            raise TmuxError("cannot rename window of %s to %r: %s" % (self.pane_id, name, e)) from None


def tmux_name(name):
    """``name`` made acceptable as a tmux session/window name."""
    clean = "".join("_" if ch in ".:" or ord(ch) < 0x20 else ch for ch in str(name)).strip()
    if not clean:
        raise ValueError("empty tmux name: %r" % (name,))
    return clean
