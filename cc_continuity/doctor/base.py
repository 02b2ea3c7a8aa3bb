"""What every doctor check builds on: the row (:class:`Result`), what the checks look at
(:class:`Context`, read lazily and at most once) and small helpers (running a program, versions).

A check is a function ``check(ctx) -> Result``; the system's are :mod:`.system`'s, each host's are in
its folder (``hosts/<name>/doctor.py``), which builds on this module.  The Context names no host: it is
given each host's doctor unit (``hosts/checkup.py`` does that) and asks them what is theirs (is the
host set up here, which leftover files are its own).
"""

import calendar
import os
import re
import subprocess
import time

from .. import config, paths, safefile
from ..install import manifest, plugin, settings
from ..project import find_root

MIN_PYTHON = (3, 11)
MIN_CLAUDE = (2, 1, 209)
MIN_TMUX = (3, 2)  # libtmux's floor
PROBE_TIMEOUT_S = 5
TEMP_MIN_AGE_S = 300  # a younger temp file may belong to a write in progress
# The probe runs our hook for a made-up event, which the dispatcher must ignore and
# log (logs/hooks.log: one line per call, starting with the event); the log line is
# the proof it really ran, since the bootstrap exits 0 silently even when it cannot import.
PROBE_EVENT = "DoctorProbe"
# Claude Code's settings files are small; a bigger one is not read (a link to /dev/zero, a dump).
SETTINGS_MAX_BYTES = 16 << 20
_LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z ")


class Result:
    """One row of the report.  ``neutral``: a row that judges nothing (an agent not set up here); it is ok."""

    def __init__(self, name, ok, detail, fix=None, neutral=False):
        self.name = name
        self.ok = bool(ok) or neutral
        self.detail = detail
        self.fix = None if self.ok else fix
        self.neutral = neutral

    def as_dict(self):
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}

    def __repr__(self):
        return "Result(%r, %r, %r, %r)" % (self.name, self.ok, self.detail, self.fix)


class Context:
    """What the checks look at; everything is read lazily and at most once.

    ``hosts``: each host's doctor unit (``hosts/<name>/doctor.py``) by its ``--agent`` name, in the order
    the report shows them; ``hosts/checkup.Context`` gives every host's."""

    def __init__(self, env=None, cwd=None, fix=False, notify_test=False, agents=None, hosts=None):
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd or os.getcwd()
        self.fix = fix
        self.notify_test = notify_test
        self.asked = tuple(agents or ())  # `doctor --agent`: judged whether installed or not
        self.hosts = dict(hosts or {})
        self._cache = {}

    @property
    def agents(self):
        """The agents judged: the ones asked for, else the ones installed here."""
        return self.asked or self.installed()

    def installed(self):
        """The agents ``cc-continuity install`` (or a plugin) set up here, in the hosts' order (each host's
        unit judges its own: ``installed(ctx)``)."""
        return self._once("installed", lambda: tuple(a for a, unit in self.hosts.items() if unit.installed(self)))

    def own_copy(self):
        """The copy of cc-continuity the hooks run when it is not our app copy (a host's plugin that is the
        whole install: ``own_copy(ctx)`` of a host's unit), or None."""
        return self._once("own_copy", lambda: next(
            (root for root in (unit.own_copy(self) for unit in self.hosts.values()) if root), None))

    def stale_files(self, now=None):
        """The hosts' files of ours nobody picked up (a launch's environment: may hold secrets), safe to
        remove."""
        return [path for unit in self.hosts.values() for path in unit.stale_files(now)]

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

    def config(self):
        """(Config or None, error text or None)."""
        def load():
            try:
                return config.load(self.root, self.env), None
            except config.ConfigError as e:
                return None, str(e)
        return self._once("config", load)


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


def _log_time(line):
    m = _LOG_STAMP.match(line)
    if not m:
        return None
    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0)
    except ValueError:
        return None


def hook_calls(host, since):
    """``(hooks.log's path, [its lines of ``host``'s hook calls at or after ``since``])``, the rotated log
    first: each call of a host's entry writes one line, ``<time>Z <host>:<Event> ...``."""
    log = os.path.join(paths.logs_dir(), "hooks.log")
    calls = []
    for path in (log + ".1", log):
        try:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        calls += [line for line in lines if (" %s:" % host) in line[:40] and (_log_time(line) or 0) >= since]
    return log, calls
