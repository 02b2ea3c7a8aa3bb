"""Codex CLI's piece of install and uninstall: our hooks in ``$CODEX_HOME/hooks.json`` (:mod:`.files` reads
and writes its files), beside the same app copy and launcher; ``--trust`` records Codex's trust for those
entries only, in its config.toml, and uninstall takes out Codex's trust tables by the key of an entry of ours.

Codex's own, so in its host folder; it plans and applies with install/'s library (``install/plan.py``).
"""


import os
import time

from ... import config, paths
from ...errors import InstallError
from ...install import app, manifest, mcp, plan, settings
from ...install.plan import FileChange, install_app, install_link, load_manifest, print_plan, shared_record, config_changes, describe_config, read, show, size_text
from . import appserver
from . import files


NAME = "Codex CLI"
HOOK_FILE = "Codex's hooks.json"  # where its hooks are, as uninstall names it
RECORD_KEYS = ("codex",)  # the record's key that is Codex's (the rest, the app copy and launcher, are shared)
CLAUDE_ONLY = (("plugin", "--plugin"), ("unattended", "--unattended"), ("no_wrapper", "--no-wrapper"))
TRUST_HOW = ('Codex runs new hooks only once they are trusted: at its next start it shows "Hooks need review"; '
             'choose "Trust all and continue" there (it trusts every hook that screen lists; "Review hooks" shows '
             'each), or run `cc-continuity install --agent codex --trust` to trust these %d only. Until then '
             '`codex exec` skips them without a word')


def install(opts, out, check_only=False):
    """``install --agent codex``: the app copy and launcher as for Claude Code, our hooks merged into
    ``$CODEX_HOME/hooks.json``, and with ``--trust`` Codex's trust for those entries in its config.toml."""
    given = [flag for attr, flag in CLAUDE_ONLY if getattr(opts, attr)] + (["--shell"] * (opts.shell != "auto"))
    if given:
        raise InstallError("%s: Claude Code's only (its wrapper, plugin and permission prompts); --agent codex "
                           "installs Codex's hooks" % ", ".join(given))
    home = paths.home()
    user_home = os.path.expanduser("~")
    prev = load_manifest(out) or {}
    python, app_dir, launcher = app.base_interpreter(), app.app_link(home), app.launcher_path(home)

    # ---- plan (read only) ----
    changes = config_changes(opts)
    if changes:
        config.validate(changes, paths.config_file())
    chome = files.codex_home()
    hooks_file, cfg_file = files.hooks_path(chome), files.config_path(chome)
    prev_codex = prev.get("codex") if (prev.get("codex") or {}).get("home") == chome else {}
    old = read(hooks_file)
    new, hrec = files.plan_hooks(old, python, app_dir, prev_codex.get("hooks"), where=hooks_file)
    hooks_change = FileChange(hooks_file, old, new, keep_backup=True)
    ours = files.entries(files.parse_hooks(new, hooks_file), hooks_file)
    cfg_old = read(cfg_file)
    hashes, how = {e["key"]: e["hash"] for e in ours}, "computed as Codex 0.171 computes them"
    cfg_change, cfg_new = None, cfg_old
    if opts.trust:
        if not (check_only or opts.dry_run):  # Codex's own hashes (a process, a scratch dir): the real run only
            hashes, how = _codex_hashes(new, hooks_file, ours)
        cfg_new = files.plan_trust(cfg_old, hashes, where=cfg_file)
    mcp_on = bool(prev_codex.get("mcp")) if opts.mcp is None else opts.mcp
    if mcp_on:
        mcp.sdk_dists()  # (refused here, before anything is written, when the SDK is not beside us)
        cfg_new = files.plan_mcp(cfg_new, launcher, mcp.env(), where=cfg_file)
    elif prev_codex.get("mcp"):
        cfg_new = files.plan_unmcp(cfg_new, launcher, where=cfg_file)[0]
    if opts.trust or cfg_new != cfg_old:
        cfg_change = FileChange(cfg_file, cfg_old, cfg_new, keep_backup=True)
    launcher_change = FileChange(launcher, read(launcher), app.launcher_text(python, app_dir).encode("utf-8"),
                                 mode=0o700)
    link = app.path_link(user_home)
    link_state = "ours" if app.is_our_link(link, launcher) else ("foreign" if os.path.lexists(link) else "absent")
    file_changes = [launcher_change, hooks_change] + [ch for ch in (cfg_change,) if ch]

    if check_only:
        return 0
    if opts.dry_run:
        print_plan(out, changes, home, file_changes, link, link_state, launcher, [])
        if opts.trust:
            out("codex: trust: hashes %s (the real run asks `codex app-server` when there is one)" % how)
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
    record["codex"] = {
        "home": chome,
        "hooks": dict(hrec, path=hooks_file),
        "config": _codex_config_record(prev_codex.get("config") or {}, cfg_file, cfg_old, cfg_change, hashes,
                                       hooks_file, ours, prev_codex.get("hashes") or (), opts.trust),
        "hashes": sorted(set(prev_codex.get("hashes") or ()) | {e["hash"] for e in ours if e["hash"]}),
        "mcp": {"server": mcp.SERVER, "command": launcher} if mcp_on else None,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # doctor: our hooks fired since they were last written (hooks.log)
        "installed_ts": time.time() if hooks_change.changed or not prev_codex else prev_codex.get("installed_ts"),
    }
    if mcp_on:
        made = mcp.make()
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
    if cfg_change:
        cfg_change.apply(created)
    if mcp_on:
        out("codex: mcp: [mcp_servers.%s] in %s (SDK %s %s, %s); Codex runs its read-only tools (%s) in "
            "its sandbox without asking, the others ask" % (mcp.SERVER, show(cfg_file), show(mcp.lib_dir()),
                                                            "copied" if made else "up to date", size_text(mcp.lib_dir()),
                                                            ", ".join(mcp.READ_ONLY)))
    elif prev_codex.get("mcp"):
        out("codex: mcp: [mcp_servers.%s] removed from %s (--no-mcp)" % (mcp.SERVER, show(cfg_file)))
        if not mcp.used_by(record):
            mcp.remove()
    if opts.trust:
        out("codex: trust: our %d hooks %s in %s (%s; nothing else trusted)" % (
            len(ours), "trusted" if cfg_change.changed else "already trusted", show(cfg_file), how))
    elif _codex_trusted(cfg_old, ours):
        out("codex: trust: our %d hooks are trusted in %s" % (len(ours), show(cfg_file)))
    else:
        out("codex: " + TRUST_HOW % len(ours))
    record["created_dirs"] = sorted(set(created))
    manifest.save(record)
    out("record: %s" % show(manifest.path()))
    return 0


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
        state = files.trust_state(files.load_config(cfg_bytes))
    except InstallError:
        return False
    return bool(ours) and all(state.get(e["key"], {}).get("trusted_hash") == e["hash"] for e in ours)


