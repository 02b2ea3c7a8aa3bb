"""What a successor is told besides the handoff: how the world moved since, and what was already done.

A handoff is what the predecessor *believed* at the checkpoint.  At every claim
:func:`revalidate` compares the checkpoint with the world now — git branch and
HEAD then and now (the commits since, by subject), the files whose content
differs from the checkpoint's work-tree snapshot (against the snapshot commit,
on an index of ours: the user's is never touched), the files the handoff names
that are gone, the checkpoint's age and whether its process is gone — and gives
a one-word verdict:

- ``fresh``: nothing the handoff rests on changed;
- ``drifted``: commits, changed files or deleted named files since; the
  successor is told which, and the plan may still hold;
- ``stale``: another branch, a HEAD that no longer contains the checkpoint's
  (a reset or a rebase), or older than ``resume_stale_after_h``.

:func:`actions_after` lists the tool calls recorded after the checkpoint
(PostToolUse puts them in its ledger lines), marking those that reached outside the
work tree, so a successor does not push or publish twice.

:func:`crash_handoff` writes a machine handoff for a session that died before any
checkpoint, from what it left (prompts, todos, last reply, actions, git state).
"""

import os
import time

from ..holds import effects
from . import checkpoint
from .. import faults, ledger, session
from ..procs import pid_alive

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (SessionStart runs this)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..config import Config
    from ..session import Record
    from .host import Host

