"""The snapshot refs under ``refs/continuity/``: their names, creating one, listing and deleting them.

A ref that exists is never moved or deleted by a snapshot: a name that is taken (a purge
restarted the counter, a crashed attempt left one) makes a new one (``cp-<NNN>-2`` …).
The retention policy (``retention``) is the one caller of :func:`delete_refs`.
"""

from .gitrun import Runner, SnapshotError, git, git_env, locate, text

TYPE_CHECKING = False  # mypy takes this name as true; at run time nothing is imported (the Stop hook loads this)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .gitrun import StrPath

REF_PREFIX = "refs/continuity/"


# ----------------------------------------------------------------- ref names

_BAD_REF_CHARS = frozenset(" ~^:?*[\\\x7f") | frozenset(chr(c) for c in range(32))


def check_ref_component(part: object) -> None:
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


def check_ref(ref: object) -> None:
    """Raise ValueError unless ``ref`` is a full refname under refs/."""
    if not isinstance(ref, str) or not ref.startswith("refs/"):
        raise ValueError("invalid ref %r: must start with 'refs/'" % (ref,))
    for part in ref.split("/"):
        check_ref_component(part)


def ref_name(namespace: str, number: int) -> str:
    """``refs/continuity/<namespace>/cp-<NNN>``; ValueError for a name git would reject.

    The namespace is the project *key* (slug plus a hash of the root), not the slug:
    two worktrees both called ``proj`` share one ref store.
    """
    check_ref_component(namespace)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError("checkpoint number must be a non-negative int, got %r" % (number,))
    return "%s%s/cp-%03d" % (REF_PREFIX, namespace, number)



UNIQUE_TRIES = 50


def publish(runner: Runner, ref: str, commit: str, unique: bool = False) -> str:
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
        err = text(proc.stderr).strip()
        if current:
            err = "%s already exists at %s (refusing to overwrite): %s" % (name, current, err)
        elif "cannot lock" not in err or "exists; cannot create" in err:
            break  # not a taken name (a ref in the way of the path, a full disk): another suffix will not help
        if not unique:
            break
    raise SnapshotError("git update-ref %s failed: %s" % (ref, err),
                        cmd=["update-ref", ref], returncode=proc.returncode, stderr=err)



def list_refs(root: "StrPath", prefix: str) -> list[tuple[str, str, int]]:
    """[(ref, commit, committer time)] under ``prefix``, newest first (one for-each-ref call)."""
    top, _, _ = locate(root)
    if top is None:
        return []
    proc = git(["for-each-ref", "--sort=-committerdate", "--sort=-refname",
                 "--format=%(refname)%00%(objectname)%00%(committerdate:unix)", prefix], top)
    rows = []
    for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
        fields = line.split(b"\0")
        if len(fields) == 3:
            rows.append((text(fields[0]), text(fields[1]), int(fields[2]) if fields[2].isdigit() else 0))
    rows.sort(key=lambda r: (r[2], r[0]), reverse=True)
    return rows


def delete_refs(root: "StrPath", refs: "Sequence[tuple[str, str]]") -> list[str]:
    """Delete ``refs`` [(ref, commit)], each only if it still points at that commit; the names deleted.

    The one place a snapshot ref is ever deleted (the retention policy decides which).
    """
    top, _, _ = locate(root)
    if top is None or not refs:
        return []
    for ref, _ in refs:
        check_ref(ref)
        if not ref.startswith(REF_PREFIX):
            raise ValueError("not a snapshot ref: %s" % ref)
    runner = Runner(top, git_env(), 60)
    batch = "".join("delete %s %s\n" % (ref, sha) for ref, sha in refs).encode()
    if runner.run(["update-ref", "--no-deref", "--stdin"], input=batch, ok=(0, 1, 128)).returncode == 0:
        return [ref for ref, _ in refs]
    done = []  # one moved or vanished meanwhile: the others one by one
    for ref, sha in refs:
        if runner.run(["update-ref", "--no-deref", "-d", ref, sha], ok=(0, 1, 128)).returncode == 0:
            done.append(ref)
    return done
