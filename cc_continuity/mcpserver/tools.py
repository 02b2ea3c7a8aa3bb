"""The MCP tools' work, on the project's records (no SDK here: :mod:`.server` registers these).

"This session" is worked out on every call, never once at start: the server outlives a rotation (a ``/clear``
keeps the agent's process, and this server with it), so it is the newest open session whose agent process is
one of this server's ancestors.  A mutating tool runs only for a client named in the user's own config
(``mcp_clients``): the name is only what the client declares, so nothing the server is given (its arguments,
its environment, which a repository's server entry could set) widens the list.  Every call of a mutating tool
is written to the session's ledger as reported by the agent (``"by": "agent"``).
"""

from __future__ import annotations

import os
import time

from .. import config, errors, ledger, paths, session
from ..digest import sha256
from ..holds import effects
from ..project import Project
from ..rotation import claim, manual, revalidation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..rotation.host import Host
    from ..session import Record

    HostOf = Callable[[dict[str, Any]], Host]  # a session record's host (a port: the command hands it in)

SNAPSHOT_BUDGET_S = 30.0  # take_checkpoint: the agent waits on the snapshot; past this the facts are kept alone
EFFECTS_SHOWN = 50  # list_effects: the newest this many effects (the store keeps more; a hold reads its tail)
MAX_ANCESTORS = 6  # the agent may start us through a wrapper or two (sh -c, uv run, npx)


Denied = errors.ToolDenied  # (a mutating tool refused to this client, or in this session's state: the text says why)


def ancestors(pid: int | None = None) -> list[int]:
    """This process's parent and its parents, nearest first (at most :data:`MAX_ANCESTORS`)."""
    out, cur = [], pid or os.getpid()
    for _ in range(MAX_ANCESTORS):
        try:
            with open("/proc/%d/stat" % cur, "rb") as f:
                stat = f.read(4096).decode("ascii", "replace")
            cur = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if cur <= 1:
            break
        out.append(cur)
    return out


def project(cwd: str | None = None) -> Project:
    return Project.discover(cwd or os.getcwd())


def this_session(proj: Project, pids: list[int] | None = None) -> tuple[int, dict[str, Any]] | None:
    """The newest open session of ``proj`` run by one of ``pids`` (this server's ancestors), or None."""
    pids = ancestors() if pids is None else pids
    for n in reversed(proj.open_numbers()):
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        if rec["state"] not in session.TERMINAL and rec.get("pid") in pids:
            return n, dict(rec)
    return None


def not_the_users(root: str) -> str | None:
    """Why the config the allowlist would come from may not be the user's own, or None.  The server's
    environment names the state folder (``CC_CONTINUITY_HOME``), and a repository's own server entry can set
    that: a folder inside the project, or a config.json that others can write or read (git checks files out
    0644; ours are written 0600), is not taken as the user's."""
    state, path = os.path.realpath(paths.home()), paths.config_file()
    project = os.path.realpath(root)
    if state == project or state.startswith(project + os.sep):
        return "the state folder %s is inside the project" % state
    try:
        st = os.stat(path)
    except OSError:
        return None  # no config: no client is named anyway
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return "%s is not yours alone (owner %d, mode %o; `chmod 600` it if it is yours)" % (
            path, st.st_uid, st.st_mode & 0o777)
    return None


def allowed(client: str | None, root: str) -> bool:
    """Does the user's own config let ``client`` call mutating tools?  (``mcp_clients`` is user-only: a
    repository's config cannot set it, nor a state folder a repository's server entry points at.)"""
    if not_the_users(root) is not None:
        return False
    try:
        names = config.load(root)["mcp_clients"]
    except config.ConfigError:
        return False
    return isinstance(client, str) and bool(client) and client in names


def _guard(client: str | None, proj: Project) -> None:
    if allowed(client, proj.root):
        return
    why = not_the_users(proj.root)
    if why:
        raise Denied("denied: this tool changes the project's records, and the config that would allow it may "
                     "not be yours: %s. Read-only tools stay open." % why)
    raise Denied("denied: this tool changes the project's records, and the client %r is not in your "
                 "mcp_clients (your own cc-continuity config; a repository cannot set it). Read-only "
                 "tools stay open." % (client or "(no name)"))


