"""Drive the real Gemini CLI (0.61) in a throwaway HOME, offline, against a ``GeminiModel``.

A ``GeminiSandbox`` is a temp root holding HOME (with ``~/.gemini/settings.json`` for
API-key auth to the stand-in, telemetry, usage statistics and auto-update off), the
XDG dirs and TMPDIR, and ``project/``: a git repository with one commit, trusted the
way a user trusts a folder (``~/.gemini/trustedFolders.json``; never ``--skip-trust``
nor ``GEMINI_CLI_TRUST_WORKSPACE``, which cc-continuity must not use either).  Hooks go
into the user settings (timeouts in **milliseconds**); the recorder hook is the Codex
probe (``helpers.codex.PROBE``): one JSON row per call in ``hooks.jsonl`` (event,
payload, ``GEMINI*`` env, the transcript's size when it ran) and, where replies are
scripted for the event, the next one on stdout.

Every ``gemini`` runs in a process group of its own (the launcher relaunches itself as
a child node, and hooks are grandchildren): ``close()`` kills each group, then anything
still holding the root's path, and removes the root.  Facts behind the choices:
shared/reference/gemini-cli-0.61.md.
"""

import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from helpers import leftovers
from helpers.codex import PROBE, CodexSandbox
from helpers.gemini_model import SESSION_HEADER

GEMINI_BIN_ENV = "CC_CONTINUITY_GEMINI_BIN"
PINNED = "0.61.0"  # .ci/install-gemini.sh's default
MODEL = "gemini-2.5-flash"
FAKE_KEY = "scripted-gemini-model-not-a-secret"
HOOK_TIMEOUT_MS = 10000
EXIT_UNTRUSTED = 55  # headless in a folder that is not trusted

_ENV_FILTER = 'k.startswith("CODEX")'
assert _ENV_FILTER in PROBE, "helpers.codex.PROBE changed: the Gemini recorder needs its env filter"
RECORDER = PROBE.replace(_ENV_FILTER, 'k.startswith(("GEMINI", "CLAUDE"))').replace("Codex hook", "Gemini hook")


def find_gemini_bin():
    """The gemini executable: ``$CC_CONTINUITY_GEMINI_BIN`` (must exist), else the cache
    ``.ci/install-gemini.sh`` fills (under the real user's cache dir: tests move HOME), else
    ``gemini`` on PATH, else None."""
    def runnable(path):
        return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)

    given = os.environ.get(GEMINI_BIN_ENV)
    if given and not runnable(given):
        raise FileNotFoundError("%s=%s is not an executable file" % (GEMINI_BIN_ENV, given))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache")
    cache = os.environ.get("CC_GEMINI_CACHE") or os.path.join(base, "cc-continuity", "gemini-" + PINNED)
    candidates = (given, os.path.join(cache, "node_modules", ".bin", "gemini"), shutil.which("gemini"))
    return next((c for c in candidates if runnable(c)), None)


def is_header(record):
    return isinstance(record, dict) and "sessionId" in record and "kind" in record


class Run:
    """One finished ``gemini -p``: exit status, output, the session tag its requests carry, seconds."""

    def __init__(self, args, returncode, stdout, stderr, tag, seconds):
        self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr
        self.tag, self.seconds = tag, seconds

    def __repr__(self):
        return "Run(rc=%s, %.1fs, stdout=%r, stderr=%r)" % (self.returncode, self.seconds, self.stdout[-500:],
                                                             self.stderr[-1500:])


