"""Non-invasive git snapshots and machine-derived git facts.

A checkpoint must record the exact work tree without touching anything the user
owns: HEAD, the index, branches, the stash, config and the working files stay
byte for byte as they were. So the snapshot is built in a *private* index
(``GIT_INDEX_FILE`` in a temp dir), turned into a tree and a commit object, and
published only under ``refs/continuity/<project key>/cp-<NNN>``.  A ref that
exists is never moved or deleted: a name that is taken (a purge restarted the
counter, a crashed attempt left one) makes a new one (``cp-<NNN>-2`` …).

Every git call runs with ``cwd`` = the work tree, the repository-locating
environment (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) scrubbed so an outer git
process (e.g. a pre-commit hook running us) cannot redirect us,
``GIT_OPTIONAL_LOCKS=0`` so read-only commands never refresh the real index,
and hooks disabled. Standard library only.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time

REF_PREFIX = "refs/continuity/"
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_SUBJECT_MAX = 200
_FALLBACK_NAME = "cc-continuity"
_FALLBACK_EMAIL = "cc-continuity@localhost"
_TRAILER_FILES = "Continuity-Files"
_TRAILER_BYTES = "Continuity-Bytes"
_TRAILER_SKIPPED = "Continuity-Skipped-Large"

# Variables that point git at another repository/index (git rev-parse --local-env-vars).
_LOCAL_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_DIR", "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE", "GIT_WORK_TREE", "GIT_NAMESPACE",
)
# Per-command config: no hooks (post-index-change, reference-transaction), no fsmonitor
# daemon, no split index (it would write sharedindex.* files into the user's .git).
_SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.splitIndex=false",
    "-c", "advice.addEmbeddedRepo=false",
)


class SnapshotError(RuntimeError):
    """git is present but a command needed for the snapshot failed."""

    def __init__(self, message, cmd=None, returncode=None, stderr=""):
        super().__init__(message)
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


# ----------------------------------------------------------------- plumbing


def _env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_ENV}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    if extra:
        env.update(extra)
    return env


def _git(args, cwd, *, env=None, input=None, timeout=30.0):
    """Run git; return CompletedProcess with bytes stdout/stderr (never raises on rc)."""
    return subprocess.run(
        ["git", *_SAFE_CONFIG, *args], cwd=cwd, env=env or _env(), input=input,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def _text(data):
    """Bytes from git -> str for reports; undecodable bytes stay visible as escapes."""
    return data.decode("utf-8", "backslashreplace")


def _last_line(data):
    """git's stderr ends with its one-line verdict (``fatal: ...``)."""
    lines = _text(data).strip().splitlines()
    return lines[-1] if lines else ""


class _Runner:
    """git calls for one snapshot: a shared deadline, failures become SnapshotError."""

    def __init__(self, top, env, timeout):
        self.top, self.env = top, env
        self.deadline = time.monotonic() + timeout

    def run(self, args, *, input=None, ok=(0,)):
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise SnapshotError("snapshot timed out before git %s" % args[0], cmd=args)
        try:
            proc = _git(args, self.top, env=self.env, input=input, timeout=remaining)
        except subprocess.TimeoutExpired:
            raise SnapshotError("git %s timed out" % args[0], cmd=args) from None
        if proc.returncode not in ok:
            err = _text(proc.stderr).strip()
            raise SnapshotError(
                "git %s failed (exit %d): %s" % (args[0], proc.returncode, err or "no message"),
                cmd=args, returncode=proc.returncode, stderr=err)
        return proc


def _locate(path, timeout=10.0):
    """(toplevel, index path, None) for a work tree, else (None, None, reason)."""
    try:
        proc = _git(["rev-parse", "--show-toplevel", "--git-path", "index"],
                    os.fspath(path), timeout=timeout)
    except FileNotFoundError:
        return None, None, "git not installed" if shutil.which("git") is None else "no git"
    except (NotADirectoryError, PermissionError, subprocess.TimeoutExpired) as exc:
        return None, None, "no git (%s)" % exc.__class__.__name__
    if proc.returncode != 0:
        err = _text(proc.stderr)
        if "not a git repository" in err or "must be run in a work tree" in err:
            return None, None, "no git"
        return None, None, "git refused: %s" % _last_line(proc.stderr)
    lines = proc.stdout.split(b"\n")
    if len(lines) < 2 or not lines[0]:
        return None, None, "no git"
    top = os.fsdecode(lines[0])
    index = os.path.join(os.fspath(path), os.fsdecode(lines[1]))
    return top, index, None


