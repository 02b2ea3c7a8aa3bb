"""The checks of Codex CLI's wiring: our entries in ``$CODEX_HOME/hooks.json`` (codex-hooks), Codex's
trust of them in its config.toml (codex-trust), and whether they have run since (codex-firing).

Only ``$CODEX_HOME`` is read: a repository's ``.codex/`` is not ours (docs/SECURITY.md).

With them, Codex CLI's doctor unit (the same names in every host's ``doctor.py``; ``hosts/checkup.py``
puts the report together from them): its ``CHECKS``, whether it is set up here (:func:`installed`), its
install's fix and its step in the closing ``Next:``.
"""

import os
import time

from ... import paths, safefile
from ...doctor.base import SETTINGS_MAX_BYTES, Result, hook_calls
from ...install import app, settings
from . import appserver
from . import files
from .install import HOOK_FILE
from .install import NAME as NAME, RECORD_KEYS as RECORD_KEYS  # (the unit's: its install's)

CODEX_FIX = "cc-continuity install --agent codex"
CODEX_TRUST_FIX = "cc-continuity install --agent codex --trust"
CODEX_ASK_TIMEOUT_S = 5.0


def codex_facts(ctx):
    """What the Codex checks look at, read once: ``{"home", "hooks_file", "record", "doc", "data",
    "ours", "error"}`` (``home`` None when $CODEX_HOME is not usable; ``doc`` None when hooks.json is
    unreadable, with ``error`` saying why).  Only ``$CODEX_HOME``: a repository's .codex/ is not ours."""
    def read():
        rec = (ctx.manifest() or {}).get("codex") or None
        out = {"home": None, "hooks_file": None, "record": rec, "doc": None, "data": None, "ours": [],
               "error": None}
        try:
            out["home"] = home = files.codex_home(ctx.env)
        except files.CodexError as e:
            out["error"] = str(e)
            return out
        out["hooks_file"] = path = files.hooks_path(home)
        try:
            out["data"] = safefile.read_bounded(path, SETTINGS_MAX_BYTES)
            out["doc"] = files.parse_hooks(out["data"], path)
        except FileNotFoundError:
            out["doc"] = {}
        except (OSError, ValueError) as e:  # not a regular file, too large, not JSON
            out["error"] = str(e)
            return out
        out["ours"] = files.entries(out["doc"], path)
        return out
    return ctx._once("codex", read)


def _codex_installed(ctx):
    """None when Codex's hooks are not installed (no record, none of ours in hooks.json), else the facts."""
    found = codex_facts(ctx)
    return found if found["record"] or found["ours"] else None


def check_codex_hooks(ctx):
    """Our entries in $CODEX_HOME/hooks.json: one per event, each running the current app copy with the
    current base interpreter, with the timeout install writes."""
    facts = _codex_installed(ctx)
    if facts is None:
        return Result("codex-hooks", "codex" not in ctx.asked,  # red only when `doctor --agent codex` asks
                      "not installed for Codex CLI (`%s` adds its hooks)" % CODEX_FIX, CODEX_FIX)
    path = facts["hooks_file"]
    if facts["doc"] is None:
        fix = CODEX_FIX
        if path and os.path.lexists(path):
            fix = "repair %s by hand (cc-continuity never rewrites a file it cannot parse), then %s" % (path, fix)
        return Result("codex-hooks", False, facts["error"], fix)
    python, app_dir = app.base_interpreter(), app.app_link(paths.home())
    want = files.render(python, app_dir)["hooks"]
    by_event = {}
    for e in facts["ours"]:
        by_event.setdefault(e["event"], []).append(e)
    problems = []
    missing = [event for event in want if event not in by_event]
    if missing:
        problems.append("missing for %s in %s" % (", ".join(missing), path))
    for event, found in by_event.items():
        if event not in want:
            problems.append("%s: an event we do not install" % event)
            continue
        if len(found) > 1:
            problems.append("%s: %d entries of ours (each would run)" % (event, len(found)))
        handler, expected = settings.plain(found[0]["handler"]), want[event][0]["hooks"][0]
        if handler.get("command") != expected["command"]:
            problems.append("%s: runs another Python or app copy than %s with %s" % (event, python, app_dir))
        elif handler.get("timeout") != expected["timeout"]:
            problems.append("%s: timeout %r, not %d" % (event, handler.get("timeout"), expected["timeout"]))
    if not os.path.isfile(os.path.join(app_dir, "cc_continuity", "hosts", "codex", "hooks.py")):
        problems.append("the app copy %s is missing (the hooks do nothing)" % app_dir)
    if problems:
        return Result("codex-hooks", False, "; ".join(problems), CODEX_FIX)
    return Result("codex-hooks", True, "%d events wired in %s, running %s" % (len(want), path, app_dir))


def check_codex_trust(ctx):
    """Codex runs an entry only while config.toml trusts its current hash (``exec`` skips it silently
    otherwise).  The hash as Codex 0.171 computes it; when a codex binary is here, asked of it too (in a
    scratch CODEX_HOME: doctor writes nothing of Codex's), so a Codex that hashes otherwise shows."""
    return ctx._once("codex-trust", lambda: _codex_trust(ctx))  # (codex-firing asks it too: one app-server)


