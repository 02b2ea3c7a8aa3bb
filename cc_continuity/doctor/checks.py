"""The individual ``doctor`` checks: each looks at one thing and says how to fix it.

Every check is a function ``check(ctx) -> Result``; :data:`CHECKS` lists them in
the order they are shown.  A check never changes anything, except
:func:`check_leftovers` with ``ctx.fix``, and that only ever deletes files of
ours: atomic-write temp files, unused launch environment files and lock files
no live process holds.  Silent failure is what users of similar tools hated most
(field notes §4, item 10), so a red result always carries the exact fix.
"""

import calendar
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from .. import __version__, atomic, config, deps, lock, notify, paths, procs, safefile
from ..tmux import launchenv
from ..hooks import EVENT_OF
from ..install import RECORD_KEYS, app, blocks, codex, manifest, plugin, settings, wrapper
from ..project import find_root
from ..hosts.claude.executable import find_real_claude
from ..hosts.codex import appserver

MIN_PYTHON = (3, 11)
MIN_CLAUDE = (2, 1, 209)
MIN_TMUX = (3, 2)  # libtmux's floor
PROBE_TIMEOUT_S = 5
TEMP_MIN_AGE_S = 300  # a younger temp file may belong to a write in progress
# The probe runs our hook for a made-up event, which the dispatcher must ignore and
# log (logs/hooks.log: one line per call, starting with the event); the log line is
# the proof it really ran, since the bootstrap exits 0 silently even when it cannot import.
PROBE_EVENT = "DoctorProbe"


class Result:
    def __init__(self, name, ok, detail, fix=None):
        self.name = name
        self.ok = bool(ok)
        self.detail = detail
        self.fix = None if ok else fix

    def as_dict(self):
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}

    def __repr__(self):
        return "Result(%r, %r, %r, %r)" % (self.name, self.ok, self.detail, self.fix)


