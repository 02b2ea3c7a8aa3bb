"""The checks of Gemini CLI's wiring: our hooks in the user's settings.json (gemini-hooks), this folder's
trust (gemini-trust), what any settings file Gemini reads here does to our hooks and to its compression
(gemini-settings), the window the meter uses (gemini-window), and whether the hooks have run since the
install (gemini-firing).

Gemini merges its settings files: the system's wins over a trusted folder's ``.gemini/settings.json``,
which wins over the user's, for ``hooksConfig.enabled`` and ``model.compressionThreshold``;
``hooksConfig.disabled`` is the union of all.  So a repository can switch our hooks off or make Gemini
compress before we rotate: doctor names the file that does.  It only reads them (comments allowed):
nothing in a repository's ``.gemini/`` or ``.env`` is run, contacted or written by us.

With them, Gemini CLI's doctor unit (the same names in every host's ``doctor.py``; ``hosts/checkup.py``
puts the report together from them).
"""

import os
import shlex
import time

from ... import meter, paths, safefile
from ...doctor.base import SETTINGS_MAX_BYTES, Result, hook_calls
from ...errors import InstallError
from ...install import app, settings
from . import envfile, files
from .install import HOOK_FILE, wanted_threshold
from .install import NAME as NAME, RECORD_KEYS as RECORD_KEYS  # (the unit's: its install's)

GEMINI_FIX = "cc-continuity install --agent gemini"


def _read(path):
    """``(object or None, error or None)`` of one Gemini settings file; an absent one is ``{}``."""
    try:
        data = safefile.read_bounded(path, SETTINGS_MAX_BYTES)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as e:
        return None, str(e)
    try:
        return files.load(data, path)[0], None
    except ValueError as e:
        return None, str(e)


def gemini_facts(ctx):
    """What the Gemini checks look at, read once: the user's folder and settings (``doc`` None when
    unreadable, ``error`` saying why), our handlers in it, and the record's part."""
    def read():
        out = {"home": None, "path": None, "doc": None, "error": None, "ours": [],
               "record": (ctx.manifest() or {}).get("gemini") or None}
        try:
            out["home"] = files.gemini_home(ctx.env)
        except InstallError as e:
            out["error"] = str(e)
            return out
        out["path"] = files.settings_path(out["home"])
        out["doc"], out["error"] = _read(out["path"])
        out["ours"] = files.ours(out["doc"] or {})
        return out
    return ctx._once("gemini", read)


def _installed(ctx):
    facts = gemini_facts(ctx)
    return facts if facts["record"] or facts["ours"] else None


