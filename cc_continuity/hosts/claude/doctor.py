"""The checks of Claude Code's wiring: the claude binary, our hooks in settings.json (hooks, hook-probe,
shell-reader), the status line, the claude() shell wrapper that launches it in tmux, the folder trust,
and what Claude Code is told of the model (context-window, system-prompt).  The plugin's rows are
:mod:`.doctor_plugin`'s.  They read what ``cc-continuity install`` wrote; they never write.

With them, Claude Code's doctor unit (the same names in every host's ``doctor.py``; ``hosts/checkup.py``
puts the report together from them): its ``CHECKS``, whether it is set up here (:func:`installed`), its
install's fix and its step in the closing ``Next:``, its leftovers, and the repair a fix needs first.
"""

import json
import os
import re
import shlex
import time
import urllib.parse

from ... import paths, procs
from ...doctor.base import MIN_CLAUDE, PROBE_EVENT, PROBE_TIMEOUT_S, Result, _dotted, _first_line, _is_executable, _run, \
    _version_tuple
from ...install import blocks, plugin, settings, wrapper
from . import doctor_plugin, launchenv
from .doctor_plugin import _marketplace_only, _plugin_handler, _plugin_table
from .executable import claude_global_config, find_real_claude
from .hooks import EVENT_OF
from .install import NAME as NAME  # (the unit's name: its install's)
from .install import RECORD_KEYS

def check_claude(ctx):
    fix = "install or update Claude Code to %s or newer (`claude update`)" % _dotted(MIN_CLAUDE)
    try:
        claude = find_real_claude(ctx.env)
    except RuntimeError as e:
        return Result("claude", False, str(e), fix)
    if not claude:
        return Result("claude", False, "claude not found on PATH", fix)
    rc, out, err = _run([claude, "--version"], timeout=20)
    v = _version_tuple(out)
    if rc != 0 or v is None:
        return Result("claude", False, "`%s --version` failed: %s" % (claude, _first_line(err) or _first_line(out)), fix)
    ctx._cache.setdefault("claude_version", v)
    return Result("claude", v >= MIN_CLAUDE, "%s (%s)" % (_dotted(v), claude), fix)

# -- settings.json -------------------------------------------------------------

def _expected_hooks():
    """{event: matcher or None} from the fragment the installer merges."""
    return {event: groups[0].get("matcher") for event, groups in settings.load_fragment()["hooks"].items()}


def _our_handlers(doc, event):
    """[(group, handler)] of ours registered under ``event``."""
    hooks = doc.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    out = []
    for g in groups if isinstance(groups, list) else []:
        for h in (g.get("hooks") if isinstance(g, dict) and isinstance(g.get("hooks"), list) else []):
            if settings.is_our_handler(h):
                out.append((g, h))
    return out


def _matcher_matches(matcher, value):
    """Claude Code's rule: empty/``*`` = all; ``[A-Za-z0-9_|, -]`` only = exact names; else a regex search."""
    if matcher in (None, "", "*"):
        return True
    if re.fullmatch(r"[a-zA-Z0-9_|, -]+", matcher):
        return value in [p.strip() for p in re.split(r"[|,]", matcher)]
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False


def _runs_the_earlier_entry(handler):
    """Does ``handler`` run the bootstrap an earlier version installed (``cc_continuity.hooks``)?"""
    return any(isinstance(a, str) and settings.carries(a, settings.OLD_HOOK_MARK) for a in handler.get("args") or ())


def _handler_problems(event, group, handler, expected):
    problems = []
    python = handler.get("command")
    args = handler.get("args") if isinstance(handler.get("args"), list) else []
    app = settings.app_of_handler(handler)
    if not _is_executable(python):
        problems.append("%s: interpreter %r is missing or not executable" % (event, python))
    entry = ("cc_continuity", "hooks") if _runs_the_earlier_entry(handler) else ("cc_continuity", "hosts", "claude", "hooks")
    if app and not os.path.isfile(os.path.join(app, *entry, "__init__.py")):
        problems.append("%s: the app copy %s is missing (the hook does nothing)" % (event, app))
    if event not in args and not any(EVENT_OF.get(a) == event for a in args if isinstance(a, str)):
        problems.append("%s: handler is registered for another event (args %s)" % (event, args))
    matcher = expected.get(event)
    if matcher:
        missing = [s for s in matcher.split("|") if not _matcher_matches(group.get("matcher"), s)]
        if missing:
            problems.append("%s: matcher %r skips %s" % (event, group.get("matcher"), ", ".join(missing)))
    if event == "SessionEnd" and not handler.get("timeout"):
        problems.append("SessionEnd: no timeout, so Claude Code cancels it after 1.5 s")
    return problems


