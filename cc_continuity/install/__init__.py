"""``cc-continuity install`` / ``uninstall``: into a user's Claude Code or Codex CLI setup and out again.

Install first *plans* every file change while only reading, so a file it
cannot use (unparseable settings.json, unbalanced block markers) stops it
before anything is written, and ``--dry-run`` can show each change as a
diff.  Then it applies them in an order that never leaves a hook pointing at
a missing file: config, app copy, launcher, settings.json, CLAUDE.md, shell
rc, skills, and last the record (``install.json``) uninstall works from.

``--agent codex`` merges the same hooks, as Codex takes them, into
``$CODEX_HOME/hooks.json`` (``hosts/codex/files.py``), beside the same app copy and launcher;
``--trust`` records Codex's trust for those entries only, in its config.toml.

Uninstall runs the other way round and removes only what is ours: hook
groups by command path, blocks by marker, skills and links by content,
Codex's trust tables by the key of an entry of ours.  It
works without the record too (then the replaced status line cannot be
brought back).  Backups of every user file we rewrite go to
``$CC_CONTINUITY_HOME/backups/`` (0600; the newest few kept), not beside the
file: a dotfiles repo should not collect copies that may hold tokens.

One piece per host: ``hosts/claude/install.py`` and ``hosts/codex/install.py``, each ``install(opts, out, check_only)``
and ``uninstall(out, record)``, on :mod:`.plan`'s file changes; this module runs them under one lock
and removes what they share (the app copy, the launcher, the record) once no agent's install is left.
"""

import os
import shutil

from .. import paths
from ..errors import InstallError
from ..share.fleet import left_on_remotes
from ..lock import Lock
from ..hosts.claude import install as claude_code
from ..hosts.codex import files as codex
from ..hosts.codex import install as codex_cli
from . import app, bootstrap, manifest, settings, tools
from .plan import AGENTS, AGENT_NAMES, load_manifest, size_text, unlink, purge_command, read, show


PIECES = {"claude": claude_code, "codex": codex_cli}  # each agent's piece: install(opts, out, check_only), uninstall
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
    piece = PIECES[opts.agent]
    if opts.dry_run:
        return piece.install(opts, out)  # only reads: no lock (it would create the state dir)
    piece.install(opts, lambda *a: None, check_only=True)  # a file it cannot use is refused before anything is written
    with _InstallLock():
        if opts.plugin:
            claude_code.install_plugin(out)  # before settings are planned: `claude plugin install` writes them too
        return piece.install(opts, out)  # planned again: the install before ours may have changed things


def check(opts):
    """Raise what :func:`install` would refuse (options, files it cannot use), writing nothing; else 0."""
    return PIECES[opts.agent].install(opts, lambda *a: None, check_only=True)


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
    rec = load_manifest(out)
    problems = 0
    running, kept = [], [a for a in AGENTS if a not in agents and _still_installed(a, rec)]
    for agent in agents:  # each agent's hook file first: no hook may outlive the files it runs
        more, gone = PIECES[agent].uninstall(out, rec)
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
        removed = unlink(launcher)
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
            % (show(home), size_text(home), purge_command(home, (rec or {}).get("checkout"))))
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
        return settings.has_ours(doc, settings.CLAUDE_MARKS if agent == "claude" else codex.mark())
    except InstallError:
        return True  # a file we cannot read may hold our hooks: keep what they run
