"""What a step of the rotation knows of the call it runs for, and the ports it acts through.

A :class:`Context` holds the plain facts of one hook call (the event, its payload, the
environment, the session id), resolves the project and config on first use, and carries
the ports an adapter fills: the agent :class:`~.host.Host` (its transcript, its process),
pushes (:meth:`Context.deliver`), and tmux (:meth:`Context.can_drive`,
:meth:`Context.start_rotator`).  The plain context collects pushes and has no tmux, so a
whole rotation runs in a test process.  Registration lives here too: every step starts
from the session's record.
"""

from __future__ import annotations

import os

from .. import card, config, ledger, meter, session
from ..project import Project, launch_dir
from ..holds import effects

TYPE_CHECKING = False
if TYPE_CHECKING:  # names only the type checker needs (the hooks do not pay for importing typing)
    from typing import Any

    from ..session import Record  # a session record: every key declared there
    from .host import Env, Host

    Reading = dict[str, Any]  # a meter reading (meter.reading)
    Output = dict[str, Any]  # what a hook prints (JSON)
    Push = dict[str, Any]  # the keywords of one notify.emit
    Started = tuple[int, str, Record]  # (session number, session dir, record)

    from typing import Protocol

    class ClaimGate(Protocol):
        """A claim's questions to the remote about published candidates (share/lease.py's Gate)."""

        asked: dict[int, tuple[str, dict[str, Any]]]

        def refuse(self) -> None: ...
        def pick(self, cands: list[int]) -> int | None: ...
        def allowed(self, cands: list[int]) -> list[int]: ...
        def ask(self, c: int) -> tuple[str, dict[str, Any]]: ...
        def settle(self, c: int, prec: Record) -> None: ...
        def notice(self, sdir: str, cfg: Any) -> str | None: ...


CLAIM_SOURCES = ("clear", "startup", "resume")  # SessionStart sources that claim a checkpoint


class Context:
    """What a step knows of the call it is run for, and the ports it acts through.

    Plain facts: the event, its payload, the environment (the agent's process, its
    tmux pane, a window override) and the session id; the agent ``host`` it runs in.
    The project and config are resolved on first use, so a step pays only for what
    it reads.
    """

    def __init__(self, event: str, payload: object, env: Env | None = None, *, host: Host) -> None:
        self.event = event
        self.payload = payload if isinstance(payload, dict) else {}
        self.env = os.environ if env is None else env
        self.host = host
        sid = self.payload.get("session_id")
        self.session_id = sid if card.valid_session_id(sid) else None
        self.outcome = "ok"  # one line for the hook log: what this call did
        self.agent_version: str | None = None  # the agent's version, when its transcript named it
        self.pushes: list[Push] = []  # every push this call asked for, in order
        self.after_output: list[Any] = []  # run once the hook's answer is written (a callable each, no argument)
        self._project: Project | None = None
        self._cfg: config.Config | None = None

    # -- ports: an adapter overrides these ---------------------------------------------------
    def deliver(self, push: Push) -> None:
        """Send one push (``notify.emit`` keywords); the plain context only collects them."""

    def can_drive(self, rec: Record) -> bool:
        """Can a tmux rotator drive this session?  (The plain context has no tmux.)"""
        return False

    def own_driver(self) -> str | None:
        """The driver that hands this session over by itself, when the adapter has one (``headless``: a run loop
        that starts the successor when the agent's process ends); None: the rotation chooses."""
        return None

    def start_rotator(self, rec: Record, sdir: str, successor_name: str, project_lock: str | None,
                      standby_s: float | None) -> int:
        """Spawn the tmux rotator for a verified checkpoint; its pid."""
        raise RuntimeError("no tmux rotator in this context")

    # Sharing through a git remote (share/, the optional feature, fills these in the hook contexts;
    # the protocol never imports it): the plain context shares nothing.
    def after_verified(self, n: int) -> None:
        """Checkpoint ``n`` is verified (under the project lock): publish it when the user shares."""

    def renew_leases(self, sdir: str) -> None:
        """A turn ended: renew the remote leases held for this project's work when they are due."""

    def tidy_at_startup(self) -> None:
        """A session registered at startup: the host sweeps what only it keeps (Claude Code: the twin check's
        markers of calls long handled).  Off any rotation's path."""

    def claim_gate(self, n: int, name: str, cands: list[int]) -> ClaimGate | None:
        """Before session ``n`` claims one of ``cands`` (under the project lock): the gate that asks the
        remote first when one of them was published, else None (the claim is local)."""
        return None

    # -- lazily resolved facts ------------------------------------------------------------------
    @property
    def project(self) -> Project:
        if self._project is None:
            self._project = Project.discover(launch_dir(self.payload, self.env))
        return self._project

    @property
    def cfg(self) -> config.Config:
        if self._cfg is None:
            self._cfg = config.load(self.project.root, self.env)
        return self._cfg

    def agent_pid(self) -> int | None:
        """The agent's process (a /clear keeps it: it pairs a successor with its predecessor)."""
        return self.host.agent_pid(self.env)

    def tmux(self) -> tuple[str | None, str | None]:
        """(socket, pane) when the agent runs inside tmux, else (None, None)."""
        tmux, pane = self.env.get("TMUX", ""), self.env.get("TMUX_PANE", "")
        if tmux and pane:
            return tmux.split(",", 1)[0], pane
        return None, None

    def number(self) -> int | None:
        return self.project.lookup(self.session_id) if self.session_id else None

    def session_dir(self, number: int) -> str:
        return self.project.session_dir(number)

    def load_session(self) -> Started:
        """(number, dir, record) for this session, registering it if unknown."""
        n = self.number()
        if n is not None:
            sdir = self.session_dir(n)
            try:
                return n, sdir, session.load(sdir)
            except (OSError, ValueError):
                pass  # missing or corrupt: re-register below (never lose the hook)
        return register(self, source=None)

    def log(self, sdir: str, record: dict[str, Any]) -> Any:
        return ledger.append(session.ledger_path(sdir), record)

    def reading(self, sdir: str, rec: Record) -> Reading:
        """This call's session reading now (the payload's transcript first)."""
        return session_reading(sdir, rec, self.cfg, self.host, self.payload.get("transcript_path"), self.env)

    def reading_for(self, sdir: str, rec: Record, tokens: int | None, source: str | None,
                    model: str | None = None, agent_window: int | None = None) -> Reading:
        """A whole reading (window, ratio, level) for ``tokens`` in this call's session."""
        return reading_for(sdir, rec, self.cfg, tokens, source, model, self.env, agent_window)

    def push(self, rec: Record, event: str, text: str = "", reading: Reading | None = None) -> None:
        """Ask for a push about ``rec`` (never raises, never waits: the adapter spools it)."""
        ratio = None
        r = reading or rec.get("last_reading") or {}
        if r.get("tokens") is not None and r.get("window"):
            ratio = r["tokens"] / float(r["window"])
        item = {"event": event, "slug": rec.get("slug"), "session": rec.get("number"), "ratio": ratio,
                "text": text, "project_root": self.project.root}
        self.pushes.append(item)
        try:
            self.deliver(item)
        except Exception as e:  # a push is never worth a failed hook
            self.outcome += " (notify failed: %s)" % type(e).__name__