def _settings_fix(ctx, then="cc-continuity install"):
    """The fix while settings.json cannot be read: install refuses such a file, so repairing it comes first."""
    if not os.path.exists(ctx.settings_path):
        return then
    return ("repair %s by hand (cc-continuity never rewrites a file it cannot parse), then run %s"
            % (ctx.settings_path, then))


def check_hooks(ctx):
    doc, err = ctx.settings()
    installed = _install_ran(ctx)
    fix = "cc-continuity install"
    if doc is None:
        return Result("hooks", False, err, _settings_fix(ctx))
    expected = _expected_hooks()
    if ctx.plugin():
        return _plugin_hooks(ctx, doc, expected)
    missing, problems, earlier = [], [], []
    for event in expected:
        found = _our_handlers(doc, event)
        if not found:
            missing.append(event)
        for group, handler in found:
            problems.extend(_handler_problems(event, group, handler, expected))
            if _runs_the_earlier_entry(handler) and event not in earlier:
                earlier.append(event)
    if earlier:
        problems.append("%s run%s the hook entry of an earlier version (cc_continuity.hooks, answered for one more "
                        "release): `cc-continuity install` moves %s to cc_continuity.hosts.claude.hooks"
                        % (", ".join(earlier), "" if len(earlier) > 1 else "s", "them" if len(earlier) > 1 else "it"))
    if doc.get("disableAllHooks") is True:
        problems.append('"disableAllHooks": true in %s turns every hook off' % ctx.settings_path)
        fix = 'remove "disableAllHooks" from %s' % ctx.settings_path
    if missing:
        if len(missing) == len(expected):
            if installed:
                detail = ("all our hooks are gone from %s although cc-continuity is installed: Claude Code is known "
                          "to rewrite settings.json from a stale copy and drop \"hooks\"" % ctx.settings_path)
            else:
                detail = "cc-continuity is not installed (no hooks in %s)" % ctx.settings_path
        else:
            detail = "missing for %s in %s" % (", ".join(missing), ctx.settings_path)
            if installed:
                detail += " (Claude Code may have rewritten the file from a stale copy)"
        problems.insert(0, detail)
        fix = "cc-continuity install"
    if problems:
        return Result("hooks", False, "; ".join(problems), fix)
    return Result("hooks", True, "%d events wired in %s" % (len(expected), ctx.settings_path))


def _plugin_hooks(ctx, doc, expected):
    """The plugin carries the hooks: settings.json must not carry them too."""
    pid, root = ctx.plugin()
    doubled = [event for event in expected if _our_handlers(doc, event)]
    if doubled:
        return Result("hooks", False, "double wiring: the plugin %s and %s both run our hooks, so %s run twice "
                      "(Claude Code does not deduplicate them)" % (pid, ctx.settings_path, ", ".join(doubled)),
                      "cc-continuity install (with the plugin enabled it takes its hooks out of settings.json), "
                      "or `claude plugin uninstall %s` to keep the settings install" % pid)
    table = _plugin_table(root)
    if table is None:
        return Result("hooks", False, "the plugin %s is enabled but its hooks/hooks.json is missing or unreadable "
                      "under %s" % (pid, root), "claude plugin update %s (or cc-continuity install --plugin)" % pid)
    missing = [event for event in expected if event not in table.get("hooks", {})]
    if missing:
        return Result("hooks", False, "the plugin %s wires no hook for %s" % (pid, ", ".join(missing)),
                      "claude plugin update %s" % pid)
    if doc.get("disableAllHooks") is True:
        return Result("hooks", False, '"disableAllHooks": true in %s turns every hook off' % ctx.settings_path,
                      'remove "disableAllHooks" from %s' % ctx.settings_path)
    return Result("hooks", True, "%d events wired by the plugin %s (none in settings.json)" % (len(expected), pid))



