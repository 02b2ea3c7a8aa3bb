"""Codex CLI 0.171's TUI as the tmux rotator reads it: is a turn running, what the user typed, is a
fresh thread on screen after ``/clear``.  Pure functions over one captured screen.

What the screen looks like (captured from the real binary in tmux, with and without
``--no-alt-screen``: tests/data/codex/screens/)::

      >_ OpenAI Codex (v0.171.0)                 the header: on a fresh thread, and until it scrolls away
    › do the work                                the history: a user row ("›" dim and bold, on a grey
    • First answer.                              background), replies and tool calls ("•")
      Worked for <1s • 17:02
    ◦ Working (2s • esc to interrupt)            only while a turn (or one of its hooks) runs
    › Ask Codex to do anything                   the composer: "›" bold, then the draft or, in dim,
                                                 the placeholder
      scripted-model default · /work · title     the footer, after one blank row
      ← for agents · ? for shortcuts

So a screen is read by its styles (``capture-pane -e``, a :class:`tmux.pane.Screen`): the
composer is the last row whose ``›`` is neither dim (a history row) nor inverse (a menu's
selection: the trust screen, the hooks review, the slash-command popup); what the user typed
is what is not dim in it; a plain capture cannot tell the placeholder from a draft.  The
composer runs to the blank row before the footer (a draft of several lines has blank rows
of its own).  Typing into it (see :class:`CodexScreen`): a bracketed paste and its Enter in
one step submit (a raw ``/clear`` with its Enter never did: 0 of 15), and ``C-u`` kills a
line into the kill buffer, which ``/clear`` keeps and ``C-y`` yanks back.
"""

from ...tmux.pane import styled_cells

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported
if TYPE_CHECKING:
    Cells = list[tuple[str, bool, bool, str | None]]  # (char, dim, inverse, colour) of one row

PROMPT = "›"
BUSY_MARK = "esc to interrupt"  # "Working (2s • esc to interrupt)", also while a hook runs ("· Running hook")
HEADER = ">_ OpenAI Codex"
PLACEHOLDER = "Ask Codex to do anything"  # the usual one; any dim text in the composer is a placeholder
PASTED = "[Pasted Content "  # how the composer shows a long paste ("[Pasted Content 1500 chars]")
HISTORY_MARKS = ("›", "•", "◦")  # the first glyph of a history cell (dim): a user row, a reply or tool call, a status
STATUS_ROWS_ABOVE = 6  # the running turn's status sits right above the composer; the history further up is not read


def _rows(screen: str) -> list[str]:
    return screen.split("\n")


def _cells(screen: str) -> "list[Cells] | None":
    """Each row's cells with their styles, or None for a plain capture.

    tmux writes a style where it changes, so a row can start in the style the row above ended in
    (a reply's dim ``•`` after a dim tool output row): the rows are read as one stream."""
    styled = getattr(screen, "styled", None)
    if not isinstance(styled, list) or len(styled) != len(_rows(screen)):
        return None
    rows: "list[Cells]" = [[]]
    for cell in styled_cells("\n".join(styled)):
        if cell[0] == "\n":
            rows.append([])
        else:
            rows[-1].append(cell)
    return rows


def _lead(plain: str, cells: "Cells | None", marks: "tuple[str, ...]", dim: bool) -> bool:
    """Does the row start (after its indent) with one of ``marks`` drawn dim (``dim``) or plain, never
    inverse (a menu's selection)?  Without styles: the mark alone."""
    text = plain.lstrip()
    if text[:1] not in marks:
        return False
    if cells is None:
        return True
    at = len(plain) - len(text)
    return at < len(cells) and cells[at][1] is dim and not cells[at][2]


def _is_prompt_row(plain: str, cells: "Cells | None") -> bool:
    """Is this row a composer's first row: ``›`` then a space at its start, the ``›`` neither dim (a
    history row) nor inverse (a menu's, the slash popup's selection)?"""
    return (plain.startswith(PROMPT + " ") or plain == PROMPT) and _lead(plain, cells, (PROMPT,), False)