def find_git_root(path):
    """The work tree's top directory containing ``path``; None if not a repo or no git."""
    return _locate(path)[0]


# ----------------------------------------------------------------- ref names

_BAD_REF_CHARS = frozenset(" ~^:?*[\\\x7f") | frozenset(chr(c) for c in range(32))


def check_ref_component(part):
    """Raise ValueError unless ``part`` is a safe refname component.

    git check-ref-format's rules, applied to every component; a lone "@" and a
    trailing "." (which git only forbids at the very end of a ref) are refused too.
    """
    if not isinstance(part, str) or not part:
        raise ValueError("ref component must be a non-empty string")
    problems = []
    if "/" in part:
        problems.append("contains '/'")
    if part.startswith("."):
        problems.append("starts with '.'")
    if part.endswith(".") or part.endswith(".lock"):
        problems.append("ends with '.' or '.lock'")
    if ".." in part:
        problems.append("contains '..'")
    if "@{" in part or part == "@":
        problems.append("contains '@{' or is '@'")
    if any(ch in _BAD_REF_CHARS for ch in part):
        problems.append("contains a space, control character or one of ~^:?*[\\")
    if problems:
        raise ValueError("invalid ref component %r: %s" % (part, "; ".join(problems)))


def check_ref(ref):
    """Raise ValueError unless ``ref`` is a full refname under refs/."""
    if not isinstance(ref, str) or not ref.startswith("refs/"):
        raise ValueError("invalid ref %r: must start with 'refs/'" % (ref,))
    for part in ref.split("/"):
        check_ref_component(part)


def ref_name(namespace, number):
    """``refs/continuity/<namespace>/cp-<NNN>``; ValueError for a name git would reject.

    The namespace is the project *key* (slug plus a hash of the root), not the slug:
    two worktrees both called ``proj`` share one ref store.
    """
    check_ref_component(namespace)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError("checkpoint number must be a non-negative int, got %r" % (number,))
    return "%s%s/cp-%03d" % (REF_PREFIX, namespace, number)


# ----------------------------------------------------------------- snapshot


def _identity_env(runner):
    """Fallback author/committer only where neither env nor git config names one."""
    proc = runner.run(["config", "--get-regexp", r"^(user|author|committer)\.(name|email)$"],
                      ok=(0, 1))
    keys = {line.split(b" ", 1)[0].decode("ascii", "replace").lower()
            for line in proc.stdout.splitlines() if line}
    extra = {}
    for role in ("author", "committer"):
        for field, fallback in (("name", _FALLBACK_NAME), ("email", _FALLBACK_EMAIL)):
            var = "GIT_%s_%s" % (role.upper(), field.upper())
            if os.environ.get(var) or {"user." + field, role + "." + field} & keys:
                continue
            extra[var] = fallback
    return extra


def _over_cap(runner, max_file_bytes, untracked=True):
    """Untracked-not-ignored (when recorded) and modified tracked regular files bigger than the cap."""
    others = ["--others", "--exclude-standard"] if untracked else []
    out = runner.run(["ls-files", "-z", "-t", "--modified", *others]).stdout
    found, seen = [], set()
    for rec in out.split(b"\0"):
        tag, rel = rec[:2], rec[2:]
        if not rel or rel in seen or rel.endswith(b"/"):
            continue  # a trailing slash is an untracked nested repository
        seen.add(rel)
        try:
            st = os.lstat(os.path.join(os.fsencode(runner.top), rel))
        except OSError:
            continue  # deleted: add -A records the deletion
        if stat.S_ISREG(st.st_mode) and st.st_size > max_file_bytes:
            found.append((rel, st.st_size, tag != b"? "))
    return found


def _tree_stats(runner, tree):
    """(entries, total blob bytes) of a tree; gitlinks count as entries with no bytes."""
    out = runner.run(["ls-tree", "-r", "-l", "-z", tree]).stdout
    files = size = 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        files += 1
        meta = rec.split(b"\t", 1)[0].split()
        if len(meta) == 4 and meta[3].isdigit():
            size += int(meta[3])
    return files, size


