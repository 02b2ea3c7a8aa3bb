"""Drive the real Codex CLI binary in a throwaway HOME and CODEX_HOME, offline.

A ``CodexSandbox`` is a temp HOME, a temp CODEX_HOME whose config.toml points the
model provider at a local ``ResponsesModel``, a git work dir, and a probe hook for
any events asked for: it appends ``{"event", "env", "payload", "transcript_size", "ppid", "parent"}`` per call to
``hooks.jsonl`` and, when a reply is scripted for that event, prints it (one per
call, in order).  Codex sees only the environment built here.
Facts behind the choices: shared/reference/codex-cli-0.171.md.
"""

import glob
import json
import os
import pwd
import shlex
import shutil
import subprocess
import time

CODEX_BIN_ENV = "CC_CONTINUITY_CODEX_BIN"
PINNED = "0.171.0"  # .ci/install-codex.sh's default
FAKE_KEY = "scripted-responses-model-not-a-secret"
PASTE_SETTLE_S = 0.3  # after typed text, before its Enter: past the composer's paste-burst window (see CodexTui.type)
PROBE = '''\
"""Test-only Codex hook: log the call, print the next scripted reply for the event (if any)."""
import json, os, sys
log, event, replies = sys.argv[1], sys.argv[2], sys.argv[3]
raw = sys.stdin.read()
try:
    payload = json.loads(raw)
except ValueError:
    payload = {"unparsed": raw}
env = {k: v for k, v in os.environ.items() if k.startswith("CODEX") or k in ("HOME", "TMUX", "TMUX_PANE")}
try:  # who ran the hook: the TUI itself, or its background app-server
    with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
        parent = [a.decode() for a in f.read().split(b"\\0") if a][:3]
except OSError:
    parent = None
path = payload.get("transcript_path") if isinstance(payload, dict) else None
size = os.path.getsize(path) if isinstance(path, str) and os.path.exists(path) else None  # what was flushed
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
os.write(fd, (json.dumps({"event": event, "env": env, "payload": payload, "transcript_size": size,
                                "ppid": os.getppid(), "parent": parent}) + "\\n").encode())
os.close(fd)
script = os.path.join(replies, event + ".json")
if os.path.exists(script):
    with open(script) as f:
        outputs = json.load(f)
    count = os.path.join(replies, event + ".n")
    n = int(open(count).read()) if os.path.exists(count) else 0
    with open(count, "w") as f:
        f.write(str(n + 1))
    if n < len(outputs) and outputs[n] is not None:
        sys.stdout.write(outputs[n] if isinstance(outputs[n], str) else json.dumps(outputs[n]))
'''


def find_codex_bin():
    """The native codex executable: ``$CC_CONTINUITY_CODEX_BIN`` (must exist), else the cache
    ``.ci/install-codex.sh`` fills (under the real user's cache dir: tests move HOME), else None."""
    given = os.environ.get(CODEX_BIN_ENV)
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise FileNotFoundError("%s=%s is not an executable file" % (CODEX_BIN_ENV, given))
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache")
    cache = os.environ.get("CC_CODEX_CACHE") or os.path.join(base, "cc-continuity", "codex-" + PINNED)
    for pattern in ("vendor/*/bin/codex", "vendor/*/codex/codex"):
        found = sorted(glob.glob(os.path.join(cache, "node_modules", "@openai", "codex-*", pattern)))
        if found:
            return found[0]
    return None


