"""A snapshot's tree, built in a private index of ours: seed, update-index, write-tree, and its totals."""

import os
import shutil
import stat

from .gitrun import Runner, SnapshotError, last_line, literal, split_z, text
from .indexes import STATE_FORMAT, PrivateIndex, read_state, stat_key, write_state

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from .gitrun import Done
    from .indexes import State

    Entry = tuple[bytes, bytes]  # an index entry: (mode, object id)
    Big = list[tuple[bytes, int, bool]]  # files left out for their size: (path, size, tracked)


# -- the private index -------------------------------------------------------------
#
# The snapshot is built in an index of our own, never the user's.  With ``index=<path>``
# (cc-continuity keeps one per project in its state dir, ``projects/<key>/snapshot.index``)
# it persists between snapshots together with a small state file, so git's own stat cache
# (and the untracked cache / fsmonitor data, where the user has them on) survives: the next
# snapshot costs one `git status` walk of the work tree plus the files that changed.  Without
# ``index`` a temporary one is seeded for this snapshot only.
#
# What a snapshot records is defined by the from-scratch build: a byte copy of the user's
# index (its stat data, gitlinks, skip-worktree and intent-to-add entries), then ``git add -A``
# (``-u`` when untracked files are left out), files over the caps excluded before they are
# hashed.  The persistent index reaches the same tree incrementally:
#
# 1. the user's index changed since the last snapshot (its stat) and its tree changed too:
#    the paths whose entries differ between the two trees take the user's entries;
# 2. ``git status`` on the private index (allowed to write its refreshed stat data back)
#    names every path whose work-tree state differs, and every untracked file;
# 3. those paths are updated (``update-index``; ``add -A`` for nested repositories and
#    when update-index refuses), except files over a cap: a tracked one takes the user's
#    entry again, an untracked one is left out (and dropped if an earlier snapshot had it);
# 4. when the ignore rules may have changed (a ``.gitignore`` among the paths, or an exclude
#    or config file changed), entries only the private index has that are ignored now go;
# 5. ``write-tree``.
#
# Anything unexpected - no state, a state from another repository or other settings, a
# corrupt index, a missing object, a failing step - seeds a fresh private index from the
# user's and builds again.  Snapshots of one index are serialised by an flock of their own
# (``<index>.flock``); a snapshot that cannot get it in time uses a temporary index.


# Private-index writes: no trailing checksum where git supports skipping it (2.40+).
_PRIVATE_CONFIG = ("-c", "index.skipHash=true")


class Rebuild(Exception):
    """The private index cannot be updated incrementally: seed it afresh from the user's."""


def worktree_changes(out: bytes) -> tuple[list[bytes], list[bytes]]:
    """(paths whose work-tree state differs from the index, untracked paths) from
    ``git status --porcelain=v2 -z --no-renames``."""
    changed: "list[bytes]"
    new: "list[bytes]"
    changed, new = [], []
    for rec in split_z(out):
        kind = rec[:1]
        if kind == b"?":
            new.append(rec[2:])
        elif kind == b"1":
            parts = rec.split(b" ", 8)
            if len(parts) == 9 and parts[1][1:2] != b".":
                changed.append(parts[8])
        elif kind == b"u":
            parts = rec.split(b" ", 10)
            if len(parts) == 11:
                changed.append(parts[10])
        elif kind == b"2":  # (renames are off; kept for safety) "2 XY ... path\0origPath"
            parts = rec.split(b" ", 9)
            if len(parts) == 10 and parts[1][1:2] != b".":
                changed.append(parts[9])
    return changed, new


