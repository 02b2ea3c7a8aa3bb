"""The model servers the hosts talk to, for ``configure --window auto`` and doctor (serverwindow/ asks them).

Each host folder's ``modelserver.py`` says where its own server is, from the user's shell and user settings
only: Claude Code's ``ANTHROPIC_BASE_URL``, Codex's provider ``base_url``, Gemini's ``GOOGLE_GEMINI_BASE_URL``.
"""

from ..doctor.base import Result
from .claude import modelserver as claude
from .codex import modelserver as codex
from .gemini import modelserver as gemini

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

READERS = (("claude", "Claude Code", claude), ("codex", "Codex CLI", codex), ("gemini", "Gemini CLI", gemini))


def configured(env: "Mapping[str, str]") -> "list[dict[str, Any]]":
    """Every host's own model server (``{"host", "url", "model", "credential", "where", "window"}``), in the
    hosts' order; empty when none has one (their vendors' own APIs)."""
    out = []
    for _agent, label, reader in READERS:
        found = reader.model_server(env)
        if found is not None:
            out.append(dict(found, host=label))
    return out


def check_server_window(ctx: "Any") -> Result:
    """doctor: each host's own model server asked for its window (2 s at most a request, once a server), against
    cc-continuity's window and the host's own; one command named for what disagrees."""
    found = configured(ctx.env)
    if not found:
        return Result("server-window", True, "no model server of your own: your agents use their vendors' APIs")
    try:
        from ..serverwindow import ask, shapes  # (requests: only when a server is set)
    except ImportError as e:
        return Result("server-window", False, "a model server is set but this Python cannot ask it (%s)" % e,
                      "run doctor with the installed cc-continuity")
    cfg, _ = ctx.config()
    ours = cfg["window"] if cfg is not None else None
    said, wrong, fixes = [], [], []
    for server in found:
        asked = ctx._once(("server-window", server["url"], server["model"]),
                          lambda s=server: ask.ask(s["url"], s["model"], s["credential"]))
        got = asked.answer
        if got is None or got.tokens is None:
            silent = "%s's server %s said no window (%s)" % (server["host"], ask.root_of(server["url"]),
                                                             got.note if got else asked.why or "no shape it documents")
            if ours:  # set by hand: nothing to compare it with, nothing known to be wrong
                said.append(silent + ": yours is not confirmed")
                continue
            wrong.append(silent)
            fixes.append("cc-continuity configure --window N (your model's context, as the server runs it)")
            continue
        n, reader = got.tokens, {label: r for _, label, r in READERS}[server["host"]]
        said.append("%s's server (%s) %s %d" % (server["host"], got.server,
                                                "runs" if got.kind == shapes.EXACT else "allows at most", n))
        if ours is None or (ours != n if got.kind == shapes.EXACT else ours > n):
            wrong.append("cc-continuity's window is %s" % (ours or "detected from the model id"))
            fixes.append("cc-continuity configure --window auto")
        own = server.get("window")
        fix = reader.own_window_fix(n)
        if fix and (own != n if got.kind == shapes.EXACT else own is not None and own > n):
            wrong.append("%s's own window is %s" % (server["host"], own or "unset"))
            fixes.append(fix)
        elif not fix and own and own > n:
            said.append("%s assumes %d for every model: its own compression comes after the server's limit, so "
                        "the rotation is the guard" % (server["host"], own))
    if wrong:
        return Result("server-window", False, "; ".join(said + wrong), " and ".join(dict.fromkeys(fixes)))
    return Result("server-window", True, "; ".join(said) + "; cc-continuity's window is %s" % ours)


SMALL = 160_000  # a window below this (a 128k or 131,072 model included) is checked against a fresh session


def check_small_window(ctx: "Any") -> Result:
    """doctor: on a small window, can *rotate* sit above a fresh session of each agent judged (its system prompt
    and tools, and the bootstrap up to ``bootstrap_max_tokens``)?  And, for Claude Code, does its own
    auto-compaction come before our rotation?  What to change when not."""
    cfg, _ = ctx.config()
    window = cfg["window"] if cfg is not None else None
    if not window or window >= SMALL:
        return Result("small-window", True, "window %s: roomy enough for a fresh session" % (window or "detected"))
    rotate_at = int(window * cfg["rotate"] / 100)
    wrong, fixes, said = [], [], []
    for agent, label, reader in READERS:
        if agent not in ctx.agents:
            continue
        fresh, what = reader.fresh_tokens(ctx.env)
        start = fresh + int(cfg["bootstrap_max_tokens"])
        said.append("a fresh %s session ~%d tokens (%s, the bootstrap up to %d)" % (
            label, start, what, cfg["bootstrap_max_tokens"]))
        if start >= rotate_at:
            wrong.append("that is past rotate (%s%% of %d = %d): each successor would rotate at once" % (
                cfg["rotate"], window, rotate_at))
            fixes.append("a larger context on the server (llama-server --ctx-size, Ollama num_ctx, vLLM "
                         "--max-model-len)%s, or a smaller bootstrap (bootstrap_max_tokens in your config)" % (
                             ", or CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=1 (~%d)" % claude.FRESH_TOKENS["short"]
                             if label == "Claude Code" and fresh > claude.FRESH_TOKENS["short"] else ""))
        compacts_at = window - claude.COMPACT_MARGIN
        if label == "Claude Code" and int(window * cfg["hard"] / 100) >= compacts_at:
            wrong.append("Claude Code compacts at %d tokens (%d%%) of a %d window, before cc-continuity's hard "
                         "ceiling (%s%%)" % (max(compacts_at, 0), max(0, 100 * compacts_at // window), window,
                                             cfg["hard"]))
            fixes.append(_lower_thresholds(window, compacts_at, start))
    if wrong:
        return Result("small-window", False, "; ".join(said + wrong), " and ".join(dict.fromkeys(fixes)))
    return Result("small-window", True, "; ".join(said) + "; rotate at %d of %d" % (rotate_at, window))


def _lower_thresholds(window: int, compacts_at: int, start: int) -> str:
    """The thresholds under Claude Code's compaction and above a fresh session, or a larger context."""
    hard = 100 * compacts_at // window - 2
    rotate, warn = hard - 8, hard - 15
    if warn >= 20 and window * rotate // 100 > start:
        return "cc-continuity configure --thresholds %d,%d,%d" % (warn, rotate, hard)
    return "a larger context on the server: Claude Code compacts %d tokens below the window" % claude.COMPACT_MARGIN
