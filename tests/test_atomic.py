"""atomic.write_bytes/write_text: whole-file replacement that never tears and never litters."""

import os
import stat

import pytest

from cc_continuity import atomic


def leftovers(d):
    return [n for n in os.listdir(d) if n.startswith(atomic.TMP_MARK)]


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_replaces_content(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b"old content that is longer than the new one")
    atomic.write_bytes(str(p), b"new")
    assert p.read_bytes() == b"new"
    atomic.write_text(str(p), "caf\u00e9 \u65e5\u672c")
    assert p.read_bytes() == "caf\u00e9 \u65e5\u672c".encode("utf-8")
    assert leftovers(tmp_path) == []


def test_new_file_is_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        atomic.write_bytes(str(tmp_path / "a"), b"x")
    finally:
        os.umask(old)
    old = os.umask(0o077)
    try:
        atomic.write_bytes(str(tmp_path / "b"), b"x")
    finally:
        os.umask(old)
    assert mode_of(tmp_path / "a") == 0o600
    assert mode_of(tmp_path / "b") == 0o600


def test_existing_mode_is_kept(tmp_path):
    p = tmp_path / "settings.json"
    p.write_bytes(b"{}")
    os.chmod(p, 0o644)
    atomic.write_bytes(str(p), b'{"a":1}')
    assert mode_of(p) == 0o644
    os.chmod(p, 0o640)
    atomic.write_text(str(p), "{}")
    assert mode_of(p) == 0o640


def test_explicit_mode_wins(tmp_path):
    p = tmp_path / "script.sh"
    p.write_bytes(b"")
    os.chmod(p, 0o600)
    atomic.write_bytes(str(p), b"#!/bin/sh\n", mode=0o755)
    assert mode_of(p) == 0o755


def test_replaced_not_rewritten_in_place(tmp_path):
    """A reader holding the old file keeps seeing the old bytes (the inode is swapped)."""
    p = tmp_path / "state.json"
    p.write_bytes(b"OLD")
    with open(p, "rb") as reader:
        atomic.write_bytes(str(p), b"NEW")
        assert reader.read() == b"OLD"
    assert p.read_bytes() == b"NEW"


def test_symlink_is_written_through(tmp_path):
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    target = real_dir / "settings.json"
    target.write_bytes(b"{}")
    os.chmod(target, 0o644)
    link = tmp_path / "settings.json"
    os.symlink(target, link)
    atomic.write_text(str(link), '{"hooks":{}}')
    assert os.path.islink(link), "the symlink must survive"
    assert os.readlink(link) == str(target)
    assert target.read_text() == '{"hooks":{}}'
    assert mode_of(target) == 0o644
    assert leftovers(tmp_path) == [] and leftovers(real_dir) == []


def test_relative_and_chained_symlinks(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "cfg"
    target.write_bytes(b"1")
    os.symlink("real/cfg", tmp_path / "hop")
    os.symlink("hop", tmp_path / "cfg")
    atomic.write_bytes(str(tmp_path / "cfg"), b"2")
    assert target.read_bytes() == b"2"
    assert os.path.islink(tmp_path / "cfg") and os.path.islink(tmp_path / "hop")


def test_dangling_symlink_creates_its_target(tmp_path):
    target = tmp_path / "elsewhere" / "new.json"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "link.json"
    os.symlink(target, link)
    atomic.write_bytes(str(link), b"{}")
    assert os.path.islink(link)
    assert target.read_bytes() == b"{}"
    assert mode_of(target) == 0o600


def test_no_temp_left_after_bad_data(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"keep me")
    with pytest.raises(TypeError):
        atomic.write_bytes(str(p), "a str is not bytes")
    assert p.read_bytes() == b"keep me"
    assert leftovers(tmp_path) == []


def test_no_temp_left_when_replace_fails(tmp_path):
    """os.replace onto a non-empty directory fails after the temp file was written."""
    target = tmp_path / "adir"
    target.mkdir()
    (target / "inside").write_bytes(b"x")
    with pytest.raises(OSError):
        atomic.write_bytes(str(target), b"data")
    assert target.is_dir() and (target / "inside").read_bytes() == b"x"
    assert leftovers(tmp_path) == []


def test_missing_directory_raises_and_writes_nothing(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    with pytest.raises(FileNotFoundError):
        atomic.write_bytes(str(d / "nope" / "f"), b"x")
    assert os.listdir(d) == []


def test_large_payload_round_trips(tmp_path):
    data = os.urandom(3 * 1024 * 1024)
    p = tmp_path / "big"
    atomic.write_bytes(str(p), data, fsync=False)
    assert p.read_bytes() == data
    assert leftovers(tmp_path) == []
