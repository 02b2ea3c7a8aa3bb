"""Every sentence the rotation's steps give the model or the user, in one place.

The steps decide; this module says it.  Each function returns the whole text of one
message (a Stop's request for more, a system message, a note added to a prompt), so a
wording change is made here and read here, next to the others.  No state is read here.
"""

from __future__ import annotations

import binascii
import posix

from .. import session


TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config

    Reading = Mapping[str, Any]
    Thresholds = Config

# The handoff's template: the sections whose claims cite a source, and what those say until written
# (the validator reads both back: rotation/handoff.py).
SOURCED_SECTIONS = ("Current state", "How to verify")
SOURCE_HINT = "<text: each claim with its source, e.g. `src/app.py:42`, `src/app.py:parse`, a commit, `pytest -q` (exit 1)>"
COMPACT_SKIP = "cc-continuity: rotating to a fresh session instead of compacting"
NOT_COMPARED = ("## Since the checkpoint\nNot compared: took too long (over %g s). Check `git status` and `git log` "
                "before relying on the handoff's picture of the work tree.")


# -- the context's levels --------------------------------------------------------------------------
def level_note(reading: Reading, cfg: Thresholds) -> str | None:
    """The one note a session gets when its context first reaches a level (None below *warn*)."""
    pct, win, lvl = reading["percent"], reading["window"], reading["level"]
    size = "%dk" % (win // 1000) if win else "unknown"
    if lvl == "warn":
        return ("cc-continuity: context is at %.0f%% of the %s-token window. At %g%% this session will be asked "
                "to write a handoff and continue in a fresh context; plan to reach a clean stopping point."
                % (pct, size, cfg["rotate"]))
    if lvl == "rotate":
        return ("cc-continuity: context is at %.0f%% of the %s-token window (rotate level %g%%). When this turn "
                "ends, a handoff will be requested so the work continues in a fresh session. Finish the current "
                "step; avoid starting large new reads." % (pct, size, cfg["rotate"]))
    if lvl == "hard":
        return ("cc-continuity: context is at %.0f%% of the %s-token window, past the hard ceiling of %g%%. Tool "
                "calls other than writing the handoff are now denied; end the turn so the handoff can be written."
                % (pct, size, cfg["hard"]))
    return None


# -- a tool call: what the tool-call step (toolcall.py) answers ---------------------------------------
HANDOFF_WRITE = "cc-continuity: writing the session handoff"
EFFECT_RECORDS_REFUSED = (
    "cc-continuity: the side-effect records are not for tool calls to change. A held repeat is let through "
    "only by the user's own prompt (\"repeat <code>\", as the hold said).")


def hard_ceiling_denied(percent: object, hard: float, path: str, write_allowed: str) -> str:
    """A tool call denied past the hard ceiling: where the session's state goes instead (``write_allowed``:
    how this host writes it, Host.write_allowed)."""
    return ("cc-continuity: the context is at %s%% of the window, past the hard ceiling of %g%%, so tool calls "
            "are denied to keep the window from overflowing. The session's state belongs in the handoff file "
            "%s (%s); after that, ending the turn lets the work continue in a "
            "fresh session." % ("?" if percent is None else percent, hard, path, write_allowed))


def snapshot_still_taken(ref: object, reads_meanwhile: str) -> str:
    """A call that can change files, held while the checkpoint's work-tree snapshot is taken."""
    return ("cc-continuity: the work-tree snapshot of the checkpoint this session continues from (%s) is still "
            "being taken in the background. Tools that can change files wait for it, so that it records the work "
            "tree as the handoff describes it; %s. Retry this call in a few "
            "seconds." % (ref, reads_meanwhile))


# -- the handoff: asked for, checked -----------------------------------------------------------------
def handoff_template(sections: list[str]) -> str:
    """The skeleton the model fills in: a heading per section; those whose claims cite a source say how."""
    sourced = {name.lower() for name in SOURCED_SECTIONS}
    lines = ["# Handoff", ""]
    for name in sections:
        lines += ["## %s" % name, SOURCE_HINT if name.strip().lower() in sourced else "<text>", ""]
    return "\n".join(lines)


def handoff_request(reading: Reading, path: str, cfg: Thresholds, write_with: str = "with the Write tool") -> str:
    """What the model is asked at the turn's end once the context is past *rotate*."""
    win = reading.get("window")
    return (
        "cc-continuity: this session's context is at %s%% of its %s-token window (rotate level %g%%). The work "
        "continues in a fresh session that starts from a handoff file, so the handoff needs to be written before "
        "this turn can end.\n\n"
        "Handoff file (absolute path): %s\n\n"
        "Write it %s using the template below. Every section must be present and non-empty "
        "(write \"none\" where there is nothing), %d-%d characters, no secrets or tokens, and every file path it names "
        "must exist (relative to the project root, in backticks). In \"Current state\" and \"How to verify\", give "
        "each claim a source the next session can re-check: a file with a line or symbol (`src/app.py:42`, "
        "`src/app.py:parse`), a commit, or a command with the exit code it had (`pytest -q` (exit 1))%s. Git state, "
        "the recent user prompts and the todo list are recorded automatically. Once the file is written, ending the "
        "turn completes the hand-over; the next session continues from it without the user having to re-explain "
        "anything.\n\n%s"
        % (reading.get("percent"), "{:,}".format(win) if win else "?", cfg["rotate"], path, write_with,
           cfg["handoff_min_chars"], cfg["handoff_max_chars"],
           "; a claim without one is sent back" if cfg.get("handoff_require_sources") else "",
           handoff_template(cfg["handoff_sections"]))
    )


def handoff_missing(tries: int, max_tries: int, request: str) -> str:
    """The handoff file is not there at the next turn's end: the request again, in full."""
    return "The handoff file does not exist yet (check %d of %d).\n\n%s" % (tries, max_tries, request)


def handoff_incomplete(path: str, tries: int, max_tries: int, problems: list[str]) -> str:
    """The handoff is there but does not pass the validator: each problem, one line."""
    return ("cc-continuity: the handoff at %s is not complete yet (check %d of %d). What is wrong:\n%s\n\n"
            "Fix these in the file, then end the turn." % (path, tries, max_tries, "\n".join("- " + p for p in problems)))


def claims_contradicted(path: str, found: list[str]) -> str:
    """A valid handoff says what the tool record does not confirm ("tests pass", "pushed" ...)."""
    return ("cc-continuity: the handoff at %s is complete, but the tool record does not confirm what it says:\n%s\n\n"
            "Correct those statements (or run the check again and update the handoff), then end the turn. Whatever "
            "stays is shown to the next session as \"claimed, not confirmed\"." % (path, "\n".join("- " + p for p in found)))


def handoff_path_was_a_directory(path: str, aside: str) -> str:
    return ("cc-continuity: the handoff path %s was a directory, not a file; it is kept whole at %s, and a "
            "machine handoff took its place." % (path, aside))


# -- the hand-over -----------------------------------------------------------------------------------
def type_clear(checkpoint_id: str) -> str:
    """No driver can clear for the user: they type /clear (the status line says so too)."""
    return ("cc-continuity: handoff %s is verified. Type /clear to continue in a fresh session; it picks up the "
            "handoff automatically." % checkpoint_id)


def cleared_natively(checkpoint_id: str, successor_name: str) -> str:
    """The user's line when the host clears and continues itself (the ``native`` driver)."""
    return "cc-continuity: handoff %s verified; the context is cleared and %s continues." % (
        checkpoint_id, successor_name)


def compaction_blocked() -> str:
    """An automatic compaction past *rotate*: refused, the handoff comes at the turn's end instead."""
    return ("cc-continuity: the session is past its rotate level; it hands off to a fresh session at the end of this "
            "turn instead of compacting.")


def rotation_loop(percent: object, rotate: float) -> str:
    """A successor whose start alone is past *rotate*: it will not rotate (another would start the same way)."""
    return ("cc-continuity: this session is at %s%% of its context window after its first reply, before any tool "
            "ran: its start alone is past the rotate level (%g%%), so a rotation would only start the next session "
            "the same way. It will not rotate; raise `rotate` or `window`, or lower `bootstrap_max_tokens` "
            "(`cc-continuity configure`)." % (percent, rotate))


def state_dir_not_ours(problem: str) -> str:
    return "cc-continuity: %s." % problem


# -- a session starts ----------------------------------------------------------------------------------
def resumed_after_rotation(name: object, checkpoint_id: object, successor: str, went_on: str | None, here: str,
                           percent: int | None) -> str:
    """``claude --resume`` of a conversation that was rotated away from: what happened, and that it runs alone.

    ``went_on``: the successor's name and whether it runs, when it is known; ``percent``: set when this
    conversation is already past *rotate* (it hands off at this turn's end)."""
    lines = ["cc-continuity: this conversation (%s) was rotated away from: its checkpoint %s was handed to %s." % (
        name, checkpoint_id or "?", successor)]
    if went_on:
        lines.append(went_on)
    lines.append("It continues here as a session of its own, %s; nothing of the chain is taken over." % here)
    if percent is not None:
        lines.append("It is at %d%% of its context window already: no tool is held back before this turn ends, and "
                     "at its end it hands off to a fresh session." % percent)
    return " ".join(lines)


def successor_went_on(name: object, running: bool, session_id: object) -> str:
    return "The work went on there (%s, %s; `claude --resume %s` opens it)." % (
        name, "still running" if running else "its process is gone", session_id)


def repository_keys_ignored(path: str, keys: list[str]) -> str:
    """A repository tried to set keys only the user's own config may set, or values out of bounds."""
    return ("cc-continuity: %s tries to set %s, which a repository may not (a key only your own config may set, or "
            "a value out of bounds), so %s ignored (`cc-continuity config show` explains; said once per version of "
            "the file)." % (path, ", ".join(keys), "it is" if len(keys) == 1 else "they are"))


def crashed_without_checkpoint(name: object, session_id: object) -> str:
    """The short notice when a crashed session's machine handoff could not be built."""
    return ("cc-continuity: the previous session %s in this project died mid-work before any checkpoint. Its "
            "conversation can be reopened with `claude --resume %s`." % (name, session_id))


# -- the successor's first prompt ------------------------------------------------------------------
# How every continuation opens (the successor's first prompt and its bootstrap text alike):
# a prompt that starts with CONTINUATION_PREFIX is ours, never the user's.
CONTINUING = "Continuing from "
CONTINUATION_PREFIX = CONTINUING + session.CHECKPOINT_PREFIX


def continuation_head(cid: str, successor_name: str) -> str:
    """The continuation's first sentence: which checkpoint, which session it starts."""
    return "%s%s (%s)." % (CONTINUING, cid, successor_name)


def is_continuation(prompt: object) -> bool:
    """Is ``prompt`` one of our continuations (not something the user typed)?"""
    return isinstance(prompt, str) and prompt.startswith(CONTINUATION_PREFIX)


def continuation_prompt(cid: str, successor_name: str, driver: str = "tmux", root: str | None = None,
                        handoff: str | None = None, last_request: str | None = None) -> str:
    """What the successor is asked first.

    Submitted by the mod, the first turn arrives without Claude Code's own
    ``# Environment`` block (observed), so it names the project directory and
    the handoff itself, and restates the user's last request (a compaction the
    mod skipped ends its turn without retrying that prompt).
    """
    text = continuation_head(cid, successor_name) + (" The handoff and machine facts are in this session's context; "
                                                     "carry on with its next steps.")
    if driver == "mod":
        if root:
            text += " The project is %s." % root
        if handoff:
            text += " The handoff file is %s." % handoff
        if last_request:
            text += " The user's last request was: %s" % last_request
    return text


# -- a machine's id ------------------------------------------------------------------------------------------
# What names a machine in a checkpoint shared through a git remote (share/transport.machine_id makes it: 12
# random lower-case hex digits), defined once: share/data.py builds MACHINE_RE from the pattern, a sentence
# naming a machine checks it with is_machine_id (no ``re`` here: this module loads at every turn's end).
MACHINE_ID_LEN = 12
MACHINE_ID_DIGITS = "0123456789abcdef"
MACHINE_ID_PATTERN = "[%s]{%d}" % (MACHINE_ID_DIGITS, MACHINE_ID_LEN)  # (a regular expression's text)


def is_machine_id(value: object) -> bool:
    """``value`` has a machine id's shape: MACHINE_ID_LEN of MACHINE_ID_DIGITS, nothing else."""
    return isinstance(value, str) and len(value) == MACHINE_ID_LEN and not value.strip(MACHINE_ID_DIGITS)


# -- text that is not ours, fenced --------------------------------------------------------------------------

# Text that must never reach a terminal or the model as it is: C0/C1 controls, and the characters that
# reorder or hide what is displayed (bidirectional overrides and isolates, zero-width joiners, BOM).
_HIDDEN = frozenset(chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x200B, 0x200C, 0x200D,
                                     0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF))


def plain(value: object, limit: int = 300) -> str:
    """Text from outside (a remote, a repository) fit for one line: hidden and control characters
    become ``?``, cut to ``limit``."""
    s = value if isinstance(value, str) else str(value)
    return "".join("?" if c in _HIDDEN else c for c in s[:limit])


def fenced(what: str, text: str, nonce: "str | None" = None) -> str:
    """``text`` (the predecessor's handoff, a field from a remote) between two marker lines it cannot contain.

    The markers carry a random nonce made for this text (made again in the unlikely case that the text holds
    it), so that nothing inside can close the fence and speak as the machine: a forged "## The handoff's
    claims, checked against the record" inside a handoff stays inside.  No ``<``, ``>`` or ``&`` in them
    (Gemini CLI HTML-escapes injected context)."""
    while nonce is None or nonce in text:
        nonce = binascii.hexlify(posix.urandom(8)).decode()
    return "~~~~ %s %s: not the machine's words ~~~~\n%s\n~~~~ end %s ~~~~" % (what, nonce, text.strip("\n"), nonce)
