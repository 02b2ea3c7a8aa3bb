"""The retention policy (snapshot/retention.py). Issue 13, P8: pruning against real refs never removes a
claimable checkpoint's snapshot nor the newest of a session, whatever the limits (a test that tries, and
Hypothesis over the rule).
"""

import os
import subprocess
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from cc_continuity import config, session
from cc_continuity.snapshot import refs as snaprefs
from cc_continuity.snapshot import retention
from helpers.hookdriver import HookDriver

FILES = {"README.md": "hello\n", "src/app.py": "print('v1')\n"}  # (as in test_job.py)


# -- P8: retention -----------------------------------------------------------------------------
def _snap(root, ref, when, env_extra=None):
    env = dict(os.environ, GIT_COMMITTER_DATE="@%d +0000" % when, GIT_AUTHOR_DATE="@%d +0000" % when)
    code = ("import sys; from cc_continuity.snapshot import worktree; worktree.snapshot(sys.argv[1], sys.argv[2], 'm')")
    subprocess.run([os.sys.executable, "-c", code, root, ref], env=env, check=True)


def test_pruning_never_removes_a_claimable_checkpoint_or_a_sessions_newest(tmp_path):
    drv = HookDriver(tmp_path / "proj", files=FILES)
    proj = drv.project
    proj.ensure()
    pre = "refs/continuity/%s/" % proj.key
    now = int(time.time())
    day = 86400
    # Session 1: claimable, its checkpoint the oldest ref of all. Session 2: three refs. Session 3: one.
    _snap(drv.root, pre + "cp-001", now - 90 * day)
    _snap(drv.root, pre + "manual/002-a", now - 80 * day)
    _snap(drv.root, pre + "cp-002", now - 70 * day)
    _snap(drv.root, pre + "cp-002-2", now - 60 * day)
    _snap(drv.root, pre + "cp-003", now - 50 * day)
    _snap(drv.root, "refs/continuity/another-worktree/cp-001", now - 99 * day)
    with proj.lock():
        proj.ensure_open_index()
    for n, state, ref in ((1, session.AWAITING_MANUAL_CLEAR, pre + "cp-001"), (2, session.ROTATED, pre + "cp-002-2"),
                          (3, session.ROTATED, pre + "cp-003")):
        sdir = proj.session_dir(n)
        os.makedirs(sdir, exist_ok=True)
        session.save(sdir, session.new_record(n, proj.session_name(n), "s%d" % n, state=state,
                                              checkpoint={"id": "cp-%03d" % n, "ref": ref}))
    cfg = config.load(proj.root)
    cfg.values.update(snapshot_keep=1, snapshot_max_age_days=1)  # as hard as it gets: prune everything it may
    res = retention.prune(proj, cfg)
    left = {r for r, _, _ in snaprefs.list_refs(drv.root, "refs/continuity/")}
    assert pre + "cp-001" in left  # claimable, however old
    assert pre + "cp-002-2" in left and pre + "cp-003" in left  # each session's newest
    assert pre + "manual/002-a" not in left and pre + "cp-002" not in left
    assert "refs/continuity/another-worktree/cp-001" in left  # not this project's
    assert sorted(res["deleted"]) == [pre + "cp-002", pre + "manual/002-a"]
    # The claimable one moves on: once claimed, it is only protected as its session's newest.
    rec = session.load(proj.session_dir(1))
    session.transition(proj.session_dir(1), rec, session.ROTATED, "claimed", successor=4)
    assert retention.prune(proj, cfg)["deleted"] == []


REF = st.tuples(st.integers(1, 6), st.sampled_from(["cp", "cp-2", "manual"]), st.integers(0, 400))


@settings(max_examples=300, deadline=None)
@given(st.lists(REF, min_size=0, max_size=25, unique_by=lambda r: r[:2]), st.sets(st.integers(1, 6)),
       st.one_of(st.none(), st.integers(1, 10)), st.one_of(st.none(), st.integers(0, 300)))
def test_the_prune_rule(refs, claimable_sessions, keep, max_age_days):
    pre = "refs/continuity/k/"
    now = 1_000_000_000
    rows = []
    for n, kind, age in refs:
        name = {"cp": "cp-%03d" % n, "cp-2": "cp-%03d-2" % n, "manual": "manual/%03d-x" % n}[kind]
        rows.append((pre + name, "%040x" % len(rows), now - age * 86400))
    rows.sort(key=lambda r: (r[2], r[0]), reverse=True)
    claimable = {pre + "cp-%03d" % n for n in claimable_sessions}
    doomed, _ = retention.choose(rows, pre, keep, None if max_age_days is None else max_age_days * 86400,
                                 claimable, now)
    doomed = {r for r, _ in doomed}
    newest = {}
    for ref, _, _ in rows:
        newest.setdefault(retention.session_of(ref, pre), ref)
    assert not doomed & claimable
    assert not doomed & set(newest.values())
    for rank, (ref, _, created) in enumerate(rows):
        over = (keep is not None and rank >= keep) or (max_age_days is not None and now - created > max_age_days * 86400)
        protected = ref in claimable or ref in newest.values()
        assert (ref in doomed) == (over and not protected), (ref, rank, created)


