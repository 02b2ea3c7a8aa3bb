"""The tmux pane an agent's TUI runs in: read its screen, type into its input box.

The screen is read by the pane's *reader*, one per agent TUI: :class:`ClaudeScreen` (the
default) here, Codex CLI's in ``hosts/codex/screen.py``; everything else - how keys reach
tmux, and when - is the same for both.

Why a module of its own: the rotator must type into the agent exactly like a
person would, and each way that goes wrong is handled here once:

* key names (``C-c``, ``Enter``) must not be interpreted: text goes through
  ``send-keys -l --``;
* tmux's own argv parser eats a trailing ``;`` (it ends the command), so such a
  chunk is sent as ``\\;``;
* a newline would submit early and a real ESC is the Escape key (it interrupts
  Claude and can wedge ``send-keys -l``), so :func:`literal_text` flattens both;
* ``/clear`` typed while Claude is generating is swallowed, so callers wait for
  :meth:`Pane.is_idle`; half-typed input is cleared with ``C-u`` (Escape does
  not clear) and verified with capture-pane;
* the user may type at any moment, and their keys and ours reach the same
  input box.  tmux stamps ``session_activity`` whenever an attached client
  sends a key (``send-keys`` does not), so :meth:`Pane.submit_if_quiet` and
  :meth:`Pane.press_if_quiet` act *inside the tmux server*, atomically, only
  if no key arrived since a given stamp: our text and our Enter go in together,
  never between the user's keystrokes, and theirs never between ours.

Every tmux command goes through one runner, :meth:`Pane._run`, on the standard library:
the rotation must work on the Python the agent's hooks run, which may have none of our
packages (a plugin installed from a marketplace runs the interpreter it finds).
"""

import os
import re
import shutil
import subprocess
import time

from .. import errors

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
KEYS_PER_CALL = 10
TMUX_TIMEOUT_S = 10.0  # one tmux command; a server that does not answer is an error, not a hang
_PANE_ID = re.compile(r"^%[0-9]+$")
_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


TmuxError = errors.TmuxError  # (defined with every error class, in errors.py)


def _lines_of(data):
    """tmux's output as lines, without the empty ones at its end (invalid UTF-8 replaced)."""
    lines = data.decode("utf-8", "replace").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


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


# -- reading the screen ----------------------------------------------------------
#
# Plain capture-pane text cannot tell what the user typed from what Claude Code
# draws in an empty box (observed on 2.1.328 and 2.1.332 with ``capture-pane -e``):
# a placeholder ("Resend your message to try again", "Try ...", "Message @agent...")
# puts its first letter in the inverse cursor cell and the rest in dim (SGR 2);
# a slash command's argument hint ("[name]") is grey (38;5;246); typed text is
# plain.  So the pane is captured with its styles, and the box's text is the
# characters that are neither dim nor grey.

HINT_COLORS = ("246",)  # 256-colour indices Claude Code draws hints in
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_OTHER_ESC = re.compile(r"\x1b(?:\][^\x07\x1b]*(?:\x07|\x1b\\)|\[[0-9;?]*[A-Za-z]|.)")


class Screen(str):
    """The pane's plain text (a ``str``), with the styled capture it came from in ``.styled``."""

    styled = None

    def __new__(cls, plain, styled=None):
        obj = super().__new__(cls, plain)
        obj.styled = styled
        return obj


def strip_styles(line):
    return _OTHER_ESC.sub("", _SGR.sub("", line))


def styled_cells(line):
    """``[(char, dim, inverse, fg)]`` for one captured row with SGR escapes."""
    cells = []
    dim = inverse = False
    fg = None
    pos = 0
    for m in re.finditer(r"\x1b\[([0-9;:]*)m|\x1b(?:\][^\x07\x1b]*(?:\x07|\x1b\\)|\[[0-9;?]*[A-Za-z]|.)", line):
        for ch in line[pos:m.start()]:
            cells.append((ch, dim, inverse, fg))
        pos = m.end()
        if m.group(1) is None:
            continue  # not an SGR: a cursor move or a link, no text
        params = [p for p in m.group(1).replace(":", ";").split(";")] or ["0"]
        i = 0
        while i < len(params):
            p = params[i] or "0"
            if p == "0":
                dim = inverse = False
                fg = None
            elif p == "2":
                dim = True
            elif p == "22":
                dim = False
            elif p == "7":
                inverse = True
            elif p == "27":
                inverse = False
            elif p == "39":
                fg = None
            elif p in ("38", "48") and i + 1 < len(params):
                if params[i + 1] == "5" and i + 2 < len(params):
                    if p == "38":
                        fg = params[i + 2]
                    i += 2
                elif params[i + 1] == "2" and i + 4 < len(params):
                    if p == "38":
                        fg = ";".join(params[i + 2:i + 5])
                    i += 4
            elif p.isdigit() and (30 <= int(p) <= 37 or 90 <= int(p) <= 97):
                fg = p
            i += 1
    for ch in line[pos:]:
        cells.append((ch, dim, inverse, fg))
    return cells