class Build:
    """One snapshot's tree, built in a private index (see the comment above).

    Besides git's own data the state keeps two small path sets, so no step needs a
    whole-index comparison: ``ours``, entries only the private index has (untracked
    files it recorded: the ignore rules apply to them), and ``gone``, entries the user's
    index has that the private one dropped (tracked files deleted from the work tree:
    if one comes back it is tracked again, whatever the ignore rules say).  A build that
    died midway leaves ``clean`` false, and the next one recomputes both from the trees.
    """

    ours: "set[bytes]"
    gone: "set[bytes]"
    touched: "set[bytes]"

    def __init__(self, runner: Runner, priv: PrivateIndex, real_index: str, parent: str | None,
                 settings: "dict[str, Any]") -> None:
        self.runner, self.priv, self.real_index, self.parent = runner, priv, real_index, parent
        self.settings = settings
        self.cap, self.ucap, self.untracked = settings["cap"], settings["ucap"], settings["untracked"]
        self.top_b = os.fsencode(runner.top)
        self.null = b"0" * settings["oid_len"]
        self.ours, self.gone = set(), set()
        self.touched = set()  # paths whose private-index entry this build may have changed
        self.was_clean = False

    # -- git with GIT_INDEX_FILE set ------------------------------------------------
    def git(self, args: list[str], index: str | None = None, ok: tuple[int, ...] = (0,), input: bytes | None = None,
            optional_locks: bool = False) -> "Done":
        env = dict(self.runner.env, GIT_INDEX_FILE=index or self.priv.path)
        if optional_locks:
            env["GIT_OPTIONAL_LOCKS"] = "1"
        return self.runner.run([*_PRIVATE_CONFIG, *args], input=input, ok=ok, env=env)

    def _index_info(self, entries: "Mapping[bytes, Entry | None]") -> None:
        """Set private-index entries: {path: (mode, oid)}, or None to drop the path."""
        lines = [(entry[0] + b" " + entry[1] if entry else b"0 " + self.null) + b"\t" + path + b"\0"
                 for path, entry in entries.items()]
        if lines:
            self.git(["update-index", "-z", "--index-info"], input=b"".join(lines))

    # -- seeding --------------------------------------------------------------------
    def seed(self) -> "State":
        """A fresh private index: a byte copy of the user's, or HEAD's tree when there is none.

        The copy keeps the user index's mtime: git detects "racily clean" entries (a
        file changed in the same second the index was written) by comparing entry
        mtimes with it, and a fresh mtime would hide those changes.
        """
        index = self.priv.path
        for p in (index, self.priv.state_path, index + ".lock", index + ".user", index + ".user.lock"):
            try:
                os.unlink(p)  # (a lock file here is a crashed git's: we hold the flock)
            except FileNotFoundError:
                pass
        seen: "os.stat_result | None"
        u_key = stat_key(self.real_index)  # before the copy: a later rewrite only adds racy checks
        try:
            seen = os.stat(self.real_index)
            shutil.copyfile(self.real_index, index)
            os.utime(index, ns=(seen.st_atime_ns, seen.st_mtime_ns))
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            raise SnapshotError("cannot copy the index %s: %s" % (self.real_index, exc)) from None
        if seen is None and self.parent:
            self.git(["read-tree", self.parent])
        # Version 4 (prefix-compressed paths): a quarter smaller, so every later read and write of
        # it is faster.  git's own write re-checks racily clean entries against the copied mtime.
        self.git(["update-index", "--index-version", "4"], ok=(0, 1, 128))
        proc = self.git(["write-tree"], ok=(0, 128))  # the user's tree, to follow its changes (none while unmerged)
        u_tree = proc.stdout.strip().decode("ascii") if proc.returncode == 0 else None
        state = dict(self.settings, format=STATE_FORMAT, u_key=u_key, u_tree=u_tree, tree=None,
                     files=None, bytes=None, ours=[], gone=[], clean=True)
        self.ours, self.gone = set(), set()
        self._excludes_file(state)
        # Seeded: it holds only what the user's index holds, and status filters what is added.
        state["ignore_key"] = self._ignore_key(state)
        return state

    def load(self, state: "State") -> None:
        """Take the path sets from the state; recompute them after a build that died midway."""
        self.was_clean = bool(state.get("clean"))
        if state.get("clean"):
            self.ours = {os.fsencode(p) for p in state.get("ours") or ()}
            self.gone = {os.fsencode(p) for p in state.get("gone") or ()}
            return
        if not state.get("u_tree"):
            raise Rebuild("the last build died and there is no tree of the user's index to compare with")
        out = self.git(["diff-index", "--cached", "--no-renames", "--name-status", "-z", "--diff-filter=AD",
                        state["u_tree"], "--"]).stdout
        recs = out.split(b"\0")
        self.ours = {p for s, p in zip(recs[0::2], recs[1::2]) if s == b"A"}
        self.gone = {p for s, p in zip(recs[0::2], recs[1::2]) if s == b"D"}

    # -- step 1: follow the user's index ----------------------------------------------
    def sync_user_index(self, state: "State") -> list[bytes]:
        key = stat_key(self.real_index)
        if key == state.get("u_key"):
            return []
        if key is None or not state.get("u_tree"):
            raise Rebuild("the user's index appeared, vanished or was unmerged")
        if self.git(["config", "--type=bool", "--get", "core.sparseCheckout"], ok=(0, 1)).stdout.strip() == b"true":
            raise Rebuild("sparse checkout: what it hides is marked only in the user's index")
        copy = self.priv.path + ".user"
        try:
            shutil.copyfile(self.real_index, copy)
        except OSError as exc:
            raise Rebuild("cannot copy the user's index: %s" % exc) from None
        proc = self.git(["write-tree"], index=copy, ok=(0, 128))
        if proc.returncode != 0:
            raise Rebuild("the user's index has no tree (unmerged entries)")
        u_tree = proc.stdout.strip().decode("ascii")
        changed: "dict[bytes, Entry | None]" = {}
        if u_tree != state["u_tree"]:
            out = self.git(["diff-tree", "-r", "-z", "--no-renames", state["u_tree"], u_tree]).stdout
            recs = out.split(b"\0")
            for meta, path in zip(recs[0::2], recs[1::2]):
                parts = meta.lstrip(b":").split(b" ")
                if len(parts) >= 5:
                    changed[path] = None if parts[4][:1] == b"D" else (parts[1], parts[3])
            self._index_info(changed)
            self.touched.update(changed)
            for path in changed:
                self.ours.discard(path)  # now the user's entry, or no entry at all
                self.gone.discard(path)
        state.update(u_key=key, u_tree=u_tree)
        return list(changed)

    # -- steps 2 and 3: the work tree ---------------------------------------------------
    def listing(self) -> tuple[list[bytes], list[bytes]]:
        """(paths whose work-tree state differs from the private index, untracked files)."""
        args = ["status", "--porcelain=v2", "-z", "--no-renames", "--ignore-submodules=dirty",
                "--untracked-files=all" if self.untracked else "--untracked-files=no"]
        out = self.git(args, optional_locks=True).stdout  # our own index: its refreshed stat data is kept
        changed, new = worktree_changes(out)
        # The user's files deleted earlier and back now: tracked, even where an ignore rule matches them.
        seen = set(changed) | set(new)
        changed += sorted(p for p in self.gone if p not in seen and self._entry_there(p))
        return changed, new

    def _entry_there(self, rel: bytes) -> bool:
        """Is there a file (or a link) at ``rel``: what an index entry of that path can be?

        A directory where the user's file was is not it: the file stays gone (and tracked),
        so when a file comes back there, it is the user's again, whatever an ignore rule says.
        """
        p = os.path.join(self.top_b, rel)
        return os.path.islink(p) or (os.path.lexists(p) and not os.path.isdir(p))

    def _size(self, rel: bytes) -> int | None:
        try:
            st = os.lstat(os.path.join(self.top_b, rel))
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _user_entries(self, paths: list[bytes]) -> "dict[bytes, Entry]":
        """{path: (mode, oid)} of ``paths`` in the user's index (stage 0)."""
        if not paths or not os.path.exists(self.real_index):
            return {}
        out = b""
        for i in range(0, len(paths), 500):  # (ls-files takes no pathspec file)
            specs = [os.fsdecode(b":(literal)" + p) for p in paths[i:i + 500]]
            out += self.git(["ls-files", "-s", "-z", "--", *specs], index=self.real_index).stdout
        found: "dict[bytes, Entry]" = {}
        for rec in split_z(out):
            meta, _, path = rec.partition(b"\t")
            mode, oid, stage = meta.split(b" ")
            if stage == b"0":
                found[path] = (mode, oid)
        return found

    def update(self, changed: list[bytes], new: list[bytes]) -> "tuple[Big, list[str]]":
        """Bring the listed paths into the private index; returns (files left out for their size, warnings).

        A tracked file (the user's) over ``cap`` keeps the user's entry; an untracked one over
        ``ucap`` is left out (and dropped if an earlier snapshot had it).
        """
        big: "Big"
        plain: "list[bytes]"
        dirs: "list[bytes]"
        reset: "list[bytes]"
        big, plain, dirs, reset = [], [], [], []
        in_index = set(changed)
        for rel in changed + new:
            tracked = rel in self.gone or (rel not in self.ours and rel in in_index)
            if rel.endswith(b"/"):
                dirs.append(rel)  # an untracked nested repository: add records its commit (a gitlink)
                continue
            size = self._size(rel)
            if size is not None and size > (self.cap if tracked else self.ucap):
                big.append((rel, size, tracked))
                if tracked or rel in self.ours:
                    reset.append(rel)
                continue
            plain.append(rel)
        warnings: "list[str]" = []
        if plain:
            proc = self.git(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"],
                            input=b"".join(p + b"\0" for p in plain), ok=(0, 1, 128))
            if proc.returncode != 0:
                dirs += plain  # e.g. an unreadable file: add -A --ignore-errors skips it with a warning
        if dirs:
            add = self.git(["add", "-A" if self.untracked else "-u", "--ignore-errors",
                            "--pathspec-from-file=-", "--pathspec-file-nul"],
                           input=literal(p.rstrip(b"/") for p in dirs), ok=(0, 1, 128))
            warnings = [line for line in text(add.stderr).splitlines()
                        if line.startswith("error:") or line.startswith("warning:")]
            if add.returncode and b"fatal:" in add.stderr:
                raise SnapshotError("git add failed: %s" % text(add.stderr).strip(),
                                    cmd=["add"], returncode=add.returncode, stderr=text(add.stderr))
        if reset:
            user = self._user_entries(sorted(r for r in reset if r not in self.ours))
            self._index_info({rel: user.get(rel) for rel in reset})
        # The path sets follow what the private index now holds.
        self.touched.update(plain, (d.rstrip(b"/") for d in dirs), reset)
        for rel in plain + [d.rstrip(b"/") for d in dirs] + reset:
            tracked = rel in self.gone or (rel not in self.ours and rel in in_index)
            present = self._entry_there(rel) and rel not in reset
            if tracked:
                self.ours.discard(rel)
                if present or rel in reset:
                    self.gone.discard(rel)
                else:
                    self.gone.add(rel)
            elif present:
                self.ours.add(rel)
            else:
                self.ours.discard(rel)
        return big, warnings

    # -- step 4: the ignore rules ----------------------------------------------------------
    def _ignore_key(self, state: "State") -> list[list[int] | None]:
        common = self.settings["common_dir"]
        home = os.path.expanduser("~")
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files = [os.path.join(common, "info", "exclude"), os.path.join(common, "config"),
                 os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
                 os.path.join(xdg, "git", "ignore")]
        if state.get("excludes_file"):
            files.append(state["excludes_file"])
        return [stat_key(f) for f in files]

    def _excludes_file(self, state: "State") -> None:
        excludes = self.git(["config", "--path", "--get", "core.excludesFile"], ok=(0, 1)).stdout.strip()
        state["excludes_file"] = os.fsdecode(excludes) if excludes else None

    def forget_ignored(self, state: "State", touched: list[bytes]) -> None:
        """Drop entries only the private index has (untracked files) that the ignore rules now exclude."""
        key = self._ignore_key(state)
        gitignore = any(p == b".gitignore" or p.endswith(b"/.gitignore") for p in touched)
        if key == state.get("ignore_key") and not gitignore:
            return
        self._excludes_file(state)
        if self.ours:
            proc = self.git(["check-ignore", "--no-index", "-z", "--stdin"],
                            input=b"".join(p + b"\0" for p in sorted(self.ours)), ok=(0, 1))
            ignored = set(split_z(proc.stdout))
            if ignored:
                self._index_info({p: None for p in ignored})
                self.ours -= ignored
                self.touched |= ignored
        state["ignore_key"] = self._ignore_key(state)

    # -- all of it ----------------------------------------------------------------------------
    def build(self, state: "State") -> "tuple[str, Big, list[str]]":
        self.load(state)
        if self.priv.persistent:
            write_state(self.priv.state_path, dict(state, clean=False))  # until the sets match the index again
        touched = self.sync_user_index(state)
        changed, new = self.listing()
        big, warnings = self.update(changed, new)
        self.forget_ignored(state, touched + changed + new)
        proc = self.git(["write-tree"], ok=(0, 128))
        if proc.returncode != 0:
            raise Rebuild("write-tree failed: %s" % last_line(proc.stderr))
        state.update(ours=sorted(os.fsdecode(p) for p in self.ours),
                     gone=sorted(os.fsdecode(p) for p in self.gone), clean=True)
        return proc.stdout.strip().decode("ascii"), big, warnings