def toml_value(value):
    """A TOML literal for a str/int/bool/list (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[%s]" % ", ".join(toml_value(v) for v in value)
    raise TypeError("no TOML for %r" % (value,))


class CodexSandbox:
    """One throwaway Codex world under ``root``; ``model`` is a started ResponsesModel."""

    def __init__(self, codex_bin, model, root, window=20000, config=None):
        self.bin = codex_bin
        self.model = model
        self.root = os.fspath(root)
        self.home = os.path.join(self.root, "home")
        self.codex_home = os.path.join(self.root, "codex-home")
        self.work = os.path.join(self.root, "work")
        self.log = os.path.join(self.root, "hooks.jsonl")
        self.replies = os.path.join(self.root, "replies")
        self.probe = os.path.join(self.root, "probe.py")
        for d in (self.home, self.codex_home, self.work, self.replies):
            os.makedirs(d, exist_ok=True)
        with open(self.probe, "w") as f:
            f.write(PROBE)
        subprocess.run(["git", "init", "-q", "-b", "main", self.work], check=True)
        # Offline: with analytics and plugins on, every run looks up ab.chatgpt.com, chatgpt.com and
        # api.github.com (seen with strace); these two keys leave it no name to look up.
        settings = {"model": "scripted-model", "model_provider": "scripted", "model_context_window": window,
                    "approval_policy": "never", "sandbox_mode": "danger-full-access",
                    "check_for_update_on_startup": False, "analytics.enabled": False, "features.plugins": False}
        settings.update(config or {})
        self.write_config(settings)

    # configuration
    def write_config(self, settings, tail=""):
        """config.toml: top-level ``settings``, the scripted provider, then ``tail`` (raw TOML)."""
        lines = ["%s = %s" % (k, toml_value(v)) for k, v in settings.items()]
        lines += ["", "[model_providers.scripted]", 'name = "scripted"',
                  "base_url = %s" % toml_value(self.model.base_url), 'wire_api = "responses"',
                  'env_key = "SCRIPTED_API_KEY"', ""]
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines) + tail)

    @property
    def config_path(self):
        return os.path.join(self.codex_home, "config.toml")

    @property
    def hooks_path(self):
        return os.path.join(self.codex_home, "hooks.json")

    def probe_command(self, event):
        return "python3 %s %s %s %s" % (self.probe, self.log, event, self.replies)

    def install_probe(self, events, timeout=10, extra=None):
        """$CODEX_HOME/hooks.json: the probe on each of ``events`` (``extra``: more handler keys per event)."""
        table = {}
        for event in events:
            handler = {"type": "command", "command": self.probe_command(event), "timeout": timeout}
            handler.update((extra or {}).get(event, {}))
            table[event] = [{"hooks": [handler]}]
        with open(self.hooks_path, "w") as f:
            json.dump({"hooks": table}, f, indent=2)

    def trust_folder(self, path=None):
        """config.toml with ``path`` (the work dir) trusted: the first-launch "Trust this folder?" answered."""
        with open(self.config_path, "a") as f:
            f.write('\n[projects.%s]\ntrust_level = "trusted"\n' % json.dumps(path or self.work))

    def trust_hooks(self, hooks):
        """config.toml trusting each ``hooks/list`` entry given, as the review screen would (its key, its hash)."""
        with open(self.config_path, "a") as f:
            for h in hooks:
                f.write('\n[hooks.state.%s]\ntrusted_hash = "%s"\n' % (json.dumps(h["key"]), h["currentHash"]))

    def script_replies(self, event, outputs):
        """The probe's stdout for its next calls on ``event``: a dict (JSON), a str, or None (nothing)."""
        with open(os.path.join(self.replies, event + ".json"), "w") as f:
            json.dump(outputs, f)

    # running
    def env(self, **extra):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "CODEX_HOME": self.codex_home,
               "SCRIPTED_API_KEY": FAKE_KEY, "LANG": "C.UTF-8", "TERM": "xterm-256color",
               "TMPDIR": os.path.join(self.root, "tmp")}
        python = shutil.which("python3")
        if python:  # the probe's interpreter first, as the user's PATH would have it
            env["PATH"] = os.path.dirname(python) + ":" + env["PATH"]
        os.makedirs(env["TMPDIR"], exist_ok=True)
        env.update(extra)
        return env

    def exec(self, prompt, *args, bypass_trust=True, timeout=60, sub=()):
        """``codex exec [sub] [args] <prompt>`` in the work dir, stdin closed; the CompletedProcess."""
        cmd = [self.bin, "exec", "--skip-git-repo-check"]
        if bypass_trust:
            cmd.append("--dangerously-bypass-hook-trust")
        cmd += list(sub) + list(args) + [prompt]
        return subprocess.run(cmd, cwd=self.work, env=self.env(), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)

    def resume_last(self, prompt, *args, bypass_trust=True, timeout=60):
        """``codex exec resume --last <prompt>``: the newest thread of the work dir, one more turn."""
        return self.exec(prompt, *args, bypass_trust=bypass_trust, timeout=timeout, sub=("resume", "--last"))

    def app_server(self, *calls, timeout=30):
        """``codex app-server`` (stdio JSON-RPC): initialize, then each ``(method, params)``; their results."""
        proc = subprocess.Popen([self.bin, "app-server"], cwd=self.work, env=self.env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            results = []
            for i, (method, params) in enumerate([("initialize", {"clientInfo": {"name": "tests", "version": "0"}})]
                                                 + list(calls)):
                proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
                proc.stdin.flush()
                deadline = time.monotonic() + timeout
                while True:  # notifications come in between: skip to our answer
                    line = proc.stdout.readline()
                    if not line or time.monotonic() > deadline:
                        raise AssertionError("app-server gave no answer to %s" % method)
                    msg = json.loads(line)
                    if msg.get("id") == i:
                        break
                if "error" in msg:
                    raise AssertionError("app-server %s: %s" % (method, msg["error"]))
                results.append(msg["result"])
            return results[1:]
        finally:
            proc.kill()
            proc.wait(10)

    def hooks_list(self, cwd=None):
        """The hooks Codex sees for the work dir (``hooks/list``): key, source, currentHash, trustStatus, ..."""
        (got,) = self.app_server(("hooks/list", {"cwds": [cwd or self.work]}))
        (entry,) = got["data"]
        assert entry["errors"] == [], entry["errors"]
        return entry["hooks"]

    # what happened
    def hook_calls(self, event=None):
        try:
            with open(self.log, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []
        return [r for r in rows if event is None or r["event"] == event]

    def rollouts(self):
        """Every rollout file, oldest first."""
        return sorted(glob.glob(os.path.join(self.codex_home, "sessions", "*", "*", "*", "rollout-*.jsonl")),
                      key=os.path.getmtime)


def ok(p):
    """``p`` (a CompletedProcess) when it exited 0, else AssertionError with the ends of its output."""
    assert p.returncode == 0, "rc %d\n%s\n%s" % (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p


class CodexTui:
    """The Codex TUI of ``box`` in a private tmux server (``tmux -S <socket>``), driven by typing; in the
    box's work dir unless ``cwd`` says where."""

    def __init__(self, box, *args, size=(160, 50), cwd=None):
        self.box = box
        self.socket = os.path.join(box.root, "tmux.sock")
        env = box.env()
        # The pane's own TMUX / TMUX_PANE go through (a rotator finds its pane by them); nothing else does.
        assign = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items())
        cmd = 'cd %s && exec env -i %s TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" %s --no-alt-screen %s' % (
            shlex.quote(cwd or box.work), assign, shlex.quote(box.bin), " ".join(shlex.quote(a) for a in args))
        # remain-on-exit: a Codex that exits leaves its last screen and status to read, not a gone server.
        self.tmux("new-session", "-d", "-s", "cx", "-x", str(size[0]), "-y", str(size[1]), cmd, ";",
                  "set-option", "-t", "cx", "remain-on-exit", "on")
        self.pane = self.tmux("display-message", "-p", "-t", "cx", "#{pane_id}").strip()
        self.pid = int(self.tmux("display-message", "-p", "-t", "cx", "#{pane_pid}").strip())

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.socket] + list(args), capture_output=True, text=True,
                              check=True, timeout=10).stdout

    def screen(self):
        text = self.tmux("capture-pane", "-p", "-t", self.pane)
        dead = self.tmux("display-message", "-p", "-t", self.pane, "#{pane_dead} #{pane_dead_status}").split()
        if dead and dead[0] == "1":
            raise AssertionError("codex exited (status %s); its last screen:\n%s" % (dead[1:], text))
        return text

    def wait_screen(self, needle, timeout=20.0):
        """Poll the pane until ``needle`` shows; the screen, or AssertionError with the last one."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if needle in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError("%r not on screen within %.0fs:\n%s" % (needle, timeout, text))
            time.sleep(0.1)

    def wait_gone(self, needle, timeout=20.0):
        """Poll the pane until ``needle`` is no longer on it (a cleared screen); the screen."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if needle not in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError("%r still on screen after %.0fs:\n%s" % (needle, timeout, text))
            time.sleep(0.1)

    def type(self, text, enter=True, settle=PASTE_SETTLE_S):
        """``text`` sent literally (``send-keys -l``), seen in the composer, then Enter as a key of its own.

        Enter in the same burst as the text is taken as part of a paste (a newline): measured,
        Enter 0 ms after the text submitted 1 of 10 prompts, 20 ms after 9 of 10, 50 ms 10 of 10."""
        self.tmux("send-keys", "-t", self.pane, "-l", text)
        self.wait_screen(text.splitlines()[0][-40:], timeout=10)
        if enter:
            time.sleep(settle)
            self.tmux("send-keys", "-t", self.pane, "Enter")

    def choose(self, key, shown, attempts=5):
        """Press ``key`` on a menu until ``shown`` (the moved selection) is on screen; the presses it took.

        A key sent as a screen first paints can be dropped (1 of 10 runs of the trust screen): a
        press counts once the menu shows it, not when it is sent."""
        for n in range(1, attempts + 1):
            self.key(key)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                if shown in self.screen():
                    return n
                time.sleep(0.05)
        raise AssertionError("%r never showed after %d presses of %r:\n%s" % (shown, attempts, key, self.screen()))

    def key(self, *keys):
        self.tmux("send-keys", "-t", self.pane, *keys)

    def close(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10)
