"""Cost that does not grow with the repository or the history: P6-P10 (issue 13), and P1 again.

Every figure is a ratio measured pair by pair (A, B, A, B, ...) and the median is reported
(see hotpath.py); absolute times are printed beside it, with the load average.

  P6  incremental snapshot, 50 000 files, 10 changed   vs  git status --porcelain (same repo)
      first snapshot (fresh private index)             vs  git add -A into a throwaway index
                                                           (A: an empty one; B: a copy of the user's)
  P7  the verifying Stop hook (whole process), 50 000 and 200 000 files: first and second rotation
  P8  .git growth over 100 checkpoints with a changing 8 MB untracked file (defaults; and with the
      cap raised so the file is recorded, pruned to 10 and gc'd)
  P9  meter.read_transcript, 64 MB last line           vs  1 MB last line
  P10 SessionStart, Stop, `status` with 1 000 past sessions  vs  10 past sessions
  P11 revalidation at claim, 50 000 files, 10 changed by hand  vs  git status --porcelain; the claim's
      own revalidation time (ledger); a turn end (Stop) with turn_snapshots on vs off, and the job's time
  P1  bench/hotpath.py's P1 on /usr/bin/python3 and on this interpreter

Usage: python3 bench/scale.py [--runs 5] [--files 50000] [--big-files 200000] [--only P6,P11] [--json out.json]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, HERE)

import pairs  # noqa: E402


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def git(repo, *args, env=None):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env).stdout


# -- a big repository --------------------------------------------------------------------------
def make_repo(root, n, seed=1):
    """``n`` small source files, 20 per directory, committed and packed (a clone looks like this)."""
    rng = random.Random(seed)
    os.makedirs(root)
    for i in range(n):
        d = os.path.join(root, "pkg%03d" % (i // 1000), "mod%02d" % (i // 20 % 50))
        if i % 20 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%02d.py" % (i % 20)), "w") as f:
            f.write("# file %d\n" % i + ("x = %d\n" % rng.randint(0, 10 ** 9)) * rng.randint(20, 120))
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b.invalid")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "-m", "init", env=env)
    git(root, "repack", "-adq")
    git(root, "prune-packed")
    time.sleep(1.1)
    git(root, "status", "--porcelain")  # the user's own git refreshes their index (no racy entries)
    return root


def touch10(repo, k):
    for j in range(10):
        p = os.path.join(repo, "pkg%03d" % (j * 4 % 50), "mod%02d" % (k % 50), "f%02d.py" % j)
        with open(p, "a") as f:
            f.write("# change %d\n" % k)


# -- P6 ------------------------------------------------------------------------------------------
def p6(work, files, runs):
    from cc_continuity.snapshot import worktree

    repo = make_repo(os.path.join(work, "p6"), files)
    out = {"files": files}
    status = ["git", "status", "--porcelain"]
    first, empty, copy = [], [], []
    for i in range(runs):
        idx = os.path.join(work, "p6state%d" % i, "snapshot.index")
        t, _ = pairs.timed(lambda: worktree.snapshot(repo, "refs/continuity/bench/cp-%03d" % i, "m", unique=True, index=idx))
        first.append(t)
        tmp = os.path.join(work, "throwaway")
        for target, fill in ((empty, False), (copy, True)):
            if os.path.exists(tmp):
                os.remove(tmp)
            if fill:
                shutil.copyfile(os.path.join(repo, ".git", "index"), tmp)
            env = dict(os.environ, GIT_INDEX_FILE=tmp)
            t, _ = pairs.timed(lambda: run(["git", "add", "-A"], cwd=repo, env=env))
            target.append(t)
    out["first_vs_add_empty_index"] = pairs.summary(first, empty)
    out["first_vs_add_copied_index"] = pairs.summary(first, copy)
    idx = os.path.join(work, "p6state0", "snapshot.index")
    snap, stat_ = [], []
    for i in range(runs + 1):
        touch10(repo, i)
        t, res = pairs.timed(lambda: worktree.snapshot(repo, "refs/continuity/bench/inc-%03d" % i, "m", unique=True, index=idx))
        assert res["index"] == "incremental", res["index"]
        t2, _ = pairs.timed(lambda: run(status, cwd=repo))
        if i:  # the first pair warms the page cache for both
            snap.append(t)
            stat_.append(t2)
    out["incremental_vs_status"] = pairs.summary(snap, stat_)
    shutil.rmtree(repo)
    return out


# -- P7 ------------------------------------------------------------------------------------------
def p7(work, sizes):
    """The Stop hooks of two rotations; at the biggest size also with every file touched first
    (a checkout, a rebuild: git's stat cache is cold and the first snapshot hashes every file)."""
    from helpers.hookdriver import HookDriver, handoff_text, tokens_at
    from cc_continuity import config

    out = {}
    for n in sizes + [-sizes[-1]]:
        cold, n = n < 0, abs(n)
        repo = make_repo(os.path.join(work, "p7-%d%s" % (n, "-cold" if cold else "")), n)
        if cold:
            later = time.time() - 3600  # differs from the stat data in the index: every file is read again
            for d, _, fs in os.walk(repo):
                if "/.git" not in d + "/":
                    for f in fs:
                        os.utime(os.path.join(d, f), (later, later))
        home = os.path.join(work, "p7home-%d%s" % (n, "-cold" if cold else ""))
        os.makedirs(home)
        os.environ.update(HOME=home, CC_CONTINUITY_HOME=os.path.join(home, "cc"), GIT_AUTHOR_NAME="b",
                          GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b.invalid")
        drv = HookDriver(repo, git=False, files={})
        rows = []
        sids = ["%08x-0000-4000-8000-%012x" % (n, k) for k in range(1, 4)]
        for k, sid in enumerate(sids[:2]):
            if k == 0:
                drv.transcript(sid).assistant(tokens_at(10))
                drv.hook("SessionStart", sid, source="startup")
            else:
                drv.hook("SessionEnd", sids[k - 1], reason="clear")
                drv.transcript(sid).assistant(tokens_at(5))
                drv.hook("SessionStart", sid, source="clear")
            drv.hook("UserPromptSubmit", sid, prompt="work")
            touch10(repo, k)
            drv.transcript(sid).assistant(tokens_at(65))
            t_request, _ = pairs.timed(lambda: drv.hook("Stop", sid, timeout=120))
            with open(drv.handoff_path(sid), "w") as f:
                f.write(handoff_text(config.HANDOFF_SECTIONS, body="Details: the module `pkg000/mod00/f00.py` "
                                     "is being reworked.", extra={"Files touched": "- `pkg000/mod00/f00.py`"}))
            t, _ = pairs.timed(lambda: drv.hook("Stop", sid, stop_hook_active=True, timeout=120))
            git_ = drv.checkpoint_file("manifest.json", sid)["git"]
            deadline = time.monotonic() + 900
            while git_.get("pending") and not os.path.exists(git_["result"]) and time.monotonic() < deadline:
                time.sleep(0.2)
            done = json.load(open(git_["result"])) if git_.get("pending") else git_
            rows.append({"rotation": k + 1, "request_stop_ms": round(t_request * 1000), "verify_stop_ms": round(t * 1000),
                         "snapshot_in_hook": not git_.get("pending"),
                         "snapshot_ms": done.get("elapsed_ms"), "index": done.get("index"), "load": pairs.load()})
        out["%d%s" % (n, " files touched first" if cold else "")] = rows
        shutil.rmtree(repo)
    return out


# -- P11 -----------------------------------------------------------------------------------------
def p11(work, files, runs):
    """Issue 14 at scale: what revalidation adds to a claim, and what a turn-end snapshot costs.

    A checkpoint of a ``files``-file repository, then 10 files changed by hand:
    ``revalidation.since_text`` (revalidation + actions, as the claim runs it) in this process, paired
    with ``git status --porcelain``; the real claim (SessionStart after /clear) with the
    revalidation's own time from the ledger; then turn ends (Stop hook, whole process) with
    ``turn_snapshots`` on vs off, paired, and the background job's own time.
    """
    from helpers.hookdriver import HookDriver, handoff_text, tokens_at, wait_for_snapshot_jobs
    from cc_continuity import config, session
    from cc_continuity.rotation import revalidation

    repo = make_repo(os.path.join(work, "p11"), files)
    home = os.path.join(work, "p11home")
    os.makedirs(home)
    os.environ.update(HOME=home, CC_CONTINUITY_HOME=os.path.join(home, "cc"))
    drv = HookDriver(repo, git=False, files={})
    s1, s2, s3 = ("%08x-0000-4000-8000-%012x" % (files, k) for k in range(1, 4))
    drv.transcript(s1).assistant(tokens_at(10))
    drv.hook("SessionStart", s1, source="startup")
    drv.hook("UserPromptSubmit", s1, prompt="work")
    drv.transcript(s1).assistant(tokens_at(65))
    drv.hook("Stop", s1, timeout=300)
    with open(drv.handoff_path(s1), "w") as f:
        f.write(handoff_text(config.HANDOFF_SECTIONS, body="Details: `pkg000/mod00/f00.py` is being reworked.",
                             extra={"Files touched": "- `pkg000/mod00/f00.py`"}))
    drv.hook("Stop", s1, stop_hook_active=True, timeout=300)
    wait_for_snapshot_jobs(drv.cc_home, timeout=900)
    touch10(repo, 7)
    pdir = drv.sdir(s1)
    prec = session.load(pdir)
    cfg = config.load(repo)
    reval, status = [], []
    for i in range(runs + 1):
        t, (res, text) = pairs.timed(lambda: revalidation.since_text(repo, pdir, prec, cfg))
        assert res["changed_count"] == 10, res
        t2, _ = pairs.timed(lambda: run(["git", "status", "--porcelain"], cwd=repo))
        if i:
            reval.append(t)
            status.append(t2)
    out = {"files": files, "revalidation_vs_status": pairs.summary(reval, status), "verdict": res["verdict"],
           "section_chars": len(text), "via": "see ledger"}
    drv.hook("SessionEnd", s1, reason="clear")
    drv.transcript(s2).assistant(tokens_at(5))
    t, boot = pairs.timed(lambda: drv.hook("SessionStart", s2, source="clear", timeout=120))
    rv = drv.ledger(s2, ev="revalidation")[-1]
    text = boot["hookSpecificOutput"]["additionalContext"]
    out["claim"] = {"session_start_ms": round(t * 1000), "revalidation_ms": rv["ms"], "verdict": rv["verdict"],
                    "changed_count": rv["changed_count"], "bootstrap_chars": len(text),
                    "bootstrap_tokens_est": len(text) // 4}
    drv.hook("UserPromptSubmit", s2, prompt="carry on")
    on, off, job = [], [], []
    for i in range(runs + 1):
        for flag, target in ((True, on), (False, off)):
            drv.config(turn_snapshots=flag)
            touch10(repo, 20 + i)
            drv.transcript(s2).assistant(tokens_at(20))
            wait_for_snapshot_jobs(drv.cc_home, timeout=900)
            t, _ = pairs.timed(lambda: drv.hook("Stop", s2, timeout=120))
            if i:
                target.append(t)
            if flag:
                wait_for_snapshot_jobs(drv.cc_home, timeout=900)
                got = json.load(open(os.path.join(drv.sdir(s2), "turn-snapshot.json")))
                if i:
                    job.append(got.get("elapsed_ms"))
    out["turn_end_stop_on_vs_off"] = pairs.summary(on, off)
    out["turn_snapshot_job_ms"] = {"median": statistics.median(job), "max": max(job), "runs": len(job)}
    shutil.rmtree(repo)
    return out


# -- P8 ------------------------------------------------------------------------------------------
def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def p8(work, count=100):
    from cc_continuity.snapshot import refs, retention, worktree

    out = {}
    for name, cap in (("defaults (untracked cap 1 MiB)", None), ("cap 16 MiB, keep 10, then git gc", 16 << 20)):
        repo = make_repo(os.path.join(work, "p8-%d" % len(out)), 200)
        idx = os.path.join(work, "p8state-%d" % len(out), "snapshot.index")
        before = du(os.path.join(repo, ".git"))
        pre = "refs/continuity/bench/"
        for i in range(count):
            with open(os.path.join(repo, "data.bin"), "wb") as f:
                f.write(os.urandom(8 << 20))
            kw = {"max_untracked_bytes": 1 << 20} if cap is None else {"max_untracked_bytes": cap,
                                                                      "max_file_bytes": cap}
            worktree.snapshot(repo, pre + "manual/001-%03d" % i, "m", index=idx, **kw)
            if cap is not None:
                rows = refs.list_refs(repo, pre)
                doomed, _ = retention.choose(rows, pre, 10, None, set(), time.time())
                refs.delete_refs(repo, doomed)
        if cap is not None:
            git(repo, "-c", "gc.pruneExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc", "-q", "--prune=now")
        grown = du(os.path.join(repo, ".git")) - before
        out[name] = {"checkpoints": count, "git_growth_mb": round(grown / 1e6, 1),
                     "refs": len(refs.list_refs(repo, pre)), "load": pairs.load()}
        shutil.rmtree(repo)
    return out


# -- P9 ------------------------------------------------------------------------------------------
def p9(work, runs):
    from cc_continuity import meter

    usage = {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000}
    head = json.dumps({"type": "assistant", "message": {"id": "m", "model": "claude-sonnet-4-5", "usage": usage,
                                                       "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                                                                    "input": {}}]}})
    paths = {}
    for mb in (1, 64):
        p = os.path.join(work, "t%d.jsonl" % mb)
        with open(p, "w") as f:
            f.write(head + "\n" + json.dumps({"type": "user", "message": {"content": "x" * (mb << 20)}}) + "\n")
        paths[mb] = p
    big, small = [], []
    for _ in range(runs * 2 + 1):
        big.append(pairs.timed(lambda: meter.read_transcript(paths[64]))[0])
        small.append(pairs.timed(lambda: meter.read_transcript(paths[1]))[0])
    got = meter.read_transcript(paths[64])
    return {"64MB_vs_1MB": pairs.summary(big, small), "64MB_reading": {k: got.get(k) for k in ("tokens", "long_line")},
            "1MB_reading": meter.read_transcript(paths[1])["tokens"]}


# -- P10 -----------------------------------------------------------------------------------------
def p10(work, runs):
    from cc_continuity import session
    from cc_continuity.project import Project

    projects = {}
    for past in (10, 1000):
        root = os.path.join(work, "p10-%d" % past)
        os.makedirs(root)
        git(root, "init", "-q", "-b", "main")
        home = os.path.join(work, "p10home-%d" % past)
        os.makedirs(home)
        env = dict(os.environ, HOME=home, CC_CONTINUITY_HOME=os.path.join(home, "cc"), CLAUDE_PROJECT_DIR=root,
                   CLAUDE_PID=str(2 ** 22 + 7), PYTHONPATH=REPO)
        os.environ["CC_CONTINUITY_HOME"] = env["CC_CONTINUITY_HOME"]
        proj = Project(os.path.realpath(root))
        proj.ensure()
        for n in range(1, past + 1):
            sdir = proj.session_dir(n)
            os.makedirs(sdir, exist_ok=True)
            session.save(sdir, session.new_record(n, proj.session_name(n), "%08x-1111-4000-8000-%012x" % (past, n),
                                                  state=session.ROTATED, successor=n + 1, pid=2 ** 22 + 9,
                                                  checkpoint={"id": "cp-%03d" % n, "ref": None}))
        proj.save_meta({"root": proj.root, "slug": proj.slug, "key": proj.key, "counter": past})
        projects[past] = (root, env)
    from helpers.transcripts import hook_command

    hook = hook_command("SessionStart")[:-1]
    res = {}
    k = [0]

    reply = os.path.join(work, "reply.jsonl")  # the turn's last reply is there: Stop need not wait for it
    with open(reply, "w") as f:
        f.write(json.dumps({"type": "assistant", "message": {
            "id": "m1", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 20000}}}) + "\n")

    def start(past):
        root, env = projects[past]
        k[0] += 1
        sid = "%08x-2222-4000-8000-%012x" % (past, k[0])
        payload = json.dumps({"session_id": sid, "hook_event_name": "SessionStart", "source": "startup",
                              "cwd": root, "transcript_path": reply, "model": "claude-sonnet-4-5"}).encode()
        return pairs.timed(lambda: subprocess.run(hook + ["SessionStart"], input=payload, env=env,
                                            stdout=subprocess.DEVNULL, check=True))[0], sid

    def stop(past, sid):
        root, env = projects[past]
        payload = json.dumps({"session_id": sid, "hook_event_name": "Stop", "cwd": root, "stop_hook_active": False,
                              "transcript_path": reply, "last_assistant_message": "ok"}).encode()
        return pairs.timed(lambda: subprocess.run(hook + ["Stop"], input=payload, env=env, stdout=subprocess.DEVNULL,
                                            check=True))[0]

    def status(past):
        root, env = projects[past]
        return pairs.timed(lambda: subprocess.run([sys.executable, "-m", "cc_continuity", "status"], cwd=root, env=env,
                                            stdout=subprocess.DEVNULL, check=True))[0]

    a = {"SessionStart": [], "Stop": [], "status": []}
    b = {"SessionStart": [], "Stop": [], "status": []}
    for i in range(runs * 2 + 1):
        row = {}
        for past in ((1000, 10) if i % 2 else (10, 1000)):  # alternate which goes first
            t, sid = start(past)
            row[past] = [t, stop(past, sid), status(past)]
        if i:
            for past, target in ((1000, a), (10, b)):
                for name, t in zip(("SessionStart", "Stop", "status"), row[past]):
                    target[name].append(t)
    for name in a:
        res[name + " 1000 vs 10"] = pairs.summary(a[name], b[name])
    return res


# -- P1 ------------------------------------------------------------------------------------------
def p1(work):
    out = {}
    for py in sorted({"/usr/bin/python3", os.path.realpath(sys.executable)}):
        if not os.path.exists(py):
            continue
        j = os.path.join(work, "p1-%s.json" % py.replace("/", "_"))
        subprocess.run([py, os.path.join(HERE, "hotpath.py"), "--runs", "40", "--big-mb", "2", "--p1-mb", "200",
                        "--json", j], check=True, stdout=subprocess.DEVNULL)
        got = json.load(open(j))["P1"]
        version = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                 text=True).stdout.strip()
        out["%s (%s)" % (py, version)] = dict(got, load=pairs.load())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--big-files", type=int, default=200_000)
    ap.add_argument("--only", default="P6,P7,P8,P9,P10,P11,P1")
    ap.add_argument("--json")
    args = ap.parse_args()
    only = {x.strip().upper() for x in args.only.split(",")}
    work = tempfile.mkdtemp(prefix="cc-scale-")
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.invalid")
    os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.invalid")
    results = {}
    try:
        for name, fn in (("P9", lambda: p9(work, args.runs)), ("P10", lambda: p10(work, args.runs)),
                         ("P6", lambda: p6(work, args.files, args.runs)),
                         ("P7", lambda: p7(work, [args.files, args.big_files])), ("P8", lambda: p8(work)),
                         ("P11", lambda: p11(work, args.files, args.runs)),
                         ("P1", lambda: p1(work))):
            if name in only:
                print("%s … (load %s)" % (name, pairs.load()), flush=True)
                results[name] = fn()
                print(json.dumps(results[name], indent=1), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
