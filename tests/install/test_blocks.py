"""Marked blocks in other people's files: removal gives back the exact original text."""

import os

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from cc_continuity.install import plan as install_plan
from cc_continuity.install import blocks

BODY = "function claude {\n  command claude \"$@\"\n}\n"

# Text that looks like a real rc file / CLAUDE.md: lines, blank lines, odd endings,
# comments that almost look like our markers.
line = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(["", "# >>> conda initialize >>>", "# <<< conda initialize <<<", "export PATH=$HOME/bin:$PATH",
                     "# >>> cc-continuity other v1 >>>", "# <<< cc-continuity other <<<", "<!-- note -->", "\r"]))
texts = st.builds(lambda ls, end: "\n".join(ls) + end, st.lists(line, max_size=8), st.sampled_from(["", "\n", "\n\n"]))
styles = st.sampled_from(["hash", "html"])


@hsettings(max_examples=200, deadline=None)
@given(text=texts, style=styles)
def test_remove_after_add_gives_back_the_original(text, style):
    added = blocks.add(text, "wrapper", "1.0", BODY, style)
    assert blocks.find(added, "wrapper", style) is not None
    assert blocks.remove(added, "wrapper", style) == text


@hsettings(max_examples=200, deadline=None)
@given(text=texts, style=styles)
def test_add_is_idempotent_and_an_upgrade_replaces_in_place(text, style):
    once = blocks.add(text, "wrapper", "1.0", BODY, style)
    assert blocks.add(once, "wrapper", "1.0", BODY, style) == once
    upgraded = blocks.add(once, "wrapper", "2.0", "new body\n", style)
    assert blocks.find(upgraded, "wrapper", style).version == "2.0"
    assert "new body\n" in upgraded and BODY not in upgraded
    assert upgraded.startswith(text)  # their text untouched, ours still where it was
    assert blocks.remove(upgraded, "wrapper", style) == text


@hsettings(max_examples=200, deadline=None)
@given(before=texts, after=texts)
def test_text_the_user_added_after_our_block_is_kept_and_lines_never_join(before, after):
    added = blocks.add(before, "wrapper", "1", BODY, "hash") + after
    left = blocks.remove(added, "wrapper", "hash")
    if not after or not before or before.endswith("\n"):
        assert left == before + after
    else:  # their last line had no newline; it must not be glued to what follows
        assert left == before + "\n" + after


def test_layout_of_an_appended_block():
    assert blocks.add("export A=1\n", "w", "0.1.0", "x\n", "hash") == (
        "export A=1\n\n# >>> cc-continuity w v0.1.0 >>>\nx\n# <<< cc-continuity w <<<\n")
    assert blocks.add("no newline", "w", "1", "x", "hash") == (
        "no newline\n# >>> cc-continuity w v1 >>>\nx\n# <<< cc-continuity w <<<\n")
    assert blocks.add("", "m", "1", "hi", "html") == "<!-- >>> cc-continuity m v1 >>> -->\nhi\n<!-- <<< cc-continuity m <<< -->\n"


def test_a_block_the_user_moved_is_replaced_where_it_is():
    text = "a\n# >>> cc-continuity w v1 >>>\nold\n# <<< cc-continuity w <<<\nb\n"
    assert blocks.add(text, "w", "2", "new", "hash") == "a\n# >>> cc-continuity w v2 >>>\nnew\n# <<< cc-continuity w <<<\nb\n"
    assert blocks.remove(text, "w", "hash") == "a\nb\n"


@pytest.mark.parametrize("text, problem", [
    ("# >>> cc-continuity w v1 >>>\nx\n", "start marker without an end marker"),
    ("x\n# <<< cc-continuity w <<<\n", "end marker without a start marker"),
    ("# >>> cc-continuity w v1 >>>\n# >>> cc-continuity w v1 >>>\n# <<< cc-continuity w <<<\n", "a second"),
    ("# >>> cc-continuity w v1 >>>\n# <<< cc-continuity w <<<\n# >>> cc-continuity w v1 >>>\n# <<< cc-continuity w <<<\n",
     "a second cc-continuity w block"),
])
def test_unbalanced_markers_are_refused_with_the_line(text, problem):
    for op in (lambda: blocks.add(text, "w", "1", "b", "hash", "rc"), lambda: blocks.remove(text, "w", "hash", "rc")):
        with pytest.raises(blocks.BlockError) as e:
            op()
        assert problem in str(e.value) and "rc: line" in str(e.value)


def test_other_blocks_and_look_alikes_are_not_ours():
    text = "# >>> cc-continuity other v1 >>>\n# <<< cc-continuity other <<<\n  # >>> cc-continuity w v1 >>>\n"
    assert blocks.find(text, "w", "hash") is None
    assert blocks.remove(text, "w", "hash") == text


def test_a_body_containing_our_marker_is_rejected():
    with pytest.raises(ValueError):
        blocks.render("w", "1", "# <<< cc-continuity w <<<\n", "hash")


def test_any_bytes_round_trip_through_a_file(tmp_path):
    rc = tmp_path / "rc"
    original = b"latin1: \xe9t\xe9\r\nbinary \xff\x00 tail"
    rc.write_bytes(original)
    ch = install_plan.block_change(str(rc), "w", "hash", BODY)
    assert ch.new.startswith(original)
    ch.apply([])
    ch2 = install_plan.block_change(str(rc), "w", "hash")
    ch2.apply([])
    assert rc.read_bytes() == original


def test_symlinked_rc_is_written_through_and_keeps_its_mode(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "zshrc"
    real.write_text("export A=1\n")
    os.chmod(real, 0o640)
    link = tmp_path / ".zshrc"
    link.symlink_to(real)
    install_plan.block_change(str(link), "w", "hash", BODY).apply([])
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "cc-continuity w" in real.read_text()
    assert os.stat(real).st_mode & 0o777 == 0o640
    install_plan.block_change(str(link), "w", "hash").apply([])
    assert real.read_text() == "export A=1\n" and link.is_symlink()


def test_unbalanced_file_is_left_untouched(tmp_path):
    rc = tmp_path / "rc"
    rc.write_text("# >>> cc-continuity w v1 >>>\nhalf\n")
    before = rc.read_bytes()
    with pytest.raises(blocks.BlockError):
        install_plan.block_change(str(rc), "w", "hash", BODY)
    assert rc.read_bytes() == before