def _codex_config_record(prev, path, old, change, hashes, hooks_file, ours, known_hashes, trusted=True):
    """What uninstall needs of config.toml: whether it existed and had an explicit ``[hooks.state]`` before
    our first install (Codex adds that header), and after ``--trust`` or ``--mcp`` the bytes before ours (exact
    when known: the file as it was when nobody wrote it since) and the keys we trusted."""
    same = prev.get("path") == path
    rec = {"path": path,
           "existed": prev.get("existed", old is not None) if same else old is not None,
           "state_header": prev.get("state_header", files.has_state_header(old)) if same else files.has_state_header(old)}
    for k in ("original", "original_known", "written_sha256", "trusted"):
        if same and k in prev:
            rec[k] = prev[k]
    if change is None or not change.changed:
        return rec
    if same and prev.get("original_known") and prev.get("written_sha256") == settings.sha256(old or b""):
        pass  # the file is still what we wrote: its original stays the one recorded
    elif not files.our_trust_keys(doc := files.load_config(old, path), hooks_file, ours, known_hashes) and \
            files.mcp_entry(doc) is None:
        rec["original"], rec["original_known"] = (None if old is None else old.decode("utf-8")), True
    else:
        rec["original"], rec["original_known"] = None, False
    rec["written_sha256"] = settings.sha256(change.new or b"")
    if trusted:
        rec["trusted"] = dict(hashes)
    return rec


def still_installed(rec):
    """Is Codex's install still there (its part of the record, or hooks of ours in its hooks.json)?"""
    try:
        hooks_file = files.hooks_path(files.codex_home())
    except files.CodexError:
        return bool(rec and any(k in rec for k in RECORD_KEYS))  # no CODEX_HOME Codex would use: no hook it runs
    return plan.still_installed(rec, RECORD_KEYS, hooks_file, files.mark())


def uninstall(out, rec):
    """Codex's part, for the CODEX_HOME recorded and the current one: ``(problems, whether no hook of ours
    is left in a hooks.json)``."""
    crec = (rec or {}).get("codex") or {}
    homes = [crec["home"]] if crec.get("home") else []
    try:
        current = files.codex_home()
    except files.CodexError as e:
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
    hooks_file, cfg_file = files.hooks_path(chome), files.config_path(chome)
    old = read(hooks_file)
    try:
        ours = files.entries(files.parse_hooks(old, hooks_file), hooks_file)
        new = files.plan_unhooks(old, record.get("hooks"), where=hooks_file)
    except InstallError as e:
        out("codex: %s -- left untouched, so our hooks are still in it; fix it and run uninstall again" % e)
        return 1, True
    cfg_old, cfg_new, removed, problem = read(cfg_file), None, [], None
    crec = record.get("config") or {}
    try:
        cfg_doc = files.load_config(cfg_old, cfg_file)
        keys = files.our_trust_keys(cfg_doc, hooks_file, ours, record.get("hashes") or ())
        removed = sorted(k for k in keys if k in files.trust_state(cfg_doc))
        if cfg_old is not None and crec.get("original_known") and crec.get("written_sha256") == settings.sha256(
                cfg_old):
            cfg_new = None if crec.get("original") is None else crec["original"].encode("utf-8")
        else:
            cfg_new, removed = files.plan_untrust(cfg_old, keys, not crec.get("state_header"), where=cfg_file)
            cfg_new, mcp_done = files.plan_unmcp(cfg_new, (record.get("mcp") or {}).get("command")
                                                 or app.launcher_path(paths.home()), where=cfg_file)
            if mcp_done != "not there":
                out("codex: mcp: [mcp_servers.%s] %s" % (mcp.SERVER, mcp_done))
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