def _commit_message(message, files, size, skipped):
    body = (message or "").strip("\n") or "cc-continuity snapshot"
    trailers = "%s: %d\n%s: %d\n" % (_TRAILER_FILES, files, _TRAILER_BYTES, size)
    if skipped:
        trailers += "%s: %d\n" % (_TRAILER_SKIPPED, len(skipped))
    return (body + "\n\n" + trailers).encode("utf-8", "replace")


def snapshot(root, ref, message, *, max_file_bytes=DEFAULT_MAX_FILE_BYTES, timeout=30, unique=False,
             untracked=True):
    """Record the whole work tree as a commit under ``ref`` without touching user state.

    ``unique``: when ``ref`` is taken, publish under the next free ``<ref>-2``, ``-3`` …
    (the result's ``ref`` says which) instead of failing; an existing ref is never
    moved either way.  ``untracked=False`` records tracked files only (untracked,
    not-ignored files are left out of the snapshot).
    Returns {"git": False, "reason": ...} for a non-git directory. Raises ValueError
    for a bad ref, SnapshotError when a git command fails (message has git's stderr).
    """
    check_ref(ref)
    started = time.monotonic()
    top, real_index, reason = _locate(root, timeout=min(timeout, 10))
    if top is None:
        return {"git": False, "reason": reason}
    runner = _Runner(top, _env(), timeout)
    runner.env = _env(_identity_env(runner))
    head = runner.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], ok=(0, 1))
    parent = head.stdout.strip().decode("ascii") or None

    tmpdir = tempfile.mkdtemp(prefix="cc-continuity-index-")
    try:
        # Seed from a byte copy of the real index: its stat data lets `add -A` skip
        # every unchanged file (read-tree HEAD would re-hash the whole tree) and it
        # keeps gitlinks, skip-worktree and intent-to-add entries as the user has them.
        # The copy must keep the index's mtime: git detects "racily clean" entries
        # (file changed in the same second the index was written) by comparing
        # entry mtimes with it, and a fresh mtime would hide those changes.
        index = os.path.join(tmpdir, "index")
        try:
            seen = os.stat(real_index)  # before the copy: a later rewrite only adds racy checks
            shutil.copyfile(real_index, index)
            os.utime(index, ns=(seen.st_atime_ns, seen.st_mtime_ns))
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            raise SnapshotError("cannot copy the index %s: %s" % (real_index, exc)) from None
        if seen is None and parent:
            runner.env["GIT_INDEX_FILE"] = index
            runner.run(["read-tree", parent])
        runner.env["GIT_INDEX_FILE"] = index

        big = _over_cap(runner, max_file_bytes, untracked)
        # Over-cap files are excluded, so a tracked one keeps its index (last staged) blob.
        specs = [b":(exclude,literal)" + rel for rel, _, _ in big]
        # -u: tracked files only (changes and deletions), nothing new is added.
        add = runner.run(["add", "-A" if untracked else "-u", "--ignore-errors", "--", ".", *specs], ok=(0, 1))
        warnings = [line for line in _text(add.stderr).splitlines()
                    if line.startswith("error:") or line.startswith("warning:")]
        if add.returncode and b"fatal:" in add.stderr:
            raise SnapshotError("git add failed: %s" % _text(add.stderr).strip(),
                                cmd=["add"], returncode=add.returncode, stderr=_text(add.stderr))
        tree = runner.run(["write-tree"]).stdout.strip().decode("ascii")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
        runner.env.pop("GIT_INDEX_FILE", None)

    files, size = _tree_stats(runner, tree)
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
    msg = _commit_message(message, files, size, big)
    commit = runner.run(args, input=msg).stdout.strip().decode("ascii")
    ref = _publish(runner, ref, commit, unique)
    return {
        "git": True, "root": top, "ref": ref, "commit": commit, "tree": tree,
        "parent": parent, "files": files, "bytes": size,
        "skipped_large": [{"path": _text(rel), "size": n, "tracked": t} for rel, n, t in big],
        "warnings": warnings,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
    }