def begin(ctx: Context) -> Started | None:
    """(n, sdir, rec) for this session of an enabled project (registered if new), or None when disabled."""
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    return ctx.load_session()


def known(ctx: Context) -> tuple[int, str] | None:
    """(n, sdir) of an already registered session of an enabled project, else None (with the outcome set)."""
    if not ctx.cfg["enabled"]:
        ctx.outcome = "project disabled"
        return None
    n = ctx.number()
    if n is None:
        ctx.outcome = "unknown session"
        return None
    return n, ctx.session_dir(n)


# -- registration -----------------------------------------------------------------------------
def register(ctx: Context, source: str | None) -> Started:
    """Create (or refresh) the record for ``ctx.session_id``.  Returns (n, dir, rec)."""
    if not ctx.session_id:
        raise ValueError("hook payload has no usable session_id")
    proj = ctx.project
    cfg = ctx.cfg  # a broken config stops here, before a session number is spent
    proj.ensure()
    sock, pane = ctx.tmux()
    with proj.lock():
        proj.ensure_open_index()
        n = proj.lookup(ctx.session_id)
        if n is not None:
            sdir = proj.session_dir(n)
            try:
                rec = session.load(sdir)
                if source == "resume" and rec["state"] == session.ROTATED:
                    return _resumed(ctx, n, rec, sock, pane)
                rec.update(_live_fields(ctx, sock, pane))  # type: ignore[typeddict-item]  # Record keys
                if source == "resume" and rec["state"] == session.ENDED:
                    rec.pop("ended", None)
                    session.transition(sdir, rec, session.ACTIVE, "resumed")
                else:
                    session.save(sdir, rec)
                ctx.log(sdir, {"ev": "session_start", "source": source, "again": True})
                refresh_card(ctx, n, sdir, rec)
                return n, sdir, rec
            except (OSError, ValueError):
                pass  # corrupt record: fall through and start a fresh one
        n = proj.allocate_number()
        sdir = proj.session_dir(n)
        rec = session.new_record(
            n, proj.session_name(n), ctx.session_id,
            project_root=proj.root, project_key=proj.key, slug=proj.slug,
            launch_dir=launch_dir(ctx.payload, ctx.env), source=source,
            unattended=bool(cfg["unattended"]), host=ctx.host.name,
            **_live_fields(ctx, sock, pane),
        )
        pred = proj.cleared_by(ctx.agent_pid()) if source in ("clear", None) else None
        if pred is not None:
            rec["predecessor"] = pred
        if source in CLAIM_SOURCES or (source is None and pred is not None):  # (None: its SessionStart died)
            rec["claim_pending"] = source or "clear"
        session.save(sdir, rec)
        proj.link(ctx.session_id, n)
        proj.remember_pid(ctx.agent_pid(), n, None)
        ctx.log(sdir, {"ev": "session_start", "source": source, "session_id": ctx.session_id,
                       "name": rec["name"], "predecessor": pred, "pid": rec.get("pid"), "pane": pane})
        refresh_card(ctx, n, sdir, rec)
        return n, sdir, rec