# -- read-only ------------------------------------------------------------------------------------
def session_context(proj: Project, pids: list[int] | None = None) -> dict[str, Any]:
    """The calling session: its name, state, the context's last reading and level, the thresholds."""
    got = this_session(proj, pids)
    if got is None:
        return {"session": None, "why": "no open cc-continuity session of this project runs this agent process"}
    n, rec = got
    cfg = config.load(proj.root)
    reading = rec.get("last_reading") or {}
    return {"session": rec.get("name"), "number": n, "state": rec["state"],
            "context": {k: reading.get(k) for k in ("tokens", "window", "percent", "level")},
            "thresholds": {k: cfg[k] for k in ("warn", "rotate", "hard")},
            "checkpoint_from": rec.get("checkpoint_from")}


def _with_checkpoints(proj: Project) -> list[tuple[int, Record]]:
    out = []
    for n in reversed(proj.numbers()):
        try:
            rec = session.load(proj.session_dir(n))
        except (OSError, ValueError):
            continue
        if rec.get("checkpoint"):
            out.append((n, rec))
    return out


def list_checkpoints(proj: Project) -> list[dict[str, Any]]:
    """The project's checkpoints, newest first: waiting for a successor or claimed, and by whom; a waiting
    one revalidated against the work tree now (its verdict and why), as a claim would."""
    cfg = config.load(proj.root)
    out = []
    for n, rec in _with_checkpoints(proj):
        cp, succ = rec["checkpoint"], rec.get("successor")
        row = {"checkpoint": cp.get("id"), "session": rec.get("name"), "state": rec["state"],
               "waiting": rec["state"] in session.CLAIMABLE and not succ,
               "claimed_by": proj.session_name(succ) if isinstance(succ, int) else None,
               "degraded": bool(cp.get("degraded")), "ref": cp.get("ref")}
        if row["waiting"]:
            got = revalidation.summary(revalidation.revalidate(proj.root, proj.session_dir(n), rec, cfg))
            row["revalidation"] = {k: got.get(k) for k in ("verdict", "reason", "commits_since", "changed_count")}
        out.append(row)
    return out


def checkpoint_bootstrap(proj: Project, checkpoint: object) -> dict[str, Any]:
    """The text a successor of ``checkpoint`` starts with (reading it claims nothing)."""
    for n, rec in _with_checkpoints(proj):
        if rec["checkpoint"].get("id") == checkpoint:
            text = claim.bootstrap_text(proj, n, rec, "the session that claims it",
                                        config.load(proj.root)["bootstrap_max_tokens"])
            return {"checkpoint": checkpoint, "claimed": False, "bootstrap": text}
    raise Denied("no checkpoint %r in this project (list_checkpoints names them)" % (checkpoint,))


def verify_ledgers(proj: Project) -> dict[str, Any]:
    """Every session ledger of the project, its hash chain checked."""
    rows, bad = [], 0
    for n in proj.numbers():
        ok, line, reason = ledger.verify(session.ledger_path(proj.session_dir(n)))
        rows.append({"session": proj.session_name(n), "ok": ok, "line": line, "reason": reason})
        bad += not ok
    return {"ok": bad == 0, "ledgers": rows}


def list_effects(proj: Project) -> dict[str, Any]:
    """The project's side-effect records, newest first (at most :data:`EFFECTS_SHOWN`): what each was, in which
    session, who recorded it (the machine's hooks, or an agent through this server: then as reported by it), and
    its outcome: done (ok or not, with the exit code where the host gave one), not run, or uncertain (begun and
    never ended: a repeat is held).  Overrides the user typed are listed with the code they let through."""
    recs = effects.read(proj.dir)
    ends: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in recs:
        if r.get("ph") in ("done", "not_run"):
            ends[(r.get("k"), r.get("tu"))] = r
    rows: list[dict[str, Any]] = []
    for r in reversed(recs):
        if len(rows) >= EFFECTS_SHOWN:
            break
        if r.get("ph") == "override":
            rows.append({"override": r.get("code"), "session": r.get("n"), "at": r.get("ts")})
            continue
        if r.get("ph") != "intent":
            continue
        end = ends.get((r.get("k"), r.get("tu")))
        outcome = ("uncertain" if end is None else "not run" if end.get("ph") == "not_run"
                   else "done" if end.get("ok") else "failed")
        row = {"what": r.get("what"), "session": r.get("n"), "at": r.get("ts"), "outcome": outcome,
               "recorded_by": "agent (reported)" if r.get("by") == "agent" else "machine",
               "key": str(r.get("k") or "")[:12]}
        if end is not None and end.get("exit") is not None:
            row["exit"] = end.get("exit")
        if end is not None and end.get("by") == "agent":
            row["outcome_reported_by_agent"] = True
        if r.get("override"):
            row["let_through_by"] = r.get("override")
        rows.append(row)
    return {"effects": rows, "shown": len(rows), "newest_first": True}