def tree_stats(runner: Runner, tree: str) -> tuple[int, int]:
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


def _tree_stats_since(runner: Runner, old: str, old_files: int, old_bytes: int, tree: str) -> tuple[int, int]:
    """(entries, bytes) of ``tree`` from those of ``old`` plus the entries that differ (cheap: a tree diff)."""
    out = runner.run(["diff-tree", "-r", "-z", "--no-renames", old, tree]).stdout
    recs = out.split(b"\0")
    sizes: "dict[bytes, int | None]"
    delta: "list[tuple[bytes, int]]"
    files, sizes, delta = old_files, {}, []
    for meta, _ in zip(recs[0::2], recs[1::2]):
        parts = meta.lstrip(b":").split(b" ")
        if len(parts) < 5:
            continue
        old_mode, new_mode, old_oid, new_oid, status = parts[0], parts[1], parts[2], parts[3], parts[4][:1]
        if status == b"D":
            files -= 1
        elif status == b"A":
            files += 1
        for mode, oid, sign in ((old_mode, old_oid, -1), (new_mode, new_oid, 1)):
            if mode not in (b"000000", b"160000") and oid.strip(b"0"):
                sizes[oid] = None
                delta.append((oid, sign))
    if sizes:
        batch = runner.run(["cat-file", "--batch-check=%(objectname) %(objectsize)"],
                           input=b"".join(o + b"\n" for o in sizes)).stdout
        for line in batch.splitlines():
            oid, _, n = line.partition(b" ")
            if n.isdigit():
                sizes[oid] = int(n)
    size = old_bytes
    for oid, sign in delta:
        size += sign * (sizes.get(oid) or 0)
    return files, size