def _hook_handler(ctx):
    """(the event, our installed handler of it) that a probe runs: the plugin's, else settings.json's."""
    doc, _ = ctx.settings()
    handler, on = None, None
    if ctx.plugin():
        on, handler = _plugin_handler(ctx)
    for event in () if handler else ("PostToolUse", "PreToolUse", "UserPromptSubmit", "Stop", "SessionStart",
                                     "PreCompact", "SessionEnd"):
        found = _our_handlers(doc, event) if doc else []
        if found:
            handler, on = found[0][1], event
            break
    return on, handler


def check_shell_reader(ctx):
    """Which shell reading the hooks' side-effect holds and claims use: tree-sitter's, or the simpler one."""
    on, handler = _hook_handler(ctx)
    python = (handler or {}).get("command")
    boot = next((a for a in (handler or {}).get("args") or [] if "sys.path[0] = " in a), None)
    if handler is None or boot is None or not python or not os.path.lexists(python):
        return Result("shell-reader", True, "no hook of ours to ask yet")
    m = re.search(r"sys\.path\[0\] = '([^']*)'", boot)
    root = m.group(1) if m else None
    if not root:
        return Result("shell-reader", True, "the installed hook names no package folder to ask")
    code = ("import sys; sys.path[0:0] = [%r]; sys.path.append(%r)\nfrom cc_continuity.holds import shell\n"
            "print('tree-sitter' if shell.parser() is not None else 'tokenizer: %%s' %% shell.PROBLEM)"
            % (root, root + "/lib"))
    env = {k: v for k, v in ctx.env.items() if not k.startswith("CLAUDE")}
    if ctx.plugin():
        env["CLAUDE_PLUGIN_DATA"] = plugin.data_dir(ctx.plugin()[0], paths.claude_config_dir())
    rc, out, err = _run([python, "-S", "-c", code], env=env, timeout=PROBE_TIMEOUT_S)
    said = (out or "").strip()
    if rc == 0 and said == "tree-sitter":
        return Result("shell-reader", True, "side-effect holds and the handoff's claims read shell with tree-sitter")
    fix = "cc-continuity install (it copies tree-sitter into the app copy's lib/)"
    if ctx.plugin() and (handler.get("command") or "").endswith("/python"):
        from ...deps import build  # (as check_plugin_packages)

        fix = build.FIX
    return Result("shell-reader", False, "side-effect holds read shell with the simpler reader (nested commands, "
                  "wrappers with options and here-documents may be missed): %s" % (
                      said.split(": ", 1)[-1] if said else _first_line(err) or "the hook's Python did not answer"), fix)


def check_hook_probe(ctx):
    """Run our installed hook command for real, on an event it must ignore."""
    doc, _ = ctx.settings()
    on, handler = _hook_handler(ctx)
    if handler is None:
        return Result("hook-probe", False, "no hook of ours to run", _settings_fix(ctx) if doc is None
                      else "cc-continuity install")
    if ctx.plugin() and not os.path.lexists(handler.get("command") or ""):  # ${CLAUDE_PLUGIN_DATA}/python
        return Result("hook-probe", True, "nothing to probe yet: the plugin's first session chooses the Python its "
                      "hooks run (start one, then `cc-continuity doctor` again)")
    token = "%s-%s" % (PROBE_EVENT, os.urandom(4).hex())
    args = [token if a == on else a for a in handler.get("args") or []]
    argv = [handler.get("command")] + args
    env = {k: v for k, v in ctx.env.items() if not k.startswith("CLAUDE")}
    log = os.path.join(paths.logs_dir(), "hooks.log")
    started = time.monotonic()
    rc, out, err = _run(argv, env=env, timeout=PROBE_TIMEOUT_S, stdin_data=b"{}")
    took = time.monotonic() - started
    shown = shlex.join(a if a != token else PROBE_EVENT for a in argv)
    fix = "cc-continuity install (then `cc-continuity doctor` again); see %s" % log
    if rc is None:
        return Result("hook-probe", False, "`%s` could not run: %s" % (shown, err), fix)
    if rc != 0 or out.strip():
        detail = "`%s` exited %d%s%s" % (shown, rc, ", printed %r" % out.strip()[:80] if out.strip() else "",
                                         ", stderr: %s" % _first_line(err) if err.strip() else "")
        return Result("hook-probe", False, detail, fix)
    if not _logged(log, token):
        return Result("hook-probe", False, "`%s` exited 0 but never reached the dispatcher (nothing in %s): the "
                      "hooks are silently doing nothing" % (shown, log), fix)
    return Result("hook-probe", True, "the hook ran and ignored a probe event cleanly in %.0f ms" % (took * 1000))