# -- mutating -------------------------------------------------------------------------------------
def request_rotation(proj: Project, client: str | None, pids: list[int] | None = None) -> dict[str, Any]:
    """Ask for a rotation at the end of this turn.  The harness decides: only past *warn*, once per session,
    never in a rotation loop; the answer says what will happen."""
    _guard(client, proj)
    got = this_session(proj, pids)
    if got is None:
        raise Denied("no open cc-continuity session of this project runs this agent process: nothing to rotate")
    n, _ = got
    sdir = proj.session_dir(n)
    with proj.edit(sdir) as rec:
        level = (rec.get("last_reading") or {}).get("level") or "ok"
        why = None
        if rec["state"] not in session.WORKING:
            why = "the session is already %s" % rec["state"]
        elif rec.get("loop_stopped"):
            why = "rotation is stopped in this session (its fresh context alone was past rotate)"
        elif rec.get("rotation_asked_by_agent"):
            why = "a rotation was asked for once in this session already"
        elif level == "ok":
            why = "the context is below warn (%s%%): no rotation yet" % (rec.get("last_reading") or {}).get("percent")
        if why is None:
            rec["rotate_requested"] = True
            rec["rotation_asked_by_agent"] = True
    ledger.append(session.ledger_path(sdir), {"ev": "mcp_rotation_request", "by": "agent", "client": client,
                                              "granted": why is None, "why": why})
    if why:
        return {"granted": False, "why": why}
    return {"granted": True, "what_happens": "at the end of this turn the handoff is asked for; once it is valid "
                                             "the session rotates and its successor continues from it"}


def take_checkpoint(proj: Project, client: str | None, message: object, host_of: HostOf,
                    pids: list[int] | None = None) -> dict[str, Any]:
    """A checkpoint of this session now (facts and a git snapshot under ``refs/continuity/…/manual/``), no
    rotation: as ``cc-continuity checkpoint`` does, recorded as asked for by the agent."""
    _guard(client, proj)
    got = this_session(proj, pids)
    if got is None:
        raise Denied("no open cc-continuity session of this project runs this agent process: nothing to checkpoint")
    n, rec = got
    text = message.strip()[:200] if isinstance(message, str) and message.strip() else "checkpoint asked for by the agent"
    result = manual.take(proj, n, proj.session_dir(n), config.load(proj.root), host_of(rec), text, by="agent",
                         timeout=SNAPSHOT_BUDGET_S)
    git = result["git"]
    return {"session": result["session"], "facts": result["dir"], "ref": git.get("ref"), "commit": git.get("commit"),
            "snapshot": "taken" if git.get("git") else "not a git repository" if git.get("git") is False
            else "failed: %s" % git.get("error"), "recorded_as": "asked for by the agent"}


def _effect_key(key: str) -> str:
    """The digest a side effect routed through the server is held by: the agent's key, never its text."""
    return sha256(b"mcp\0" + key.encode("utf-8", "surrogatepass")).hexdigest()


def _checked_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > 500:
        raise Denied("key must be a non-empty string of at most 500 characters naming the effect (the same key "
                     "for the same effect: a release tag, the message's id, the deploy's target and version)")
    return key.strip()