UNIQUE_TRIES = 50


def _publish(runner, ref, commit, unique=False):
    """Create ``ref`` atomically and return the name used; an existing ref is never moved.

    ``update-ref <ref> <new> ""`` only creates.  A taken name is accepted only if it
    already is this commit; with ``unique`` the next ``-N`` suffix is tried instead
    (also when another process holds the name's lock right now).
    """
    names = [ref] + (["%s-%d" % (ref, i) for i in range(2, UNIQUE_TRIES + 2)] if unique else [])
    err = ""
    for name in names:
        proc = runner.run(["update-ref", "--no-deref", name, commit, ""], ok=(0, 1, 128))
        if proc.returncode == 0:
            return name
        existing = runner.run(["rev-parse", "-q", "--verify", name + "^{commit}"], ok=(0, 1))
        current = existing.stdout.strip().decode("ascii")
        if current == commit:
            return name
        err = _text(proc.stderr).strip()
        if current:
            err = "%s already exists at %s (refusing to overwrite): %s" % (name, current, err)
        elif "cannot lock" not in err or "exists; cannot create" in err:
            break  # not a taken name (a ref in the way of the path, a full disk): another suffix will not help
        if not unique:
            break
    raise SnapshotError("git update-ref %s failed: %s" % (ref, err),
                        cmd=["update-ref", ref], returncode=proc.returncode, stderr=err)


# ----------------------------------------------------------------- listing


def _trailer(message, key):
    prefix = key + ":"
    for line in reversed(message.splitlines()):
        if line.startswith(prefix):
            value = line[len(prefix):].strip()
            return int(value) if value.isdigit() else None
    return None


def list_snapshots(root, prefix=REF_PREFIX):
    """Snapshot refs under ``prefix``, newest first.

    ``size`` is read from the Continuity-Bytes trailer snapshot() writes into the
    commit message (one for-each-ref call for all refs); a ref without it (made by
    something else) is measured with ls-tree. [] for a non-git directory.
    """
    top, _, _ = _locate(root)
    if top is None:
        return []
    fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents)%00%00"
    proc = _git(["for-each-ref", "--sort=-refname", "--sort=-committerdate",
                 "--format=" + fmt, prefix], top)
    if proc.returncode != 0:
        return []
    rows = []
    for rec in proc.stdout.split(b"\0\0\n"):
        fields = rec.split(b"\0")
        if len(fields) < 4:
            continue
        ref, sha, created, contents = (_text(f) for f in fields[:4])
        size = _trailer(contents, _TRAILER_BYTES)
        if size is None:
            try:
                size = _tree_stats(_Runner(top, _env(), 30), sha + "^{tree}")[1]
            except SnapshotError:
                size = None
        lines = contents.splitlines()
        rows.append({
            "ref": ref, "commit": sha,
            "created": int(created) if created.isdigit() else None,
            "message": lines[0][:_SUBJECT_MAX] if lines else "",
            "files": _trailer(contents, _TRAILER_FILES),
            "size": size,
        })
    return rows


# ----------------------------------------------------------------- facts


def _status_facts(out, facts, max_files):
    """Parse `git status --porcelain=v2 --branch -z` into branch + bounded dirty list."""
    dirty, count = [], 0
    records = iter(out.split(b"\0"))
    for rec in records:
        if not rec:
            continue
        if rec.startswith(b"# "):
            key, _, value = _text(rec[2:]).partition(" ")
            if key == "branch.oid":
                facts["head"] = None if value == "(initial)" else value
            elif key == "branch.head":
                facts["detached"] = value == "(detached)"
                facts["branch"] = None if facts["detached"] else value
            elif key == "branch.upstream":
                facts["upstream"] = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                facts["ahead"], facts["behind"] = int(ahead[1:] or 0), int(behind[1:] or 0)
            continue
        kind = rec[:1]
        entry = None
        if kind == b"?":
            entry = {"path": _text(rec[2:]), "status": "??"}
        elif kind in (b"1", b"u"):
            parts = rec.split(b" ", 8 if kind == b"1" else 10)
            entry = {"path": _text(parts[-1]), "status": _text(parts[1])}
        elif kind == b"2":
            parts = rec.split(b" ", 9)
            entry = {"path": _text(parts[-1]), "status": _text(parts[1]),
                     "from": _text(next(records, b""))}
        if entry is None:
            continue
        count += 1
        if len(dirty) < max_files:
            dirty.append(entry)
    facts["dirty"] = dirty
    facts["dirty_count"] = count
    facts["dirty_truncated"] = count > len(dirty)