def _logged(log, token):
    """Did a hook call for ``token`` leave its line in the log (or the rotated one)?"""
    for path in (log, log + ".1"):
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 65536))
                if token.encode() in f.read():
                    return True
        except OSError:
            continue
    return False


def check_statusline(ctx):
    doc, err = ctx.settings()
    if doc is None:
        return Result("statusline", False, err, _settings_fix(ctx))
    value = doc.get("statusLine")
    if not settings.is_our_statusline(value) and _marketplace_only(ctx):
        return Result("statusline", True, "not installed: a plugin cannot ship the status line (the rotation does "
                      "not need it; `cc-continuity install` adds it and chains yours)")
    if not settings.is_our_statusline(value):
        theirs = value.get("command") if isinstance(value, dict) else None
        detail = "the status line is %s, not ours" % (repr(theirs) if theirs else "not set")
        if ctx.manifest() is not None:
            detail += " (Claude Code or another tool rewrote it)"
        return Result("statusline", False, detail, "cc-continuity install (it keeps and chains the other status line)")
    try:
        words = shlex.split(value["command"])
    except ValueError as e:
        return Result("statusline", False, "cannot parse its command: %s" % e, "cc-continuity install")
    script = next((w for w in words if settings.STATUS_MARK in w), None)
    problems = []
    if not words or not _is_executable(words[0]):
        problems.append("interpreter %r is missing" % (words[0] if words else None))
    if not script or not os.path.isfile(script):
        problems.append("%s does not exist" % script)
    if problems:
        return Result("statusline", False, "; ".join(problems), "cc-continuity install")
    chain = settings.embedded_chain(value) or (ctx.manifest() or {}).get("statusline_chain")
    if isinstance(chain, dict) and chain.get("command"):
        return Result("statusline", True, "ours, chaining %r" % chain["command"])
    return Result("statusline", True, "ours (no earlier status line to chain)")


# -- shell wrapper, skills, app copy -------------------------------------------

def launcher_path(manifest=None):
    """Where the installer put the ``cc-continuity`` launcher the wrapper calls."""
    value = (manifest or {}).get("launcher")
    return value if isinstance(value, str) and value else os.path.join(paths.home(), "bin", "cc-continuity")


def _wrapper_target(ctx):
    """(shell, rc file) the installer used, falling back to what it would use now."""
    current = wrapper.detect_shell(ctx.env)
    entries = [e for e in (ctx.manifest() or {}).get("rc") or []
               if isinstance(e, dict) and isinstance(e.get("path"), str) and e.get("shell") in wrapper.SHELLS]
    for e in sorted(entries, key=lambda e: e["shell"] != current):
        return e["shell"], e["path"]
    return current, wrapper.rc_path(current, ctx.home, ctx.env)


_ALIAS = {
    "fish": re.compile(r"^\s*(alias\s+claude[\s=]|function\s+claude\b)"),
    "posix": re.compile(r"^\s*alias\s+(-g\s+)?claude="),
}


