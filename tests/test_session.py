"""session: the explicit transition table, persisted atomically and ledgered; illegal moves change nothing."""

import itertools
import json
import os

import pytest

from cc_continuity import ledger, session
from cc_continuity.session import IllegalTransition, TRANSITIONS

ALLOWED = sorted((src, dst) for src, dsts in TRANSITIONS.items() for dst in dsts)
DISALLOWED = sorted((s, d) for s, d in itertools.product(session.STATES, repeat=2) if d not in TRANSITIONS[s])


def make(tmp_path, state, name="s"):
    sdir = tmp_path / name
    sdir.mkdir()
    rec = session.new_record(3, "proj-003", "sid-1", state=state, project_root="/p")
    session.save(str(sdir), rec)
    return str(sdir), rec


def read_state(sdir):
    with open(session.state_path(sdir), "rb") as f:
        return f.read()


def test_table_covers_every_state():
    assert set(TRANSITIONS) == set(session.STATES)
    for dsts in TRANSITIONS.values():
        assert set(dsts) <= set(session.STATES)
    assert TRANSITIONS[session.ROTATED] == set()
    # only a `claude --resume` revives an ended session, and a run finishing the rotation its process ended in
    assert TRANSITIONS[session.ENDED] == {session.ACTIVE, session.HANDOFF_REQUESTED}
    assert len(ALLOWED) + len(DISALLOWED) == len(session.STATES) ** 2


def test_new_record_shape_and_save_load(tmp_path):
    sdir, rec = make(tmp_path, session.ACTIVE)
    got = session.load(sdir)
    assert got == rec
    for key in ("number", "name", "session_id", "session_ids", "state", "created", "updated", "predecessor",
                "successor", "levels_notified", "flags", "project_root"):
        assert key in got
    assert got["session_ids"] == ["sid-1"]
    assert oct(os.stat(session.state_path(sdir)).st_mode & 0o777) == oct(0o600)


@pytest.mark.parametrize("src,dst", ALLOWED)
def test_every_allowed_transition(tmp_path, src, dst):
    sdir, rec = make(tmp_path, src)
    out = session.transition(sdir, rec, dst, "because test", extra_field=42)
    assert out["state"] == dst
    on_disk = session.load(sdir)
    assert on_disk["state"] == dst and on_disk["extra_field"] == 42
    recs = ledger.read(session.ledger_path(sdir))
    assert [(r["ev"], r["from"], r["to"], r["why"]) for r in recs] == [("transition", src, dst, "because test")]
    assert ledger.verify(session.ledger_path(sdir))[0]


@pytest.mark.parametrize("src,dst", DISALLOWED)
def test_disallowed_transition_changes_nothing(tmp_path, src, dst):
    sdir, rec = make(tmp_path, src)
    before = read_state(sdir)
    snapshot = json.loads(json.dumps(rec))
    with pytest.raises(IllegalTransition) as exc:
        session.transition(sdir, rec, dst, "bad idea", extra_field=1)
    assert src in str(exc.value) and dst in str(exc.value)
    assert read_state(sdir) == before
    assert rec == snapshot, "the in-memory record must not be modified either"
    recs = ledger.read(session.ledger_path(sdir))
    assert [(r["ev"], r["from"], r["to"], r["why"]) for r in recs] == [("illegal_transition", src, dst, "bad idea")]


def test_full_rotation_path_in_ledger_order(tmp_path):
    sdir, rec = make(tmp_path, session.ACTIVE)
    path = [session.WARNED, session.ROTATION_PENDING, session.HANDOFF_REQUESTED, session.CHECKPOINT_VERIFIED,
            session.ROTATING, session.AWAITING_MANUAL_CLEAR, session.ROTATED]
    for dst in path:
        rec = session.transition(sdir, rec, dst, "step")
    recs = ledger.read(session.ledger_path(sdir))
    assert [r["to"] for r in recs] == path
    assert [r["n"] for r in recs] == list(range(1, len(path) + 1))
    with pytest.raises(IllegalTransition):
        session.transition(sdir, rec, session.ACTIVE, "after rotated")
    assert session.load(sdir)["state"] == session.ROTATED


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"state":"NOPE"}', b'{"number":1}'])
def test_load_rejects_corrupt_state(tmp_path, content):
    sdir = str(tmp_path)
    with open(session.state_path(sdir), "wb") as f:
        f.write(content)
    with pytest.raises(ValueError):
        session.load(sdir)


def test_load_missing_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        session.load(str(tmp_path / "nope"))


def test_is_allowed_unknown_state():
    assert not session.is_allowed("BOGUS", session.ACTIVE)
    assert not session.is_allowed(None, session.ENDED)
