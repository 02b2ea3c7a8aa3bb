"""A checkpoint: machine facts, the validated handoff, a git snapshot, a manifest.

Its files, in the session dir's ``checkpoint/`` (their names and what each holds:
session.py, "the session dir's layout"): the handoff, the snapshot of facts taken
when it was requested, and the manifest (id, handoff sha256 + validation, git ref,
trigger reading).

The facts come from code, not from the model's memory at its fullest moment:
git state, the last user prompts, the open todo list, the meter reading.
"""

import os
import time

from .. import atomic, fastjson, ledger, paths, safefile, session
from . import texts
from ..session import ledger_path

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (hooks import this)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ..config import Config
    from .handoff import Validation
    from .host import Host
    from ..session import Record

PROMPT_CHARS = 500
PROMPTS_KEPT = 5


cp_dir: "Callable[[str], str]" = session.checkpoint_dir
handoff_path: "Callable[[str], str]" = session.handoff_path
checkpoint_id: "Callable[[int], str]" = session.checkpoint_id


def handoff_problem(sdir: str, path: str | None = None) -> str | None:
    """Why ``path`` (default: the handoff path) is no safe place for this session's handoff; None if it is.

    Safe means: exactly this session's handoff path, in a checkpoint directory that is a
    real directory (not a symlink), ours and 0700, inside a session dir that is a real
    directory too; and either nothing there yet or a plain file of ours with one link.
    A symlink or hard link at the path would redirect a write to whatever it names.
    """
    want = handoff_path(sdir)
    if path is not None and path != want:
        return "%s is not this session's handoff path %s" % (path, want)
    if os.path.islink(sdir) or not os.path.isdir(sdir):
        return "%s is not a real directory" % sdir
    return safefile.private_dir_problem(cp_dir(sdir)) or safefile.regular_file_problem(want, missing_ok=True)


def handoff_target_ok(sdir: str, path: str) -> bool:
    """May the PreToolUse hook let the agent write ``path`` without a permission prompt?"""
    return handoff_problem(sdir, path) is None


def read_handoff(sdir: str, limit: int = 1 << 21, chmod: int | None = None) -> bytes:
    """The handoff's bytes, read without following a link (FileNotFoundError, safefile.NotRegular)."""
    problem = handoff_problem(sdir)
    if problem:
        raise safefile.NotRegular(problem)
    return safefile.read_regular(handoff_path(sdir), limit, chmod=chmod)


def _write_json(path: str, obj: object) -> None:
    import json

    atomic.write_text(path, json.dumps(obj, indent=2) + "\n")


def read_json(path: str) -> "Any":
    with open(path, "rb") as f:
        return fastjson.loads(f.read())


def _object_or_empty(path: str) -> "dict[str, Any]":
    """The JSON object in ``path``; {} for a file that is missing, unreadable or not an object."""
    try:
        doc = read_json(path)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def facts(sdir: str) -> "dict[str, Any]":
    """The facts taken when the handoff was requested (the checkpoint's snapshot.json), or {}."""
    return _object_or_empty(session.facts_path(sdir))


def facts_and_manifest(sdir: str) -> "tuple[dict[str, Any], dict[str, Any]]":
    """(snapshot.json, manifest.json) of the session's checkpoint; {} for one that cannot be read."""
    return facts(sdir), _object_or_empty(session.manifest_path(sdir))


