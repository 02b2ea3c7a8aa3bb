"""Claude Code's piece of install and uninstall: settings.json (hooks, the status line), CLAUDE.md's block,
the shell wrapper, skills, the plugin.

Applied in an order that never leaves a hook pointing at a missing file: config, app copy, launcher,
settings.json, CLAUDE.md, shell rc, skills, and last the record (``install.json``) uninstall works from.
Uninstall removes only what is ours: hook groups by command path, blocks by marker, skills and links by
content.  Claude Code's own, so in its host folder; it plans and applies with install/'s library
(``install/plan.py``, ``settings.py`` ...).
"""


import os

from ... import config, deps, paths
from ...errors import InstallError
from ...install import app, blocks, manifest, mcp, plan, plugin, settings, skills, tools, wrapper
from ...install.plan import CLAUDE_MD_BLOCK, FileChange, WRAPPER_BLOCK, install_app, install_link, load_manifest, print_plan, shared_record, size_text, verb, block_change, claude_md_body, config_changes, describe_config, read, show
from . import mcpentry
from .executable import find_real_claude

NAME = "Claude Code"
HOOK_FILE = "settings.json"  # where its hooks are, as uninstall names it
# The record's keys that are Claude Code's (the rest, the app copy and launcher, are shared).
RECORD_KEYS = ("settings", "statusline_chain", "claude_md", "rc", "skills", "plugin", "claude_mcp")


def install_plugin(out, server=None):
    """The app copy, the plugin beside it (``$CC_CONTINUITY_HOME/plugin``), registered with Claude Code;
    ``server``: the MCP server's entry the plugin carries (``install --plugin --mcp``), or None."""
    home = paths.home()
    claude = find_real_claude(os.environ)
    if claude is None:
        raise InstallError("--plugin needs Claude Code's `claude` on PATH (or CC_CONTINUITY_CLAUDE)")
    app.install(home)
    python, app_dir = app.base_interpreter(), app.app_link(home)
    target = plugin.plugin_dir(home)
    plugin.write(target, plugin.files(python, app_dir, app.launcher_text(python, app_dir), mcp=server))
    try:
        plugin.register(claude, target)
    except plugin.PluginError as e:
        raise InstallError(str(e)) from None
    out("plugin: %s from %s, enabled (hooks, skills, bin/ and the mod come from it)" % (
        plugin.PLUGIN_ID, show(target)))


def install(opts, out, check_only=False):
    """``install``: plan every change while only reading (``check_only``: stop there; ``opts.dry_run``: show
    it), then apply them; with ``--plugin`` the plugin is registered first (`claude plugin install` writes
    settings.json too, so the plan reads what it left)."""
    if opts.trust:
        raise InstallError("--trust is Codex's (it records Codex's hook trust): use it with --agent codex")
    prev = load_manifest(out) or {}
    if (opts.plugin or (prev.get("plugin") and opts.mcp is not None)) and not (check_only or opts.dry_run):
        # before settings are planned: `claude plugin install` writes them too (and --mcp / --no-mcp change ours)
        install_plugin(out, mcp.entry(app.launcher_path(paths.home())) if _mcp_wanted(opts, prev) else None)
    home = paths.home()
    cdir = paths.claude_config_dir()
    user_home = os.path.expanduser("~")
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
    mcp_on = _plan_mcp(opts, prev, launcher, plugins)
    if mcp_on:  # its read-only tools run without a prompt; no other
        rendered = dict(rendered, allow=mcpentry.ALLOW if mcp_on == mcpentry.USER else mcpentry.PLUGIN_ALLOW)
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
        return print_plan(out, changes, home, file_changes, link, link_state, launcher, foreign)

    # ---- apply ----
    created = list(prev.get("created_dirs") or [])
    if changes:
        config.update_global(changes)
        out("config: %s" % describe_config(changes))
    install_app(out, home, python, app_dir, launcher, launcher_change, created)
    path_link = install_link(out, link, link_state, launcher, created, shell, [ch.path for ch in rc_changes
                                                                               if ch.new is not None])

    # Recorded before the user's files are touched, so an interrupted install can still be undone.
    record = _record(prev, python, app_dir, launcher, path_link, settings_path, srec, md_change, rc_changes, shell,
                     skill_changes, created)
    if plugins:
        record["skills"] = {}
    if opts.plugin or prev.get("plugin"):
        record["plugin"] = {"id": plugin.PLUGIN_ID, "dir": plugin.plugin_dir(home)}
    manifest.save(record)

    _apply_mcp(out, mcp_on, prev, launcher, record)
    settings_change.apply(created)
    _report_settings(out, settings_change, srec, len(rendered["hooks"]))
    if plugins:
        out("hooks: from the plugin %s, none in settings.json (both would run every event twice)"
            % ", ".join(plugins))
        _remove_skills(out, cdir, prev_skills)

    md_change.apply(created)
    out("CLAUDE.md: %s block %s" % (show(md_path), verb(md_change)))
    if rc_change:
        rc_change.apply(created)
        out("shell: %s: claude() wrapper for %s %s%s" % (show(rc_change.path), shell, verb(rc_change),
                                                        " (takes effect in new shells)" if rc_change.changed else ""))
        if login_change:
            login_change.apply(created)
            if login_change.new is None or not blocks.find(blocks.decode(login_change.new), WRAPPER_BLOCK, "hash"):
                out("shell: %s reads ~/.bashrc: its copy of the wrapper removed" % show(login_change.path))
            else:
                out("shell: %s: the wrapper for bash login shells (this file does not read ~/.bashrc) %s"
                    % (show(login_change.path), verb(login_change)))
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