def check_gemini_hooks(ctx):
    """Our hooks in Gemini's user settings.json: one per event, each running the current app copy with the
    current base interpreter, named and timed as install writes them."""
    facts = _installed(ctx)
    if facts is None:
        return Result("gemini-hooks", "gemini" not in ctx.asked,
                      "not installed for Gemini CLI (`%s` adds its hooks)" % GEMINI_FIX, GEMINI_FIX)
    if facts["doc"] is None:
        return Result("gemini-hooks", False, facts["error"],
                      "repair %s by hand (Gemini cannot read it either), then %s" % (facts["path"], GEMINI_FIX))
    python, app_dir = app.base_interpreter(), app.app_link(paths.home())
    want = files.render(python, app_dir)["hooks"]
    by_event = {}
    for event, handler in facts["ours"]:
        by_event.setdefault(event, []).append(settings.plain(handler))
    problems = ["missing for %s in %s" % (", ".join(e for e in want if e not in by_event), facts["path"])] \
        if any(e not in by_event for e in want) else []
    for event, found in by_event.items():
        if event not in want:
            problems.append("%s: an event we do not install" % event)
            continue
        expected = want[event][0]["hooks"][0]
        if len(found) > 1:
            problems.append("%s: %d handlers of ours (each would run)" % (event, len(found)))
        if found[0].get("command") != expected["command"]:
            problems.append("%s: runs another Python or app copy than %s with %s" % (event, python, app_dir))
        elif (found[0].get("timeout"), found[0].get("name")) != (expected["timeout"], expected["name"]):
            problems.append("%s: timeout %r ms and name %r, not %d and %s" % (
                event, found[0].get("timeout"), found[0].get("name"), expected["timeout"], expected["name"]))
    if not os.path.isfile(os.path.join(app_dir, "cc_continuity", "hosts", "gemini", "hooks.py")):
        problems.append("the app copy %s is missing (the hooks do nothing)" % app_dir)
    policy = files.policy_path(facts["home"])
    try:
        current = safefile.read_bounded(policy, SETTINGS_MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        current = None
    if current != files.policy_text(facts["home"]):
        problems.append("%s %s: Gemini asks a person before the handoff's write (and `gemini -p` has no write_file)"
                        % (policy, "is missing" if current is None else "is not the rule install writes"))
    if problems:
        return Result("gemini-hooks", False, "; ".join(problems), GEMINI_FIX)
    return Result("gemini-hooks", True, "%d events wired in %s, running %s; the handoff's write rule in %s"
                  % (len(want), facts["path"], app_dir, policy))


def _trusted(ctx, facts):
    """``(True/False/None, where)`` for this folder: Gemini's answer from trustedFolders.json (None: not
    listed), or True when folder trust is off."""
    doc = facts["doc"] or {}
    security = doc.get("security") if isinstance(doc.get("security"), dict) else {}
    folder_trust = security.get("folderTrust") if isinstance(security.get("folderTrust"), dict) else {}
    if folder_trust.get("enabled") is False:
        return True, "folder trust is off in %s" % facts["path"]
    path = files.trust_path(facts["home"], ctx.env)
    trusted, error = _read(path)
    if trusted is None:
        return False, "%s: %s (Gemini refuses to start with it)" % (path, error)
    return files.folder_trusted(ctx.cwd, trusted, ctx.env), path


def check_gemini_trust(ctx):
    """Gemini runs no hook in a folder it does not trust, ours included; nothing of ours trusts one."""
    facts = _installed(ctx)
    if facts is None or facts["home"] is None:
        return Result("gemini-trust", True, "not installed for Gemini CLI")
    verdict, where = _trusted(ctx, facts)
    if verdict:
        return Result("gemini-trust", True, "%s is trusted (%s)" % (ctx.cwd, where))
    how = "marked DO_NOT_TRUST" if verdict is False else "not trusted yet"
    return Result("gemini-trust", False, "%s is %s in %s: Gemini runs none of our hooks here" % (ctx.cwd, how, where),
                  "start `gemini` in %s and answer \"Do you trust this folder?\", or type `/permissions trust` "
                  "in it (cc-continuity trusts no folder for you)" % shlex.quote(ctx.cwd))


def _scopes(ctx, facts):
    """Gemini's settings files in the order they win (user, this folder's, the system's):
    ``[(path, object, error)]``, an absent or unreadable one's object ``{}``."""
    out = [(facts["path"], facts["doc"] or {}, facts["error"])]
    for path in (files.project_path(ctx.cwd), files.system_path(ctx.env)):
        doc, error = _read(path)
        out.append((path, doc or {}, error))
    return out


def check_gemini_settings(ctx):
    """No settings file Gemini reads here switches our hooks off (``hooksConfig.enabled: false``, our names in
    ``hooksConfig.disabled``), makes it compress before we rotate (``model.compressionThreshold``) or keeps
    the handoff's write from going through without a person (``policyPaths``, ``tools.exclude``, an edit mode)."""
    facts = _installed(ctx)
    if facts is None or facts["home"] is None:
        return Result("gemini-settings", True, "not installed for Gemini CLI")
    names = {files.hook_name(e) for e in files.render("python", "/app")["hooks"]}
    problems, enabled, threshold, where = [], (True, None), files.DEFAULT_THRESHOLD, "Gemini's default"
    for path, doc, error in _scopes(ctx, facts):
        if error:
            problems.append((path, "%s: %s (Gemini cannot read it)" % (path, error)))
            continue
        hc = doc.get("hooksConfig") if isinstance(doc.get("hooksConfig"), dict) else {}
        if "enabled" in hc:
            enabled = (hc["enabled"] is not False, path)
        off = sorted(n for n in hc.get("disabled") or () if n in names) if isinstance(hc.get("disabled"), list) else []
        if off:
            problems.append((path, "%s switches off %s (hooksConfig.disabled)" % (path, ", ".join(off))))
        if files.threshold_of(doc) is not None:
            threshold, where = files.threshold_of(doc), path
        problems += [(path, "%s %s" % (path, text)) for text in _handoff_blocked(doc)]
    if not enabled[0]:
        problems.append((enabled[1], "%s turns every hook off (hooksConfig.enabled: false)" % enabled[1]))
    cfg, _error = ctx.config()
    rotate_at = None
    if cfg is not None:
        window, _source = meter.resolve_window(cfg["window"], None, "gemini", env={})
        rotate_at = int(window * cfg["rotate"] / 100)
        if cfg["rotate_tokens"]:
            rotate_at = min(rotate_at, cfg["rotate_tokens"])
    compress_at = int(threshold * files.GEMINI_LIMIT)
    if rotate_at is not None and compress_at <= rotate_at:
        problems.append((where, "model.compressionThreshold %g (%s) makes Gemini compress at %d tokens, before "
                                "our rotation at %d" % (threshold, where, compress_at, rotate_at)))
    theirs = _foreign_hooks(ctx)
    note = ("; %s adds hooks of its own (%s), which Gemini runs once the folder is trusted"
            % (files.project_path(ctx.cwd), ", ".join(theirs[:5]))) if theirs else ""
    note += _env_note(ctx, facts)
    if not problems:
        return Result("gemini-settings", True, "our hooks on in every settings file read here; Gemini compresses "
                      "at %d tokens (%s), after our rotation%s%s" % (compress_at, where,
                                                                   " at %d" % rotate_at if rotate_at else "", note))
    others = sorted({path for path, _ in problems if path != facts["path"]})
    if others:
        one = len(others) == 1
        fix = ("%s %s not cc-continuity's: change %s yourself (or do not trust this folder in Gemini); "
               "cc-continuity never edits %s" % (", ".join(others), "is" if one else "are", "it" if one else "them",
                                                 "it" if one else "them"))
    else:
        fix = ("edit %s: take our names out of hooksConfig.disabled, drop hooksConfig.enabled: false, and keep "
               "model.compressionThreshold at %g or more" % (facts["path"], wanted_threshold(cfg)))
    return Result("gemini-settings", False, "; ".join(text for _, text in problems) + note, fix)


def _env_note(ctx, facts):
    """The repository's env file Gemini loads here, and that our hooks unset what it gives (envfile.scrub)."""
    base = os.path.dirname(facts["home"])
    path = envfile.loaded_file(ctx.cwd, base)
    if path is None or os.path.dirname(path) in (base, facts["home"]):
        return ""
    try:
        names = sorted(envfile.parse(safefile.read_bounded(path, envfile.MAX_BYTES).decode("utf-8", "replace")))
    except OSError:
        return ""
    return ("; Gemini loads %s into its environment (%s): our hooks unset what it gives them" % (
        path, ", ".join(names[:6]) + (", ..." if len(names) > 6 else ""))) if names else ""


def _handoff_blocked(doc):
    """What in one settings object keeps the model from writing its handoff without a person."""
    found = []
    if isinstance(doc.get("policyPaths"), list) and doc["policyPaths"]:
        found.append("sets policyPaths, so Gemini reads no rule from ~/.gemini/policies, ours included (the "
                     "handoff's write asks a person)")
    tools = doc.get("tools") if isinstance(doc.get("tools"), dict) else {}
    if isinstance(tools.get("exclude"), list) and "write_file" in tools["exclude"]:
        found.append("excludes write_file (tools.exclude): the model cannot write its handoff")
    general = doc.get("general") if isinstance(doc.get("general"), dict) else {}
    if general.get("defaultApprovalMode") in ("auto_edit", "autoEdit", "plan"):
        found.append("starts Gemini in %s mode (general.defaultApprovalMode), which refuses the handoff's write "
                     "outside the workspace" % general["defaultApprovalMode"])
    return found


def _foreign_hooks(ctx):
    """The names (else commands, cut) of the hooks this folder's own settings add."""
    doc, _error = _read(files.project_path(ctx.cwd))
    hooks = (doc or {}).get("hooks")
    found = []
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for h in group.get("hooks") or () if isinstance(group, dict) and isinstance(group.get("hooks"), list) else ():
                if isinstance(h, dict) and not settings.is_our_handler(h, files.mark()):
                    found.append(repr(str(h.get("name") or h.get("command"))[:40]))
    return found


def check_gemini_window(ctx):
    """No Gemini payload carries the window and its core assumes 1,048,576 for every model: ours must say."""
    facts = _installed(ctx)
    if facts is None:
        return Result("gemini-window", True, "not installed for Gemini CLI")
    cfg, error = ctx.config()
    if cfg is None:
        return Result("gemini-window", False, "config unreadable: %s" % error, "fix the config (see the config row)")
    if cfg["window"]:
        return Result("gemini-window", True, "%d tokens (%s)" % (cfg["window"], cfg.source("window")))
    window, source = meter.resolve_window(None, None, "gemini", env={})
    return Result("gemini-window", False, "not set: Gemini's hooks carry no window, so the meter guesses %d tokens; a "
                  "local or proxied model's is likely smaller" % window,
                  "cc-continuity configure --window <your model's window in tokens>")


def check_gemini_firing(ctx):
    """Our Gemini hooks ran since the install: hooks.log has ``gemini:`` lines (each call writes one)."""
    facts = _installed(ctx)
    if facts is None:
        return Result("gemini-firing", True, "not installed for Gemini CLI")
    since = (facts["record"] or {}).get("installed_ts") or 0
    log, calls = hook_calls("gemini", since)
    if calls:
        return Result("gemini-firing", True, "%d Gemini hook call(s) since the install, the last: %s"
                      % (len(calls), calls[-1][:160]))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since)) if since else "the install"
    return Result("gemini-firing", False, "no Gemini hook of ours has run since %s (%s): no Gemini session has "
                  "sent a prompt in a trusted folder since, or the hooks fail before they log" % (when, log),
                  "send one prompt in `gemini` in a trusted folder, then `cc-continuity doctor` again")


# -- Gemini CLI's doctor unit (hosts/checkup.py: the report from every host's) ----------------------------

ROW = "gemini-cli"  # its one row when it is not set up here
INSTALL_FIX = GEMINI_FIX
NEXT = "`gemini` in a trusted folder rotates by itself: its AfterAgent hook clears and continues, no typing"
CHECKS = [check_gemini_hooks, check_gemini_trust, check_gemini_settings, check_gemini_window, check_gemini_firing]


def installed(ctx):
    """Is Gemini CLI set up here: the record's Gemini part, or hooks of ours in its settings.json?"""
    return _installed(ctx) is not None


def hook_file(ctx):
    """Where its hooks would be, as the report names it."""
    return HOOK_FILE


def own_copy(ctx):
    """None: Gemini's hooks always run our app copy."""
    return None


def stale_files(now=None):
    """None of Gemini's: nothing of ours is left for a Gemini process to pick up."""
    return []


def amend(ctx, results):
    """Nothing: no file of Gemini's stops an install's fix."""