class Context:
    """What the checks look at; everything is read lazily and at most once."""

    def __init__(self, env=None, cwd=None, fix=False, notify_test=False):
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd or os.getcwd()
        self.fix = fix
        self.notify_test = notify_test
        self._cache = {}

    def _once(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def home(self):
        return self.env.get("HOME") or os.path.expanduser("~")

    @property
    def root(self):
        return self._once("root", lambda: find_root(self.cwd))

    @property
    def settings_path(self):
        return os.path.join(paths.claude_config_dir(), "settings.json")

    def settings(self):
        """(parsed settings.json or None, error text or None)."""
        return self._once("settings", self._read_settings)

    def _read_settings(self):
        try:
            data = safefile.read_bounded(self.settings_path, SETTINGS_MAX_BYTES)
        except FileNotFoundError:
            return None, "%s does not exist" % self.settings_path
        except safefile.NotRegular as e:
            return None, str(e)
        except OSError as e:
            return None, "cannot read %s: %s" % (self.settings_path, e.strerror)
        try:
            return settings.parse(settings.decode(data, self.settings_path), self.settings_path), None
        except ValueError as e:
            return None, str(e)

    def manifest(self):
        """The install record (``install.json``), or None when we were never installed.

        An unreadable record counts as installed-but-unknown (``{}``): the other
        checks then fall back to the default locations.
        """
        def read():
            try:
                return manifest.load()
            except (OSError, ValueError):
                return {}
        return self._once("manifest", read)

    def plugin(self):
        """``(id, install path or None)`` of the cc-continuity plugin settings.json enables, or None.

        More than one enabled is reported by :func:`check_plugin`; the others use the first.
        """
        def find():
            doc, _ = self.settings()
            ids = plugin.enabled(doc) if doc else []
            if not ids:
                return None
            return ids[0], plugin.install_path(ids[0], paths.claude_config_dir())
        return self._once("plugin", find)

    def claude_installed(self):
        """Was ``cc-continuity install`` run for Claude Code?  Yes for any record but one of a Codex-only
        install (an unreadable record counts as yes)."""
        rec = self.manifest()
        return rec is not None and ("codex" not in rec or any(k in rec for k in RECORD_KEYS["claude"]))

    def codex(self):
        """What the Codex checks look at, read once: ``{"home", "hooks_file", "record", "doc", "data",
        "ours", "error"}`` (``home`` None when $CODEX_HOME is not usable; ``doc`` None when hooks.json is
        unreadable, with ``error`` saying why).  Only ``$CODEX_HOME``: a repository's .codex/ is not ours."""
        def read():
            rec = (self.manifest() or {}).get("codex") or None
            out = {"home": None, "hooks_file": None, "record": rec, "doc": None, "data": None, "ours": [],
                   "error": None}
            try:
                out["home"] = home = codex.codex_home(self.env)
            except codex.CodexError as e:
                out["error"] = str(e)
                return out
            out["hooks_file"] = path = codex.hooks_path(home)
            try:
                out["data"] = safefile.read_bounded(path, SETTINGS_MAX_BYTES)
                out["doc"] = codex.parse_hooks(out["data"], path)
            except FileNotFoundError:
                out["doc"] = {}
            except (OSError, ValueError) as e:  # not a regular file, too large, not JSON
                out["error"] = str(e)
                return out
            out["ours"] = codex.entries(out["doc"], path)
            return out
        return self._once("codex", read)

    def config(self):
        """(Config or None, error text or None)."""
        def load():
            try:
                return config.load(self.root, self.env), None
            except config.ConfigError as e:
                return None, str(e)
        return self._once("config", load)


def run_checks(ctx, checks=None):
    """Run every check; one that crashes is reported red instead of stopping the rest."""
    out = []
    for check in checks or CHECKS:
        try:
            out.append(check(ctx))
        except Exception as e:
            name = check.__name__.replace("check_", "").replace("_", "-")
            out.append(Result(name, False, "the check itself failed: %s: %s" % (type(e).__name__, e),
                              "report this as a cc-continuity bug"))
    if ctx.settings()[0] is None and os.path.exists(ctx.settings_path):
        for r in out:  # install refuses a settings.json it cannot parse: every such fix starts with the repair
            if not r.ok and r.fix and r.fix.startswith("cc-continuity install") and CODEX_FIX not in r.fix:
                r.fix = _settings_fix(ctx, r.fix)
    return out


# -- small helpers -------------------------------------------------------------

def _version_tuple(text):
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not m:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


def _dotted(v):
    return ".".join(map(str, v))


def _run(argv, env=None, timeout=10, stdin_data=None):
    """(returncode, stdout, stderr); returncode None when it could not run or timed out."""
    try:
        r = subprocess.run(argv, input=stdin_data, capture_output=True, env=env, timeout=timeout,
                           stdin=None if stdin_data is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %ss" % timeout
    except OSError as e:
        return None, "", str(e)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def _first_line(text):
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def _is_executable(path):
    return isinstance(path, str) and os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


# -- tools ---------------------------------------------------------------------

def check_python(ctx):
    v = sys.version_info[:3]
    ok = v >= MIN_PYTHON
    return Result("python", ok, "%s (%s)" % (_dotted(v), sys.executable),
                  "install Python %s or newer and reinstall cc-continuity with it" % _dotted(MIN_PYTHON))


def check_git(ctx):
    git = shutil.which("git", path=ctx.env.get("PATH"))
    if not git:
        return Result("git", False, "git not found on PATH (checkpoints snapshot the work tree with git)",
                      "install git (apt install git / brew install git)")
    rc, out, err = _run([git, "--version"])
    return Result("git", rc == 0, _first_line(out) or _first_line(err), "reinstall git: `%s --version` fails" % git)


def check_tmux(ctx):
    tmux = shutil.which("tmux", path=ctx.env.get("PATH"))
    fix = "install tmux %s or newer (apt install tmux / brew install tmux)" % _dotted(MIN_TMUX)
    if not tmux:
        return Result("tmux", False, "tmux not found: rotation cannot type /clear, you would have to", fix)
    rc, out, err = _run([tmux, "-V"])
    v = _version_tuple(out)
    if rc != 0 or v is None:
        return Result("tmux", False, "`tmux -V` failed: %s" % (_first_line(err) or _first_line(out)), fix)
    return Result("tmux", v >= MIN_TMUX, "%s (%s)" % (out.strip(), tmux), fix)


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


# -- configuration -------------------------------------------------------------

def check_config(ctx):
    cfg, err = ctx.config()
    if err:
        return Result("config", False, err, "correct that value (or run `cc-continuity configure`)")
    detail = "valid (%s)" % ", ".join(
        "%s=%s" % (k, json.dumps(cfg[k])) for k in ("enabled", "warn", "rotate", "hard", "window"))
    if cfg.warnings:
        detail += "; " + "; ".join(cfg.warnings)
    return Result("config", True, detail)


# -- snapshots and mirror pushes -------------------------------------------------

_SNAPSHOT_SAMPLE = "refs/continuity/project-0000000000/cp-001"


def mirror_remotes(root, env=None):
    """Remotes of the repository at ``root`` whose push carries refs/continuity/* (snapshots).

    ``remote.<name>.mirror = true`` (``git clone --mirror``, ``git remote add --mirror=push``)
    pushes every ref; so does a push refspec whose source side covers refs/continuity/
    (``+refs/*:refs/*``, ``refs/continuity/*:...``) unless a negative one (``^refs/continuity/*``)
    takes them out again.  [(name, why)] in config order.
    """
    rc, out, _ = _run(["git", "-C", root, "config", "--get-regexp", r"^remote\..*\.(mirror|push)$"], env=env)
    if rc not in (0,):
        return []
    mirror, pushes = {}, {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key[len("remote."):].rpartition(".")
        if field == "mirror":
            mirror[name] = value.strip().lower() in ("true", "yes", "on", "1")
        else:
            pushes.setdefault(name, []).append(value.strip())
    found = []
    for name in list(dict.fromkeys(list(mirror) + list(pushes))):
        specs = pushes.get(name, [])
        excluded = any(sp.startswith("^") and fnmatch.fnmatchcase(_SNAPSHOT_SAMPLE, sp[1:]) for sp in specs)
        covering = [sp for sp in specs if not sp.startswith("^")
                    and fnmatch.fnmatchcase(_SNAPSHOT_SAMPLE, sp.lstrip("+").split(":", 1)[0])]
        if mirror.get(name):
            found.append((name, "remote.%s.mirror is true" % name))
        elif covering and not excluded:
            found.append((name, "remote.%s.push %s covers refs/continuity/*" % (name, covering[0])))
    return found


def check_mirror(ctx):
    """Snapshots (untracked files included) leave with a mirror push: say so before it happens."""
    root = ctx.root
    if not os.path.isdir(os.path.join(root, ".git")) and not os.path.isfile(os.path.join(root, ".git")):
        return Result("mirror", True, "not a git repository")
    found = mirror_remotes(root, ctx.env)
    if not found:
        return Result("mirror", True, "no remote pushes refs/continuity/* (snapshots stay local)")
    cfg, _ = ctx.config()
    what = "; ".join(why for _, why in found)
    if cfg is not None and cfg["snapshot_untracked"] is False:
        return Result("mirror", True, "%s: snapshots are pushed there, tracked files only "
                                      "(snapshot_untracked is false)" % what)
    names = ", ".join(name for name, _ in found)
    return Result("mirror", False,
                  "%s: every push sends the work-tree snapshots under refs/continuity/, untracked files "
                  "included (local notes, .env files that are not ignored)" % what,
                  "push branches and tags explicitly instead (git config --unset remote.<name>.mirror, or add "
                  "the push refspec ^refs/continuity/*), or keep untracked files out of snapshots with "
                  "\"snapshot_untracked\": false in %s (remotes: %s)" % (paths.config_file(), names))


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


def _handler_problems(event, group, handler, expected):
    problems = []
    python = handler.get("command")
    args = handler.get("args") if isinstance(handler.get("args"), list) else []
    app = settings.app_of_handler(handler)
    if not _is_executable(python):
        problems.append("%s: interpreter %r is missing or not executable" % (event, python))
    if app and not os.path.isfile(os.path.join(app, "cc_continuity", "hooks", "__init__.py")):
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
    installed = ctx.claude_installed()
    fix = "cc-continuity install"
    if doc is None:
        return Result("hooks", False, err, _settings_fix(ctx))
    expected = _expected_hooks()
    if ctx.plugin():
        return _plugin_hooks(ctx, doc, expected)
    missing, problems = [], []
    for event in expected:
        found = _our_handlers(doc, event)
        if not found:
            missing.append(event)
        for group, handler in found:
            problems.extend(_handler_problems(event, group, handler, expected))
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


def _plugin_table(root):
    try:
        with open(os.path.join(root, "hooks", "hooks.json"), encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError, TypeError):
        return None
    return table if isinstance(table, dict) and isinstance(table.get("hooks"), dict) else None


def _plugin_handler(ctx):
    """(event, handler) of the plugin's own hook table, ``${CLAUDE_PLUGIN_ROOT}`` and PATH resolved."""
    _, root = ctx.plugin()
    table = _plugin_table(root) if root else None
    try:
        handler = dict(table["hooks"]["PostToolUse"][0]["hooks"][0])
    except (TypeError, KeyError, IndexError):
        return None, None
    data = plugin.data_dir(ctx.plugin()[0], paths.claude_config_dir())
    fill = lambda text: (text.replace("${CLAUDE_PLUGIN_ROOT}", root).replace("${CLAUDE_PLUGIN_DATA}", data)
                         if isinstance(text, str) else text)
    command = fill(handler.get("command"))
    if isinstance(command, str) and not os.path.isabs(command):
        command = shutil.which(command, path=ctx.env.get("PATH")) or command  # the plugin's python3
    handler.update(command=command, args=[fill(a) for a in handler.get("args") or []])
    return "PostToolUse", handler


def _marketplace_only(ctx):
    """The plugin's own copy, when it is the whole install: a cc-continuity plugin enabled whose hooks run
    that copy (``${CLAUDE_PLUGIN_ROOT}``, the marketplace route) and no ``cc-continuity install`` here.
    Then no status line, wrapper or app copy of ours was ever made, and none is missing; else None."""
    if ctx.manifest() is not None or not ctx.plugin():
        return None
    _, root = ctx.plugin()
    try:
        command = (_plugin_table(root) or {})["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    except (KeyError, IndexError, TypeError):
        return None
    return root if command == settings.PLUGIN_PYTHON else None


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
        from ..deps import build  # (as check_plugin_packages)

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
    if manifest is not None and not manifest.get("rc"):
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


def _frontmatter(text):
    """The ``key: value`` pairs of a SKILL.md front matter, or None when there is none."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    out = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return out
        m = re.match(r"^([A-Za-z][A-Za-z0-9_-]*):\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("\"'")
    return None


def shipped_skills():
    """Skill names the package ships (``data/skills/<name>/SKILL.md``)."""
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "skills")
    try:
        return sorted(n for n in os.listdir(base) if os.path.isfile(os.path.join(base, n, "SKILL.md")))
    except OSError:
        return []


def check_skills(ctx):
    names = shipped_skills()
    if not names:
        return Result("skills", False, "this cc-continuity package ships no skills (a broken build)",
                      "reinstall cc-continuity (pip install --force-reinstall cc-continuity)")
    base = os.path.join(paths.claude_config_dir(), "skills")
    if ctx.plugin():
        pid, root = ctx.plugin()
        missing = [n for n in names if not root or not os.path.isfile(os.path.join(root, "skills", n, "SKILL.md"))]
        if missing:
            return Result("skills", False, "the plugin %s lacks %s" % (pid, ", ".join(missing)),
                          "claude plugin update %s" % pid)
        twice = [n for n in names if os.path.isfile(os.path.join(base, n, "SKILL.md"))]
        if twice:
            return Result("skills", False, "%s are in %s and in the plugin %s (each shows twice in the / menu)" % (
                ", ".join(twice), base, pid), "cc-continuity install (it takes out its own copies while the "
                "plugin is enabled)")
        problem = _command_problem(ctx, skills_command(os.path.join(root, "skills")), os.path.join(root, "bin"))
        if problem:
            return Result("skills", False, problem, "put a Python 3.11+ on PATH as python3, or set "
                          "CC_CONTINUITY_PYTHON in the environment Claude Code starts with")
        return Result("skills", True, "%d skills from the plugin %s (/%s:continuity-...)" % (
            len(names), pid, pid.split("@")[0]))
    problems = []
    for name in names:
        path = os.path.join(base, name, "SKILL.md")
        try:
            with open(path, encoding="utf-8") as f:
                fm = _frontmatter(f.read())
        except FileNotFoundError:
            problems.append("%s missing" % name)
            continue
        except (OSError, UnicodeDecodeError) as e:
            problems.append("%s unreadable (%s)" % (name, e))
            continue
        if fm is None:
            problems.append("%s has no front matter" % name)
        elif not fm.get("description"):
            problems.append("%s has no description" % name)
    if problems:
        return Result("skills", False, "in %s: %s" % (base, "; ".join(problems)), "cc-continuity install")
    command = skills_command(base)
    problem = _command_problem(ctx, command)
    if problem:
        return Result("skills", False, problem, "cc-continuity install (the skills then name the launcher by its "
                      "absolute path)")
    return Result("skills", True, "%d skills in %s, running %s (found without your PATH)" % (len(names), base, command))


# What Claude Code's Bash tool may have at least: the system directories, not ~/.local/bin
# (macOS never has it; Debian adds it only at the next login once it exists).
BARE_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def skills_command(skills_dir):
    """The command our installed skills tell the model to run (from ``continuity-status``)."""
    try:
        with open(os.path.join(skills_dir, "continuity-status", "SKILL.md"), encoding="utf-8") as f:
            m = re.search(r"Run `(\S+) status", f.read())
    except (OSError, UnicodeDecodeError):
        return None
    return m.group(1) if m else None


def _command_problem(ctx, command, plugin_bin=None):
    """Does ``command --version`` run as the Bash tool would run it, with only the system PATH?"""
    if not command:
        return "the skills name no cc-continuity command"
    path = (plugin_bin + ":" if plugin_bin else "") + BARE_PATH
    env = {k: v for k, v in ctx.env.items() if not k.startswith("CLAUDE")}
    env["PATH"] = path
    exe = command if os.path.isabs(command) else shutil.which(command, path=path)
    if not exe:
        return ("the skills and `signal` run `%s`, which is not found on %s: Claude Code's Bash tool has your "
                "PATH, and ~/.local/bin is not always on it" % (command, path))
    rc, out, err = _run([exe, "--version"], env=env, timeout=PROBE_TIMEOUT_S)
    if rc != 0:
        return "`%s --version` failed with only the system PATH (exit %s): %s" % (
            command, rc, _first_line(err) or _first_line(out))
    return None


def _declared_version(init_path):
    with open(init_path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"""^__version__\s*=\s*["']([^"']+)["']""", line)
            if m:
                return m.group(1)
    return None


def package_version():
    """The version pip installed (falls back to the running code's)."""
    # lazy: every verb's start imports this module (cli.build_parser loads all verbs), metadata costs ~15 ms
    from importlib import metadata

    try:
        return metadata.version("cc-continuity")
    except metadata.PackageNotFoundError:
        return __version__


def check_app_copy(ctx):
    """The hooks run the copy under ``$CC_CONTINUITY_HOME/app``; it must be the version pip installed."""
    root = _marketplace_only(ctx)
    if root:
        return Result("app-copy", True, "not used: the plugin's hooks run its own copy (%s)" % root)
    init = os.path.join(app.app_link(paths.home()), "cc_continuity", "__init__.py")
    want = package_version()
    try:
        have = _declared_version(init)
    except OSError:
        return Result("app-copy", False, "%s is missing (hooks run from this copy)" % os.path.dirname(init),
                      "cc-continuity install")
    if have != want:
        return Result("app-copy", False, "the hooks run version %s but cc-continuity %s is installed" % (have, want),
                      "cc-continuity install (refreshes the copy)")
    return Result("app-copy", True, "version %s" % have)


# -- the plugin and its mod ---------------------------------------------------------

MOD_PROBE_TIMEOUT_S = 30
MODS_CAN_LOAD = "no hooks module to load"  # what `claude plugin test` says of a folder without a mod
MODS_OFF = "turned off"


def check_plugin(ctx):
    doc, _ = ctx.settings()
    ids = plugin.enabled(doc) if doc else []
    if not ids:
        left = plugin.leftovers(doc, ctx.manifest(), paths.home())
        if left:  # the plugin was uninstalled or disabled inside Claude Code, which runs no code of ours
            return Result("plugin", False, "no cc-continuity plugin is enabled and no hook of ours runs, but %s "
                          "remain" % " and ".join(left), plugin.LEFTOVER_FIX)
        return Result("plugin", True, "not installed as a plugin: settings.json carries the hooks and the tmux "
                      "rotator hands over (`cc-continuity install --plugin` adds the in-process mod)")
    if len(ids) > 1:
        return Result("plugin", False, "%d cc-continuity plugins are enabled (%s): every hook runs %d times" % (
            len(ids), ", ".join(ids), len(ids)), "keep one: `claude plugin uninstall %s`" % ids[-1])
    pid, root = ctx.plugin()
    if not root or not os.path.isdir(root):
        return Result("plugin", False, "%s is enabled but Claude Code has no copy of it (%s)" % (pid, root),
                      "claude plugin install %s --scope user" % pid)
    have = plugin.installed_version(root)
    if have != __version__:
        return Result("plugin", False, "%s is version %s, this cc-continuity is %s" % (pid, have, __version__),
                      "claude plugin marketplace update %s && claude plugin update %s (or cc-continuity install "
                      "--plugin)" % (pid.split("@")[1], pid))
    return Result("plugin", True, "%s %s enabled (%s)" % (pid, have, root))


def _tool_call_command(root):
    """What the plugin at ``root`` runs on a tool call (its PostToolUse command), or None."""
    try:
        return (_plugin_table(root) or {})["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    except (KeyError, IndexError, TypeError):
        return None


def check_plugin_python(ctx):
    """The Python the plugin's hooks run: chosen once a session by its SessionStart (plugin/hooks/python.sh)."""
    if not ctx.plugin():
        return Result("plugin-python", True, "no plugin")
    pid, root = ctx.plugin()
    command = _tool_call_command(root)
    if command != settings.PLUGIN_PYTHON:
        return Result("plugin-python", True, "the plugin's hooks run %s (written by install --plugin)" % command)
    state, text = plugin.chosen_python(pid, paths.claude_config_dir())
    if state == "off":  # the very line the hook showed the user
        fix = text.split("Fix: ", 1)[-1].rstrip(".") if "Fix: " in text else "install Python 3.11 or newer"
        return Result("plugin-python", False, text.split(" Fix: ", 1)[0], fix)
    if state == "unchosen":
        return Result("plugin-python", True, "no session since the plugin was installed: the first one's "
                      "SessionStart (or, in a session it was installed into, the first prompt) chooses the "
                      "Python its hooks run")
    if state == "gone":
        return Result("plugin-python", True, "the Python the plugin's hooks ran (%s) is gone: the next prompt "
                      "or session chooses again" % text)
    return Result("plugin-python", True, "the plugin's hooks run %s (chosen once, no shell on a tool call)" % text)


def check_plugin_packages(ctx):
    """The optional packages of a plugin from a marketplace: built in its data folder (cc_continuity/deps)."""
    if not ctx.plugin():
        return Result("plugin-packages", True, "no plugin")
    pid, root = ctx.plugin()
    command = _tool_call_command(root)
    if command != settings.PLUGIN_PYTHON:
        return Result("plugin-packages", True, "the plugin runs the app copy, whose lib/ carries them")
    cfg, _ = ctx.config()
    if cfg is not None and not cfg["fetch_packages"]:
        return Result("plugin-packages", True, "not built (fetch_packages: false): side-effect holds read shell "
                      "commands the simpler way, and the watchdog needs `cc-continuity install`")
    chosen, python = plugin.chosen_python(pid, paths.claude_config_dir())
    if chosen != "chosen":
        return Result("plugin-packages", True, "built once the first session has chosen its Python")
    data = plugin.data_dir(pid, paths.claude_config_dir())
    python = os.path.realpath(python)
    from ..deps import build  # (doctor's and --fix's only: the installers and the index)

    try:
        version = build._version(python)
    except (build.BuildError, OSError, subprocess.SubprocessError) as e:
        return Result("plugin-packages", False, "the plugin's Python %s does not answer: %s" % (python, e),
                      "start a new session (it chooses a Python again)")
    status, info = deps.state(data, python, version)
    if status in ("failed", "absent") and ctx.fix:
        print("doctor --fix: building the plugin's optional packages in %s ..." % info["path"], flush=True)
        try:
            build.build(data, python)
        except build.BuildError:
            pass
        status, info = deps.state(data, python, version)
    if status == "built":
        return Result("plugin-packages", True, "built in %s (%s, %.0f MB, %.0f s)" % (
            info["path"], info.get("installer"), (info.get("bytes") or 0) / 1e6, info.get("seconds") or 0))
    if status == "building":
        return Result("plugin-packages", True, "being built now in %s (a session started it)" % info["path"])
    if status == "failed":
        return Result("plugin-packages", False, "could not be built (%s): %s; side-effect holds read shell commands "
                      "the simpler way meanwhile" % (", ".join(deps.PACKAGES), info.get("why")), build.FIX)
    return Result("plugin-packages", True, "not built yet: the next session (or prompt) starts it")


def check_watchdog_unit(ctx):
    """An installed watchdog service runs from paths that are still there."""
    from ..watch import service  # (this check's only: watch/ is not loaded by the other checks)

    try:
        problem = service.unit_problem()
    except OSError as e:
        return Result("watchdog-unit", False, "cannot read the watchdog's service file: %s" % e.strerror,
                      "cc-continuity watchdog install")
    if problem:
        return Result("watchdog-unit", False, problem + ": it cannot start",
                      "cc-continuity watchdog install (it writes the service again for the copy you have)")
    return Result("watchdog-unit", True, "a watchdog service is installed and its paths are there"
                  if service.installed_service() else "no watchdog service installed")


def check_mods(ctx):
    """Can plugin mods load here?  ``claude plugin test`` on a folder without one says (tested on 2.1.328-332)."""
    if not ctx.plugin():
        return Result("mod", True, "no plugin, no mod: the tmux rotator types /clear (or you do)")
    cfg, _ = ctx.config()
    if cfg is not None and not cfg["mod"]:
        return Result("mod", True, '"mod": false in the config: the tmux rotator hands over')
    try:
        claude = find_real_claude(ctx.env)
    except RuntimeError:
        claude = None
    if not claude:
        return Result("mod", False, "cannot ask Claude Code whether mods load: no claude on PATH",
                      "put claude on PATH, then `cc-continuity doctor` again")
    with tempfile.TemporaryDirectory(prefix="cc-continuity-modprobe-") as empty:
        rc, out, err = _run([claude, "plugin", "test", empty], env=ctx.env, timeout=MOD_PROBE_TIMEOUT_S)
    said = _first_line(err) or _first_line(out)
    if MODS_CAN_LOAD in said:
        return Result("mod", True, "mods can load here: the mod hands over in-process (the tmux rotator stands by)")
    if MODS_OFF in said:
        why = said.split(":", 1)[-1].strip()
        return Result("mod", False, "Claude Code will not load the mod: %s; rotations fall back to tmux" % why,
                      "nothing to do if tmux rotation suits you; mods need hooks on (no disableAllHooks, no "
                      "--bare) and the rollout switch served on")
    return Result("mod", False, "`claude plugin test` gave no answer we know: %s" % (said or err or "nothing"),
                  "run `claude plugin test <an empty folder>` yourself; rotations fall back to tmux meanwhile")


# Claude Code's settings files are small; a bigger one is not read (a link to /dev/zero, a dump).
SETTINGS_MAX_BYTES = 16 << 20

MANAGED_SETTINGS = ("/etc/claude-code/managed-settings.json",
                    "/Library/Application Support/ClaudeCode/managed-settings.json")


def _settings_layers(ctx):
    """Every settings file Claude Code reads for this project (user, project, local, managed)."""
    files = [ctx.settings_path]
    if ctx.root:
        files += [os.path.join(ctx.root, ".claude", "settings.json"),
                  os.path.join(ctx.root, ".claude", "settings.local.json")]
    return files + list(MANAGED_SETTINGS)


def skill_shell_commands():
    """``{skill: [inline command]}`` of our skills' ``!`cmd``` injections (PreSkillShellCommand gates them)."""
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "skills")
    out = {}
    for name in shipped_skills():
        with open(os.path.join(base, name, "SKILL.md"), encoding="utf-8") as f:
            found = re.findall(r"!`([^`]+)`", f.read())
        if found:
            out[name] = found
    return out


def check_skill_shell(ctx):
    """A ``PreSkillShellCommand`` hook (2.1.332) refuses a skill's inline shell commands: ours then abort."""
    hooked = []
    for path in _settings_layers(ctx):
        inside = ctx.root if ctx.root and path.startswith(ctx.root + os.sep) else None  # the repository's own
        try:
            doc = json.loads(safefile.read_bounded(path, SETTINGS_MAX_BYTES, inside=inside))
        except (OSError, ValueError):
            continue
        groups = (doc.get("hooks") or {}).get("PreSkillShellCommand") if isinstance(doc, dict) else None
        if isinstance(groups, list) and groups:
            hooked.append(path)
    ours = skill_shell_commands()
    if not hooked:
        return Result("skill-shell", True, "no PreSkillShellCommand hook")
    if not ours:
        return Result("skill-shell", True, "PreSkillShellCommand hooks in %s; our skills run no inline shell "
                      "command, so they cannot be refused" % ", ".join(hooked))
    return Result("skill-shell", False, "PreSkillShellCommand hooks in %s may refuse the inline commands of %s "
                  "(a refused one aborts the skill)" % (", ".join(hooked), ", ".join(sorted(ours))),
                  "let the hook allow %s" % "; ".join(c for cs in ours.values() for c in cs))


# -- Codex CLI --------------------------------------------------------------------

CODEX_FIX = "cc-continuity install --agent codex"
CODEX_TRUST_FIX = "cc-continuity install --agent codex --trust"
CODEX_ASK_TIMEOUT_S = 5.0
_LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z ")


def _codex_installed(ctx):
    """None when Codex's hooks are not installed (no record, none of ours in hooks.json), else the facts."""
    facts = ctx.codex()
    return facts if facts["record"] or facts["ours"] else None


def check_codex_hooks(ctx):
    """Our entries in $CODEX_HOME/hooks.json: one per event, each running the current app copy with the
    current base interpreter, with the timeout install writes."""
    facts = _codex_installed(ctx)
    if facts is None:
        return Result("codex-hooks", True, "not installed for Codex CLI (`%s` adds its hooks)" % CODEX_FIX)
    path = facts["hooks_file"]
    if facts["doc"] is None:
        fix = CODEX_FIX
        if path and os.path.lexists(path):
            fix = "repair %s by hand (cc-continuity never rewrites a file it cannot parse), then %s" % (path, fix)
        return Result("codex-hooks", False, facts["error"], fix)
    python, app_dir = app.base_interpreter(), app.app_link(paths.home())
    want = codex.render(python, app_dir)["hooks"]
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
    cfg_path = codex.config_path(facts["home"])
    try:
        cfg = codex.load_config(safefile.read_bounded(cfg_path, SETTINGS_MAX_BYTES), cfg_path)
    except FileNotFoundError:
        cfg = {}
    except (OSError, ValueError) as e:
        return Result("codex-trust", False, "%s (Codex cannot start with it either)" % e,
                      "repair %s by hand, then %s" % (cfg_path, CODEX_TRUST_FIX))
    state = codex.trust_state(cfg)
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


def _log_time(line):
    m = _LOG_STAMP.match(line)
    if not m:
        return None
    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0)
    except ValueError:
        return None


def check_codex_firing(ctx):
    """Our Codex hooks ran since the install: hooks.log has ``codex:`` lines (each call writes one)."""
    facts = _codex_installed(ctx)
    if facts is None:
        return Result("codex-firing", True, "not installed for Codex CLI")
    since = (facts["record"] or {}).get("installed_ts") or 0
    log = os.path.join(paths.logs_dir(), "hooks.log")
    calls = []
    for path in (log + ".1", log):
        try:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        calls += [line for line in lines if " codex:" in line[:40] and (_log_time(line) or 0) >= since]
    if calls:
        return Result("codex-firing", True, "%d Codex hook call(s) since the install, the last: %s"
                      % (len(calls), calls[-1][:160]))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since)) if since else "the install"
    try:
        cfg = codex.load_config(safefile.read_bounded(codex.config_path(facts["home"]), SETTINGS_MAX_BYTES)) \
            if facts["home"] else {}
    except (OSError, ValueError):
        cfg = {}
    features = cfg.get("features") if isinstance(cfg.get("features"), dict) else {}
    if features.get("hooks") is False:
        return Result("codex-firing", False, "no Codex hook of ours has run since %s: `hooks = false` under "
                      "[features] in %s turns Codex's hooks off" % (when, codex.config_path(facts["home"])),
                      "delete `hooks = false` from [features] in %s" % codex.config_path(facts["home"]))
    trust = check_codex_trust(ctx)
    if not trust.ok:
        return Result("codex-firing", False, "no Codex hook of ours has run since %s: they are not trusted "
                      "(see codex-trust)" % when, trust.fix)
    return Result("codex-firing", False, "no Codex hook of ours has run since %s (%s): no Codex session has "
                  "sent a prompt since, or the hooks fail before they log" % (when, log),
                  "send one prompt in `codex` (or `codex exec hi`), then `cc-continuity doctor` again")


# -- state directory -----------------------------------------------------------

def _walk(top, limit=50000):
    """(path, lstat) for ``top`` and everything under it (no symlink following), at most ``limit``."""
    stack, n = [top], 0
    while stack and n < limit:
        p = stack.pop()
        try:
            st = os.lstat(p)
        except OSError:
            continue
        n += 1
        yield p, st
        if os.path.isdir(p) and not os.path.islink(p):
            try:
                stack.extend(os.path.join(p, c) for c in os.listdir(p))
            except OSError:
                continue


# code, not data: may be readable, never writable by others (venv: install.py's private
# virtualenv of public packages, made under the user's umask)
CODE_DIRS = ("app", "app.d", "bin", "venv")


def check_permissions(ctx):
    """State is private (handoffs quote prompts); code the hooks run is not writable by others."""
    home = paths.home()
    if not os.path.isdir(home):
        return Result("permissions", True, "%s not created yet" % home)
    bad, fixed, failed = [], 0, []
    for p, st in _walk(home):
        if os.path.islink(p):
            continue
        rel = os.path.relpath(p, home)
        code = rel.split(os.sep)[0] in CODE_DIRS
        extra = st.st_mode & (0o022 if code else 0o077)
        if not extra:
            continue
        if ctx.fix:  # only the bits named: others lose write on code, everything on state
            try:
                os.chmod(p, st.st_mode & 0o7777 & ~extra)
                fixed += 1
                continue
            except OSError as e:
                failed.append("%s (%s)" % (rel, e.strerror))
        bad.append("%s (%o)" % (home if p == home else rel, st.st_mode & 0o777))
    fix = "cc-continuity doctor --fix (or: chmod -R go-rwx %s)" % shlex.quote(home)
    if bad:
        more = " and %d more" % (len(bad) - 5) if len(bad) > 5 else ""
        detail = ("open to other users (state must be 0700/0600, code not writable by others): %s%s"
                  % (", ".join(bad[:5]), more))
        if failed:
            return Result("permissions", False, detail + "; could not change: " + ", ".join(failed[:5]),
                          "chmod -R go-rwx %s" % shlex.quote(home))
        return Result("permissions", False, detail, fix)
    if fixed:
        return Result("permissions", True, "%s is private (fixed %d path(s))" % (home, fixed))
    return Result("permissions", True, "%s is private" % home)


def find_leftovers(now=None):
    """(temp files, stale launch env files, stale locks) that are ours and safe to remove."""
    now = time.time() if now is None else now
    temps, locks = [], []
    home = paths.home()
    places = list(_walk(home)) if os.path.isdir(home) else []
    cdir = paths.claude_config_dir()
    try:
        places += [(os.path.join(cdir, n), os.lstat(os.path.join(cdir, n))) for n in os.listdir(cdir)]
    except OSError:
        pass
    for p, st in places:
        name = os.path.basename(p)
        if name.startswith(atomic.TMP_MARK) and now - st.st_mtime > TEMP_MIN_AGE_S and not os.path.isdir(p):
            temps.append(p)
        elif (name == "lock" or name.endswith(".lock")) and p.startswith(home + os.sep) and os.path.isfile(p):
            if lock.is_stale(p):
                locks.append(p)
    return sorted(temps), sorted(launchenv.stale(now=now)), sorted(locks)


def check_leftovers(ctx):
    temps, envs, locks = find_leftovers()
    if not (temps or envs or locks):
        return Result("leftovers", True, "no leftover temp files or stale locks")
    if ctx.fix:
        removed, failed = [], []
        for p in temps + envs:
            try:
                os.unlink(p)
                removed.append(p)
            except FileNotFoundError:
                pass
            except OSError as e:
                failed.append("%s (%s)" % (p, e.strerror))
        for p in locks:
            (removed if lock.remove_if_stale(p) else failed).append(p)
        detail = "removed %d: %s" % (len(removed), ", ".join(removed)) if removed else "nothing removed"
        if failed:
            return Result("leftovers", False, detail + "; could not remove: " + ", ".join(failed),
                          "remove those files by hand")
        return Result("leftovers", True, detail)
    parts = []
    if temps:
        parts.append("%d interrupted-write temp file(s): %s" % (len(temps), ", ".join(temps[:3])))
    if envs:
        parts.append("%d unused launch environment file(s) (may hold secrets)" % len(envs))
    if locks:
        parts.append("%d lock file(s) whose holder is gone (harmless)" % len(locks))
    if not (temps or envs):
        return Result("leftovers", True, "; ".join(parts) + "; `cc-continuity doctor --fix` tidies them")
    return Result("leftovers", False, "; ".join(parts), "cc-continuity doctor --fix")


# -- Claude Code state ---------------------------------------------------------

def claude_global_config(env):
    """Claude Code's global config (``~/.claude.json``; inside ``$CLAUDE_CONFIG_DIR`` when that is set)."""
    base = env.get("CLAUDE_CONFIG_DIR")
    if base:
        base = os.path.abspath(os.path.expanduser(base))
        legacy = os.path.join(base, ".config.json")
        return legacy if os.path.isfile(legacy) else os.path.join(base, ".claude.json")
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude.json")


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


def check_ntfy(ctx):
    cfg, err = ctx.config()
    url = cfg["ntfy_url"] if cfg is not None else None
    if not url:
        if ctx.notify_test:  # asked to send one: nothing was sent, and that is not "ok"
            return Result("ntfy", False, "--notify-test: no ntfy URL is configured, so no test message was sent",
                          "`cc-continuity configure --ntfy https://ntfy.sh/<topic>`, then run this again")
        return Result("ntfy", True, "push notifications not configured (optional)")
    shown = _redact_url(url)
    fix = "check the URL (`cc-continuity configure --ntfy URL`) and that the server is reachable"
    if ctx.notify_test:
        try:
            ok, detail = notify.send_test(url, token=cfg["ntfy_token"])
        except Exception as e:
            return Result("ntfy", False, "test message to %s failed: %s: %s" % (shown, type(e).__name__, e), fix)
        if not ok:
            return Result("ntfy", False, "test message not delivered: %s" % detail, fix)
        return Result("ntfy", True, "test message %s: check your phone" % detail)
    import socket  # lazy: every verb's start imports this module (cli.build_parser loads all verbs): ~5 ms

    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=3):
            pass
    except (OSError, ValueError) as e:
        return Result("ntfy", False, "cannot connect to %s: %s" % (shown, e), fix)
    return Result("ntfy", True, "%s reachable (`cc-continuity doctor --notify-test` sends a message)" % shown)


def _redact_url(url):
    """The URL without credentials or query (a topic URL may embed a token)."""
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host += ":%d" % p.port
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


CHECKS = [
    check_python, check_git, check_tmux, check_claude, check_config,
    check_plugin, check_plugin_python, check_plugin_packages, check_hooks, check_hook_probe, check_shell_reader,
    check_mods, check_statusline, check_wrapper,
    check_skills, check_skill_shell, check_app_copy, check_codex_hooks, check_codex_trust, check_codex_firing,
    check_watchdog_unit, check_permissions, check_leftovers, check_trust, check_context_window, check_system_prompt,
    check_ntfy, check_mirror,
]