def _mcp_wanted(opts, prev):
    """``--mcp``, ``--no-mcp``, else as the last install left it."""
    return bool(prev.get("claude_mcp")) if opts.mcp is None else opts.mcp


def _plan_mcp(opts, prev, launcher, plugins):
    """Where the MCP server is to be (:data:`mcpentry.FORMS`: at user scope, in our plugin, or the marketplace
    plugin's own entry), or None for nowhere.  What it needs is checked here, before anything is written: the
    SDK beside us and no foreign entry (``claude`` too, at user scope)."""
    if not _mcp_wanted(opts, prev):
        return None
    if opts.plugin or prev.get("plugin"):
        form = mcpentry.PLUGIN
    elif plugins:
        return mcpentry.MARKETPLACE  # its plugin carries the entry; its data folder gets the SDK
    else:
        form = mcpentry.USER
    mcp.sdk_dists()
    if form == mcpentry.USER:
        if find_real_claude(os.environ) is None:
            raise InstallError("--mcp registers the server with `claude mcp add`: Claude Code's `claude` is not on "
                               "PATH (or CC_CONTINUITY_CLAUDE)")
        mcpentry.check(launcher)
    return form


def _apply_mcp(out, form, prev, launcher, record):
    """Register the server (after the launcher it runs is in place) where ``form`` says, and take out an entry
    of ours an earlier install left elsewhere; the record (``claude_mcp``) saved before Claude Code's config is
    changed."""
    if not form and not prev.get("claude_mcp"):
        return
    claude = find_real_claude(os.environ)
    if form != mcpentry.USER and mcpentry.is_ours(mcpentry.user_entry(), launcher):
        out("mcp: the server %s at Claude Code's user scope %s" % (mcp.SERVER, mcpentry.unregister(claude, launcher)))
    if not form:
        out("mcp: the server is off (--no-mcp)")
        record.pop("claude_mcp", None)
        if not mcp.used_by(record):
            mcp.remove()
        return
    record["claude_mcp"] = {"server": mcp.SERVER, "command": launcher, "form": form}
    read_only = ", ".join(mcp.READ_ONLY)
    if form == mcpentry.MARKETPLACE:
        config.update_global({"mcp_server": True})
        out("mcp: the plugin's own server entry starts once its SDK is built in its data folder (the next "
            "session builds it; config mcp_server: true); its read-only tools allowed: %s" % read_only)
        return
    made = mcp.make()
    manifest.save(record)
    done = mcpentry.register(claude, launcher) if form == mcpentry.USER else "in %s/.mcp.json" % show(
        plugin.plugin_dir())
    out("mcp: the server %s %s (SDK %s %s, %s); its read-only tools allowed: %s" % (
        mcp.SERVER, "at Claude Code's user scope %s" % done if form == mcpentry.USER else done,
        show(mcp.lib_dir()), "copied" if made else "up to date", size_text(mcp.lib_dir()), read_only))


def _enabled_plugins(settings_bytes):
    """cc-continuity plugins the user settings enable (unreadable settings: none; plan_install says why)."""
    if settings_bytes is None:
        return []
    try:
        return plugin.enabled(settings.parse(settings.decode(settings_bytes)))
    except settings.SettingsError:
        return []


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
    # Every other agent's part of the record stays as it was (keys not Claude Code's; the shared ones are
    # written again).
    record = shared_record(prev, [k for k in prev if k not in RECORD_KEYS], python, app_dir, launcher, path_link,
                           created)
    record.update({
        "settings": dict(srec, path=settings_path),
        "statusline_chain": srec.get("statusline_chain"),
        "claude_md": claude_md,
        "rc": rc,
        "skills": skill_hashes,
    })
    return record


def still_installed(rec):
    """Is Claude Code's install still there (its part of the record, or hooks of ours in settings.json)?"""
    return plan.still_installed(rec, RECORD_KEYS, os.path.join(paths.claude_config_dir(), "settings.json"),
                                settings.CLAUDE_MARKS)


def uninstall(out, rec):
    """Claude Code's part: settings.json, the CLAUDE.md and shell blocks, skills, the plugin.
    ``(problems, whether no hook of ours is left in settings.json)``."""
    cdir = paths.claude_config_dir()
    user_home = os.path.expanduser("~")
    problems = _uninstall_mcp(out, rec)
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


def _uninstall_mcp(out, rec):
    """The MCP server's user-scope entry, when it is ours (the record's launcher, or this install's)."""
    launcher = ((rec or {}).get("claude_mcp") or {}).get("command") or app.launcher_path(paths.home())
    try:
        done = mcpentry.unregister(find_real_claude(os.environ), launcher)
    except InstallError as e:
        out("mcp: %s" % e)
        return 1
    form = ((rec or {}).get("claude_mcp") or {}).get("form")
    if form == mcpentry.MARKETPLACE and done == "not there":
        out("mcp: the marketplace plugin's own server entry goes with the plugin (mcp_server stays in your config)")
    elif done != "not there" or (rec or {}).get("claude_mcp"):
        out("mcp: the server %s at Claude Code's user scope %s" % (mcp.SERVER, done))
    if not mcp.used_by({k: v for k, v in (rec or {}).items() if k != "claude_mcp"}) and mcp.remove():
        out("mcp: %s removed" % show(mcp.lib_dir()))
    return 0


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
            "runs from it" % (show(copy), size_text(copy)))


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
    for pid in set(ids) | ({recorded.get("id")} if recorded and recorded.get("id") else set()):
        deps.stop_builds(plugin.data_dir(pid, cdir))  # a build running on would bring the data folder back
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
    new = settings.plan_uninstall(old, record, where=path, allow=mcpentry.ALLOW + mcpentry.PLUGIN_ALLOW)
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