def prompts(sdir: str, since: float | None = None, limit: int = PROMPTS_KEPT,
            chars: int = PROMPT_CHARS, after_seq: int | None = None) -> "list[dict[str, Any]]":
    """The session's user prompts from its ledger (newest last), redacted, then cut to ``chars``.

    Everything that quotes a prompt (the snapshot, the machine handoff, the successor's
    bootstrap, the crash notice) takes it from here, so a secret typed into a prompt
    never leaves the session's own ledger (redacted before the cut: a cut cannot
    leave half a secret behind).  ``after_seq``: only lines after that ledger sequence number (the
    order the ledger wrote them in, which a clock stepped back does not change); ``since``: after that time.
    """
    out: "list[dict[str, Any]]" = []
    for rec in ledger.read(ledger_path(sdir)):
        if rec.get("ev") != "prompt" or not isinstance(rec.get("text"), str):
            continue
        if after_seq is not None:
            if not isinstance(rec.get("n"), int) or rec["n"] <= after_seq:
                continue
        elif since is not None and rec.get("ts", 0) < since:
            continue
        text = rec["text"].strip()
        if texts.is_continuation(text):
            continue  # our own continuation prompt is not the user's
        from .. import redact  # only with a prompt to quote: compiling its rules costs ~50 ms

        text = redact.redact(text)
        out.append({"ts": rec.get("ts"), "text": text[:chars] + ("…" if len(text) > chars else "")})
    return out[-limit:] if limit else out


def collect(root: str, sdir: str, rec: "Record", reading: "dict[str, Any]", payload: "dict[str, Any]",
            cfg: "Config | Mapping[str, Any]", host: "Host", out_dir: str | None = None) -> "dict[str, Any]":
    """Machine facts for the checkpoint (``host`` reads the agent's todo list); written to ``<out_dir>/``
    :data:`session.FACTS` and returned."""
    from ..snapshot.facts import git_facts  # here: the claim reads checkpoints and must stay light

    out_dir = out_dir or cp_dir(sdir)
    os.makedirs(out_dir, mode=0o700, exist_ok=True)
    tpath = payload.get("transcript_path") or rec.get("transcript")
    last = payload.get("last_assistant_message")
    snap = {
        "session": rec.get("name"),
        "number": rec.get("number"),
        "session_id": rec.get("session_id"),
        "project_root": root,
        "requested_at": round(time.time(), 3),
        "requested_seq": _last_seq(sdir),  # the late prompts are those after it (the clock may step back)
        "created": rec.get("created"),
        "model": rec.get("model"),
        "reading": {k: reading.get(k) for k in ("tokens", "window", "percent", "level", "window_source")},
        "git": git_facts(root, index=paths.project_dir(paths.project_key(root)) + "/facts.index"),
        "prompts": prompts(sdir),
        "todos": host.open_todos(tpath) if isinstance(tpath, str) else None,
        "last_assistant_message": last[:1000] if isinstance(last, str) else None,
    }
    _write_json(out_dir + "/" + session.FACTS, snap)
    return snap


def _last_seq(sdir: str) -> int | None:
    last = ledger.tail(ledger_path(sdir), 1)
    n = last[-1].get("n") if last and isinstance(last[-1], dict) else None
    return n if isinstance(n, int) else None