def _entries(runner: Runner, tree: str, paths: "Iterable[bytes]") -> dict[bytes, int]:
    """{path: blob bytes (0 for a gitlink)} of the entries at or under ``paths`` in ``tree``."""
    env = dict(runner.env, GIT_LITERAL_PATHSPECS="1")
    out = runner.run(["ls-tree", "-r", "-l", "-z", tree, "--", *(os.fsdecode(p) for p in paths)], env=env).stdout
    found: dict[bytes, int] = {}
    for rec in split_z(out):
        meta, _, path = rec.partition(b"\t")
        size = meta.split()[3] if len(meta.split()) == 4 else b"-"
        found[path] = int(size) if size.isdigit() else 0
    return found


def _tree_stats_touched(runner: Runner, old: str, old_files: int, old_bytes: int, tree: str,
                        touched: list[bytes]) -> tuple[int, int]:
    """(entries, bytes) of ``tree`` from ``old``'s and the entries at the touched paths in each."""
    before, after = _entries(runner, old, touched), _entries(runner, tree, touched)
    return (old_files - len(before) + len(after),
            old_bytes - sum(before.values()) + sum(after.values()))


def totals(runner: Runner, state: "State", tree: str, build: "Build | None" = None) -> tuple[int, int]:
    """(entries, bytes) of ``tree``: from the last tree's totals and the difference when known."""
    if state.get("tree") and isinstance(state.get("files"), int) and isinstance(state.get("bytes"), int):
        try:
            if state["tree"] == tree:
                return state["files"], state["bytes"]
            if build is not None and build.was_clean and 0 < len(build.touched) <= 500:
                # Every change to the private index since that tree went through these paths.
                return _tree_stats_touched(runner, state["tree"], state["files"], state["bytes"], tree,
                                           sorted(build.touched))
            return _tree_stats_since(runner, state["tree"], state["files"], state["bytes"], tree)
        except SnapshotError:
            pass  # the old tree is gone (pruned): count from scratch
    return tree_stats(runner, tree)