def effect_begin(proj: Project, client: str | None, key: object, what: object,
                 pids: list[int] | None = None) -> dict[str, Any]:
    """Before a side effect the shell cannot show (a program that posts, a deploy script): its intent recorded
    under ``key``, or refused when the same effect already ran, or may have (begun and never ended: the process
    died), with the ``repeat <code>`` only the user can give.  The same holds as a Bash effect's."""
    _guard(client, proj)
    k = _effect_key(_checked_key(key))
    label = (what if isinstance(what, str) and what.strip() else "an effect routed through MCP")[:200]
    got = this_session(proj, pids)
    sid, name = (got[1].get("session_id"), got[1].get("name")) if got else (None, None)
    h = effects.history(proj.dir, k)
    if h["last"] is not None and not h["override"]:
        raise Denied(effects.hold_reason(h, label) + " (held: repeat %s)" % h["code"])
    token = "mcp-%d" % time.time_ns()
    intent = {"ph": "intent", "k": k, "tu": token, "sid": sid, "n": name, "what": label, "by": "agent",
              "client": client}
    if h["override"]:
        intent["override"] = h["code"]
    effects.append(proj.dir, intent)
    return {"begun": True, "token": token, "code": h["code"],
            "then": "perform the effect, then call effect_end with the same key and whether it succeeded"}


def effect_end(proj: Project, client: str | None, key: object, ok: object) -> dict[str, Any]:
    """After the effect: its outcome, as the agent reports it (recorded as the agent's, not as seen)."""
    _guard(client, proj)
    k = _effect_key(_checked_key(key))
    if not isinstance(ok, bool):
        raise Denied("ok must be true (the effect happened) or false (it did not)")
    recs = effects.read(proj.dir)
    ended = {r.get("tu") for r in recs if r.get("k") == k and r.get("ph") in ("done", "not_run")}
    open_ = [r for r in recs if r.get("k") == k and r.get("ph") == "intent" and r.get("tu") not in ended]
    if not open_:
        raise Denied("no begun effect with this key waits for its end (effect_begin first)")
    tu = open_[-1]["tu"]
    effects.append(proj.dir, {"ph": "done", "k": k, "tu": tu, "exit": None, "ok": ok, "by": "agent",
                              "client": client})
    return {"ended": True, "token": tu, "ok": ok, "recorded_as": "reported by the agent"}


def claim_checkpoint(proj: Project, client: str | None, checkpoint: object) -> dict[str, Any]:
    """For a client with no hooks of ours (Cursor, Cline, an SDK app): claim ``checkpoint`` once and return its
    successor's bootstrap.  Under the project lock, as a hook's claim: exactly one of them wins.  The client
    gets a session record of its own (``source: mcp``) that ends at once (no hook of ours follows it): the
    chain names who continued the work."""
    _guard(client, proj)
    if not isinstance(checkpoint, str) or not checkpoint:
        raise Denied("checkpoint must name one, e.g. cp-003 (list_checkpoints names them)")
    proj.ensure()
    with proj.lock():
        proj.ensure_open_index()
        found = [(n, rec) for n, rec in _with_checkpoints(proj) if rec["checkpoint"].get("id") == checkpoint]
        if not found:
            raise Denied("no checkpoint %r in this project (list_checkpoints names them)" % checkpoint)
        n, prec = found[0]
        if prec["state"] not in session.CLAIMABLE or prec.get("successor"):
            who = prec.get("successor")
            raise Denied("%s is claimed already%s: a checkpoint is continued once" % (
                checkpoint, " by %s" % proj.session_name(who) if isinstance(who, int) else ""))
        m = proj.allocate_number()
        sdir, sid = proj.session_dir(m), "mcp-%d-%d" % (os.getpid(), time.time_ns())
        rec = session.new_record(m, proj.session_name(m), sid, project_root=proj.root, project_key=proj.key,
                                 slug=proj.slug, launch_dir=proj.root, source="mcp", host="mcp:%s" % client)
        session.save(sdir, rec)
        proj.link(sid, m)
        pred_n, got = claim.claim(proj, m, sdir, [n])
        if pred_n is None or got is None:
            session.transition(sdir, rec, session.ENDED, "mcp: %s went elsewhere" % checkpoint)
            raise Denied("%s was claimed meanwhile: a checkpoint is continued once" % checkpoint)
        rec = claim.finish(proj, m, sdir, pred_n, got)
        session.transition(sdir, rec, session.ENDED, "handed to MCP client %s: no hook of ours follows it" % client)
    ledger.append(session.ledger_path(sdir), {"ev": "mcp_claim", "by": "agent", "client": client,
                                              "checkpoint": checkpoint})
    text = claim.bootstrap_text(proj, pred_n, got, rec["name"], config.load(proj.root)["bootstrap_max_tokens"])
    return {"checkpoint": checkpoint, "claimed": True, "session": rec["name"], "bootstrap": text}