def _resumed(ctx: Context, old_n: int, old: Record, sock: str | None, pane: str | None) -> Started:
    """``claude --resume`` of a conversation that was rotated away from: a new record (its own number,
    ``resumed_from``), so the chain of rotations stays as it was.  Call under the project lock."""
    proj = ctx.project
    n = proj.allocate_number()
    sdir = proj.session_dir(n)
    sid = ctx.session_id or ""
    rec = session.new_record(n, proj.session_name(n), sid, project_root=proj.root, project_key=proj.key,
                             slug=proj.slug, launch_dir=launch_dir(ctx.payload, ctx.env), source="resume", host=ctx.host.name,
                             unattended=bool(ctx.cfg["unattended"]), resumed_from=old_n, resume_grace=True,
                             **_live_fields(ctx, sock, pane))
    session.save(sdir, rec)
    proj.link(sid, n)
    proj.remember_pid(ctx.agent_pid(), n, None)
    ctx.log(sdir, {"ev": "session_start", "source": "resume", "session_id": sid, "name": rec["name"],
                   "resumed_from": old_n, "pid": rec.get("pid")})
    ctx.log(proj.session_dir(old_n), {"ev": "resumed_as", "number": n})
    refresh_card(ctx, n, sdir, rec)
    return n, sdir, rec


def refresh_card(ctx: Context, n: int, sdir: str, rec: Record) -> dict[str, Any]:
    """Rebuild this session's card (the hot path's cache of project + config); the card built."""
    proj = ctx.project
    sl = session.statusline_path(sdir)
    snaps = effects.snapshots_dir(ctx.env)  # a new shell snapshot may bring new aliases
    deps = card.snapshot(config.layer_files(proj.root) + [sl, snaps])
    cfg = config.load(proj.root, ctx.env)
    slw = meter.reported_window(sdir)
    window, wsrc = meter.resolve_window(cfg["window"], slw, rec.get("model"), ctx.env)
    sid = ctx.session_id
    if sid is None:
        raise ValueError("hook payload has no usable session_id")
    built = card.build(sid, sdir, rec, cfg, window, wsrc, deps, slw,
                       effects.card_words(cfg["effects_harmful"], effects.snapshot_aliases(snaps)))
    card.save(sid, built)
    return built


def _live_fields(ctx: Context, sock: str | None, pane: str | None) -> dict[str, Any]:
    p = ctx.payload
    out = {"pid": ctx.agent_pid(), "tmux_socket": sock, "tmux_pane": pane}
    if isinstance(p.get("transcript_path"), str):
        out["transcript"] = p["transcript_path"]
    if isinstance(p.get("model"), str):
        out["model"] = p["model"]
    return out


def session_reading(sdir: str, rec: Record, cfg: config.Config, host: Host, transcript: str | None = None,
                    env: Env | None = None) -> Reading:
    """A session's reading now, from its transcript's tail (as ``host`` reads it); the one way to take one.

    The window is the one that applies to this session (config, else the window
    the status line reported, else the model's, else CLAUDE_CODE_MAX_CONTEXT_TOKENS):
    the hooks, ``status`` and ``checkpoint`` agree on a session's percent.
    """
    path = transcript or rec.get("transcript")
    got: dict[str, Any] = {"tokens": None, "model": None, "source": "none"}
    if isinstance(path, str) and path:
        try:
            got = host.reading(path)
        except OSError:
            got = {"tokens": None, "model": None, "source": "transcript missing"}
    return reading_for(sdir, rec, cfg, got["tokens"], got["source"], got.get("model"), env, got.get("window"))


def reading_for(sdir: str, rec: Record, cfg: config.Config, tokens: int | None, source: str | None,
                model: str | None = None, env: Env | None = None, agent_window: int | None = None) -> Reading:
    """A full reading (window, ratio, level) for ``tokens`` in this session.

    The window: the user's config, else the one the agent reported (``agent_window``: a Codex
    rollout's; Claude Code's status line leaves its own in the session dir), else the model's."""
    if agent_window and not cfg["window"]:
        window, wsrc = agent_window, "agent"
    else:
        window, wsrc = meter.resolve_window(cfg["window"], meter.reported_window(sdir), rec.get("model") or model, env)
    reading: Reading = meter.reading(tokens, window, wsrc, cfg, source)
    return reading