class GeminiSandbox:
    """One throwaway Gemini world under ``root`` (a fresh temp dir by default); ``model`` is a started
    ``GeminiModel``.  ``trusted=False`` leaves the project folder untrusted."""

    def __init__(self, gemini_bin, model, root=None, model_name=MODEL, trusted=True, settings=None, env=None):
        self.bin = gemini_bin
        self.model = model
        self.root = os.path.realpath(os.fspath(root) if root else tempfile.mkdtemp(prefix="gemini-sandbox-"))
        self.home = os.path.join(self.root, "home")
        self.project = self.work = os.path.join(self.root, "project")  # work: what CodexSandbox's helpers call it
        self.gemini_dir = os.path.join(self.home, ".gemini")
        self.log = os.path.join(self.root, "hooks.jsonl")
        self.replies = os.path.join(self.root, "replies")
        self.recorder = os.path.join(self.root, "recorder.py")
        self.extra_env = dict(env or {})
        self._groups = []
        self._runs = 0
        for d in (self.gemini_dir, self.project, self.replies, os.path.join(self.root, "tmp")):
            os.makedirs(d, exist_ok=True)
        with open(self.recorder, "w") as f:
            f.write(RECORDER)
        subprocess.run(["git", "init", "-q", "-b", "main", self.project], check=True)
        self.commit_files({"README.md": "A project for the Gemini CLI contract tests.\n"})
        self.settings = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                         "model": {"name": model_name},
                         "privacy": {"usageStatisticsEnabled": False},
                         "telemetry": {"enabled": False},
                         "general": {"enableAutoUpdate": False},  # (0.61 migrates disableAutoUpdate, rewriting the file)
                         "hooksConfig": {"enabled": True}}
        self.settings.update(settings or {})
        self.write_settings()
        if trusted:
            self.trust_folder()

    # CodexSandbox's: the same files, the same rows
    commit_files = CodexSandbox.commit_files
    script_replies = CodexSandbox.script_replies
    hook_calls = CodexSandbox.hook_calls

    # configuration
    @property
    def settings_path(self):
        return os.path.join(self.gemini_dir, "settings.json")

    def write_settings(self):
        with open(self.settings_path, "w") as f:
            json.dump(self.settings, f, indent=2)

    def trust_folder(self, path=None, level="TRUST_FOLDER"):
        """``~/.gemini/trustedFolders.json`` trusting ``path`` (the project): the trust dialog answered."""
        trusted = os.path.join(self.gemini_dir, "trustedFolders.json")
        table = {}
        if os.path.exists(trusted):
            with open(trusted) as f:
                table = json.load(f)
        table[path or self.project] = level
        with open(trusted, "w") as f:
            json.dump(table, f, indent=2)

    def add_hook(self, event, command, matcher="*", name=None, timeout_ms=HOOK_TIMEOUT_MS, sequential=False):
        """One command hook on ``event`` in the user settings; ``timeout_ms`` in milliseconds (Gemini's unit)."""
        hook = {"name": name or "%s-%d" % (event, len(self.settings.get("hooks", {}).get(event, []))),
                "type": "command", "command": command, "timeout": timeout_ms}
        group = {"matcher": matcher, "hooks": [hook]}
        if sequential:
            group["sequential"] = True
        self.settings.setdefault("hooks", {}).setdefault(event, []).append(group)
        self.write_settings()

    def install_ours(self, cc_home, python=None, config=None, args=()):
        """``cc-continuity install --agent gemini`` into this HOME, as a user runs it (the app copy, the launcher,
        our hooks and the policy rule in ``~/.gemini``), with ``cc_home`` as CC_CONTINUITY_HOME and ``config``
        (e.g. the window) written there first; returns the install's stdout.  The sandbox's own settings
        (auth, model) are read back afterwards, so ``add_hook`` keeps working."""
        from helpers import REPO

        os.makedirs(cc_home, mode=0o700, exist_ok=True)
        if config:
            with open(os.open(os.path.join(cc_home, "config.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                      "w") as f:
                json.dump(config, f)
        env = dict(self.env(), CC_CONTINUITY_HOME=cc_home, PYTHONPATH=REPO)
        p = subprocess.run([python or sys.executable, "-m", "cc_continuity", "install", "--agent", "gemini", *args],
                           cwd=self.project, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        with open(self.settings_path) as f:
            self.settings = json.load(f)
        return p.stdout

    def recorder_command(self, event):
        return "python3 %s %s %s %s" % (self.recorder, self.log, event, self.replies)

    def install_recorder(self, events, timeout_ms=HOOK_TIMEOUT_MS):
        """The recorder on each of ``events`` (it answers what ``script_replies`` gave it)."""
        for event in events:
            self.add_hook(event, self.recorder_command(event), name="record-" + event, timeout_ms=timeout_ms)

    # running
    def env(self, **extra):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8", "TERM": "xterm-256color",
               "TMPDIR": os.path.join(self.root, "tmp"), "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
               "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
               "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
               "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
               "GEMINI_API_KEY": FAKE_KEY, "GOOGLE_GEMINI_BASE_URL": self.model.url,
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        for tool in ("node", "python3"):  # the launcher's interpreter and the recorder's, first as a user's PATH has them
            found = shutil.which(tool)
            if found and os.path.dirname(found) not in env["PATH"].split(":"):
                env["PATH"] = os.path.dirname(found) + ":" + env["PATH"]
        env.update(self.extra_env)
        env.update(extra)
        return env

    def run_print(self, prompt, args=(), timeout=60, tag=None, env=None):
        """``gemini -p <prompt> <args>`` in the project; a ``Run``.  Its model requests carry
        ``tag`` (``run-<n>`` by default) as their session id; on timeout its group is killed."""
        self._runs += 1
        tag = tag or "run-%d" % self._runs
        argv = [self.bin, "-p", prompt] + list(args)
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=self.project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=self.env(GEMINI_CLI_CUSTOM_HEADERS="%s: %s" % (SESSION_HEADER, tag), **(env or {})))
        self._groups.append(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc.pid)
            out, err = proc.communicate()
            raise AssertionError("gemini -p ran over %ss\nstdout: %s\nstderr: %s" % (timeout, out[-2000:], err[-3000:]))
        finally:
            self._kill_group(proc.pid)  # whatever it left in its group (a hook's child) goes with it
        return Run(argv, proc.returncode, out, err, tag, time.monotonic() - started)

    # what happened
    def session_files(self):
        """``~/.gemini/tmp/<project>/chats/*.jsonl``, oldest first."""
        found = glob.glob(os.path.join(self.gemini_dir, "tmp", "*", "chats", "*.jsonl"))
        return sorted(found, key=lambda p: (os.path.getmtime(p), p))

    def session_records(self, path=None, size=None):
        """The records of a session file (the newest by default); with ``size``, only what its
        first ``size`` bytes held (what a hook that saw that size could read)."""
        with open(path or self.session_files()[-1], "rb") as f:
            data = f.read() if size is None else f.read(size)
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]

    # cleaning up
    @staticmethod
    def _kill_group(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self):
        """Kill every process group started here and anything else holding the root's path; remove the root."""
        for pgid in self._groups:
            self._kill_group(pgid)
        left = leftovers.wait_gone(self.root, 2.0)
        if left:
            leftovers.kill(left)
            left = leftovers.wait_gone(self.root, 5.0)
        shutil.rmtree(self.root, ignore_errors=True)
        return left
