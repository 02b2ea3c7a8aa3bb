"""Gemini CLI's piece of install and uninstall: our hooks (and, when the user set none, the compression
threshold) merged into the user's ``~/.gemini/settings.json`` (:mod:`.files`), beside the same app copy
and launcher as every agent's.

Why a settings merge and not a Gemini extension (``gemini extensions install``, how Gemini users install
things): on 0.61, installing an extension from a folder, ``--consent`` given, still asks whether to trust
that folder, and answering writes ``TRUST_FOLDER`` for the folder *and its parent* into
trustedFolders.json, plus credentials, installation id and integrity files of Gemini's.  An exact
uninstall would then have to take back a trust answered in the user's name.  The merge changes one file,
the user's, and uninstall gives its bytes back.

Trust: Gemini runs no hook in a folder it does not trust (user-level ones included), and a headless run
there exits 55.  Nothing of ours trusts a folder, passes ``--skip-trust`` or sets
``GEMINI_CLI_TRUST_WORKSPACE``: install says so and names the command (``/permissions trust`` in Gemini).
"""

import os
import time

from ... import config, meter, paths
from ...errors import InstallError
from ...install import app, manifest, mcp, settings
from ...install.plan import FileChange, install_app, install_link, load_manifest, print_plan, shared_record, config_changes, describe_config, read, show, size_text
from . import files


NAME = "Gemini CLI"
HOOK_FILE = "Gemini's settings.json"  # where its hooks are, as uninstall names it
RECORD_KEYS = ("gemini",)  # the record's key that is Gemini's (the rest, the app copy and launcher, are shared)
CLAUDE_ONLY = (("plugin", "--plugin"), ("unattended", "--unattended"), ("no_wrapper", "--no-wrapper"),
               ("trust", "--trust"))
TRUST_HOW = ("Gemini CLI runs hooks only in folders you trust (no hook at all elsewhere, and `gemini -p` "
             "exits 55 there): in each project, answer Gemini's \"Do you trust this folder?\" or type "
             "`/permissions trust` in it. cc-continuity trusts no folder for you")


def _refuse_others(opts):
    given = [flag for attr, flag in CLAUDE_ONLY if getattr(opts, attr, False)] + (["--shell"] * (opts.shell != "auto"))
    if given:
        raise InstallError("%s: not for Gemini CLI (Claude Code's wrapper, plugin and permission prompts, "
                           "Codex's trust); --agent gemini merges our hooks into Gemini's settings.json"
                           % ", ".join(given))


def wanted_threshold(cfg=None):
    """The compression threshold install sets: just above our hard ceiling on the window Gemini sessions
    are metered with (the config's, else the guess for a model id the meter does not know)."""
    cfg = cfg or config.load(None)
    window, _source = meter.resolve_window(cfg["window"], None, "gemini", env={})
    return files.wanted_threshold(window, cfg["hard"])


def install(opts, out, check_only=False):
    """``install --agent gemini``: the app copy and launcher as for Claude Code, our hooks merged into
    Gemini's user settings.json, and the compression threshold set above our hard ceiling if unset."""
    _refuse_others(opts)
    home = paths.home()
    prev = load_manifest(out) or {}
    python, app_dir, launcher = app.base_interpreter(), app.app_link(home), app.launcher_path(home)

    # ---- plan (read only) ----
    changes = config_changes(opts)
    if changes:
        config.validate(changes, paths.config_file())
    ghome = files.gemini_home()
    path = files.settings_path(ghome)
    prev_gemini = prev.get("gemini") if (prev.get("gemini") or {}).get("home") == ghome else {}
    cfg = config.load(None)
    cfg.values.update(changes or {})
    threshold = wanted_threshold(cfg)
    old = read(path)
    mcp_on, server = _plan_mcp(opts, prev_gemini, launcher)
    new, srec = files.plan(old, python, app_dir, threshold, prev_gemini.get("settings"), where=path, server=server)
    settings_change = FileChange(path, old, new, keep_backup=True)
    policy = files.policy_path(ghome)
    policy_change = FileChange(policy, read(policy), files.policy_text(
        ghome, mcp.READ_ONLY if mcp_on else ()).encode("utf-8"), mode=0o600)
    launcher_change = FileChange(launcher, read(launcher), app.launcher_text(python, app_dir).encode(), mode=0o700)
    link = app.path_link(os.path.expanduser("~"))
    link_state = "ours" if app.is_our_link(link, launcher) else ("foreign" if os.path.lexists(link) else "absent")

    if check_only:
        return 0
    if opts.dry_run:
        print_plan(out, changes, home, [launcher_change, settings_change, policy_change], link, link_state,
                   launcher, [])
        out("gemini: " + TRUST_HOW)
        return 0

    # ---- apply ----
    created = list(prev.get("created_dirs") or [])
    if changes:
        config.update_global(changes)
        out("config: %s" % describe_config(changes))
    install_app(out, home, python, app_dir, launcher, launcher_change, created)
    path_link = install_link(out, link, link_state, launcher, created)
    record = shared_record(prev, [k for k in prev if k not in RECORD_KEYS], python, app_dir, launcher, path_link,
                           created)
    record["gemini"] = {
        "home": ghome,
        "settings": dict(srec, path=path),
        "policy": {"path": policy, "sha256": settings.sha256(policy_change.new)},
        "mcp": {"server": mcp.SERVER, "command": launcher} if mcp_on else None,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # doctor: our hooks fired since they were last written (hooks.log)
        "installed_ts": time.time() if settings_change.changed or not prev_gemini else prev_gemini.get("installed_ts"),
    }
    made = mcp.make() if mcp_on else False
    manifest.save(record)  # before Gemini's file is touched, so an interrupted install can still be undone

    _write(out, created, settings_change, policy_change, srec, threshold, len(files.render(python, app_dir)["hooks"]))
    _said_mcp(out, mcp_on, made, prev_gemini, path, record)
    out("gemini: " + TRUST_HOW)
    record["created_dirs"] = sorted(set(created))
    manifest.save(record)
    out("record: %s" % show(manifest.path()))
    return 0