def check_wrapper(ctx):
    manifest = ctx.manifest()
    if manifest is not None and "rc" in manifest and not manifest["rc"]:  # (a Codex-only record has no "rc")
        return Result("wrapper", True, "not installed (--no-wrapper): start claude inside tmux yourself for "
                                       "zero-touch rotation")
    if _marketplace_only(ctx):
        return Result("wrapper", True, "not installed: the plugin's mod hands over in-process; where mods cannot "
                      "load, start claude inside tmux (or `cc-continuity install` adds the wrapper)")
    shell, rc = _wrapper_target(ctx)
    launcher = launcher_path(manifest)
    fix = "cc-continuity install"
    try:
        with open(rc, "rb") as f:
            text = blocks.decode(f.read())
    except FileNotFoundError:
        return Result("wrapper", False, "%s does not exist, so `claude` does not start in tmux" % rc, fix)
    except OSError as e:
        return Result("wrapper", False, "cannot read %s: %s" % (rc, e.strerror), fix)
    try:
        block = blocks.find(text, wrapper.BLOCK_NAME, wrapper.BLOCK_STYLE, rc)
    except blocks.BlockError as e:
        return Result("wrapper", False, str(e), "remove the broken cc-continuity lines from %s, then %s" % (rc, fix))
    if block is None:
        return Result("wrapper", False, "no claude() wrapper block in %s" % rc, fix)
    if wrapper.render(shell, launcher).rstrip("\n") not in text[block.start:block.end]:
        return Result("wrapper", False, "the wrapper block in %s is from another version or was edited" % rc, fix)
    outside = text[:block.start] + text[block.end:]
    pattern = _ALIAS["fish" if shell == "fish" else "posix"]
    clash = next((line.strip() for line in outside.splitlines() if pattern.match(line)), None)
    if clash:
        return Result("wrapper", False, "%r in %s hides the claude() wrapper" % (clash, rc),
                      "delete that line (the launcher finds ~/.claude/local/claude by itself)")
    if not _is_executable(launcher):
        return Result("wrapper", False, "the launcher %s is missing, so claude runs without tmux" % launcher, fix)
    if ctx.env.get(wrapper.ACTIVE_ENV) != "1":
        how = "exec fish" if shell == "fish" else "source %s" % shlex.quote(rc)
        if _started_before(os.getppid(), rc):  # right after install: the promised "new shells" part
            return Result("wrapper", True, "block in %s, read by shells started from now on (here: `%s`)"
                          % (rc, how))
        return Result("wrapper", False, "block present in %s, but this shell has not read it" % rc,
                      "open a new terminal, or run `%s`" % how)
    return Result("wrapper", True, "%s wrapper in %s is active" % (shell, rc))


def _started_before(pid, path):
    """Did process ``pid`` start before ``path`` was last written?"""
    started = procs.start_time(pid)
    try:
        return started is not None and started < os.stat(path).st_mtime
    except OSError:
        return False

# -- Claude Code state ---------------------------------------------------------

def check_trust(ctx):
    """Hooks and the status line stay off until the folder-trust dialog is accepted."""
    path = claude_global_config(ctx.env)
    root = ctx.root
    fix = "run `claude` in %s once and accept the trust dialog (hooks do not run before that)" % shlex.quote(root)
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        return Result("trust", False, "%s does not exist: Claude Code has not been set up here" % path, fix)
    except (OSError, ValueError) as e:
        return Result("trust", False, "cannot read %s: %s" % (path, e), fix)
    projects = doc.get("projects") if isinstance(doc, dict) else None
    projects = projects if isinstance(projects, dict) else {}
    # Claude Code accepts trust given to the folder or to any folder above it.
    d = os.path.realpath(ctx.cwd)
    while True:
        entry = projects.get(d)
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return Result("trust", True, "%s is trusted%s" % (d, "" if d == os.path.realpath(ctx.cwd) else " (covers %s)" % ctx.cwd))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return Result("trust", False, "the folder-trust dialog was not accepted for %s" % os.path.realpath(ctx.cwd), fix)


def _anthropic_host(url):
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    return host == "anthropic.com" or host.endswith(".anthropic.com")


