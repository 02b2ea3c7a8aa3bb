"""Publish time and bytes per checkpoint, and claim-from-remote time (issue 26).

A repository of ``--files`` files (default 50 000, ~200 bytes each, in 500 directories)
whose branch is already on a bare remote; each round changes ``--changed`` files (10),
takes the checkpoint's snapshot (persistent private index, as the rotation does) and
publishes it with publish.publish (one atomic push: the publish commit over the snapshot,
tracked files only).  Bytes are the pack git sends (the remote keeps each push's pack as
received: ``receive.unpackLimit=1``).  Then a second machine claims it
(``cc-continuity claim --print``: ls-remote, fetch, lease push, worktree, import).

    python3 bench/share_bench.py [--files 50000] [--changed 10] [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def git(cwd, *args, env=None):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def store_bytes(bare):
    """The bytes of the remote's packs (receive.unpackLimit=1 keeps every push as the pack that was sent)."""
    d = bare + "/objects/pack"
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".pack"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--changed", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="share-bench-")
    os.environ.update(CC_CONTINUITY_HOME=tmp + "/state-a", HOME=tmp + "/home-a", GIT_AUTHOR_NAME="Bench",
                      GIT_AUTHOR_EMAIL="bench@example.invalid", GIT_COMMITTER_NAME="Bench",
                      GIT_COMMITTER_EMAIL="bench@example.invalid")
    os.makedirs(os.environ["HOME"])
    from cc_continuity.snapshot import job, worktree
    from cc_continuity.snapshot.refs import ref_name
    from cc_continuity import paths, session
    from cc_continuity.share import publish
    from cc_continuity.project import Project

    root, bare = tmp + "/a", tmp + "/remote.git"
    os.makedirs(root)
    for i in range(args.files):
        d = "%s/d%03d" % (root, i % 500)
        os.makedirs(d, exist_ok=True)
        with open("%s/f%05d.txt" % (d, i), "w") as f:
            f.write(("file %d\n" % i) * 25)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    git(tmp, "init", "-q", "--bare", bare)
    git(bare, "config", "receive.unpackLimit", "1")
    git(root, "remote", "add", "origin", "file://" + bare)
    git(root, "push", "-q", "origin", "main")
    proj = Project(root)
    proj.ensure()
    idx = job.index_path(root)
    worktree.snapshot(root, "refs/continuity/bench/seed", None, index=idx)  # the private index is warm, as after cp-001
    rows = []
    for r in range(1, args.rounds + 1):
        for k in range(args.changed):
            with open("%s/d%03d/f%05d.txt" % (root, k % 500, k), "a") as f:
                f.write("round %d\n" % r)
        snap = worktree.snapshot(root, ref_name(proj.key, r), "cp-%03d" % r, index=idx)
        sdir = proj.session_dir(r)
        cdir = session.checkpoint_dir(sdir)
        paths.ensure_dir(cdir)
        with open(session.handoff_path(sdir), "w") as f:
            f.write("# Handoff\n\n## Goal\nBench round %d.\n" % r)
        os.chmod(session.handoff_path(sdir), 0o600)
        with open(session.manifest_path(sdir), "w") as f:
            json.dump({"id": "cp-%03d" % r, "session": "bench-%03d" % r, "verified_at": time.time(), "git": snap}, f)
        with open(session.facts_path(sdir), "w") as f:
            json.dump({"git": {"branch": "main", "head": snap["parent"]}}, f)
        p = publish.plan(proj, r, {"share_remote": "origin", "share_untracked": False})
        p.update(local_wait_s=0, delays=[])
        before = store_bytes(bare)
        t0 = time.monotonic()
        st = publish.publish(p)
        took = time.monotonic() - t0
        assert st["state"] == "published", st
        rows.append({"round": r, "snapshot_ms": snap["elapsed_ms"], "publish_ms": round(took * 1000),
                     "push_ms": st["push_ms"], "bytes": store_bytes(bare) - before})
        print(json.dumps(rows[-1]))
    # machine B: a clone, then a claim of the newest
    env = dict(os.environ, CC_CONTINUITY_HOME=tmp + "/state-b", HOME=tmp + "/home-b", PYTHONPATH=REPO)
    os.makedirs(env["HOME"])
    clone = tmp + "/b"
    git(tmp, "clone", "-q", "file://" + bare, clone)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "cc_continuity", "claim", "--from", "origin",
                          "%s/cp-%03d" % (proj.key, args.rounds), "--print"], cwd=clone, env=env,
                         capture_output=True, text=True)
    claim_s = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    import glob

    led = glob.glob(tmp + "/state-b/projects/*/sessions/001/ledger.jsonl")[0]
    stages = [json.loads(line) for line in open(led) if '"imported"' in line][0]["ms"]
    summary = {"files": args.files, "changed": args.changed, "rounds": args.rounds,
               "publish_ms_median": statistics.median(r["publish_ms"] for r in rows),
               "push_ms_median": statistics.median(r["push_ms"] for r in rows),
               "bytes_median": statistics.median(r["bytes"] for r in rows),
               "claim_print_s": round(claim_s, 2), "claim_stages_ms": stages}
    print(json.dumps(summary))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