VERDICTS = ("fresh", "drifted", "stale")
MAX_FILES_SHOWN = 25
MAX_COMMITS_SHOWN = 5
MAX_ACTIONS_SHOWN = 40
SECTION_MAX = 3000  # chars: the revalidation and actions sections together stay well inside the bootstrap budget


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    s = int(max(0, seconds))
    if s < 120:
        return "%d s" % s
    if s < 7200:
        return "%d min" % (s // 60)
    if s < 172800:
        return "%d h %d min" % (s // 3600, s % 3600 // 60)
    return "%d days" % (s // 86400)


def revalidate(root: str, pdir: str, prec: "Record", cfg: "Config | Mapping[str, Any]",
               claimer_pid: int | None = None, now: float | None = None) -> "dict[str, Any]":
    """Compare predecessor ``prec``'s checkpoint with the world now; a JSON-able result with ``verdict``."""
    from ..snapshot import job
    from ..snapshot.drift import changed_since, history_since
    from ..snapshot.gitrun import SnapshotError

    t0 = time.monotonic()
    now = time.time() if now is None else now
    cp = prec.get("checkpoint") or {}
    snap, manifest = checkpoint.facts_and_manifest(pdir)
    then = snap.get("git") or {}
    at = cp.get("verified_at") or manifest.get("verified_at") or snap.get("requested_at")
    res: "dict[str, Any]" = {"checkpoint": cp.get("id"), "age_s": None if at is None else round(now - at, 1), "problems": [],
           "stale": [], "branch_then": then.get("branch"), "head_then": then.get("head"),
           "branch_now": None, "head_now": None, "commits_since": 0, "commits": [], "changed": [],
           "changed_count": 0, "changed_checked": True, "missing_named": [], "snapshot": None}
    pid = prec.get("pid")
    if pid and claimer_pid and pid == claimer_pid:
        res["process"] = "same process (cleared)"
    elif pid_alive(pid):
        res["process"] = "still running (pid %s)" % pid
    else:
        res["process"] = "gone"
    if then.get("git"):
        hist = history_since(root, then.get("head"))
        faults.point("claim:mid_revalidation")  # (tests: a kill between the claim's git calls)
        if hist.get("git"):
            res.update(branch_now=hist["branch"], head_now=hist["head"], commits_since=hist["count"],
                       commits=[{"sha": c["sha"][:9], "subject": c["subject"][:120]} for c in hist["commits"]])
            if res["branch_then"] != res["branch_now"]:
                res["stale"].append("the branch is %s now, it was %s" % (res["branch_now"] or "(detached)",
                                                                        res["branch_then"] or "(detached)"))
            elif then.get("head") and hist["head"] != then.get("head") and not hist["ancestor"]:
                res["stale"].append("HEAD %s no longer contains the checkpoint's %s (reset or rebase?)" % (
                    (hist["head"] or "none")[:9], then["head"][:9]))
        else:
            res["problems"].append("git: %s" % hist.get("reason"))
    git = job.current(manifest.get("git"))
    if git.get("pending"):
        res["snapshot"] = "unfinished" if job.unfinished(git) else "pending"  # (its job gone: it never will be)
        res["changed_checked"] = None
    elif git.get("commit"):
        res["snapshot"] = git.get("ref")
        res["snapshot_commit"] = git["commit"]
        try:
            got = changed_since(
                root, git["commit"], index=job.index_path(root),
                facts_index=os.path.dirname(job.index_path(root)) + "/facts.index",
                untracked=cfg.get("snapshot_untracked", True),
                skip=[s["path"] for s in git.get("skipped_large") or ()
                      if isinstance(s, dict) and isinstance(s.get("path"), str)])
        except (SnapshotError, OSError, ValueError) as e:
            got = {"error": str(e)[:200]}
        if got.get("error") or not got.get("git"):
            res["problems"].append("work tree not compared: %s" % (got.get("error") or got.get("reason")))
            res["changed_checked"] = None
        else:
            res["changed_count"] = len(got["changed"])
            res["changed"] = [{"path": p, "change": k} for p, k in got["changed"][:200]]
            res["changed_checked"] = got["checked"]
            res["compare_ms"] = got.get("elapsed_ms")
    else:
        res["snapshot"] = None
        res["changed_checked"] = None
    res["missing_named"] = _missing_named(root, pdir, cfg, git.get("commit"))
    limit_h = cfg.get("resume_stale_after_h")
    if limit_h is not None and res["age_s"] is not None and res["age_s"] > limit_h * 3600:
        res["stale"].append("the checkpoint is %s old (resume_stale_after_h %g)" % (_age(res["age_s"]), limit_h))
    drift: list[str] = []
    if res["commits_since"]:
        drift.append("%d commit%s since" % (res["commits_since"], "" if res["commits_since"] == 1 else "s"))
    if res["changed_count"]:
        drift.append("%d file%s differ from the snapshot" % (res["changed_count"],
                                                            "" if res["changed_count"] == 1 else "s"))
    if res["missing_named"]:
        drift.append("%d file%s the handoff names %s gone" % (
            len(res["missing_named"]), "" if len(res["missing_named"]) == 1 else "s",
            "is" if len(res["missing_named"]) == 1 else "are"))
    if res["stale"]:
        res["verdict"], res["reason"] = "stale", "; ".join(res["stale"] + drift)
    elif drift:
        res["verdict"], res["reason"] = "drifted", "; ".join(drift)
    else:
        res["verdict"] = "fresh"
        res["reason"] = "nothing changed since the checkpoint %s ago" % _age(res["age_s"])
        if res["snapshot"] == "pending":
            res["reason"] += " (git history; the work tree is not compared yet: its snapshot is still being taken)"
        elif res["snapshot"] == "unfinished":
            res["reason"] += " (git history only: the snapshot job stopped before it finished)"
        elif res["changed_checked"] is None:
            res["reason"] += " (git history only: no work-tree snapshot to compare with)"
    res["ms"] = int((time.monotonic() - t0) * 1000)
    return res


def _missing_named(root: str, pdir: str, cfg: "Config | Mapping[str, Any]", commit: str | None) -> list[str]:
    """Paths the handoff names that existed at the checkpoint (in its snapshot, or then on disk) and are gone now."""
    from .handoff import named_paths, sections_of

    try:
        text = checkpoint.read_handoff(pdir).decode("utf-8", "replace")
    except OSError:
        return []
    named: list[str] = []
    for tok in named_paths(text, sections_of(text)):
        full = tok if tok.startswith("/") else os.path.join(root, tok)
        if not os.path.lexists(full) and tok not in named:
            named.append(tok)
    if not named or not commit:
        return named[:50]
    from ..snapshot import gitrun

    rel = [t for t in named if not t.startswith("/")]
    try:
        proc = gitrun.git(["--literal-pathspecs", "ls-tree", "-r", "--name-only", "-z", "--full-tree", commit,
                           "--", *rel], root)
        known: set[str] | None = {p.decode("utf-8", "replace") for p in proc.stdout.split(b"\0") if p} if proc.returncode == 0 else None
    except OSError:
        known = None
    if known is None:
        return named[:50]
    # A named directory counts when something under it was in the snapshot; a path the handoff only
    # planned (never in the snapshot) is not "gone".
    return [t for t in named if t.startswith("/") or t.rstrip("/") in known
            or any(k.startswith(t.rstrip("/") + "/") for k in known)][:50]


def text(res: "dict[str, Any]") -> str:
    """The bootstrap's revalidation section (not yet redacted)."""
    lines = ["## Since the checkpoint: %s — %s" % (res["verdict"], res["reason"])]
    lines.append("- checkpoint age: %s; the predecessor's agent process: %s" % (_age(res.get("age_s")),
                                                                                res.get("process")))
    if res.get("head_now") or res.get("head_then"):
        lines.append("- git: branch %s then, %s now; HEAD %s then, %s now" % (
            res.get("branch_then") or "(detached)", res.get("branch_now") or "(detached)",
            (res.get("head_then") or "none")[:9], (res.get("head_now") or "none")[:9]))
    if res.get("commits_since"):
        lines.append("- %d commit%s since the checkpoint (not made by the predecessor's plan unless it says so):" % (
            res["commits_since"], "" if res["commits_since"] == 1 else "s"))
        lines += ["  - %s %s" % (c["sha"], c["subject"]) for c in res["commits"][:MAX_COMMITS_SHOWN]]
        if res["commits_since"] > MAX_COMMITS_SHOWN:
            lines.append("  - … %d more" % (res["commits_since"] - MAX_COMMITS_SHOWN))
    if res.get("snapshot") == "pending":
        lines.append("- work tree: not compared yet (its snapshot is still being taken)")
    elif res.get("snapshot") == "unfinished":
        lines.append("- work tree: not compared (no snapshot: its job stopped before it finished)")
    elif res.get("changed"):
        lines.append("- files whose content differs from the work-tree snapshot (`git diff %s -- <path>` shows how)%s:"
                     % ((res.get("snapshot_commit") or "")[:12], "" if res.get("changed_checked") else
                        " (too many to check one by one: candidates)"))
        lines += ["  - %s (%s)" % (c["path"], c["change"]) for c in res["changed"][:MAX_FILES_SHOWN]]
        if res["changed_count"] > MAX_FILES_SHOWN:
            lines.append("  - … %d more" % (res["changed_count"] - MAX_FILES_SHOWN))
    elif res.get("changed_checked"):
        lines.append("- work tree: identical to the snapshot %s" % res.get("snapshot"))
    if res.get("missing_named"):
        lines.append("- files the handoff names that no longer exist: %s" % ", ".join(
            "`%s`" % p for p in res["missing_named"][:15]))
    for p in res.get("problems") or ():
        lines.append("- note: %s" % p[:200])
    if res["verdict"] != "fresh":
        lines.append("Re-check the handoff against these before acting on it: it was written before them.")
    return "\n".join(lines)


def summary(res: "dict[str, Any]") -> "dict[str, Any]":
    """What the state record, the ledger, ``status`` and ``history`` keep of a revalidation."""
    return {"verdict": res["verdict"], "reason": res["reason"][:300], "checkpoint": res.get("checkpoint"),
            "age_s": res.get("age_s"), "commits_since": res.get("commits_since"),
            "changed": [c["path"] for c in res.get("changed") or ()][:20], "changed_count": res.get("changed_count"),
            "missing_named": (res.get("missing_named") or [])[:20], "process": res.get("process"),
            "snapshot": res.get("snapshot"), "ms": res.get("ms"), "at": round(time.time(), 3)}


# -- which actions reached outside the work tree -------------------------------------------------

_NETWORK = ("curl", "wget", "http", "https", "ssh", "scp", "rsync", "sftp", "ftp", "nc", "telnet", "aws",
            "gcloud", "az", "gsutil", "kubectl", "helm", "terraform", "pulumi", "ansible-playbook", "flyctl",
            "fly", "heroku", "vercel", "netlify", "firebase", "wrangler", "gh", "glab", "twine", "mail",
            "sendmail")
_INSTALLERS = {"pip": ("install", "uninstall"), "pip3": ("install", "uninstall"), "pipx": ("install",),
               "uv": ("add", "pip", "sync", "tool"), "poetry": ("add", "install", "publish"),
               "npm": ("install", "i", "add", "ci", "publish", "uninstall", "link"),
               "pnpm": ("add", "install", "i", "publish"), "yarn": ("add", "install", "publish"),
               "bun": ("add", "install", "publish"), "cargo": ("install", "publish"), "gem": ("install", "push"),
               "go": ("install", "get"), "apt": ("install", "remove"), "apt-get": ("install", "remove"),
               "brew": ("install", "uninstall"), "dnf": ("install",), "yum": ("install",), "apk": ("add",),
               "conda": ("install",), "docker": ("push", "login", "run", "pull"),
               "podman": ("push", "login"), "git": ("push", "fetch", "pull", "clone", "send-email"),
               "mvn": ("deploy",), "gradle": ("publish",), "dotnet": ("nuget",), "make": ("deploy", "publish",
                                                                                          "release", "upload")}
_WRAPPERS = frozenset(("sudo", "env", "time", "nohup", "exec", "command", "xargs", "npx", "bunx", "uvx",
                       "python", "python3", "-m"))


_BY_METHOD = frozenset(("curl", "wget", "http", "https", "xh", "gh"))


def side_effect(tool: str | None, target_text: str | None, harmful: "list[str] | None" = None) -> str | None:
    """Why this action reached outside the work tree ("git push", "network", "POST …", …), or None.

    A web client (curl, wget, httpie, gh) counts by what it did: a POST / PUT / PATCH / DELETE, a body
    (``-d``), ``gh issue create`` … is named by ``effects.classify``; its reads are not side effects.
    ``harmful``: the user's declared commands (``effects_harmful``), which count as well.
    """
    if tool in ("WebFetch", "WebSearch"):
        return "network"
    if tool != "Bash" or not isinstance(target_text, str):
        return None
    if harmful:
        got = effects.classify(target_text, {"harmful": harmful, "local_exempt": False})
        if any(e["kind"] == "declared" for e in got):
            return "declared by you (effects_harmful)"
    for part in _commands(target_text):
        words = [w for w in part.split() if w]
        while words and (words[0] in _WRAPPERS or "=" in words[0] and not words[0].startswith("-")):
            words = words[1:]
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        args = [w for w in words[1:] if not w.startswith("-")]
        if prog in _INSTALLERS and args and args[0] in _INSTALLERS[prog]:
            return "%s %s" % (prog, args[0])
        if prog in _BY_METHOD:
            got = effects.classify(" ".join(words), {"local_exempt": False})
            if got:  # (the method, not the URL: the target was masked, its quoting may be gone)
                return "network: %s" % (got[0]["what"] if got[0]["kind"] != "http" else "%s (%s)" % (
                    got[0]["what"].split(" ", 1)[0], prog))
            continue  # a read
        if prog in _NETWORK:
            return "network (%s)" % prog
        if "deploy" in prog or "publish" in prog or (args and args[0] in ("deploy", "publish", "release")):
            return "deploy/publish"
    return None


def _commands(text: str) -> list[str]:
    """The simple commands of a shell line, split at ``&&``, ``||``, ``;`` and ``|``."""
    for sep in ("&&", "||", ";", "|"):
        text = text.replace(sep, "\n")
    return [p.strip().lstrip("(").strip() for p in text.split("\n") if p.strip()]


# -- the actions after a checkpoint ----------------------------------------------------------------

def actions_after(sdir: str, checkpoint_id: str | None = None, since: float | None = None,
                  limit: int = 2000, harmful: "list[str] | None" = None) -> "list[dict[str, Any]]":
    """The ``tool`` records of session ``sdir`` after its checkpoint ``checkpoint_id`` (or after ``since``).

    Each: ts, tool, target, failed, exit (a Bash call's exit code, when recorded), outside (:func:`side_effect`)."""
    recs = ledger.read(session.ledger_path(sdir))
    start = 0
    if checkpoint_id is not None:
        for i, r in enumerate(recs):
            if r.get("ev") == "checkpoint" and r.get("id") == checkpoint_id:
                start = i + 1
    out: "list[dict[str, Any]]" = []
    for r in recs[start:]:
        if r.get("ev") != "tool" or (since is not None and (r.get("ts") or 0) < since):
            continue
        tool = r.get("tool") if isinstance(r.get("tool"), str) else "?"
        tgt = r.get("target") if isinstance(r.get("target"), str) else None
        out.append({"ts": r.get("ts"), "tool": tool, "target": tgt, "failed": bool(r.get("failed")),
                    "exit": r.get("exit") if isinstance(r.get("exit"), int) else None,
                    "outside": side_effect(tool, tgt, harmful)})
    return out[-limit:]


def _action_line(a: "dict[str, Any]") -> str:
    desc = a["tool"] if not a["target"] else "%s `%s`" % (a["tool"], a["target"].replace("`", "'"))
    flags = []
    if a["failed"]:
        flags.append("failed" if a.get("exit") is None else "failed, exit %d" % a["exit"])
    if a["outside"]:
        flags.append("OUTSIDE the work tree: %s" % a["outside"])
    return "- %s%s" % (desc, (" — " + "; ".join(flags)) if flags else "")


def actions_text(acts: "list[dict[str, Any]]", heading: str = "Actions after the checkpoint",
                 max_chars: int = SECTION_MAX) -> str:
    """The bootstrap's actions section (not yet redacted), at most ``max_chars``.

    When not all fit, the ones reaching outside the work tree go first (newest first), then the
    newest others; the chosen ones are listed in the order they happened.
    """
    if not acts:
        return ""
    outside = [i for i, a in enumerate(acts) if a["outside"]]
    head = "## %s (%d tool call%s%s)" % (heading, len(acts), "" if len(acts) == 1 else "s",
                                         "; %d reached outside the work tree: do not repeat them without checking "
                                         "they are needed" % len(outside) if outside else "")
    order = outside[::-1] + [i for i in range(len(acts) - 1, -1, -1) if not acts[i]["outside"]]
    lines = {i: _action_line(acts[i]) for i in order[:MAX_ACTIONS_SHOWN * 2]}
    room = max_chars - len(head) - 90
    chosen: list[int] = []
    for i in order[:MAX_ACTIONS_SHOWN]:
        if room - len(lines[i]) - 1 < 0:
            break
        room -= len(lines[i]) + 1
        chosen.append(i)
    out = [head]
    if len(chosen) < len(acts):
        out.append("(%d of them shown: those marked OUTSIDE first, then the latest others)" % len(chosen))
    out += [lines[i] for i in sorted(chosen)]
    return "\n".join(out)


def since_text(root: str, pdir: str, prec: "Record", cfg: "Config | Mapping[str, Any]",
               claimer_pid: int | None = None) -> "tuple[dict[str, Any], str]":
    """(the revalidation result, the dynamic bootstrap text: revalidation + actions, redacted and bounded)."""
    from .. import redact

    res = revalidate(root, pdir, prec, cfg, claimer_pid)
    cid = (prec.get("checkpoint") or {}).get("id")
    acts = actions_after(pdir, cid, harmful=cfg.get("effects_harmful"))
    res["actions"] = len(acts)
    res["actions_outside"] = sum(1 for a in acts if a["outside"])
    body = redact.redact(text(res))
    act = redact.redact(actions_text(acts, max_chars=max(600, SECTION_MAX - len(body) - 2)))
    if act:
        body += "\n\n" + act
    if len(body) > SECTION_MAX + 600:  # (the redactor can lengthen a line; never by much)
        body = body[:SECTION_MAX - 40].rsplit("\n", 1)[0] + "\n- … (cut to fit the bootstrap budget)"
    return res, body


# -- a crash before any checkpoint -------------------------------------------------------------------

def crash_handoff(root: str, dsdir: str, drec: "Record", cfg: "Config | Mapping[str, Any]",
                  budget_chars: int, host: "Host") -> "tuple[str, dict[str, Any]]":
    """The machine handoff for session ``drec`` that died with no checkpoint (degraded; redacted; bounded);
    ``host`` reads the agent's todo list and last reply."""
    from ..snapshot.drift import changed_since
    from ..snapshot.facts import git_facts
    from ..snapshot.gitrun import SnapshotError
    from .. import paths, redact

    tpath = drec.get("transcript")
    asked = checkpoint.prompts(dsdir, limit=0, chars=600)
    todos = host.open_todos(tpath) if isinstance(tpath, str) else None
    last = host.last_reply(tpath) if isinstance(tpath, str) else None
    g = git_facts(root, max_commits=5, max_files=40,
                  index=paths.project_dir(paths.project_key(root)) + "/facts.index")
    acts = actions_after(dsdir, harmful=cfg.get("effects_harmful"))
    from ..snapshot import job

    turn = job.read_result(job.turn_result_path(dsdir)) or {}
    since_turn = None
    if turn.get("commit"):
        try:
            since_turn = changed_since(root, turn["commit"], index=job.index_path(root),
                                       facts_index=paths.project_dir(paths.project_key(root)) + "/facts.index",
                                       untracked=cfg.get("snapshot_untracked", True), limit=200)
        except (SnapshotError, OSError, ValueError):
            since_turn = None
    sid = drec.get("session_id")
    lines = ["cc-continuity: the previous session %s in this project died mid-work (its process is gone) before "
             "any checkpoint. What follows is a machine handoff (degraded: written from what it left, not by its "
             "model) — re-check it against the repository before acting on it." % drec.get("name"),
             "The whole conversation can be reopened with `claude --resume %s`." % sid]
    lines.append("\n## Goal (its first prompt)\n%s" % (asked[0]["text"] if asked else "unknown (no prompt recorded)"))
    if len(asked) > 1:
        lines.append("\n## Its last prompts\n" + "\n".join("- %s" % p["text"][:400] for p in asked[-3:]
                                                          if p is not asked[0]))
    if todos:
        lines.append("\n## Open todo items\n" + "\n".join("- [%s] %s" % (t["status"], t["content"][:150])
                                                         for t in todos[:15]))
    if last:
        lines.append("\n## Its last reply\n%s" % last[:1200])
    if g.get("git"):
        state = ["branch %s at %s" % (g.get("branch") or "(detached)", (g.get("head") or "no commits")[:12])]
        if g.get("dirty_count"):
            state.append("%d changed or untracked files" % g["dirty_count"])
        lines.append("\n## Git state now\n- " + "; ".join(state))
        lines += ["  - %s (%s)" % (d.get("path"), d.get("status")) for d in (g.get("dirty") or [])[:20]]
        if g.get("dirty_count", 0) > 20:
            lines.append("  - … %d more" % (g["dirty_count"] - 20))
        lines += ["- recent commit %s %s" % (c.get("sha", "")[:9], c.get("subject", "")[:100])
                  for c in (g.get("recent_commits") or [])[:3]]
    if turn.get("ref"):
        lines.append("- work tree at its last turn end: %s (commit %s; `git checkout %s -- <path>` restores a file)"
                     % (turn["ref"], turn["commit"][:12], turn["commit"][:12]))
        if since_turn and since_turn.get("git") and "changed" in since_turn:
            ch = since_turn["changed"]
            lines.append("- changed after that turn end (its last, unfinished turn): %s" % (
                ", ".join("%s (%s)" % (p, k) for p, k in ch[:15]) + (" … %d more" % (len(ch) - 15) if len(ch) > 15
                                                                   else "") if ch else "nothing"))
    head = redact.redact("\n".join(lines))[:budget_chars - 700]
    act = redact.redact(actions_text(acts, heading="Actions it took", max_chars=budget_chars - len(head) - 100))
    text = head + ("\n\n" + act if act else "")
    return text[:budget_chars], {"prompts": len(asked), "todos": len(todos or ()), "actions": len(acts),
                                 "outside": sum(1 for a in acts if a["outside"]), "turn_snapshot": turn.get("ref")}