def claude_env(ctx, name):
    """``(value, where)`` of a variable Claude Code sees: the process environment first, then the
    ``env`` block of settings.json (Claude Code applies it to itself); ``(None, None)`` when unset."""
    doc, _ = ctx.settings()
    settings_env = doc.get("env") if isinstance(doc, dict) and isinstance(doc.get("env"), dict) else {}
    if ctx.env.get(name):
        return ctx.env[name], "environment"
    if settings_env.get(name) not in (None, ""):
        return str(settings_env[name]), "settings.json env"
    return None, None


def claude_version(ctx):
    """The version tuple of the claude the wrapper would run, or None (not found, no answer)."""
    def ask():
        try:
            claude = find_real_claude(ctx.env)
        except RuntimeError:
            return None
        if not claude:
            return None
        rc, out, _ = _run([claude, "--version"], timeout=20)
        return _version_tuple(out) if rc == 0 else None
    return ctx._once("claude_version", ask)


def check_context_window(ctx):
    """A non-Anthropic server needs CLAUDE_CODE_MAX_CONTEXT_TOKENS, or Claude Code assumes a 1M window;
    and that window must be the one cc-continuity measures against."""
    base, _ = claude_env(ctx, "ANTHROPIC_BASE_URL")
    value, where = claude_env(ctx, "CLAUDE_CODE_MAX_CONTEXT_TOKENS")
    cfg, _ = ctx.config()
    window = cfg["window"] if cfg is not None and cfg["window"] else None
    fix = "export CLAUDE_CODE_MAX_CONTEXT_TOKENS=%s (or put it in the \"env\" block of %s)" % (
        window or "<your model's context window in tokens>", ctx.settings_path)
    local = bool(base) and not _anthropic_host(base)
    if value is None:
        if not local:
            return Result("context-window", True, "Anthropic API: Claude Code knows the model's window")
        return Result("context-window", False,
                      "ANTHROPIC_BASE_URL=%s is not Anthropic and CLAUDE_CODE_MAX_CONTEXT_TOKENS is unset: Claude Code "
                      "assumes a 1,000,000-token window, so compaction and percentages are wrong" % base, fix)
    if not value.strip().isdigit() or int(value) <= 0:
        return Result("context-window", False, "CLAUDE_CODE_MAX_CONTEXT_TOKENS=%r (%s) is not a positive integer"
                      % (value, where), fix)
    if window and int(value) != int(window):
        return Result("context-window", False,
                      "CLAUDE_CODE_MAX_CONTEXT_TOKENS=%s (%s) but cc-continuity's window is %s: Claude Code compacts "
                      "by one window and cc-continuity rotates by the other" % (value, where, window),
                      "make them one number: `cc-continuity configure --window %s`, or set "
                      "CLAUDE_CODE_MAX_CONTEXT_TOKENS=%s" % (value.strip(), window))
    return Result("context-window", True, "CLAUDE_CODE_MAX_CONTEXT_TOKENS=%s (%s)%s%s" % (
        value, where, " for %s" % base if local else "", ", the window cc-continuity uses" if window else ""))


SIMPLE_PROMPT_SINCE = (2, 1, 330)   # an unrecognized model id gets the short system prompt from here on
_MODEL_ALIASES = ("default", "best", "opus", "sonnet", "haiku", "opusplan", "sonnet[1m]", "opus[1m]")


def _claude_model_id(model):
    """Does Claude Code know ``model`` (a Claude id or one of its aliases)?  Unknown ids get the short prompt."""
    m = model.strip().lower()
    return m.startswith("claude-") or m in _MODEL_ALIASES or m.startswith(("anthropic/claude-", "us.anthropic.claude"))


