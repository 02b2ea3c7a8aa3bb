"""``cc-continuity install`` / ``uninstall``: into a user's Claude Code or Codex CLI setup and out again.

Install first *plans* every file change while only reading, so a file it
cannot use (unparseable settings.json, unbalanced block markers) stops it
before anything is written, and ``--dry-run`` can show each change as a
diff.  Then it applies them in an order that never leaves a hook pointing at
a missing file: config, app copy, launcher, settings.json, CLAUDE.md, shell
rc, skills, and last the record (``install.json``) uninstall works from.

``--agent codex`` merges the same hooks, as Codex takes them, into
``$CODEX_HOME/hooks.json`` (:mod:`.codex`), beside the same app copy and launcher;
``--trust`` records Codex's trust for those entries only, in its config.toml.

Uninstall runs the other way round and removes only what is ours: hook
groups by command path, blocks by marker, skills and links by content,
Codex's trust tables by the key of an entry of ours.  It
works without the record too (then the replaced status line cannot be
brought back).  Backups of every user file we rewrite go to
``$CC_CONTINUITY_HOME/backups/`` (0600; the newest few kept), not beside the
file: a dotfiles repo should not collect copies that may hold tokens.
"""

import difflib
import os
import shlex
import shutil
import time

from .. import __version__, atomic, config, paths
from ..errors import InstallError
from ..share.fleet import left_on_remotes
from ..lock import Lock
from ..hosts.claude.executable import find_real_claude
from ..hosts.codex import appserver
from . import app, blocks, bootstrap, codex, manifest, plugin, settings, skills, tools, wrapper

CLAUDE_MD_BLOCK = "claude-md"
WRAPPER_BLOCK = "wrapper"
CLAUDE_MD_TEXT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "claude_md_block.md")
BACKUPS_KEPT = 10
USER_DIR_MODE = 0o700
AGENTS = ("claude", "codex")
AGENT_NAMES = {"claude": "Claude Code", "codex": "Codex CLI"}


class Options:
    """What ``cc-continuity install`` was asked to do (mirrors the CLI flags)."""

    def __init__(self, window=None, thresholds=None, ntfy=None, unattended=False, shell="auto",
                 no_wrapper=False, dry_run=False, plugin=False, agent="claude", trust=False):
        self.window, self.thresholds, self.ntfy, self.unattended = window, thresholds, ntfy, unattended
        self.shell, self.no_wrapper, self.dry_run, self.plugin = shell, no_wrapper, dry_run, plugin
        self.agent, self.trust = agent, trust


# -- small file helpers --------------------------------------------------------

