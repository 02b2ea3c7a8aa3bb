"""What an install changes, planned while only reading: file changes (shown as diffs), the config, the record.

Each host's piece (``hosts/claude/install.py``, ``hosts/codex/install.py``) plans its own files with these and applies
them in an order that never leaves a hook pointing at a missing file.  Backups of every user file we
rewrite go to ``$CC_CONTINUITY_HOME/backups/`` (0600; the newest few kept), not beside the file.
"""


import difflib
import os
import shlex
import time

from .. import __version__, atomic, paths
from ..errors import InstallError
from . import app, blocks, manifest, settings, skills


CLAUDE_MD_BLOCK = "claude-md"
WRAPPER_BLOCK = "wrapper"
CLAUDE_MD_TEXT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "claude_md_block.md")
BACKUPS_KEPT = 10
USER_DIR_MODE = 0o700


class Options:
    """What ``cc-continuity install`` was asked to do (mirrors the CLI flags)."""

    def __init__(self, window=None, thresholds=None, ntfy=None, unattended=False, shell="auto",
                 no_wrapper=False, dry_run=False, plugin=False, agent="claude", trust=False, mcp=None):
        self.window, self.thresholds, self.ntfy, self.unattended = window, thresholds, ntfy, unattended
        self.shell, self.no_wrapper, self.dry_run, self.plugin = shell, no_wrapper, dry_run, plugin
        self.agent, self.trust = agent, trust
        self.mcp = mcp  # register the MCP server (True), take it out (False), or as the last install left it (None)


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


def still_installed(rec, keys, hook_file, mark):
    """Is an agent's install still there: its part of the record (``keys``), or hooks of ours (``mark``) in its
    ``hook_file``?  A file we cannot read may hold our hooks: yes, so what they run is kept."""
    if rec and any(k in rec for k in keys):
        return True
    try:
        data = read(hook_file)
        doc = settings.parse(settings.decode(data, hook_file), hook_file) if data else {}
        return settings.has_ours(doc, mark)
    except InstallError:
        return True


def load_manifest(out):
    try:
        return manifest.load()
    except manifest.ManifestError as e:
        out("record: %s (ignored)" % e)
        return None


def verb(change):
    if not change.changed:
        return "unchanged"
    return "updated" if change.had_block else "added"


def install_link(out, link, state, launcher, created, shell=None, rc_files=()):
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


def shared_record(prev, keep, python, app_dir, launcher, path_link, created):
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


def print_plan(out, changes, home, file_changes, link, link_state, launcher, foreign):
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


def install_app(out, home, python, app_dir, launcher, launcher_change, created):
    """The app copy and the launcher, for any agent's install."""
    copied, dists = app.install(home)
    out("app: cc-continuity %s %s %s (with %s)" % (
        __version__, "copied to" if copied else "up to date in", show(app_dir),
        ", ".join(d.metadata["Name"] for d in dists)))
    launcher_change.apply(created)
    os.chmod(launcher, 0o700)
    out("launcher: %s %s" % (show(launcher), "written" if launcher_change.changed else "unchanged"))


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


def size_text(top):
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


def unlink(path):
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