def _diffstat(out, max_files):
    per_file, added, deleted, files = [], 0, 0, 0
    for rec in out.split(b"\0"):
        if not rec:
            continue
        parts = rec.split(b"\t", 2)
        if len(parts) != 3:
            continue
        a = int(parts[0]) if parts[0].isdigit() else None
        d = int(parts[1]) if parts[1].isdigit() else None
        files += 1
        added += a or 0
        deleted += d or 0
        if len(per_file) < max_files:
            per_file.append({"path": _text(parts[2]), "added": a, "deleted": d})
    return {"files": files, "insertions": added, "deletions": deleted,
            "per_file": per_file, "truncated": files > len(per_file)}


def _commits(out):
    commits = []
    for rec in out.split(b"\0"):
        fields = rec.strip(b"\n").split(b"\x1f")
        if len(fields) != 4:
            continue
        sha, when, author, subject = (_text(f) for f in fields)
        commits.append({"sha": sha, "time": int(when) if when.isdigit() else None,
                        "author": author[:_SUBJECT_MAX], "subject": subject[:_SUBJECT_MAX]})
    return commits


def git_facts(root, max_commits=10, max_files=200, timeout=10):
    """Branch, HEAD, dirty files, diff stat and recent commits as a JSON-able dict.

    Never raises: each failing step adds a line to ``errors`` and the rest is still
    returned. {"git": False} for a non-git directory. Read-only: no index refresh.
    """
    try:
        top, _, reason = _locate(root, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - facts must never break a hook
        return {"git": False, "reason": "%s: %s" % (exc.__class__.__name__, exc)}
    if top is None:
        return {"git": False, "reason": reason}
    facts = {"git": True, "root": top, "branch": None, "detached": False, "head": None,
             "dirty": [], "dirty_count": 0, "dirty_truncated": False,
             "diffstat": None, "recent_commits": [], "errors": []}

    def step(name, args, ok=(0,)):
        try:
            proc = _git(args, top, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            facts["errors"].append("%s: %s" % (name, exc))
            return None
        if proc.returncode not in ok:
            facts["errors"].append("%s: %s" % (name, _last_line(proc.stderr) or
                                               "exit %d" % proc.returncode))
            return None
        return proc.stdout

    out = step("status", ["status", "--porcelain=v2", "--branch", "-z",
                          "--untracked-files=normal"])
    if out is not None:
        try:
            _status_facts(out, facts, max_files)
        except Exception as exc:  # noqa: BLE001
            facts["errors"].append("status: unparsable output (%s)" % exc)
    if out is None:  # e.g. a corrupt index: HEAD and branch are still readable
        head = _text(step("head", ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
                          ok=(0, 1)) or b"").strip()
        branch = _text(step("branch", ["symbolic-ref", "-q", "--short", "HEAD"],
                            ok=(0, 1)) or b"").strip()
        facts["head"], facts["branch"] = head or None, branch or None
        facts["detached"] = bool(head) and not branch

    base = facts["head"]
    if base is None and not facts["errors"]:
        empty = step("empty-tree", ["hash-object", "-t", "tree", "--stdin"])
        base = empty.strip().decode("ascii") if empty else None
    if base:
        # Plumbing on purpose: porcelain `git diff` refreshes the real index even
        # under GIT_OPTIONAL_LOCKS=0; diff-index never writes and drops stat-only changes.
        out = step("diffstat", ["diff-index", "--numstat", "-z", base, "--"])
        if out is not None:
            facts["diffstat"] = _diffstat(out, max_files)
    if facts["head"] and max_commits > 0:
        out = step("log", ["log", "-n", str(int(max_commits)), "--no-show-signature", "-z",
                           "--format=%H%x1f%at%x1f%an%x1f%s", facts["head"], "--"])
        if out is not None:
            facts["recent_commits"] = _commits(out)
    return facts