def build_tree(runner: Runner, index: str | None, real_index: str, parent: str | None,
               settings: "dict[str, Any]") -> "tuple[str, int, int, Big, list[str], str]":
    """The work tree's tree, built in the private index at ``index`` (incrementally where its state allows;
    a temporary one without ``index`` or while another snapshot holds it).

    (tree, entries, bytes, files left out for their size, warnings, how the index was used:
    incremental, seeded, reseeded or temporary).  ``settings``: what the state must match to be reused.
    """
    priv = PrivateIndex(index, runner)
    try:
        build = Build(runner, priv, real_index, parent, settings)
        state = read_state(priv.state_path) if priv.persistent else None
        mode = "incremental"
        if not state or not os.path.exists(priv.path) or any(state.get(k) != v for k, v in settings.items()):
            state, mode = build.seed(), "seeded"
        try:
            tree, big, warnings = build.build(state)
        except (Rebuild, SnapshotError) as exc:
            if mode == "seeded" or getattr(exc, "timed_out", False):
                if isinstance(exc, Rebuild):
                    raise SnapshotError("snapshot failed: %s" % exc) from None
                raise
            build = Build(runner, priv, real_index, parent, settings)
            state, mode = build.seed(), "reseeded"
            try:
                tree, big, warnings = build.build(state)
            except Rebuild as exc2:
                raise SnapshotError("snapshot failed: %s" % exc2) from None
        files, size = totals(runner, state, tree, build)
        state.update(tree=tree, files=files, bytes=size)
        if priv.persistent:
            write_state(priv.state_path, state)
    finally:
        priv.close()
    return tree, files, size, big, warnings, mode if priv.persistent else "temporary"