def typed_text(line):
    """What the user typed in one styled box row: dim placeholders and grey hints left out."""
    cells = styled_cells(line)
    out = []
    for i, (ch, dim, inverse, fg) in enumerate(cells):
        if dim or fg in HINT_COLORS:
            continue
        if inverse:
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            if ch.isspace() or (nxt is not None and nxt[1]):
                continue  # the cursor block, or a placeholder's first letter in it
        out.append(ch)
    return "".join(out)


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


class ClaudeScreen:
    """Claude Code's TUI as the rotator reads and edits it: the default reader of a :class:`Pane`.

    A reader answers from a captured screen only (pure functions): whether the agent waits
    for input, what the user typed in its box, whether a subagent's view is in front; and it
    says what typing into that TUI takes (how a draft is cut, whether a prompt goes as a
    bracketed paste, whether the successor's SessionStart runs at ``/clear`` itself).  Codex
    CLI's is :class:`cc_continuity.hosts.codex.screen.CodexScreen` (the rotator's plan names it).
    """

    name = "claude"
    # Observed: a paste's content does not survive /clear (only its placeholder does).
    PASTED = "[Pasted text #"
    # The successor's SessionStart runs at /clear itself: the rotator waits for its marker.
    STARTS_AT_CLEAR = True

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
        wrap from a line break, so compare with whitespace ignored.  With a styled
        capture (:class:`Screen`), placeholders and hints drawn in the empty box
        are not counted as typed.
        """
        lines = _lines(screen)
        box = _find_box(lines)
        if box is None:
            return ""
        styled = getattr(screen, "styled", None)
        end = box + 1
        while end < len(lines) and not _is_rule(lines[end]):
            end += 1
        if styled is not None and len(styled) == len(lines):
            rows = [typed_text(line) for line in styled[box:end]]
            rows[0] = rows[0].lstrip()[len(PROMPT):] if rows[0].lstrip().startswith(PROMPT) else rows[0]
        else:
            rows = [lines[box][len(PROMPT):]] + lines[box + 1:end]
        return "\n".join(r.strip() for r in rows).strip()

    @staticmethod
    def conversations(screen):
        """The list of conversations Claude Code shows under the box while agents run.

        ``[(name, in_front, highlighted)]``, top to bottom: ``●`` marks the one in
        front, ``◯`` the others, and ``❯`` the row the list's focus is on.
        Empty when no list is shown.
        """
        out = []
        for line in _lines(screen):
            words = line.split()
            highlighted = words[:1] == [PROMPT]
            if highlighted:
                words = words[1:]
            if len(words) >= 2 and words[0] in ("●", "◯"):
                out.append((words[1], words[0] == "●", highlighted))
        return out

    @classmethod
    def main_view(cls, screen):
        """False when a subagent's view is in front (its typing goes to the subagent), else True."""
        return not any(name == "main" and not front for name, front, _ in cls.conversations(screen))

    @staticmethod
    def fresh_thread(screen):
        """Unused for Claude Code (its successor's SessionStart marks the clear); False."""
        return False

    @staticmethod
    def bracketed(text):
        """Send ``text`` as a bracketed paste?  Prompts yes, a slash command no (see
        :meth:`Pane.submit_if_quiet`: pasted, ``/clear`` would be inserted as text)."""
        return not text.startswith("/")

    @staticmethod
    def cut_keys(text):
        """Key batches that cut the draft ``text`` into the kill ring (``C-y`` puts it back).

        Claude Code ignores a long burst of control keys (observed: 68 C-w in one read killed
        nothing), so the cut goes in batches of :data:`KEYS_PER_CALL`."""
        kills = 2 * len(text.split()) + text.count("\n") + 8
        return [["C-w"] * min(KEYS_PER_CALL, kills - start) for start in range(0, kills, KEYS_PER_CALL)]