def show(path):
    """``path`` with the home directory written as ``~`` (for messages)."""
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def read(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InstallError("%s is a directory, expected a file" % path) from None


def makedirs(path, created):
    """Create ``path`` and missing parents (0700), appending each one made to ``created``."""
    missing = []
    d = path
    while d and not os.path.isdir(d):
        missing.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for d in reversed(missing):
        os.mkdir(d, USER_DIR_MODE)
        created.append(d)


def backup(path, data):
    """Keep ``data`` (the file's bytes before we rewrite it) under ``backups/``; return the copy's path."""
    bdir = paths.ensure_dir(os.path.join(paths.home(), "backups"))
    base = os.path.basename(path).lstrip(".") or "file"
    dest = atomic.aside_name(bdir, base + ".")
    atomic.write_bytes(dest, data, mode=paths.FILE_MODE)
    ours = sorted((f for f in os.listdir(bdir) if f.startswith(base + ".") and f[len(base) + 1:][:1].isdigit()),
                  key=lambda f: os.stat(os.path.join(bdir, f)).st_mtime_ns)
    atomic.keep_newest(bdir, ours, BACKUPS_KEPT)
    return dest


class FileChange:
    """One file's bytes before and after (None: absent); shown as a diff or applied."""

    def __init__(self, path, old, new, mode=None, keep_backup=False):
        self.path, self.old, self.new, self.mode, self.keep_backup = path, old, new, mode, keep_backup
        self.backup_path = None

    @property
    def changed(self):
        return self.old != self.new

    def diff(self):
        def lines(data):
            text = blocks.decode(data or b"")
            out = text.splitlines(keepends=True)
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of file\n"
            return out

        a = "/dev/null" if self.old is None else show(self.path) + " (now)"
        b = "/dev/null" if self.new is None else show(self.path) + " (after)"
        return "".join(difflib.unified_diff(lines(self.old), lines(self.new), a, b))

    def apply(self, created_dirs):
        if not self.changed:
            return
        if self.keep_backup and self.old is not None:
            self.backup_path = backup(self.path, self.old)
        if self.new is None:
            try:
                os.unlink(os.path.realpath(self.path))
            except FileNotFoundError:
                pass
            return
        makedirs(os.path.dirname(os.path.realpath(self.path)), created_dirs)
        atomic.write_bytes(self.path, self.new, mode=self.mode)


def block_change(path, name, style, body=None, keep_backup=True):
    """The change that adds (``body`` given) or removes our block in ``path``."""
    old = read(path)
    text = blocks.decode(old or b"")
    if body is None:
        new_text = blocks.remove(text, name, style, where=path)
    else:
        new_text = blocks.add(text, name, __version__, body, style, where=path)
    new = old if new_text == text else blocks.encode(new_text)
    change = FileChange(path, old, new, keep_backup=keep_backup)
    change.had_block = blocks.find(text, name, style, where=path) is not None
    return change


def claude_md_body(command=skills.COMMAND):
    with open(CLAUDE_MD_TEXT, encoding="utf-8") as f:
        return skills.render(f.read(), command)


# -- install -------------------------------------------------------------------

def config_changes(opts):
    changes = {}
    if opts.window is not None:
        changes["window"] = opts.window
    if opts.thresholds is not None:
        changes["warn"], changes["rotate"], changes["hard"] = opts.thresholds
    if opts.ntfy is not None:
        changes["ntfy_url"] = opts.ntfy
    if opts.unattended:
        changes["unattended"] = True
    return changes


def describe_config(changes):
    """For messages: values as set, except the ntfy URL, which may carry a token."""
    shown = []
    for key, value in changes.items():
        if key == "ntfy_url":
            shown.append("ntfy_url=(configured)")
        else:
            shown.append("%s=%s" % (key, str(value).lower() if isinstance(value, bool) else value))
    return ", ".join(shown)


def _load_manifest(out):
    try:
        return manifest.load()
    except manifest.ManifestError as e:
        out("record: %s (ignored)" % e)
        return None


INSTALL_LOCK_TIMEOUT_S = 600.0


class _InstallLock:
    """One install or uninstall at a time (``$CC_CONTINUITY_HOME/install.lock``, flock).

    Eight concurrent installs used to race each other's mkdirs, symlinks and the
    removal of "old" app copies (one removed the copy another had just linked, so
    every hook silently did nothing).  Now each waits its turn, then plans from
    what the previous one left.  A purge removes the lock file with the state dir;
    a waiter then locks a fresh one.
    """

    def __enter__(self):
        for _ in range(5):
            home = paths.ensure_dir(paths.home())
            try:
                self.lock = Lock(os.path.join(home, "install.lock"), timeout=INSTALL_LOCK_TIMEOUT_S).acquire()
                return self
            except FileNotFoundError:
                continue  # the state dir was purged while we waited
        raise InstallError("cannot lock %s" % os.path.join(paths.home(), "install.lock"))

    def __init__(self, remove=False):
        self.remove = remove  # uninstall leaves no lock file behind (a waiter locks a fresh one)

    def __exit__(self, *exc):
        if self.remove:
            try:
                os.unlink(self.lock.path)
            except OSError:
                pass
        try:
            self.lock.release()
        except OSError:
            pass
        return False


def install(opts, out=print):
    """Install (or re-install / upgrade) everything; with ``opts.dry_run`` print diffs and write nothing."""
    plan = _install_codex if opts.agent == "codex" else _install
    if opts.dry_run:
        return plan(opts, out)  # only reads: no lock (it would create the state dir)
    plan(opts, lambda *a: None, check_only=True)  # a file it cannot use is refused before anything is written
    with _InstallLock():
        if opts.plugin:
            _install_plugin(out)  # before settings are planned: `claude plugin install` writes them too
        return plan(opts, out)  # planned again: the install before ours may have changed things


def check(opts):
    """Raise what :func:`install` would refuse (options, files it cannot use), writing nothing; else 0."""
    return (_install_codex if opts.agent == "codex" else _install)(opts, lambda *a: None, check_only=True)


def _install_plugin(out):
    """The app copy, the plugin beside it (``$CC_CONTINUITY_HOME/plugin``), registered with Claude Code."""
    home = paths.home()
    claude = find_real_claude(os.environ)
    if claude is None:
        raise InstallError("--plugin needs Claude Code's `claude` on PATH (or CC_CONTINUITY_CLAUDE)")
    app.install(home)
    python, app_dir = app.base_interpreter(), app.app_link(home)
    target = plugin.plugin_dir(home)
    plugin.write(target, plugin.files(python, app_dir, app.launcher_text(python, app_dir)))
    try:
        plugin.register(claude, target)
    except plugin.PluginError as e:
        raise InstallError(str(e)) from None
    out("plugin: %s from %s, enabled (hooks, skills, bin/ and the mod come from it)" % (
        plugin.PLUGIN_ID, show(target)))


def _install(opts, out, check_only=False):
    if opts.trust:
        raise InstallError("--trust is Codex's (it records Codex's hook trust): use it with --agent codex")
    home = paths.home()
    cdir = paths.claude_config_dir()
    user_home = os.path.expanduser("~")
    prev = _load_manifest(out) or {}
    python = app.base_interpreter()
    app_dir = app.app_link(home)
    launcher = app.launcher_path(home)

    # ---- plan (read only) ----
    changes = config_changes(opts)
    if changes:
        config.validate(changes, paths.config_file())

    settings_path = os.path.join(cdir, "settings.json")
    prev_settings = prev.get("settings") if (prev.get("settings") or {}).get("path") == settings_path else None
    rendered = settings.render_fragment(settings.load_fragment(), python, app_dir)
    old = read(settings_path)
    plugins = _enabled_plugins(old)
    if plugins:
        rendered = dict(rendered, hooks={})  # the plugin carries them (and the skills)
    new, srec = settings.plan_install(old, rendered, prev_settings, where=settings_path)
    settings_change = FileChange(settings_path, old, new, keep_backup=True)

    md_path = os.path.join(cdir, "CLAUDE.md")
    # The Bash tool has the user's PATH, not necessarily ~/.local/bin: name the launcher itself (a plugin's
    # bin/ is on that PATH, so with one enabled the bare name resolves).
    command = skills.COMMAND if plugins else skills.model_command(launcher)
    md_change = block_change(md_path, CLAUDE_MD_BLOCK, "html", claude_md_body(command))

    rc_change, shell = None, None
    if not opts.no_wrapper:
        shell = wrapper.detect_shell(os.environ) if opts.shell == "auto" else opts.shell
        rc_change = block_change(wrapper.rc_path(shell, user_home, os.environ), WRAPPER_BLOCK, "hash",
                                 wrapper.render(shell, launcher))
    login_change = None
    if rc_change and shell == "bash":
        # `exec $SHELL -l` and macOS Terminal start login shells, which read ~/.bashrc only if told to.
        login_path, reads_bashrc = wrapper.bash_login_file(user_home)
        login_change = block_change(login_path, WRAPPER_BLOCK, "hash",
                                    None if reads_bashrc else wrapper.render_login(launcher))
        if not (login_change.changed or login_change.had_block):
            login_change = None

    prev_skills = prev.get("skills") or {}
    skill_changes, foreign = [], []
    for name, content in (skills.shipped(command) if not plugins else {}).items():
        t = skills.target(cdir, name)
        cur = read(t)
        if cur is None or cur == content or skills.sha256(cur) == prev_skills.get(t):
            skill_changes.append(FileChange(t, cur, content))
        else:
            foreign.append(t)

    launcher_change = FileChange(launcher, read(launcher), app.launcher_text(python, app_dir).encode("utf-8"),
                                 mode=0o700)
    link = app.path_link(user_home)
    link_state = "ours" if app.is_our_link(link, launcher) else ("foreign" if os.path.lexists(link) else "absent")

    rc_changes = [ch for ch in (rc_change, login_change) if ch]
    file_changes = [launcher_change, settings_change, md_change] + rc_changes + skill_changes

    if check_only:
        return 0
    if opts.dry_run:
        return _print_plan(out, changes, home, file_changes, link, link_state, launcher, foreign)

    # ---- apply ----
    created = list(prev.get("created_dirs") or [])
    if changes:
        config.update_global(changes)
        out("config: %s" % describe_config(changes))
    _install_app(out, home, python, app_dir, launcher, launcher_change, created)
    path_link = _install_link(out, link, link_state, launcher, created, shell, [ch.path for ch in rc_changes
                                                                               if ch.new is not None])

    # Recorded before the user's files are touched, so an interrupted install can still be undone.
    record = _record(prev, python, app_dir, launcher, path_link, settings_path, srec, md_change, rc_changes, shell,
                     skill_changes, created)
    if plugins:
        record["skills"] = {}
    if opts.plugin or prev.get("plugin"):
        record["plugin"] = {"id": plugin.PLUGIN_ID, "dir": plugin.plugin_dir(home)}
    manifest.save(record)

    settings_change.apply(created)
    _report_settings(out, settings_change, srec, len(rendered["hooks"]))
    if plugins:
        out("hooks: from the plugin %s, none in settings.json (both would run every event twice)"
            % ", ".join(plugins))
        _remove_skills(out, cdir, prev_skills)

    md_change.apply(created)
    out("CLAUDE.md: %s block %s" % (show(md_path), _verb(md_change)))
    if rc_change:
        rc_change.apply(created)
        out("shell: %s: claude() wrapper for %s %s%s" % (show(rc_change.path), shell, _verb(rc_change),
                                                        " (takes effect in new shells)" if rc_change.changed else ""))
        if login_change:
            login_change.apply(created)
            if login_change.new is None or not blocks.find(blocks.decode(login_change.new), WRAPPER_BLOCK, "hash"):
                out("shell: %s reads ~/.bashrc: its copy of the wrapper removed" % show(login_change.path))
            else:
                out("shell: %s: the wrapper for bash login shells (this file does not read ~/.bashrc) %s"
                    % (show(login_change.path), _verb(login_change)))
    else:
        out("shell: skipped (--no-wrapper)")

    for ch in skill_changes:
        ch.apply(created)
    changed = sum(ch.changed for ch in skill_changes)
    out("skills: %d in %s (%d written, %d unchanged)" % (len(skill_changes), show(skills.skills_dir(cdir)),
                                                         changed, len(skill_changes) - changed))
    for t in foreign:
        out("skills: %s exists and is not ours: left alone" % show(t))

    record["created_dirs"] = sorted(set(created))
    manifest.save(record)
    out("record: %s" % show(manifest.path()))
    return 0


def _enabled_plugins(settings_bytes):
    """cc-continuity plugins the user settings enable (unreadable settings: none; plan_install says why)."""
    if settings_bytes is None:
        return []
    try:
        return plugin.enabled(settings.parse(settings.decode(settings_bytes)))
    except settings.SettingsError:
        return []


def _verb(change):
    if not change.changed:
        return "unchanged"
    return "updated" if change.had_block else "added"


def _install_link(out, link, state, launcher, created, shell=None, rc_files=()):
    directory = os.path.dirname(link)
    hint = "" if app.on_path(directory) else " (%s)" % _path_hint(directory, launcher, shell, rc_files)
    if state == "foreign":
        out("PATH: %s exists and is not ours: left alone; the launcher is %s" % (show(link), show(launcher)))
        return None
    if state == "absent":
        makedirs(directory, created)
        os.symlink(launcher, link)
    out("PATH: %s -> %s%s" % (show(link), show(launcher), hint))
    return link


def _path_hint(directory, launcher, shell, rc_files):
    """How to get ``directory`` on PATH, exactly, for the shell the wrapper went to."""
    if shell == "fish":
        how = "run `fish_add_path %s` once" % show(directory)
    else:
        line = 'export PATH="%s:$PATH"' % directory.replace(os.path.expanduser("~"), "$HOME", 1)
        files = " and ".join(show(f) for f in rc_files) or "your shell's startup file"
        how = "add the line `%s` to %s" % (line, files)

    return "%s is not on your PATH: to run `cc-continuity` by name, %s; meanwhile it is %s" % (
        show(directory), how, show(launcher))


def _report_settings(out, change, srec, events):
    doc = settings.parse(change.new.decode("utf-8"))
    line = "settings: %s " % show(change.path)
    if not change.changed:
        line += "unchanged"
    else:
        line += "hooks merged (%d events)" % events
        if srec.get("statusline_chain"):
            line += ", your status line chained after ours"
        elif settings.is_our_statusline(doc.get("statusLine")):
            line += ", status line set (context %, session, rotation state)"
        if change.backup_path:
            line += ", backup %s" % show(change.backup_path)
    out(line)
    if doc.get("disableAllHooks") is True:
        out("settings: warning: disableAllHooks is true, so Claude Code will not run our hooks")


def _shared_record(prev, keep, python, app_dir, launcher, path_link, created):
    """The record's keys every agent's install shares (the app copy, the launcher, the dirs we made), with
    the keys ``keep`` of ``prev``: the other agent's part of the record stays as it was."""
    return dict({k: prev[k] for k in keep if k in prev}, **{
        "version": __version__,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": python,
        "app": app_dir,
        "launcher": launcher,
        "path_link": path_link or prev.get("path_link"),
        "created_dirs": sorted(set(created)),
        "checkout": checkout() or prev.get("checkout"),  # where `install.py --uninstall --purge` is
    })


def _record(prev, python, app_dir, launcher, path_link, settings_path, srec, md_change, rc_changes, shell,
            skill_changes, created):
    def block_entry(change, extra=None):
        prev_entries = [e for e in (prev.get("claude_md") or []) + (prev.get("rc") or []) if e.get("path") == change.path]
        was_created = change.old is None or any(e.get("created") for e in prev_entries)
        entry = {"path": change.path, "created": was_created}
        entry.update(extra or {})
        return entry

    rc_paths = {ch.path for ch in rc_changes}
    rc = [e for e in (prev.get("rc") or []) if e.get("path") not in rc_paths]
    for ch in rc_changes:
        rc.append(block_entry(ch, {"shell": shell}))
    claude_md = [e for e in (prev.get("claude_md") or []) if e.get("path") != md_change.path]
    claude_md.append(block_entry(md_change))
    skill_hashes = dict(prev.get("skills") or {})
    skill_hashes.update({ch.path: skills.sha256(ch.new) for ch in skill_changes})
    record = _shared_record(prev, ("codex",), python, app_dir, launcher, path_link, created)
    record.update({
        "settings": dict(srec, path=settings_path),
        "statusline_chain": srec.get("statusline_chain"),
        "claude_md": claude_md,
        "rc": rc,
        "skills": skill_hashes,
    })
    return record


def _print_plan(out, changes, home, file_changes, link, link_state, launcher, foreign):
    out("dry run: nothing is written")
    if changes:
        out("config: would set %s" % describe_config(changes))
    try:
        up_to_date = app.installed_fingerprint(home) == app.fingerprint()
    except app.AppError:  # install.py's dry run: the dependencies are not installed yet
        up_to_date = False
    out("app: %s %s" % ("up to date in" if up_to_date else "would copy cc-continuity %s to" % __version__,
                        show(app.app_link(home))))
    for ch in file_changes:
        if ch.changed:
            out(ch.diff().rstrip("\n"))
        else:
            out("unchanged: %s" % show(ch.path))
    if link_state == "absent":
        out("PATH: would link %s -> %s" % (show(link), show(launcher)))
    elif link_state == "foreign":
        out("PATH: %s exists and is not ours: would be left alone" % show(link))
    for t in foreign:
        out("skills: %s exists and is not ours: would be left alone" % show(t))
    out("record: would write %s" % show(manifest.path()))
    return 0


# -- Codex CLI ---------------------------------------------------------------------

CLAUDE_ONLY = (("plugin", "--plugin"), ("unattended", "--unattended"), ("no_wrapper", "--no-wrapper"))
TRUST_HOW = ('Codex runs new hooks only once they are trusted: at its next start it shows "Hooks need review"; '
             'choose "Trust all and continue" there (it trusts every hook that screen lists; "Review hooks" shows '
             'each), or run `cc-continuity install --agent codex --trust` to trust these %d only. Until then '
             '`codex exec` skips them without a word')


def _install_codex(opts, out, check_only=False):
    """``install --agent codex``: the app copy and launcher as for Claude Code, our hooks merged into
    ``$CODEX_HOME/hooks.json``, and with ``--trust`` Codex's trust for those entries in its config.toml."""
    given = [flag for attr, flag in CLAUDE_ONLY if getattr(opts, attr)] + (["--shell"] * (opts.shell != "auto"))
    if given:
        raise InstallError("%s: Claude Code's only (its wrapper, plugin and permission prompts); --agent codex "
                           "installs Codex's hooks" % ", ".join(given))
    home = paths.home()
    user_home = os.path.expanduser("~")
    prev = _load_manifest(out) or {}
    python, app_dir, launcher = app.base_interpreter(), app.app_link(home), app.launcher_path(home)

    # ---- plan (read only) ----
    changes = config_changes(opts)
    if changes:
        config.validate(changes, paths.config_file())
    chome = codex.codex_home()
    hooks_file, cfg_file = codex.hooks_path(chome), codex.config_path(chome)
    prev_codex = prev.get("codex") if (prev.get("codex") or {}).get("home") == chome else {}
    old = read(hooks_file)
    new, hrec = codex.plan_hooks(old, python, app_dir, prev_codex.get("hooks"), where=hooks_file)
    hooks_change = FileChange(hooks_file, old, new, keep_backup=True)
    ours = codex.entries(codex.parse_hooks(new, hooks_file), hooks_file)
    cfg_old = read(cfg_file)
    hashes, how = {e["key"]: e["hash"] for e in ours}, "computed as Codex 0.171 computes them"
    trust_change = None
    if opts.trust:
        if not (check_only or opts.dry_run):  # Codex's own hashes (a process, a scratch dir): the real run only
            hashes, how = _codex_hashes(new, hooks_file, ours)
        trust_change = FileChange(cfg_file, cfg_old, codex.plan_trust(cfg_old, hashes, where=cfg_file),
                                  keep_backup=True)
    launcher_change = FileChange(launcher, read(launcher), app.launcher_text(python, app_dir).encode("utf-8"),
                                 mode=0o700)
    link = app.path_link(user_home)
    link_state = "ours" if app.is_our_link(link, launcher) else ("foreign" if os.path.lexists(link) else "absent")
    file_changes = [launcher_change, hooks_change] + [ch for ch in (trust_change,) if ch]

    if check_only:
        return 0
    if opts.dry_run:
        _print_plan(out, changes, home, file_changes, link, link_state, launcher, [])
        if opts.trust:
            out("codex: trust: hashes %s (the real run asks `codex app-server` when there is one)" % how)
        return 0

    # ---- apply ----
    created = list(prev.get("created_dirs") or [])
    if changes:
        config.update_global(changes)
        out("config: %s" % describe_config(changes))
    _install_app(out, home, python, app_dir, launcher, launcher_change, created)
    path_link = _install_link(out, link, link_state, launcher, created)
    record = _shared_record(prev, [k for k in prev if k != "codex"], python, app_dir, launcher, path_link, created)
    record["codex"] = {
        "home": chome,
        "hooks": dict(hrec, path=hooks_file),
        "config": _codex_config_record(prev_codex.get("config") or {}, cfg_file, cfg_old, trust_change, hashes,
                                       hooks_file, ours, prev_codex.get("hashes") or ()),
        "hashes": sorted(set(prev_codex.get("hashes") or ()) | {e["hash"] for e in ours if e["hash"]}),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # doctor: our hooks fired since they were last written (hooks.log)
        "installed_ts": time.time() if hooks_change.changed or not prev_codex else prev_codex.get("installed_ts"),
    }
    manifest.save(record)  # before Codex's files are touched, so an interrupted install can still be undone

    hooks_change.apply(created)
    line = "codex: %s " % show(hooks_file)
    if hooks_change.changed:
        line += "hooks merged (%d events)" % len(ours)
        if hooks_change.backup_path:
            line += ", backup %s" % show(hooks_change.backup_path)
    else:
        line += "unchanged"
    out(line)
    if trust_change:
        trust_change.apply(created)
        out("codex: trust: our %d hooks %s in %s (%s; nothing else trusted)" % (
            len(ours), "trusted" if trust_change.changed else "already trusted", show(cfg_file), how))
    elif _codex_trusted(cfg_old, ours):
        out("codex: trust: our %d hooks are trusted in %s" % (len(ours), show(cfg_file)))
    else:
        out("codex: " + TRUST_HOW % len(ours))
    record["created_dirs"] = sorted(set(created))
    manifest.save(record)
    out("record: %s" % show(manifest.path()))
    return 0


def _install_app(out, home, python, app_dir, launcher, launcher_change, created):
    """The app copy and the launcher, for any agent's install."""
    copied, dists = app.install(home)
    out("app: cc-continuity %s %s %s (with %s)" % (
        __version__, "copied to" if copied else "up to date in", show(app_dir),
        ", ".join(d.metadata["Name"] for d in dists)))
    launcher_change.apply(created)
    os.chmod(launcher, 0o700)
    out("launcher: %s %s" % (show(launcher), "written" if launcher_change.changed else "unchanged"))


def _codex_hashes(hooks_bytes, hooks_file, ours):
    """``({key: hash}, how)`` for our entries: the hashes Codex itself gives them (``hooks/list`` of
    ``codex app-server``, asked about a copy of the new hooks.json), each listed entry checked to be the one
    we wrote; with no codex to ask, as computed (right for 0.171; a wrong one trusts nothing: Codex asks)."""
    computed = {e["key"]: e["hash"] for e in ours}
    try:
        binary = appserver.find_codex(os.environ)
        if binary is None:
            return computed, ("computed as Codex 0.171 computes them: no `codex` on PATH to ask (%s names one)"
                              % appserver.ENV_CODEX)
        version, listed = appserver.hooks_list(binary, hooks_bytes)
    except appserver.AppServerError as e:
        raise InstallError("--trust: %s; nothing was trusted" % e) from None
    by_place = {entry["key"]: entry for entry in listed}
    hashes = {}
    for e in ours:
        got = by_place.get(e["key"][len(hooks_file) + 1:]) or {}
        if (got.get("source"), got.get("command")) != ("user", e["handler"]["command"]) or not str(
                got.get("currentHash")).startswith("sha256:"):
            raise InstallError("--trust: %s lists %s otherwise than we wrote it; nothing was trusted"
                               % (version, e["key"]))
        hashes[e["key"]] = got["currentHash"]
    differ = sum(hashes[k] != computed[k] for k in hashes)
    return hashes, "the hashes %s gives them%s" % (version, "; it hashes %d of them otherwise than 0.171" % differ
                                                      if differ else "")


def _codex_trusted(cfg_bytes, ours):
    """Does config.toml trust every entry of ours as it is now?"""
    try:
        state = codex.trust_state(codex.load_config(cfg_bytes))
    except InstallError:
        return False
    return bool(ours) and all(state.get(e["key"], {}).get("trusted_hash") == e["hash"] for e in ours)


def _codex_config_record(prev, path, old, change, hashes, hooks_file, ours, known_hashes):
    """What uninstall needs of config.toml: whether it existed and had an explicit ``[hooks.state]`` before
    our first install (Codex adds that header), and after ``--trust`` the bytes before ours (exact when known:
    the file as it was when nobody wrote it since) and the keys we trusted."""
    same = prev.get("path") == path
    rec = {"path": path,
           "existed": prev.get("existed", old is not None) if same else old is not None,
           "state_header": prev.get("state_header", codex.has_state_header(old)) if same else codex.has_state_header(old)}
    for k in ("original", "original_known", "written_sha256", "trusted"):
        if same and k in prev:
            rec[k] = prev[k]
    if change is None or not change.changed:
        return rec
    if same and prev.get("original_known") and prev.get("written_sha256") == settings.sha256(old or b""):
        pass  # the file is still what we wrote: its original stays the one recorded
    elif not codex.our_trust_keys(codex.load_config(old, path), hooks_file, ours, known_hashes):
        rec["original"], rec["original_known"] = (None if old is None else old.decode("utf-8")), True
    else:
        rec["original"], rec["original_known"] = None, False
    rec["written_sha256"] = settings.sha256(change.new)
    rec["trusted"] = dict(hashes)
    return rec


def _uninstall_codex(out, rec):
    """Codex's part, for the CODEX_HOME recorded and the current one: ``(problems, whether no hook of ours
    is left in a hooks.json)``."""
    crec = (rec or {}).get("codex") or {}
    homes = [crec["home"]] if crec.get("home") else []
    try:
        current = codex.codex_home()
    except codex.CodexError as e:
        if not homes:
            out("codex: %s: nothing to look at" % e)
        current = None
    if current and current not in homes:
        homes.append(current)
    problems, gone = 0, True
    for chome in homes:
        more, left = _uninstall_codex_home(out, chome, crec if crec.get("home") == chome else {})
        problems += more
        gone = gone and not left
    return problems, gone


def _uninstall_codex_home(out, chome, record):
    """Our entries out of ``chome``'s hooks.json, then the trust tables naming them out of its config.toml:
    the file's bytes from before our ``--trust`` when nobody wrote it since, else only those tables.
    ``(problems, whether hooks of ours are left)``."""
    hooks_file, cfg_file = codex.hooks_path(chome), codex.config_path(chome)
    old = read(hooks_file)
    try:
        ours = codex.entries(codex.parse_hooks(old, hooks_file), hooks_file)
        new = codex.plan_unhooks(old, record.get("hooks"), where=hooks_file)
    except InstallError as e:
        out("codex: %s -- left untouched, so our hooks are still in it; fix it and run uninstall again" % e)
        return 1, True
    cfg_old, cfg_new, removed, problem = read(cfg_file), None, [], None
    crec = record.get("config") or {}
    try:
        cfg_doc = codex.load_config(cfg_old, cfg_file)
        keys = codex.our_trust_keys(cfg_doc, hooks_file, ours, record.get("hashes") or ())
        removed = sorted(k for k in keys if k in codex.trust_state(cfg_doc))
        if cfg_old is not None and crec.get("original_known") and crec.get("written_sha256") == settings.sha256(
                cfg_old):
            cfg_new = None if crec.get("original") is None else crec["original"].encode("utf-8")
        else:
            cfg_new, removed = codex.plan_untrust(cfg_old, keys, not crec.get("state_header"), where=cfg_file)
            if cfg_new is not None and crec and not crec.get("existed", True) and not cfg_new.strip():
                cfg_new = None  # only our trust was in a file that was not there before
    except InstallError as e:
        cfg_new, problem = cfg_old, e

    if new != old:
        FileChange(hooks_file, old, new, keep_backup=True).apply([])
        out("codex: %s %s" % (show(hooks_file), "deleted (install created it)" if new is None
                              else "our %d hooks removed" % len(ours)))
    else:
        out("codex: nothing of ours in %s" % show(hooks_file))
    if problem:
        out("codex: %s -- our trust entries are left in it (they trust nothing once our hooks are gone)" % problem)
        return 1, False
    if cfg_new != cfg_old:
        FileChange(cfg_file, cfg_old, cfg_new, keep_backup=True).apply([])
        out("codex: %s: %d trust entr%s of ours removed%s" % (show(cfg_file), len(removed),
                                                            "y" if len(removed) == 1 else "ies",
                                                            " (file deleted: nothing else was in it)"
                                                            if cfg_new is None else ""))
    elif cfg_old is not None:
        out("codex: no trust entry of ours in %s" % show(cfg_file))
    return 0, False


# -- uninstall -----------------------------------------------------------------

def uninstall(purge=False, out=print, agents=AGENTS):
    """Remove what install added for ``agents`` (both by default); ``purge`` also deletes
    ``$CC_CONTINUITY_HOME`` once no agent's install is left.  Returns an exit status."""
    if not os.path.isdir(paths.home()):
        return _uninstall(purge, out, agents)
    with _InstallLock(remove=True):
        return _uninstall(purge, out, agents)


# The record's keys that are one agent's (the rest, the app copy and launcher, are shared).
RECORD_KEYS = {"claude": ("settings", "statusline_chain", "claude_md", "rc", "skills", "plugin"),
               "codex": ("codex",)}
HOOK_FILES = {"claude": "settings.json", "codex": "Codex's hooks.json"}


def _uninstall(purge, out, agents):
    home = paths.home()
    user_home = os.path.expanduser("~")
    rec = _load_manifest(out)
    problems = 0
    running, kept = [], [a for a in AGENTS if a not in agents and _still_installed(a, rec)]
    for agent in agents:  # each agent's hook file first: no hook may outlive the files it runs
        more, gone = (_uninstall_claude if agent == "claude" else _uninstall_codex)(out, rec)
        problems += more
        if not gone:
            running.append(agent)

    launcher = app.launcher_path(home)
    if running:
        out("app: kept, because %s still runs our hooks from it" % " and ".join(HOOK_FILES[a] for a in running))
        problems += 1
    elif kept:
        out("app: kept, %s's hooks run from it (`cc-continuity uninstall` takes out both)" % " and ".join(
            AGENT_NAMES[a] for a in kept))
    else:
        link = (rec or {}).get("path_link") or app.path_link(user_home)
        if app.is_our_link(link, launcher):
            os.unlink(link)
            out("PATH: %s removed" % show(link))
        else:
            out("PATH: no link of ours at %s" % show(link))
        removed = _unlink(launcher)
        out("launcher: %s %s" % (show(launcher), "removed" if removed else "not there"))
        out("app: %s %s" % (show(app.app_link(home)), "removed" if app.remove(home) else "not there"))
        if os.path.isdir(bootstrap.venv_dir(home)):
            shutil.rmtree(bootstrap.venv_dir(home))
            out("venv: %s removed (install.py's)" % show(bootstrap.venv_dir(home)))
        for where, how, command in tools.tool_launchers():
            out("launcher: %s stays: `%s` put it there, not install; remove it with: %s" % (
                show(where), how, command))

    for d in sorted(set((rec or {}).get("created_dirs") or []), key=len, reverse=True):
        try:
            os.rmdir(d)
        except OSError:
            pass  # not empty any more (someone else uses it) or already gone

    if problems:
        out("record: kept %s for the next run" % show(manifest.path()))
        if purge:
            out("purge: not done, %s is still needed; fix the errors above and run again" % show(home))
        return 1
    if kept:
        manifest.save({k: v for k, v in (rec or {}).items()
                       if not any(k in RECORD_KEYS[a] for a in agents)})
        out("record: %s keeps %s's part" % (show(manifest.path()), " and ".join(AGENT_NAMES[a] for a in kept)))
        if purge:
            out("purge: not done, %s's install still uses %s; `cc-continuity uninstall --purge` takes out both"
                % (" and ".join(AGENT_NAMES[a] for a in kept), show(home)))
            return 1
        return 0
    out("record: %s" % ("removed" if manifest.remove() else "none"))
    if purge:
        for remote, root, cmd in left_on_remotes():  # the state dir goes; what was pushed stays there
            out("remote: %s (of %s) keeps the checkpoints published from here; remove them with: %s" % (
                remote, show(root), cmd))
        if os.path.isdir(home):
            shutil.rmtree(home)
            out("purge: %s deleted" % show(home))
        else:
            out("purge: %s not there" % show(home))
    elif os.path.isdir(home):
        out("kept: %s (%s: your config, checkpoints, handoffs and logs); to delete it too: %s"
            % (show(home), _size(home), purge_command(home, (rec or {}).get("checkout"))))
    return 0


def _still_installed(agent, rec):
    """Is ``agent``'s install still there (its part of the record, or hooks of ours in its hook file)?"""
    if rec and any(k in rec for k in RECORD_KEYS[agent]):
        return True
    try:
        if agent == "claude":
            path = os.path.join(paths.claude_config_dir(), "settings.json")
        else:
            try:
                path = codex.hooks_path(codex.codex_home())
            except codex.CodexError:
                return False  # no CODEX_HOME Codex would use, so no hook of ours it runs
        data = read(path)
        doc = settings.parse(settings.decode(data, path), path) if data else {}
        return settings.has_ours(doc, settings.HOOK_MARK if agent == "claude" else codex.mark())
    except InstallError:
        return True  # a file we cannot read may hold our hooks: keep what they run


def _uninstall_claude(out, rec):
    """Claude Code's part: settings.json, the CLAUDE.md and shell blocks, skills, the plugin.
    ``(problems, whether no hook of ours is left in settings.json)``."""
    cdir = paths.claude_config_dir()
    user_home = os.path.expanduser("~")
    problems = 0
    hooks_gone = True
    srec = (rec or {}).get("settings") or None
    targets = [(srec["path"], srec)] if srec and srec.get("path") else []
    current = os.path.join(cdir, "settings.json")
    if current not in [t for t, _ in targets]:
        targets.append((current, None))
    for path, record in targets:
        try:
            ok = _uninstall_settings(out, path, record, srec is not None)
        except (settings.SettingsError, OSError) as e:
            out("settings: %s -- left untouched, so our hooks are still in it; fix it and run uninstall again" % e)
            problems += 1
            ok = False
        hooks_gone = hooks_gone and ok

    block_targets = [(e["path"], e.get("created")) for e in (rec or {}).get("claude_md") or [] if e.get("path")]
    block_targets.append((os.path.join(cdir, "CLAUDE.md"), False))
    problems += _remove_blocks(out, "CLAUDE.md", block_targets, CLAUDE_MD_BLOCK, "html")
    rc_targets = [(e["path"], e.get("created")) for e in (rec or {}).get("rc") or [] if e.get("path")]
    rc_targets += [(wrapper.rc_path(s, user_home, os.environ), False) for s in wrapper.SHELLS]
    rc_targets += [(os.path.join(user_home, name), False) for name in wrapper.BASH_LOGIN_FILES]
    problems += _remove_blocks(out, "shell", rc_targets, WRAPPER_BLOCK, "hash")

    _remove_skills(out, cdir, (rec or {}).get("skills") or {})
    problems += _uninstall_plugin(out, (rec or {}).get("plugin"), cdir, srec)
    _name_plugin_cache(out, cdir)
    return problems, hooks_gone


def _name_plugin_cache(out, cdir):
    """Claude Code's cached copies of our plugin stay after `claude plugin uninstall` (marked orphaned,
    deleted by Claude Code itself later): say so, once no cc-continuity plugin is enabled any more."""
    try:
        data = read(os.path.join(cdir, "settings.json"))
        if data and plugin.enabled(settings.parse(settings.decode(data))):
            return  # still enabled (the step above said why): the copy is in use
    except (settings.SettingsError, InstallError, OSError):
        return
    for copy in tools.plugin_cache_copies(cdir):
        out("plugin: Claude Code keeps its cached copy %s (%s) and deletes it later by itself; nothing "
            "runs from it" % (show(copy), _size(copy)))


def checkout():
    """The checkout this code runs from (it has install.py), or None (an app copy, a wheel)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ok = os.path.isfile(os.path.join(root, "install.py")) and os.path.isfile(os.path.join(root, "pyproject.toml"))
    return root if ok else None


def purge_command(home, recorded=None):
    """One command that deletes ``home`` after an uninstall, with no launcher left to run.

    The install.py of the checkout installed from (or run from), which runs this
    uninstall again and then purges; without one, the removal itself.
    """
    for root in (checkout(), recorded):
        if isinstance(root, str) and os.path.isfile(os.path.join(root, "install.py")):
            env = "CC_CONTINUITY_HOME=%s " % shlex.quote(home) if os.environ.get("CC_CONTINUITY_HOME") else ""
            return "%spython3 %s --uninstall --purge" % (env, shlex.quote(os.path.join(root, "install.py")))
    return "rm -rf %s" % shlex.quote(home)


def _size(top):
    total = 0
    for d, _dirs, files in os.walk(top):
        for name in files:
            try:
                total += os.lstat(os.path.join(d, name)).st_size
            except OSError:
                pass
    for unit in ("bytes", "kB", "MB", "GB"):
        if total < 1000 or unit == "GB":
            return ("%d %s" if unit == "bytes" else "%.1f %s") % (total, unit)
        total /= 1000.0
    return ""  # unreachable


def _uninstall_plugin(out, recorded, cdir, srec):
    """Take out our plugins through Claude Code's own commands: the one ``install --plugin``
    registered and any the user enabled (``/plugin install``); problems count.

    A settings.json that only Claude Code's plugin bookkeeping left (it had none before, or we
    created it) is deleted; project and local installs are named, not edited."""
    path = os.path.join(cdir, "settings.json")
    before = read(path)
    try:
        ids = plugin.enabled(settings.parse(settings.decode(before))) if before else []
    except settings.SettingsError:
        ids = []  # the settings step above said why it is unreadable
    for pid, scope, where in plugin.other_scopes(ids + [plugin.PLUGIN_ID], cdir):
        out("plugin: %s is installed for the %s scope of %s: left as it is (it lives in that repository's "
            "files); `claude plugin uninstall %s --scope %s` there removes it" % (pid, scope, where, pid, scope))
    if not recorded and not ids:
        return 0
    try:
        claude = find_real_claude(os.environ)
    except RuntimeError:
        claude = None
    if claude is None:
        for pid in ids or [recorded.get("id")]:
            out("plugin: %s left registered: no claude to run `claude plugin uninstall %s`" % (pid, pid))
        return 1
    try:
        done = plugin.unregister(claude, ids)
    except plugin.PluginError as e:
        out("plugin: %s" % e)
        return 1
    if recorded:
        plugin.remove_dir()
    out("plugin: %s" % ("; ".join(done) if done else "not registered"))
    after = read(path)
    if done and after is not None and _had_no_settings(srec):
        try:
            residue = plugin.only_plugin_tables(settings.parse(settings.decode(after)))
        except settings.SettingsError:
            residue = False
        if residue:
            os.unlink(path)
            out("settings: %s deleted (only the empty plugin tables Claude Code left were in it)" % show(path))
    return 0


def _had_no_settings(srec):
    """Was there no settings.json before us (none, or only what registering our plugin wrote)?"""
    if not srec:
        return True  # no install of ours: Claude Code made it for the plugin (we cannot know more)
    if not srec.get("original_known"):
        return False
    original = srec.get("original")
    try:
        return original is None or plugin.only_plugin_tables(settings.parse(original), ours_only=True)
    except settings.SettingsError:
        return False


def _uninstall_settings(out, path, record, have_manifest):
    old = read(path)
    new = settings.plan_uninstall(old, record, where=path)
    if new == old:
        out("settings: nothing of ours in %s" % show(path))
        return True
    change = FileChange(path, old, new, keep_backup=True)
    change.apply([])
    note = ""
    ours = settings.parse(old.decode("utf-8")).get("statusLine") if old else None
    if not have_manifest and settings.is_our_statusline(ours) and settings.embedded_chain(ours) is None:
        note = "; the status line it replaced is unknown (no install record), see %s" % show(
            os.path.join(paths.home(), "backups"))
    what = "deleted (install created it)" if new is None else "our hooks and status line removed"
    out("settings: %s %s%s" % (show(path), what, note))
    return True


def _remove_blocks(out, label, targets, name, style):
    problems, seen, removed = 0, set(), 0
    for path, created in targets:
        if path in seen:
            continue
        seen.add(path)
        try:
            change = block_change(path, name, style)
        except (blocks.BlockError, InstallError) as e:
            out("%s: %s -- left untouched" % (label, e))
            problems += 1
            continue
        if not change.changed:
            continue
        if created and not change.new:
            change.new = None  # install created the file and nothing else is in it
        change.apply([])
        removed += 1
        out("%s: block removed from %s%s" % (label, show(path), " (file deleted)" if change.new is None else ""))
    if not removed and not problems:
        out("%s: no block of ours found" % label)
    return problems


def _remove_skills(out, cdir, recorded):
    shipped = skills.shipped()
    known = {skills.sha256(c) for c in shipped.values()}
    known |= {skills.sha256(c) for c in skills.shipped(skills.model_command(app.launcher_path(paths.home()))).values()}
    candidates = dict(recorded)
    for name in skills.NAMES:
        candidates.setdefault(skills.target(cdir, name), None)
    removed = 0
    for path, sha in candidates.items():
        data = read(path)
        if data is None:
            continue
        digest = skills.sha256(data)
        if digest != sha and digest not in known:
            out("skills: %s was changed after install: left alone" % show(path))
            continue
        os.unlink(path)
        removed += 1
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
    out("skills: %d removed" % removed)


def _unlink(path):
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