def composer(screen: str) -> "tuple[int, int] | None":
    """``(first, end)``: the composer's rows (``end`` exclusive), or None when none is shown.

    The last prompt row on screen starts it; it ends at the blank row before the footer (the
    last block of rows on screen), or with the screen when no footer follows."""
    rows, cells = _rows(screen), _cells(screen)
    first = next((i for i in range(len(rows) - 1, -1, -1)
                  if _is_prompt_row(rows[i], cells[i] if cells else None)), None)
    if first is None:
        return None
    last = max(i for i in range(first, len(rows)) if rows[i].strip() or i == first)
    footer = last
    while footer > first and rows[footer - 1].strip():
        footer -= 1
    end = footer - 1 if footer > first + 1 else last + 1
    return first, end


def is_idle(screen: str) -> bool:
    """Does Codex wait for input: its composer is shown and no turn runs (no ``esc to interrupt`` in the
    rows just above it)?  A menu in front (trust, hooks review, an approval) shows no composer: not idle."""
    found = composer(screen)
    if found is None:
        return False
    rows = _rows(screen)
    return not any(BUSY_MARK in row for row in rows[max(0, found[0] - STATUS_ROWS_ABOVE):found[0]])


def input_text(screen: str) -> str:
    """What the user typed in the composer ("" when it is empty or none is shown): the placeholder,
    drawn dim, is not counted.  Rows are joined with newlines (a wrap and a line break look alike:
    compare with whitespace ignored)."""
    found = composer(screen)
    if found is None:
        return ""
    rows, cells = _rows(screen), _cells(screen)
    out = []
    for i in range(*found):
        text = rows[i] if cells is None else "".join(cell[0] for cell in cells[i] if not cell[1])
        out.append(text[2:] if len(text) >= 2 else "")  # "› " on the first row, its indent on the others
    return "\n".join(t.strip() for t in out).strip()


def fresh_thread(screen: str) -> bool:
    """Is a new, empty thread on screen (the old conversation gone, as ``/clear`` leaves it)?  The header
    is shown and no history cell follows it before the composer."""
    rows, cells = _rows(screen), _cells(screen)
    found = composer(screen)
    top = next((i for i, row in enumerate(rows) if HEADER in row), None)
    if found is None or top is None or top > found[0]:
        return False
    return not any(_lead(rows[i], cells[i] if cells else None, HISTORY_MARKS, True) for i in range(top + 1, found[0]))


class CodexScreen:
    """Codex CLI's TUI for the rotator (a :class:`tmux.pane.Pane`'s reader; Claude Code's is
    :class:`tmux.pane.ClaudeScreen`, whose questions this answers too)."""

    name = "codex"
    PASTED = PASTED
    # After /clear the new thread's SessionStart fires at its first prompt (shared/reference
    # codex-cli-0.171.md, section 5): the rotator sees the clear on screen instead.
    STARTS_AT_CLEAR = False

    is_idle = staticmethod(is_idle)
    input_text = staticmethod(input_text)
    fresh_thread = staticmethod(fresh_thread)

    @staticmethod
    def conversations(screen: str) -> "list[tuple[str, bool, bool]]":
        """Codex lists no conversations under its composer: none."""
        return []

    @staticmethod
    def main_view(screen: str) -> bool:
        """No subagent's view takes the composer's typing in Codex 0.171: always the main one."""
        return True

    @staticmethod
    def bracketed(text: str) -> bool:
        """Everything goes as a bracketed paste, ``/clear`` too: pasted, it and its Enter in one step ran
        the command 35 of 35 times; typed raw, the Enter never took (0 of 15: a burst of typed
        characters is taken for a paste, and an Enter inside it for a new line)."""
        return True

    @staticmethod
    def cut_keys(text: str) -> "list[list[str]]":
        """``C-e C-u``: the draft's line into the kill buffer, whole even when it wraps.  A draft of several
        lines keeps its first ones (``C-u`` kills one line): the rotator then gives it back."""
        return [["C-e", "C-u"]]