class _ReadWith:
    """A screen question asked of the pane's reader (:attr:`Pane.reader`).  On the class itself
    (``Pane.is_idle(screen)``, as the watchdog and the rehearsal ask) it is the default reader's:
    Claude Code's."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, pane, owner):
        return getattr((pane if pane is not None else owner).reader, self.name)


class Pane:
    """One tmux pane, addressed by its server socket and pane id (``%3``).

    Holds nothing between calls but the tmux binary's path: every method runs
    tmux afresh, so a pane that died in the meantime raises :class:`TmuxError`
    instead of acting on stale state.
    """

    reader = ClaudeScreen  # how its screen is read (the agent's TUI): Claude Code's unless given

    def __init__(self, socket_path, pane_id, tmux_bin=None, reader=None):
        if not socket_path:
            raise ValueError("socket_path is required")
        if not isinstance(pane_id, str) or not _PANE_ID.match(pane_id):
            raise ValueError("pane_id must look like %%N, got %r" % (pane_id,))
        self.socket_path = str(socket_path)
        self.pane_id = pane_id
        self.tmux_bin = tmux_bin
        if reader is not None:
            self.reader = reader
        self._bin = None

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

    def _tmux(self):
        if self._bin is None:
            self._bin = self.tmux_bin or shutil.which("tmux")
            if self._bin is None:
                raise TmuxError("tmux binary not found on PATH")
        return self._bin

    def _run(self, *args, target=True):
        """Run one tmux command (optionally ``-t <pane>`` after its name); its stdout lines.

        The standard library only (``subprocess``): the rotation runs on whatever Python
        the agent's hooks run, which may have none of our packages.  Bounded: a tmux
        server that does not answer within ``TMUX_TIMEOUT_S`` is an error, not a hang.
        """
        argv = [self._tmux(), "-S", self.socket_path, args[0]]
        if target:
            argv += ["-t", self.pane_id]
        argv += list(args[1:])
        try:
            res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=TMUX_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TmuxError("tmux %s on %s (socket %s) did not answer within %gs"
                            % (args[0], self.pane_id, self.socket_path, TMUX_TIMEOUT_S)) from None
        except FileNotFoundError:
            raise TmuxError("tmux binary not found: %s" % argv[0]) from None
        except OSError as e:
            raise TmuxError("cannot run tmux (%s): %s" % (argv[0], e.strerror or e)) from None
        if res.returncode != 0:
            why = "; ".join(_lines_of(res.stderr)) or "exit status %s" % res.returncode
            raise TmuxError("tmux %s on %s (socket %s) failed: %s"
                            % (args[0], self.pane_id, self.socket_path, why))
        return _lines_of(res.stdout)

    # -- reading ----------------------------------------------------------

    is_idle = _ReadWith()
    input_text = _ReadWith()
    conversations = _ReadWith()
    main_view = _ReadWith()
    fresh_thread = _ReadWith()

    def exists(self):
        """True when the pane is there and its program still runs (not a dead remain-on-exit pane)."""
        self._tmux()  # a missing binary is an error, not "no pane"
        try:
            out = self._run("display-message", "-p", "#{pane_dead}")
        except TmuxError:
            return False
        return bool(out) and out[0].strip() in ("", "0")

    def capture(self):
        """The visible screen (a :class:`Screen`: plain text, styles in ``.styled``)."""
        # One tmux call: the dead flag first, then the screen with its styles.
        out = self._run("display-message", "-p", "#{pane_dead}", ";",
                        "capture-pane", "-p", "-e", "-t", self.pane_id)
        if not out:
            raise TmuxError("tmux returned nothing for pane %s" % self.pane_id)
        if out[0].strip() == "1":
            raise TmuxError("the program in tmux pane %s has exited" % self.pane_id)
        styled = out[1:]
        return Screen("\n".join(strip_styles(line) for line in styled), styled)

    def wait_idle(self, timeout, poll=0.1, settle=0.3, check=None):
        """Wait until the pane has looked idle for ``settle`` seconds; False after ``timeout``.

        The settle time rides over the short idle-looking gaps between a turn's
        end and its Stop hooks starting.  ``check`` (optional) runs on every poll
        and may raise to stop waiting (the program in the pane went away).
        """
        deadline = time.monotonic() + timeout
        idle_since = None
        while True:
            if check is not None:
                check()
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

    def type_literal(self, text):
        """Type ``text`` into the pane without submitting it; return what was sent.

        Sent with ``send-keys -l --`` so nothing is read as a key name or option;
        newlines and control characters are flattened first (:func:`literal_text`).
        """
        sent = literal_text(text)
        for arg in _send_keys_args(sent):
            self._run("send-keys", "-l", "--", arg)
        return sent

    def activity(self):
        """tmux's ``session_activity`` (whole seconds): when a client attached to this pane's
        session last sent a key.  Our own ``send-keys`` and ``paste-buffer`` do not change it."""
        out = self._run("display-message", "-p", "#{session_activity}")
        try:
            return int(out[0].strip())
        except (IndexError, ValueError):
            raise TmuxError("tmux gave no session_activity for %s: %r" % (self.pane_id, out)) from None

    def pane_pid(self):
        """The pid of the program tmux started in the pane."""
        out = self._run("display-message", "-p", "#{pane_pid}")
        try:
            return int(out[0].strip())
        except (IndexError, ValueError):
            raise TmuxError("tmux gave no pane_pid for %s: %r" % (self.pane_id, out)) from None

    def _if_quiet(self, since, command):
        """Run the tmux ``command`` only if no client key arrived since ``since``; True if it ran."""
        cond = "#{==:#{session_activity},%d}" % int(since)
        out = self._run("if-shell", "-F", cond, command + " ; display-message -p cc-continuity:ran",
                        "display-message -p cc-continuity:held")
        return any(line.strip() == "cc-continuity:ran" for line in out)

    def submit_if_quiet(self, text, since, bracketed=False):
        """Type ``text`` and press Enter, both in one tmux step, unless a client key came since ``since``.

        Returns what was sent, or None when it was held back.  Atomic in the tmux
        server: the user's keys land wholly before (then nothing is sent) or wholly
        after our Enter, never between our text and it.  Observed on 2.1.328 and
        2.1.332: text pasted raw and Enter in one write loses the Enter (0 of 40
        submitted: Claude Code takes the burst for a paste), while the same text as a
        *bracketed* paste and Enter submits every time (40 of 40) — so prompts go
        bracketed.  A slash command must not (it would be inserted as text, not run);
        typed raw, a short one like ``/clear`` with its Enter submitted 40 of 40.  Codex
        CLI 0.171 the other way round for ``/clear`` (raw 0 of 15, bracketed 35 of 35):
        which one a text needs is the reader's (``reader.bracketed(text)``).
        """
        sent = literal_text(text)
        buf = "cc-continuity-%d" % os.getpid()
        # tmux's argv parser ends a command at an argument's trailing ';' (as for send-keys).
        data = sent[:-1] + "\\;" if sent.endswith(";") else sent
        self._run("set-buffer", "-b", buf, "--", data, target=False)
        paste = "paste-buffer %s-d -b %s -t %s ; send-keys -t %s Enter" % (
            "-p " if bracketed else "", buf, self.pane_id, self.pane_id)
        if self._if_quiet(since, paste):
            return sent
        try:
            self._run("delete-buffer", "-b", buf, target=False)
        except TmuxError:
            pass
        return None

    def press_if_quiet(self, since, *keys):
        """Press named ``keys`` (in one send-keys) unless a client key arrived since ``since``."""
        for key in keys:
            if not isinstance(key, str) or not _KEY_NAME.match(key):
                raise ValueError("not a single tmux key name: %r" % (key,))
        return self._if_quiet(since, "send-keys -t %s %s" % (self.pane_id, " ".join(keys)))

    def press(self, *keys):
        """Press named keys (``Enter``, ``C-u``, ``BSpace`` …) in one send-keys call.

        Keep a call to a few keys (``KEYS_PER_CALL``): Claude Code drops part of a
        burst of escape-sequence keys arriving in one read (observed: 40 Delete
        presses in one send-keys deleted 25; 20 deleted all).
        """
        for key in keys:
            if not isinstance(key, str) or not _KEY_NAME.match(key):
                raise ValueError("not a single tmux key name: %r" % (key,))
        self._run("send-keys", *keys)

    def tell(self, text):
        """Show ``text`` on the status line of the client looking at this pane until a key is pressed
        (``display-message -d 0``; tmux 3.2+).  Plain text: ``#`` is doubled so tmux expands nothing."""
        self._run("display-message", "-d", "0", "--", literal_text(text).replace("#", "##"))

    # -- naming -----------------------------------------------------------

    def rename_session(self, name):
        """Rename the session holding this pane (``.`` and ``:`` become ``_``, as tmux requires)."""
        self._run("rename-session", "--", tmux_name(name))

    def rename_window(self, name):
        """Rename the window holding this pane (this also stops tmux's automatic renaming)."""
        self._run("rename-window", "--", tmux_name(name))


def tmux_name(name):
    """``name`` made acceptable as a tmux session/window name."""
    clean = "".join("_" if ch in ".:" or ord(ch) < 0x20 else ch for ch in str(name)).strip()
    if not clean:
        raise ValueError("empty tmux name: %r" % (name,))
    return clean


def can_drive(rec, cfg):
    """Can a tmux rotator drive this session: tmux allowed, its pane recorded and tmux on PATH (runs no tmux)."""
    if not cfg["tmux"] or not rec.get("tmux_pane") or not rec.get("tmux_socket"):
        return False
    return Pane.from_env({"TMUX": "%s,0,0" % rec["tmux_socket"], "TMUX_PANE": rec["tmux_pane"]}) is not None