def _plan_mcp(opts, prev_gemini, launcher):
    """``(on, our server's entry or None)``: ``--mcp``, ``--no-mcp``, else as the last install left it; the SDK
    checked here, before anything is written."""
    on = bool(prev_gemini.get("mcp")) if opts.mcp is None else opts.mcp
    if not on:
        return False, None
    mcp.sdk_dists()
    return True, mcp.entry(launcher)


def _said_mcp(out, on, made, prev_gemini, path, record):
    if on:
        out("gemini: mcp: mcpServers.%s in %s (SDK %s %s, %s); its read-only tools (%s) allowed by rules "
            "naming each, the others ask" % (mcp.SERVER, show(path), show(mcp.lib_dir()), "copied" if made
                                              else "up to date", size_text(mcp.lib_dir()), ", ".join(mcp.READ_ONLY)))
    elif prev_gemini.get("mcp"):
        out("gemini: mcp: mcpServers.%s removed from %s (--no-mcp)" % (mcp.SERVER, show(path)))
        if not mcp.used_by(record):
            mcp.remove()


def _write(out, created, change, policy_change, srec, threshold, events):
    """settings.json, then the policy rule, each said in a line (and what became of the threshold)."""
    change.apply(created)
    line = "gemini: %s " % show(change.path)
    if change.changed:
        line += "hooks merged (%d events)" % events
        if change.backup_path:
            line += ", backup %s" % show(change.backup_path)
    else:
        line += "unchanged"
    out(line)
    have = files.threshold_of(files.load(change.new, change.path)[0])
    if srec.get("threshold_set") is not None:
        out("gemini: model.compressionThreshold %g: Gemini compresses at %d tokens, after our hard ceiling"
            % (have, have * files.GEMINI_LIMIT))
    elif have is not None and have < threshold:
        out("gemini: your model.compressionThreshold %g makes Gemini compress at %d tokens, before our "
            "rotation; raise it to %g or more (doctor checks it)" % (have, have * files.GEMINI_LIMIT, threshold))
    policy_change.apply(created)
    out("gemini: %s %s: the handoff's write_file to a project's temp folder needs no approval (that path only)"
        % (show(policy_change.path), "written" if policy_change.changed else "unchanged"))


def still_installed(rec):
    """Is Gemini's install still there (its part of the record, or hooks of ours in its settings.json)?
    A file we cannot read may hold our hooks: yes."""
    if rec and any(k in rec for k in RECORD_KEYS):
        return True
    try:
        path = files.settings_path(files.gemini_home())
        return bool(files.ours(files.load(read(path), path)[0]))
    except InstallError:
        return True


def uninstall(out, rec):
    """Gemini's part, for the folder recorded and the current one: ``(problems, whether no hook of ours
    is left in a settings.json)``."""
    grec = (rec or {}).get("gemini") or {}
    homes = [grec["home"]] if grec.get("home") else []
    try:
        current = files.gemini_home()
    except InstallError as e:
        if not homes:
            out("gemini: %s: nothing to look at" % e)
        current = None
    if current and current not in homes:
        homes.append(current)
    problems, gone = 0, True
    for ghome in homes:
        mine = grec if grec.get("home") == ghome else {}
        more, left = _uninstall_home(out, ghome, mine.get("settings"))
        problems += more + _uninstall_policy(out, ghome, mine.get("policy") or {})
        gone = gone and not left
    return problems, gone


def _uninstall_policy(out, ghome, record):
    """Our policy file out, when it is still what we wrote (or what we would write); else left, and said."""
    path = files.policy_path(ghome)
    data = read(path)
    if data is None:
        return 0
    if settings.sha256(data) not in (record.get("sha256"), settings.sha256(files.policy_text(ghome).encode()),
                                     settings.sha256(files.policy_text(ghome, mcp.READ_ONLY).encode())):
        out("gemini: %s changed since install: left as it is (delete it yourself if you do not want it)" % show(path))
        return 0
    FileChange(path, data, None).apply([])
    out("gemini: %s removed" % show(path))
    try:
        os.rmdir(os.path.dirname(path))  # (only when empty: install may have made it)
    except OSError:
        pass
    return 0


def _uninstall_home(out, ghome, record):
    path = files.settings_path(ghome)
    old = read(path)
    try:
        found = files.ours(files.load(old, path)[0])
        new = files.plan_undo(old, record, where=path)
    except InstallError as e:
        out("gemini: %s -- left untouched, so our hooks are still in it; fix it and run uninstall again" % e)
        return 1, True
    if new != old:
        FileChange(path, old, new, keep_backup=True).apply([])
        out("gemini: %s %s" % (show(path), "deleted (install created it)" if new is None
                               else "our %d hooks removed" % len(found)))
    else:
        out("gemini: nothing of ours in %s" % show(path))
    return 0, False