def finalize(root: str, slug: str, sdir: str, rec: "Record", check: "Validation",
             cfg: "Config | Mapping[str, Any]", degraded: bool, tries: int, snap: "dict[str, Any]",
             snapshot_wait_s: float | None = None) -> "dict[str, Any]":
    """Snapshot the work tree and write the manifest.  Returns the summary for the record.

    The snapshot's job is waited for ``snapshot_wait_s`` (default: ``snapshot_hook_wait_s``).

    The ref lives under the project *key* (``slug`` only names the session in the
    message): refs are shared by every worktree of a repository, and a purge
    restarts the counter, so a ``cp-<NNN>`` that exists — another worktree's, an
    older install's, or one a crashed attempt of this very checkpoint left — is
    never moved or deleted; this checkpoint takes the next free ``cp-<NNN>-<k>``.
    """
    from ..snapshot.refs import ref_name  # here: the claim reads checkpoints and must stay light
    from .. import redact

    number = rec["number"]
    cid = checkpoint_id(number)
    hpath = handoff_path(sdir)
    # Verified: from now on only its owner may read it (the model's Write tool made it 0644).
    text = read_handoff(sdir, chmod=paths.FILE_MODE).decode("utf-8", "replace")
    first = [line.strip("# ").strip() for line in text.splitlines() if line.strip()][:3]
    message = redact.redact("%s %s: %s" % (cid, rec.get("name"), " / ".join(first))[:300])
    try:
        ref = ref_name(paths.project_key(root), number)
    except ValueError as e:
        git: "dict[str, Any]" = {"git": None, "error": str(e)[:500]}
    else:
        from ..snapshot import job

        git = job.run_for_checkpoint(root, sdir, ref, message, cfg, snapshot_wait_s)  # or pending: its job finishes it
    reading = snap.get("reading") or {}
    manifest: "dict[str, Any]" = {
        "id": cid,
        "session": rec.get("name"),
        "number": number,
        "verified_at": round(time.time(), 3),
        "requested_at": snap.get("requested_at"),
        "handoff": {"path": hpath, "sha256": check.sha256, "chars": check.chars, "tries": tries,
                    "validation": "degraded" if degraded else "valid", "problems": check.problems},
        "degraded": degraded,
        "trigger": reading,
        "git": git,
    }
    _write_json(session.manifest_path(sdir), manifest)
    ledger.append(ledger_path(sdir), {"ev": "checkpoint", "id": cid, "sha256": check.sha256,
                                      "degraded": degraded, "tries": tries,
                                      "ref": git.get("ref"), "commit": git.get("commit"),
                                      "git": git.get("git"), "git_error": git.get("error"),
                                      "snapshot_pending": bool(git.get("pending")),
                                      "snapshot_ms": git.get("elapsed_ms")})
    summary: "dict[str, Any]" = {
        "id": cid,
        "percent": reading.get("percent"),
        "tokens": reading.get("tokens"),
        "handoff_chars": check.chars,
        "validation": manifest["handoff"]["validation"],
        "degraded": degraded,
        "tries": tries,
        "ref": git.get("ref"),
        "verified_at": manifest["verified_at"],
        "rotation_ms": None,
    }
    if git.get("pending"):
        summary["ref"] = None
        summary["snapshot_wait"] = snapshot_wait(git)
    return summary


def snapshot_wait(git: "dict[str, Any]") -> "dict[str, Any]":
    """What PreToolUse needs to hold tools back until a pending snapshot is there (hot path: plain data)."""
    return {"result": git["result"], "pid": git.get("pid"), "until": git.get("until"), "ref": git.get("ref")}


def git_entry(sdir: str) -> "dict[str, Any]":
    """The checkpoint's git entry now (a pending snapshot's result once its job wrote it), or {}."""
    from ..snapshot import job

    try:
        manifest = read_json(session.manifest_path(sdir))
    except (OSError, ValueError):
        return {}
    return job.current(manifest.get("git"))


def move_aside_non_file(sdir: str) -> str | None:
    """A directory at the handoff path (the model made one) is moved aside, kept whole; where it went, or None.

    Anything else that is not a plain file (a link, a FIFO) the machine handoff replaces as a directory
    entry anyway; only a directory cannot be renamed over."""
    path = handoff_path(sdir)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return None
    aside = "%s.not-a-file-%d" % (path, int(time.time()))
    os.rename(path, aside)
    return aside


def write_machine_handoff(sdir: str, snap: "dict[str, Any]", cfg: "Config | Mapping[str, Any]",
                          problems: list[str] | None) -> "Validation":
    """Replace the (invalid or missing) handoff with one written from facts; return its validation.

    Whatever is at the path (a symlink, a hard link, a FIFO) is replaced as a directory
    entry, never written through (``follow=False``: a fresh 0600 file renamed over it);
    a checkpoint directory that is itself a link or not ours is refused.
    """
    from . import handoff  # here: the claim reads checkpoints and must stay light

    problem = safefile.private_dir_problem(cp_dir(sdir))
    if problem:
        raise safefile.NotRegular("refusing to write the machine handoff: %s" % problem)
    text = handoff.machine_handoff(snap, cfg["handoff_sections"], problems)
    atomic.write_text(handoff_path(sdir), text, mode=paths.FILE_MODE, follow=False)
    v = handoff.Validation()
    from ..digest import sha256

    v.sha256 = sha256(text.encode("utf-8")).hexdigest()
    v.chars = len(text)
    return v