def _codex_trust(ctx):
    facts = _codex_installed(ctx)
    if facts is None:
        return Result("codex-trust", True, "not installed for Codex CLI")
    ours = facts["ours"]
    if not ours:
        return Result("codex-trust", True, "no hook of ours to trust (see codex-hooks)")
    cfg_path = files.config_path(facts["home"])
    try:
        cfg = files.load_config(safefile.read_bounded(cfg_path, SETTINGS_MAX_BYTES), cfg_path)
    except FileNotFoundError:
        cfg = {}
    except (OSError, ValueError) as e:
        return Result("codex-trust", False, "%s (Codex cannot start with it either)" % e,
                      "repair %s by hand, then %s" % (cfg_path, CODEX_TRUST_FIX))
    state = files.trust_state(cfg)
    disabled = [e["event"] for e in ours if state.get(e["key"], {}).get("enabled") is False]
    untrusted = [e["event"] for e in ours if "trusted_hash" not in state.get(e["key"], {})]
    changed = [e["event"] for e in ours if e["event"] not in untrusted
               and state[e["key"]]["trusted_hash"] != e["hash"]]
    problems = []
    if untrusted:
        problems.append("not trusted: %s" % ", ".join(untrusted))
    if changed:
        problems.append("changed since trusted: %s" % ", ".join(changed))
    asked = _ask_codex(ctx, facts)
    if isinstance(asked, tuple):
        version, differ = asked
        if differ:
            problems.append("%s hashes %s otherwise than 0.171" % (version, ", ".join(differ)))
    if problems:
        return Result("codex-trust", False, "%s in %s: Codex skips those hooks (or shows \"Hooks need review\" and "
                      "its \"Trust all and continue\" trusts every hook it lists)" % ("; ".join(problems), cfg_path),
                      CODEX_TRUST_FIX)
    if disabled:
        return Result("codex-trust", False, "trusted, but turned off in Codex: %s" % ", ".join(disabled),
                      "turn them on in Codex's /hooks (or delete `enabled = false` from their [hooks.state] "
                      "tables in %s)" % cfg_path)
    note = "; %s agrees" % asked[0] if isinstance(asked, tuple) else ("; %s" % asked if asked else "")
    return Result("codex-trust", True, "our %d hooks trusted in %s%s" % (len(ours), cfg_path, note))


def _ask_codex(ctx, facts):
    """``(version, [events Codex hashes otherwise])`` from the codex binary, a note when it could not be
    asked, or None when there is none."""
    try:
        binary = appserver.find_codex(ctx.env)
        if binary is None:
            return None
        version, listed = appserver.hooks_list(binary, facts["data"] or b"", CODEX_ASK_TIMEOUT_S)
    except appserver.AppServerError as e:
        return "not confirmed by Codex: %s" % e
    got = {entry["key"]: entry.get("currentHash") for entry in listed}
    cut = len(facts["hooks_file"]) + 1
    return version, [e["event"] for e in facts["ours"] if got.get(e["key"][cut:]) != e["hash"]]


def check_codex_firing(ctx):
    """Our Codex hooks ran since the install: hooks.log has ``codex:`` lines (each call writes one)."""
    facts = _codex_installed(ctx)
    if facts is None:
        return Result("codex-firing", True, "not installed for Codex CLI")
    since = (facts["record"] or {}).get("installed_ts") or 0
    log, calls = hook_calls("codex", since)
    if calls:
        return Result("codex-firing", True, "%d Codex hook call(s) since the install, the last: %s"
                      % (len(calls), calls[-1][:160]))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since)) if since else "the install"
    try:
        cfg = files.load_config(safefile.read_bounded(files.config_path(facts["home"]), SETTINGS_MAX_BYTES)) \
            if facts["home"] else {}
    except (OSError, ValueError):
        cfg = {}
    features = cfg.get("features") if isinstance(cfg.get("features"), dict) else {}
    if features.get("hooks") is False:
        return Result("codex-firing", False, "no Codex hook of ours has run since %s: `hooks = false` under "
                      "[features] in %s turns Codex's hooks off" % (when, files.config_path(facts["home"])),
                      "delete `hooks = false` from [features] in %s" % files.config_path(facts["home"]))
    trust = check_codex_trust(ctx)
    if not trust.ok:
        return Result("codex-firing", False, "no Codex hook of ours has run since %s: they are not trusted "
                      "(see codex-trust)" % when, trust.fix)
    return Result("codex-firing", False, "no Codex hook of ours has run since %s (%s): no Codex session has "
                  "sent a prompt since, or the hooks fail before they log" % (when, log),
                  "send one prompt in `codex` (or `codex exec hi`), then `cc-continuity doctor` again")


# -- Codex CLI's doctor unit (hosts/checkup.py: the report from every host's) ----------------------------

ROW = "codex-cli"  # its one row when it is not set up here
INSTALL_FIX = CODEX_FIX
NEXT = "`cc-continuity run --agent codex \"<task>\"` runs a task through `codex exec`, rotating with no typing"
CHECKS = [check_codex_hooks, check_codex_trust, check_codex_firing]  # placed among the others by checkup.ORDER


def installed(ctx):
    """Is Codex CLI set up here: the record's Codex part, or entries of ours in its hooks.json?"""
    return _codex_installed(ctx) is not None


def hook_file(ctx):
    """Where its hooks would be, as the report names it."""
    return HOOK_FILE


def own_copy(ctx):
    """None: Codex's hooks always run our app copy."""
    return None


def stale_files(now=None):
    """None of Codex's: nothing of ours is left for a Codex process to pick up."""
    return []


def amend(ctx, results):
    """Nothing: no file of Codex's stops an install's fix."""
