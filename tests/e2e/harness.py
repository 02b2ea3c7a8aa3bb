"""Drive the real Claude Code binary in a throwaway sandbox.

A ``ClaudeSandbox`` is a temp HOME seeded so that no onboarding, theme, trust or
API-key dialog appears, a temp git project, a private tmux server and (unless
one is passed in) its own ``ScriptedModel``.  Claude sees only the environment
built here (``env -i`` style), so nothing of the developer's real setup leaks
in and nothing of the sandbox leaks out.  Facts behind every choice are in
shared/reference/claude-code-live-observations.md section 0.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from cc_continuity.procs import reap
from cc_continuity.rehearse.scripted_model import ScriptedModel

CLAUDE_BIN_ENV = "CC_CONTINUITY_CLAUDE_BIN"
DEFAULT_CACHE = "/opt/cc-claude-cache"
PINNED_VERSION = "2.1.328"  # .ci/install-claude.sh's default
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Only the last 20 characters are remembered as "approved" in ~/.claude.json.
FAKE_API_KEY = "sk-ant-api03-scripted-model-fake-key-not-a-secret-0123456789"
ALLOWED_TOOLS = ("Bash", "Write", "Edit", "Read", "Glob", "Grep", "Skill", "Agent", "TodoWrite",
                 "WebFetch", "NotebookEdit", "ToolSearch")
SESSION = "cc"  # tmux session name inside the private server
BUSY_MARK = "esc to interrupt"
HOOK_RECORDER = '''\
"""Test-only hook: append {"event", "env", "payload": <stdin JSON>} as one line."""
import json, os, sys
raw = sys.stdin.read()
try:
    payload = json.loads(raw)
except ValueError:
    payload = {"unparsed": raw}
env = {k: os.environ.get(k) for k in ("TMUX", "TMUX_PANE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR",
                                       "CC_CONTINUITY_HOME", "HOME")}
line = (json.dumps({"event": payload.get("hook_event_name"), "env": env, "payload": payload}) + "\\n").encode()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
os.write(fd, line)
os.close(fd)
'''


class ClaudeBinError(RuntimeError):
    """``CC_CONTINUITY_CLAUDE_BIN`` names something that is not a working claude."""


def find_claude_bin():
    """Path of the claude executable, or ``None`` when none is installed.

    ``$CC_CONTINUITY_CLAUDE_BIN`` wins and must be valid (CI sets it: a bad
    value is an error, not a skip); then the cache ``.ci/install-claude.sh``
    fills (``$CC_CLAUDE_CACHE`` alone when set, as for that script; else the
    user's cache dir and the old /opt one); then ``claude`` on PATH.
    """
    explicit = os.environ.get(CLAUDE_BIN_ENV)
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise ClaudeBinError("%s=%s is not an executable file" % (CLAUDE_BIN_ENV, explicit))
        return os.path.abspath(explicit)
    pinned = os.environ.get("CC_CLAUDE_CACHE")
    for cache in ([pinned] if pinned else default_caches()):
        if cache:
            candidate = os.path.join(cache, "node_modules", ".bin", "claude")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    on_path = shutil.which("claude")
    return os.path.abspath(on_path) if on_path else None


def default_caches(version=None):
    """Where ``.ci/install-claude.sh`` puts a version (newest layout first)."""
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir  # the real one: tests run with a temp HOME
    base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "cc-continuity")
    version = version or os.environ.get("CC_CLAUDE_VERSION") or PINNED_VERSION
    return [os.path.join(base, "claude-" + version), DEFAULT_CACHE]


def claude_version(claude_bin):
    """``"2.1.328"`` from ``claude --version`` (the seed must name the running version)."""
    out = subprocess.run([claude_bin, "--version"], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()})
    words = out.stdout.split()
    if out.returncode != 0 or not words:
        raise ClaudeBinError("%s --version failed (rc=%s): %s" % (claude_bin, out.returncode, out.stderr.strip()))
    return words[0]


def is_idle(screen):
    """Claude's input box is up and no turn is running.

    Idle = a line starting with the prompt glyph right under a horizontal rule,
    and no "esc to interrupt" anywhere (it shows while a model call or a Stop
    hook runs).
    """
    if BUSY_MARK in screen:
        return False
    lines = screen.splitlines()
    return any(line.lstrip().startswith("\u276f") and "\u2500\u2500\u2500" in lines[i - 1]
               for i, line in enumerate(lines) if i > 0)


def _short_tempdir():
    """A fresh dir with a short path: unix sockets (tmux, Claude's messaging socket) cap at ~107 bytes."""
    base = tempfile.gettempdir()
    if len(base) > 40:
        base = "/tmp"
    return os.path.realpath(tempfile.mkdtemp(prefix="ccsb-", dir=base))


def _write_json(path, data):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


class ClaudeSandbox:
    """One isolated Claude Code installation: HOME, project, tmux server, model.

    Use as a context manager (or call ``close()``): teardown kills the tmux
    server and any claude it ran, stops an owned model and removes the
    sandbox (kept when ``keep=True`` or ``CC_E2E_KEEP=1``, for debugging).

    ``scenario`` starts an owned ScriptedModel (log: ``<root>/model.jsonl``);
    ``model`` shares a running one instead.  ``model_name`` and
    ``max_context_tokens`` set ANTHROPIC_MODEL / CLAUDE_CODE_MAX_CONTEXT_TOKENS;
    ``extra_env`` adds variables (a None value removes one).
    """

    def __init__(self, claude_bin, *, scenario=None, model=None, model_name=None, max_context_tokens=None,
                 extra_env=None, width=200, height=50, keep=None, version=None, python_first=None):
        if scenario is not None and model is not None:
            raise ValueError("pass a scenario or a running model, not both")
        self.claude_bin = claude_bin
        self.version = version or claude_version(claude_bin)
        self.root = _short_tempdir()
        self.home = os.path.join(self.root, "home")
        self.project = os.path.join(self.root, "project")
        self.tmp = os.path.join(self.root, "tmp")
        self.runtime = os.path.join(self.root, "run")
        self.cc_home = os.path.join(self.root, "cchome")
        self.socket = os.path.join(self.root, "tmux.sock")
        self.hook_log = os.path.join(self.root, "hooks.jsonl")
        self.model_name = model_name
        self.max_context_tokens = max_context_tokens
        self.extra_env = dict(extra_env or {})
        self.python_first = python_first  # a folder put first on PATH (its python3: what a user's PATH finds)
        self.size = (width, height)
        self.keep = keep if keep is not None else os.environ.get("CC_E2E_KEEP") == "1"
        self._owns_model = model is None
        self.model = model or ScriptedModel(scenario, log_path=os.path.join(self.root, "model.jsonl")).start()
        self.pane = None
        self.claude_pid = None
        self._pids = set()
        self._keyboards = []
        try:
            for d in (self.home, self.project, self.tmp, self.runtime, self.cc_home):
                os.makedirs(d, mode=0o700)
            self._seed_home()
            self._init_project()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ setup

    def _seed_home(self):
        _write_json(self.claude_json_path, {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": self.version,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [FAKE_API_KEY[-20:]], "rejected": []},
            "projects": {os.path.realpath(self.project): {"hasTrustDialogAccepted": True}},
            "hasSeenAutoDefaultNudge": True,
        })
        # Permissions only: `cc-continuity install` merges its hooks into this file later.
        _write_json(self.settings_path, {"permissions": {"defaultMode": "acceptEdits",
                                                         "allow": list(ALLOWED_TOOLS)}})
        with open(os.path.join(self.home, ".gitconfig"), "w") as f:
            f.write("[user]\n\tname = Sandbox\n\temail = sandbox@example.invalid\n"
                    "[init]\n\tdefaultBranch = main\n")

    def _init_project(self):
        """A real repo with one commit on ``main`` (the sandbox's .gitconfig names the author)."""
        self.run(["git", "init", "-q", "-b", "main"], check=True)
        with open(os.path.join(self.project, "README.md"), "w") as f:
            f.write("# sandbox project\n")
        self.run(["git", "add", "README.md"], check=True)
        self.run(["git", "commit", "-q", "-m", "initial"], check=True)

    @property
    def claude_json_path(self):
        return os.path.join(self.home, ".claude.json")

    @property
    def settings_path(self):
        return os.path.join(self.home, ".claude", "settings.json")

    def settings(self):
        with open(self.settings_path, encoding="utf-8") as f:
            return json.load(f)

    def write_settings(self, data):
        _write_json(self.settings_path, data)

    def trust(self, directory):
        """Pre-accept the trust dialog for another directory."""
        with open(self.claude_json_path, encoding="utf-8") as f:
            seed = json.load(f)
        seed["projects"][os.path.realpath(directory)] = {"hasTrustDialogAccepted": True}
        _write_json(self.claude_json_path, seed)

    def add_hook(self, event, command, matcher=None, timeout=None):
        """Append a command hook for ``event`` to the sandbox's user settings."""
        settings = self.settings()
        handler = {"type": "command", "command": command}
        if timeout is not None:
            handler["timeout"] = timeout
        group = {"hooks": [handler]}
        if matcher is not None:
            group["matcher"] = matcher
        settings.setdefault("hooks", {}).setdefault(event, []).append(group)
        self.write_settings(settings)

    def record_hooks(self, events):
        """Install a test-only hook on each event that appends its stdin to ``hook_log``."""
        script = os.path.join(self.root, "hook_recorder.py")
        with open(script, "w") as f:
            f.write(HOOK_RECORDER)
        command = " ".join(shlex.quote(p) for p in (sys.executable, script, self.hook_log))
        for event in events:
            self.add_hook(event, command)
        return self.hook_log

    def hook_records(self, event=None):
        """Records written by ``record_hooks``: dicts with ``event``, ``env``, ``payload``."""
        try:
            with open(self.hook_log, encoding="utf-8") as f:
                # a line still being appended has no newline yet: leave it for the next call
                records = [json.loads(line) for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []
        return [r for r in records if event is None or r["event"] == event]

    def transcript_dir(self):
        """Where Claude writes this project's transcripts."""
        name = "".join(c if c.isalnum() else "-" for c in os.path.realpath(self.project))
        return os.path.join(self.home, ".claude", "projects", name)

    # ------------------------------------------------------------ processes

    def env(self):
        """The complete environment claude and every helper command get."""
        path = os.pathsep.join(dict.fromkeys([
            *([self.python_first] if self.python_first else []),
            os.path.dirname(sys.executable),  # `python`, `cc-continuity` of the running interpreter
            os.path.dirname(self.claude_bin),
            *os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)]))
        env = {
            "HOME": self.home,
            "PATH": path,
            "USER": os.environ.get("USER", "sandbox"),
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": self.model.url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "TMPDIR": self.tmp,
            "CLAUDE_CODE_TMPDIR": self.tmp,
            "XDG_RUNTIME_DIR": self.runtime,
            "CC_CONTINUITY_HOME": self.cc_home,
        }
        # How this machine reaches the package registries (a plugin's first session builds its optional
        # packages there): its certificate store and proxy, as a user's own environment carries them.
        for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTPS_PROXY",
                     "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
            if os.environ.get(name):
                env.setdefault(name, os.environ[name])
        if self.model_name:
            env["ANTHROPIC_MODEL"] = self.model_name
        if self.max_context_tokens:
            env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(self.max_context_tokens)
        for name, value in self.extra_env.items():  # None removes a default
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def run(self, cmd, *, input=None, timeout=120, check=False, cwd=None, env=None):
        """Run ``cmd`` with the sandbox env (in the project dir); captured text output."""
        full_env = self.env()
        full_env.update(env or {})
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or self.project, env=full_env,
                              stdin=None if input is not None else subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise AssertionError("%s failed (rc=%d)\nstdout: %s\nstderr: %s"
                                 % (cmd, proc.returncode, proc.stdout, proc.stderr))
        return proc

    def cli(self, *args, timeout=120):
        """``cc-continuity <args>`` of *this* checkout (not whatever is installed on PATH)."""
        return self.run([sys.executable, "-m", "cc_continuity", *args], timeout=timeout,
                        env={"PYTHONPATH": REPO_ROOT})

    def run_print(self, prompt, args=(), timeout=120):
        """``claude -p <prompt>`` in the project; returns the CompletedProcess."""
        return self.run([self.claude_bin, "-p", prompt, *args], timeout=timeout)

    def tmux(self, *args, check=True):
        """Run a tmux command against the sandbox's private server."""
        proc = subprocess.run(["tmux", "-u", "-f", "/dev/null", "-S", self.socket, *args],
                              capture_output=True, text=True, timeout=15, env=self.env(),
                              stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise RuntimeError("tmux %s failed: %s" % (" ".join(args), proc.stderr.strip()))
        return proc.stdout

    def start_claude(self, args=(), wait=True, timeout=30, tmux_env=True):
        """Start interactive claude in a tmux session; by default wait for the idle prompt.

        The tmux server inherits exactly ``env()``; tmux adds TMUX and TMUX_PANE
        in the pane, so hook processes can find it (``tmux_env=False``: not, as for a
        claude started outside tmux; the harness still reads its screen).  The pane stays
        after claude exits (remain-on-exit) so its last screen can still be read; starting
        again (e.g. with ``--resume``) replaces it.
        """
        width, height = self.size
        if self.pane is None:
            self.tmux("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height),
                      "-c", self.project, *self._argv(args, tmux_env),
                      ";", "set-option", "-w", "-t", SESSION, "remain-on-exit", "on")
        elif self.claude_alive():
            raise RuntimeError("claude is still running in this sandbox")
        else:  # reuse the dead pane: killing the last session would take the server down mid-start
            self.tmux("respawn-pane", "-t", self.pane, "-c", self.project, *self._argv(args, tmux_env))
        self.pane, pid = self.tmux("display-message", "-p", "-t", SESSION, "#{pane_id} #{pane_pid}").split()
        self.claude_pid = int(pid)
        self._pids.add(self.claude_pid)
        if wait:
            self.wait_idle(timeout)
        return self.pane

    def _argv(self, args, tmux_env):
        """claude and its arguments; without tmux's variables through env, which execs it (the same pid)."""
        front = [] if tmux_env else ["env", "-u", "TMUX", "-u", "TMUX_PANE"]
        return [*front, self.claude_bin, *args]

    def keyboard(self):
        """A person at a terminal attached to the sandbox's tmux session (their keys stamp tmux's
        activity, unlike ``send-keys``); close it when done."""
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from helpers import Keyboard

        kb = Keyboard(["tmux", "-u", "-f", "/dev/null", "-S", self.socket], SESSION, env=self.env(),
                      size=self.size)
        self._keyboards.append(kb)
        return kb

    def claude_alive(self):
        if self.pane is None:
            return False
        return self.tmux("display-message", "-p", "-t", self.pane, "#{pane_dead}").strip() == "0"

    def exit_claude(self, timeout=15):
        """Type ``/exit`` and wait until the claude process has ended."""
        self.submit("/exit")
        self.wait_for(lambda: not self.claude_alive(), timeout, what="claude to exit")

    # ------------------------------------------------------------ keyboard and screen

    def type(self, text):
        """Type ``text`` literally (no key-name interpretation)."""
        self.tmux("send-keys", "-t", self._pane(), "-l", "--", text)

    def enter(self):
        self.tmux("send-keys", "-t", self._pane(), "Enter")

    def keys(self, *names):
        """Send tmux key names, e.g. ``keys("C-u")`` to empty the input box."""
        self.tmux("send-keys", "-t", self._pane(), *names)

    def submit(self, text):
        """Type ``text`` and press Enter."""
        self.type(text)
        self.enter()

    def ask(self, text, timeout=30):
        """Submit a prompt, wait for the main request carrying it and for the turn to end; return the request."""
        since = self.model.mark()
        self.submit(text)
        req = self.model.wait_for(
            lambda r: r.seq >= since and r.kind == "main" and text in r.latest_text, timeout)
        self.wait_idle(timeout)
        return req

    def screen(self, scrollback=0):
        """The pane's text (plus ``scrollback`` lines of history)."""
        args = ["capture-pane", "-p", "-t", self._pane()]
        if scrollback:
            args += ["-S", str(-scrollback)]
        return self.tmux(*args)

    def wait_for(self, predicate, timeout=20.0, interval=0.1, what=None):
        """Poll ``predicate()`` until it returns something truthy; return that value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError("timed out after %.1fs waiting for %s\n--- screen ---\n%s"
                                   % (timeout, what or getattr(predicate, "__name__", "condition"),
                                      self._safe_screen()))
            time.sleep(interval)

    def wait_for_text(self, text, timeout=20.0):
        """Wait until ``text`` is on screen; return the screen."""
        return self.wait_for(lambda: (lambda s: s if text in s else None)(self.screen()), timeout,
                             what=repr(text))

    def wait_idle(self, timeout=30.0, settle=0.3):
        """Wait until the input box is idle and stays idle for ``settle`` seconds; return the screen."""
        state = {"since": None}

        def settled():
            screen = self.screen()
            if not is_idle(screen):
                state["since"] = None
                return None
            now = time.monotonic()
            state["since"] = state["since"] or now
            return screen if now - state["since"] >= settle else None

        return self.wait_for(settled, timeout, what="idle prompt")

    def _pane(self):
        if self.pane is None:
            raise RuntimeError("claude is not running in this sandbox; call start_claude()")
        return self.pane

    def _safe_screen(self):
        try:
            return self.screen() if self.pane else "(no pane)"
        except Exception as e:  # the diagnostic must not mask the timeout
            return "(screen unavailable: %s)" % e

    # ------------------------------------------------------------ teardown

    def close(self):
        """Kill the tmux server and every claude it ran; stop an owned model; remove the sandbox."""
        for kb in self._keyboards:
            kb.close()
        if os.path.exists(self.socket):
            try:
                panes = self.tmux("list-panes", "-a", "-F", "#{pane_pid}", check=False)
                self._pids.update(int(p) for p in panes.split() if p.isdigit())
            except (OSError, subprocess.SubprocessError):
                pass
            subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=15)
        self._reap()
        if self._owns_model and self.model is not None:
            self.model.stop()
        if self.keep:
            sys.stderr.write("sandbox kept at %s\n" % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def _reap(self):
        """SIGHUP from kill-server usually ends claude; make sure, then SIGKILL stragglers."""
        reap(self._pids)
        self._pids.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
