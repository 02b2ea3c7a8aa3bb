"""Reading Codex CLI 0.171's TUI (cc_continuity/hosts/codex/screen.py) on screens of the real binary.

``data/codex/screens/<name>.ansi`` are ``capture-pane -p -e`` rows recorded from the binary in
tmux (``data/codex/screens/record.py``, the tour in helpers/codex.py): the trust and hooks-review
screens, an empty composer, drafts (one word, wrapped, several lines, a slash command with its
popup), a turn running (a slow reply; a slow Stop hook), after ``/clear``; inline and on the
alternate screen.  tests/e2e/test_codex_tui_e2e.py reads the same states live.
"""

import os

import pytest

from cc_continuity.hosts.codex import screen as cs
from cc_continuity.hosts.codex.screen import CodexScreen
from cc_continuity.tmux.pane import ClaudeScreen, Pane, Screen, strip_styles
from helpers.codex import SCREENS
from helpers import TESTS

DATA = os.path.join(TESTS, "data", "codex", "screens")


def load(name):
    with open(os.path.join(DATA, name + ".ansi"), encoding="utf-8") as f:
        rows = f.read().split("\n")
    return Screen("\n".join(strip_styles(r) for r in rows), rows)


def squash(text):
    return "".join(text.split())


def test_every_state_was_recorded():
    assert sorted(f[:-5] for f in os.listdir(DATA) if f.endswith(".ansi")) == sorted(SCREENS)


@pytest.mark.parametrize("name", list(SCREENS))
def test_each_recorded_screen_reads_as_what_it_is(name):
    sc, want = load(name), SCREENS[name]
    assert cs.is_idle(sc) is want["idle"]
    assert squash(cs.input_text(sc)) == squash(want["text"])
    assert cs.fresh_thread(sc) is want["fresh"]


def test_a_draft_keeps_its_line_breaks_and_a_wrap_reads_as_one():
    assert cs.input_text(load("draft-lines")) == "line one\n\nline three", "blank rows inside the composer"
    wrapped = cs.input_text(load("draft-wrapped"))
    assert wrapped.count("\n") == 1 and squash(wrapped) == squash(SCREENS["draft-wrapped"]["text"])


@pytest.mark.parametrize("name", ["start", "after-turn", "busy", "hook-running", "cleared", "alt-start"])
def test_without_the_styles_the_placeholder_would_read_as_typed_text(name):
    """Why the screen is captured with ``-e``: in plain text the dim placeholder looks typed."""
    plain = str(load(name))
    assert "Ask Codex to do anything" in cs.input_text(plain) and cs.input_text(load(name)) == ""


@pytest.mark.parametrize("name", ["trust", "hooks-review"])
def test_a_menu_is_not_a_composer_by_its_inverse_selection(name):
    assert cs.composer(load(name)) is None
    assert cs.composer(str(load(name))) is not None, "plain, '› 1. ...' looks like the composer"


def test_the_slash_popup_and_the_history_are_not_the_composer():
    sc = load("slash-popup")
    first, end = cs.composer(sc)
    assert str(sc).split("\n")[first] == "› /cl" and end == first + 1
    assert "› /clear  clear the terminal" in str(sc), "the popup's selected row, above the composer"
    assert cs.fresh_thread(sc), "its selection is not a history row"
    turns = load("after-turn")
    assert str(turns).split("\n")[cs.composer(turns)[0]].startswith("› Ask Codex"), "not '› do the work'"


def test_a_row_takes_its_style_from_the_row_above_when_tmux_writes_none():
    """tmux writes a style where it changes: a reply's '•' after a dim tool-output row carries no code
    of its own.  Read row by row, it would look plain; read as one stream, it is dim like the others."""
    rows = ["\x1b[1m>_ OpenAI Codex\x1b[0m", "\x1b[2m  └ hi", "• Tool done.", "", "\x1b[0m\x1b[1m›\x1b[0m \x1b[2mAsk",
            "", "  footer"]
    sc = Screen("\n".join(strip_styles(r) for r in rows), rows)
    assert not cs.fresh_thread(sc) and cs.is_idle(sc) and cs.input_text(sc) == ""
    rows[2] = "\x1b[0m• Tool done."  # a plain bullet: not a history cell's
    assert cs.fresh_thread(Screen("\n".join(strip_styles(r) for r in rows), rows))


def test_busy_is_read_only_just_above_the_composer():
    far = ["  >_ OpenAI Codex", "› a prompt that says esc to interrupt"] + ["• reply"] * 8 + ["", "› ", "", "  footer"]
    assert cs.is_idle("\n".join(far))
    near = ["• reply", "◦ Working (2s • esc to interrupt)", "", "› ", "", "  footer"]
    assert not cs.is_idle("\n".join(near))
    assert not cs.is_idle("") and cs.input_text("") == "" and not cs.fresh_thread("")


def test_a_pane_reads_with_its_reader_and_the_class_stays_claude_codes():
    pane = Pane("/tmp/sock", "%1", reader=CodexScreen)
    sc = load("idle-draft")
    assert pane.input_text(sc) == "typed while busy" and pane.is_idle(sc) and not pane.fresh_thread(sc)
    assert pane.main_view(sc) and pane.conversations(sc) == []
    assert Pane.input_text is ClaudeScreen.input_text and Pane("/tmp/sock", "%1").reader is ClaudeScreen
    assert Pane.input_text(sc) == "" and not Pane.is_idle(sc), "Claude Code's reader finds no box of its own here"


def test_what_typing_into_each_tui_takes():
    assert CodexScreen.bracketed("/clear") and not ClaudeScreen.bracketed("/clear")
    assert CodexScreen.bracketed("Continuing from cp-001") and ClaudeScreen.bracketed("Continuing from cp-001")
    assert CodexScreen.cut_keys("two\nlines") == [["C-e", "C-u"]]
    cut = ClaudeScreen.cut_keys("three short words")
    assert [len(b) for b in cut] == [10, 4] and {k for b in cut for k in b} == {"C-w"}
    assert not CodexScreen.STARTS_AT_CLEAR and ClaudeScreen.STARTS_AT_CLEAR
    assert CodexScreen.PASTED != ClaudeScreen.PASTED
