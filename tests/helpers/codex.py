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
import sys
import time

from cc_continuity.cli import main
from cc_continuity.hosts.codex import hooks as codex_hooks
from cc_continuity.hosts.codex.screen import PLACEHOLDER, CodexScreen
from cc_continuity.install import settings
from cc_continuity.tmux.pane import Pane

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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

    def __init__(self, codex_bin, model, root, window=20000, config=None, env=None):
        self.bin = codex_bin
        self.extra_env = dict(env or {})  # more of Codex's environment (its hooks inherit it)
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

    def install_ours(self, app=CHECKOUT, events=codex_hooks.EVENTS):
        """$CODEX_HOME/hooks.json: our real Codex hook entry on each of ``events``, as an install writes it
        (``<python> -S -c <boot> <Event>``, the event's timeout), run from the checkout ``app``."""
        table = {}
        for event in events:
            command = shlex.join([sys.executable, "-S", "-c", settings.boot_code(app, codex_hooks.HOOK_MARK), event])
            table[event] = [{"hooks": [{"type": "command", "command": command,
                                        "timeout": codex_hooks.TIMEOUTS[event]}]}]
        with open(self.hooks_path, "w") as f:
            json.dump({"hooks": table}, f, indent=2)

    def trust_folder(self, path=None):
        """config.toml with ``path`` (the work dir) trusted: the first launch's "Trust this folder?" answered."""
        with open(self.config_path, "a") as f:
            f.write('\n[projects.%s]\ntrust_level = "trusted"\n' % json.dumps(path or self.work))

    def trust_hooks(self, hooks=None):
        """config.toml trusting each ``hooks/list`` entry given (all the work dir's, by default), as the TUI's
        "Trust all" does: its key, its current hash.  The entries trusted."""
        listed = self.hooks_list() if hooks is None else hooks
        with open(self.config_path, "a") as f:
            for h in listed:
                f.write('\n[hooks.state.%s]\ntrusted_hash = "%s"\n' % (json.dumps(h["key"]), h["currentHash"]))
        return listed

    def commit_files(self, files):
        """Write ``files`` ({path: text}) into the work dir and commit them (a git identity in the sandbox HOME)."""
        with open(os.path.join(self.home, ".gitconfig"), "w") as f:
            f.write("[user]\n\tname = Sandbox\n\temail = sandbox@example.invalid\n")
        for rel, text in files.items():
            path = os.path.join(self.work, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        env = dict(os.environ, HOME=self.home, GIT_CONFIG_NOSYSTEM="1")
        for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
            env.pop(k, None)
        subprocess.run(["git", "add", "-A"], cwd=self.work, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "start"], cwd=self.work, env=env, check=True)

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
        env.update(self.extra_env)
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
    box's work dir unless ``cwd`` says where; inline (``--no-alt-screen``) unless ``alt_screen``."""

    def __init__(self, box, *args, size=(160, 50), cwd=None, alt_screen=False, session="cx"):
        self.box = box
        # A server of its own per session name: a second TUI need not wait for the first one's server to go.
        self.socket = os.path.join(box.root, "tmux.sock" if session == "cx" else "tmux-%s.sock" % session)
        self.session = session
        env = box.env()
        # The pane's own TMUX / TMUX_PANE go through (a rotator finds its pane by them); nothing else does.
        assign = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items())
        cmd = 'cd %s && exec env -i %s TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" %s %s%s' % (
            shlex.quote(cwd or box.work), assign, shlex.quote(box.bin), "" if alt_screen else "--no-alt-screen ",
            " ".join(shlex.quote(a) for a in args))
        # remain-on-exit: a Codex that exits leaves its last screen and status to read, not a gone server.
        self.tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), cmd, ";",
                  "set-option", "-t", session, "remain-on-exit", "on")
        self.pane = self.tmux("display-message", "-p", "-t", session, "#{pane_id}").strip()
        self.pid = int(self.tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())

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

    def capture(self):
        """The screen as the rotator captures it (a ``tmux.pane.Screen``: plain, and styled rows)."""
        return Pane(self.socket, self.pane, reader=CodexScreen).capture()

    def settled(self, timeout=10.0):
        """The screen once two captures in a row agree (a frame drawn whole, not half of one)."""
        deadline = time.monotonic() + timeout
        last = self.capture()
        while True:
            time.sleep(0.05)
            now = self.capture()
            if now.styled == last.styled or time.monotonic() > deadline:
                return now
            last = now

    def close(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10)


# -- a tour of the screens the rotator reads ----------------------------------------

TOUR_SCENARIO = {"rules": [{"name": "slow", "when": {"latest_contains": "a slow one"}, "reply": "Slow answer.",
                            "hold": "slow"}],
                 "default": {"reply": "First answer."}, "title": "Scripted title"}
WRAPPED = "a draft long enough to wrap " * 8
# What each screen of the tour is, as the rotator must read it: idle (no turn runs, the composer
# shown), the text the user typed (whitespace squashed when compared), a fresh thread on screen.
SCREENS = {
    "trust": {"idle": False, "text": "", "fresh": False},
    "hooks-review": {"idle": False, "text": "", "fresh": False},
    "start": {"idle": True, "text": "", "fresh": True},
    "draft": {"idle": True, "text": "a typed draft", "fresh": True},
    "slash-popup": {"idle": True, "text": "/cl", "fresh": True},
    "after-turn": {"idle": True, "text": "", "fresh": False},
    "hook-running": {"idle": False, "text": "", "fresh": False},
    "busy": {"idle": False, "text": "", "fresh": False},
    "busy-draft": {"idle": False, "text": "typed while busy", "fresh": False},
    "idle-draft": {"idle": True, "text": "typed while busy", "fresh": False},
    "draft-wrapped": {"idle": True, "text": WRAPPED, "fresh": False},
    "draft-lines": {"idle": True, "text": "line one\n\nline three", "fresh": False},
    "cleared": {"idle": True, "text": "", "fresh": True},
    "alt-start": {"idle": True, "text": "", "fresh": True},
    "alt-after-turn": {"idle": True, "text": "", "fresh": False},
    "alt-cleared": {"idle": True, "text": "", "fresh": True},
}


