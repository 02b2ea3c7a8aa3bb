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

This is the library the hosts' pieces build on; it names no host.  Each host's piece
(``hosts/<name>/install.py``: ``install(opts, out, check_only)``, ``uninstall(out, record)``,
``still_installed(record)``, its ``NAME``, ``RECORD_KEYS`` and ``HOOK_FILE``) plans its own files on
:mod:`.plan`'s file changes and is given to :func:`install` / :func:`uninstall` by ``hosts/setup.py``,
which sits above the hosts; this module runs them under one lock and removes what they share (the app
copy, the launcher, the record) once no agent's install is left.
"""

import os
import shutil

from .. import paths
from ..errors import InstallError
from ..share.fleet import left_on_remotes
from ..lock import Lock
from . import app, bootstrap, manifest, mcp, tools
from .plan import load_manifest, size_text, unlink, purge_command, show


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


def install(piece, opts, out=print):
    """Install (or re-install / upgrade) one host's ``piece``; with ``opts.dry_run`` print diffs and write
    nothing."""
    if opts.dry_run:
        return piece.install(opts, out)  # only reads: no lock (it would create the state dir)
    piece.install(opts, lambda *a: None, check_only=True)  # a file it cannot use is refused before anything is written
    with _InstallLock():
        return piece.install(opts, out)  # planned again: the install before ours may have changed things


def check(piece, opts):
    """Raise what :func:`install` would refuse (options, files it cannot use), writing nothing; else 0."""
    return piece.install(opts, lambda *a: None, check_only=True)


def uninstall(pieces, agents, purge=False, out=print):
    """Remove what install added for ``agents``, of ``pieces`` (every host's piece by its ``--agent`` name, in
    the order they are named); ``purge`` also deletes ``$CC_CONTINUITY_HOME`` once no agent's install is
    left.  Returns an exit status."""
    if not os.path.isdir(paths.home()):
        return _uninstall(pieces, agents, purge, out)
    with _InstallLock(remove=True):
        return _uninstall(pieces, agents, purge, out)


def _uninstall(pieces, agents, purge, out):
    home = paths.home()
    user_home = os.path.expanduser("~")
    rec = load_manifest(out)
    problems = 0
    running, kept = [], [a for a, piece in pieces.items() if a not in agents and piece.still_installed(rec)]
    for agent in agents:  # each agent's hook file first: no hook may outlive the files it runs
        more, gone = pieces[agent].uninstall(out, rec)
        problems += more
        if not gone:
            running.append(agent)

    launcher = app.launcher_path(home)
    if running:
        out("app: kept, because %s still runs our hooks from it" % " and ".join(pieces[a].HOOK_FILE
                                                                               for a in running))
        problems += 1
    elif kept:
        out("app: kept, %s's hooks run from it (`cc-continuity uninstall` takes out both)" % " and ".join(
            pieces[a].NAME for a in kept))
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
        if mcp.remove(home):
            out("mcp: %s removed (the MCP SDK's copy)" % show(mcp.lib_dir(home)))
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
                       if not any(k in pieces[a].RECORD_KEYS for a in agents)})
        out("record: %s keeps %s's part" % (show(manifest.path()), " and ".join(pieces[a].NAME for a in kept)))
        if purge:
            out("purge: not done, %s's install still uses %s; `cc-continuity uninstall --purge` takes out both"
                % (" and ".join(pieces[a].NAME for a in kept), show(home)))
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