def check_system_prompt(ctx):
    """Since 2.1.330 a model id Claude Code does not know gets the short system prompt unless
    CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=0: a local model (vLLM) should make that choice explicitly."""
    base, _ = claude_env(ctx, "ANTHROPIC_BASE_URL")
    if not base or _anthropic_host(base):
        return Result("system-prompt", True, "Anthropic API: Claude Code's full system prompt")
    chosen, where = claude_env(ctx, "CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT")
    if chosen is not None:
        return Result("system-prompt", True, "CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=%s (%s): the %s system prompt" % (
            chosen, where, "full" if chosen.strip().lower() in ("0", "false", "no", "off") else "short"))
    model, mwhere = claude_env(ctx, "ANTHROPIC_MODEL")
    doc, _ = ctx.settings()
    if model is None and isinstance(doc, dict) and isinstance(doc.get("model"), str) and doc["model"].strip():
        model, mwhere = doc["model"], "settings.json model"
    if model is None or _claude_model_id(model):
        return Result("system-prompt", True, "model %s: Claude Code's full system prompt" % (
            "%s (%s)" % (model, mwhere) if model else "not set (Claude Code's default)"))
    version = claude_version(ctx)
    if version is not None and version < SIMPLE_PROMPT_SINCE:
        return Result("system-prompt", True, "claude %s gives every model the full system prompt (the short one "
                      "comes with %s)" % (_dotted(version), _dotted(SIMPLE_PROMPT_SINCE)))
    return Result("system-prompt", False,
                  "model %r (%s) is not a model id Claude Code knows: since %s it gets the short system prompt "
                  "unless CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=0"
                  % (model, mwhere, _dotted(SIMPLE_PROMPT_SINCE)),
                  "choose: export CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=0 for the full prompt (=1 keeps the short one), "
                  "or put it in the \"env\" block of %s" % ctx.settings_path)


# -- Claude Code's doctor unit (hosts/checkup.py: the report from every host's) -----------------------

ROW = "claude-code"  # its one row when it is not set up here
INSTALL_FIX = "cc-continuity install"
NEXT = "`cc-continuity rehearse` runs one full rotation in a scratch project to prove the chain end to end"
CHECKS = [  # in the order checkup.ORDER places among the others'
    check_claude, doctor_plugin.check_plugin, doctor_plugin.check_plugin_python,
    doctor_plugin.check_plugin_packages, check_hooks, check_hook_probe, check_shell_reader, doctor_plugin.check_mods,
    check_statusline, check_wrapper, doctor_plugin.check_skills, doctor_plugin.check_skill_shell, check_trust,
    check_context_window, check_system_prompt,
]


def installed(ctx):
    """Is anything of ours wired into Claude Code: the record's Claude part (an unreadable record counts),
    an enabled plugin of ours, or our hooks or status line in settings.json (a record since lost)?"""
    rec = ctx.manifest()
    if rec == {} or (rec and any(k in rec for k in RECORD_KEYS)) or ctx.plugin():
        return True
    doc, _ = ctx.settings()
    if doc is None and os.path.exists(ctx.settings_path):
        return True  # a settings.json it cannot read may hold our hooks (as uninstall judges it)
    return bool(doc) and (settings.has_ours(doc, settings.CLAUDE_MARKS)
                          or settings.is_our_statusline(doc.get("statusLine")))


def _install_ran(ctx):
    """Was ``cc-continuity install`` run for Claude Code?  Yes for any record but one of another agent's
    install only (no key of Claude Code's, one of another host's); an unreadable record counts as yes."""
    rec = ctx.manifest()
    if rec is None:
        return False
    others = {k for unit in ctx.hosts.values() if unit.RECORD_KEYS != RECORD_KEYS for k in unit.RECORD_KEYS}
    return any(k in rec for k in RECORD_KEYS) or not any(k in rec for k in others)


def hook_file(ctx):
    """Where its hooks would be, as the report names it."""
    return ctx.settings_path


def own_copy(ctx):
    """The plugin's own copy when it is the whole install (then no app copy of ours is used), else None."""
    return _marketplace_only(ctx)


def stale_files(now=None):
    """Launch environment files no pane picked up (they may hold secrets)."""
    return launchenv.stale(now=now)


def amend(ctx, results):
    """install refuses a settings.json it cannot parse: every fix of these rows (the system's and Claude
    Code's) that runs it starts with the repair."""
    if ctx.settings()[0] is None and os.path.exists(ctx.settings_path):
        for r in results:
            if not r.ok and r.fix and r.fix.startswith("cc-continuity install"):
                r.fix = _settings_fix(ctx, r.fix)