def tour(box):
    """Drive the real TUI of ``box`` (whose model plays :data:`TOUR_SCENARIO`) through each state of
    :data:`SCREENS`; yield ``(name, screen)`` as the rotator would capture it, once drawn whole.

    The folder starts untrusted and the hooks unreviewed (their screens come first); a Stop hook
    waits while a file exists (the busy screen of a hook running)."""
    hold = os.path.join(box.root, "stop-hold")
    with open(box.hooks_path, "w") as f:
        json.dump({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "timeout": 10,
                                                          "command": box.probe_command("SessionStart")}]}],
                             "Stop": [{"hooks": [{"type": "command", "timeout": 30,
                                                  "command": "while [ -e %s ]; do sleep 0.05; done" % hold}]}]}},
                  f)
    run = CodexTui(box, "--no-daemon")
    try:
        run.wait_screen("Trust this folder?")
        yield "trust", run.settled()
        run.key("Enter")
        run.wait_screen("Hooks need review")
        yield "hooks-review", run.settled()
        run.choose("2", "› 2. Trust all and continue")
        run.key("Enter")
        run.wait_screen(PLACEHOLDER)
        yield "start", run.settled()
        yield from _drafts(run, "a typed draft", "draft")
        run.type("/cl", enter=False)
        run.wait_screen("clear the terminal")
        yield "slash-popup", run.settled()
        _empty(run)
        _turn(run, "do the work", "First answer.")
        yield "after-turn", run.settled()
        open(hold, "w").close()
        run.type("a turn whose stop hook is slow")
        run.wait_screen("Running hook")
        yield "hook-running", run.settled()
        os.unlink(hold)
        _wait_idle(run)
        run.type("a slow one please")
        box.model.wait_for(lambda reqs: [r for r in reqs if r.rule == "slow"], timeout=20)
        run.wait_screen("esc to interrupt")
        yield "busy", run.settled()
        run.type("typed while busy", enter=False)
        yield "busy-draft", run.settled()
        box.model.release("slow")
        run.wait_screen("Slow answer.")
        _wait_idle(run)
        yield "idle-draft", run.settled()
        _empty(run)
        yield from _drafts(run, WRAPPED, "draft-wrapped")
        run.tmux("send-keys", "-t", run.pane, "-l", "line one")
        run.wait_screen("line one")
        run.key("C-j")
        run.key("C-j")
        run.tmux("send-keys", "-t", run.pane, "-l", "line three")
        run.wait_screen("line three")
        yield "draft-lines", run.settled()
        _empty(run)
        run.type("/clear")
        run.wait_gone("First answer.")
        run.wait_screen(PLACEHOLDER)
        yield "cleared", run.settled()
    finally:
        run.close()
    run = CodexTui(box, "--no-daemon", alt_screen=True, session="alt")
    try:
        run.wait_screen(PLACEHOLDER)
        yield "alt-start", run.settled()
        _turn(run, "do the work again", "First answer.")
        yield "alt-after-turn", run.settled()
        run.type("/clear")
        run.wait_gone("First answer.")
        run.wait_screen(PLACEHOLDER)
        yield "alt-cleared", run.settled()
    finally:
        run.close()


def _drafts(run, text, name):
    run.type(text, enter=False)
    yield name, run.settled()
    _empty(run)


def _empty(run, attempts=20):
    """Empty the composer (``C-u`` a line, ``BSpace`` the break before it) until the placeholder shows
    (the tour's own look at the screen, not the reader's under test)."""
    for _ in range(attempts):
        if PLACEHOLDER in run.screen():
            return
        run.key("C-e", "C-u", "BSpace")
        time.sleep(0.05)
    raise AssertionError("the composer did not empty:\n%s" % run.screen())


def _wait_idle(run, timeout=20.0):
    """Until no turn runs: ``esc to interrupt`` gone from the screen (its own words, not the reader's)."""
    deadline = time.monotonic() + timeout
    while "esc to interrupt" in run.screen():
        if time.monotonic() > deadline:
            raise AssertionError("still busy after %.0fs:\n%s" % (timeout, run.screen()))
        time.sleep(0.05)


def _turn(run, prompt, reply):
    run.type(prompt)
    run.wait_screen(reply)
    _wait_idle(run)


# -- `install --agent codex` in the test's temp HOME (tests/hosts/codex/test_codex_install.py, test_codex_doctor.py)

def cli(capsys, *argv):
    """``cc-continuity <argv>`` in this process: (exit status, stdout, stderr)."""
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def listing(root):
    """Every file and folder below ``root``: its bytes and mode (a folder's bytes: empty)."""
    found = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            with open(p, "rb") if os.path.isfile(p) else open(os.devnull, "rb") as f:
                found[os.path.relpath(p, root)] = (f.read(), os.lstat(p).st_mode)
    return found


def codex_dir():
    return os.path.join(os.environ["HOME"], ".codex")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
