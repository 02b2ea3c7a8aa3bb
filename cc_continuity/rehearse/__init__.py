"""One full rotation, rehearsed offline with the user's own ``claude`` and hooks.

Why: every part of a rotation can be right on its own and the chain still
break on a given machine (a hook path that moved, tmux missing, a Claude Code
version that draws its input box differently).  ``cc-continuity rehearse``
proves the chain end to end without spending a token: it starts the user's
``claude`` with the user's installed cc-continuity hooks, against a scripted
Messages API on 127.0.0.1, in a throwaway HOME, CC_CONTINUITY_HOME, git repo
and private tmux server, drives one rotation and reports each step's time.

How the user's hooks are used: the hook groups and status line that ``cc-
continuity install`` wrote into their ``settings.json`` are copied, unchanged,
into the throwaway HOME's settings (their handlers run the installed app copy
with the installed interpreter), while ``CC_CONTINUITY_HOME`` points at a
throwaway dir, so every state file, ledger, lock and log goes there.  What the
rehearsal does not take from the user: their permissions (it allows the tools
the script uses), their config (it uses the defaults with a 200k window) and
their model settings.  Nothing is written outside the throwaway dir; the only
network traffic is to the scripted model on 127.0.0.1.

The scenario builders here are shared with the end-to-end tests.
"""

import codecs
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time

from .. import config, ledger, meter, paths, session
from ..errors import RehearsalError
from ..rotation import handover, texts
from ..install import plugin, settings
from ..procs import pid_alive, reap
from ..tmux import Pane

WINDOW = 200_000
# Claude Code 2.1.328 and 2.1.332 give it a 200k window, no auto mode in the shift+tab cycle and no
# retirement warning (claude-sonnet-4-5 was retired on 2026-11-30: 2.1.332 warns on screen);
# tests/e2e/test_model_e2e.py fails when either starts to.
MODEL = "claude-haiku-4-5"
ROTATE_AT = 66.0  # percent the scripted work reports: past the default rotate level (62)
START_AT = 10.0  # percent a fresh session reports
HANDOFF_REQUEST = "Handoff file (absolute path):"
CONTINUATION = texts.CONTINUATION_PREFIX
BOOTSTRAP_MARK = "SessionStart hook additional context: " + CONTINUATION  # how the successor's context arrives
TASK = "Rehearsal task: keep a work log in this repository, one file per step."
WORK_MARK = "Working on step"  # every work reply says it: the successor must not see it
FAKE_API_KEY = "sk-ant-api03-rehearsal-scripted-model-not-a-secret-0123456789"
ALLOWED_TOOLS = ("Bash", "Write", "Edit", "Read", "Glob", "Grep", "TodoWrite")
TMUX_SESSION = "rehearse"
REHEARSAL_MARKET = "cc-continuity-rehearsal"  # the throwaway HOME's marketplace, naming the user's plugin copy
SIZE = (200, 50)
POLL_S = 0.05


# -- scenario builders (also used by tests/e2e) ---------------------------------

def usage_at(percent, window=WINDOW):
    """A ``usage`` block whose context total (input + cache) is ``percent`` of ``window``."""
    total = int(window * percent / 100.0)
    return {"input_tokens": 10, "cache_creation_input_tokens": 500,
            "cache_read_input_tokens": max(0, total - 510), "output_tokens": 50}


def handoff_text(sections=None, named="README.md"):
    """A handoff that passes validation: every section filled, long enough, one existing path."""
    parts = ["# Handoff", ""]
    for name in sections or config.HANDOFF_SECTIONS:
        parts += ["## %s" % name,
                  "Scripted notes for %s: the work log continues step by step; `%s` is the only file "
                  "this handoff names, and it exists." % (name.lower(), named), ""]
    return "\n".join(parts)


def work_rule(name, when, project, percent=ROTATE_AT, window=WINDOW, times=None):
    """A reply that does one step of work (a Write in the project) and reports ``percent``."""
    high = usage_at(percent, window)
    rule = {"name": name, "when": when,
            "reply": [{"type": "text", "text": WORK_MARK + " {n}."},
                      {"type": "tool_use", "name": "Write",
                       "input": {"file_path": "%s/work-{n}.txt" % project, "content": "step {n}\n"}}],
            "usage": high,
            "then": [{"reply": "Step {n} is done; ending the turn.", "usage": high}]}
    if times:
        rule["times"] = times
    return rule


def handoff_rule(name="handoff", when=None, path_pattern=None, content="{handoff}", percent=ROTATE_AT,
                 window=WINDOW, times=None):
    """Answer a handoff request with a Write of ``content`` to the path the request names."""
    high = usage_at(percent, window)
    rule = {"name": name, "when": when or {"last_user_contains": HANDOFF_REQUEST},
            "extract": {"path": path_pattern or r"Handoff file \(absolute path\): (/\S+)"},
            "reply": [{"type": "text", "text": "Writing the handoff."},
                      {"type": "tool_use", "name": "Write", "input": {"file_path": "{path}", "content": content}}],
            "usage": high,
            "then": [{"reply": "Handoff written; ending the turn.", "usage": high}]}
    if times:
        rule["times"] = times
    return rule


def rotation_scenario(project, rotations=1, task=TASK, percent=ROTATE_AT, window=WINDOW, sections=None):
    """The script for ``rotations`` back-to-back rotations.

    The first prompt (``task``) and each continuation but the last get a step
    of work reported at ``percent`` of the window, so every session's Stop asks
    for a handoff; the handoff request is answered with a valid handoff; the
    last successor just confirms.  Fresh sessions start low again
    (``usage_plan`` per session).
    """
    rules = [handoff_rule()]
    if rotations > 1:
        rules.append(work_rule("continue", {"last_user_contains": CONTINUATION}, project, percent, window,
                               times=rotations - 1))
    rules.append({"name": "finish", "when": {"last_user_contains": CONTINUATION},
                  "reply": "Picked up the handoff; the task is complete."})
    # After the continuation rules: a successor's bootstrap quotes the task prompt.
    rules.append(work_rule("work", {"last_user_contains": task}, project, percent, window, times=1))
    return {
        "rules": rules,
        "vars": {"handoff": handoff_text(sections)},
        "usage_plan": {"per": "session", "input_tokens": 10,
                       "cache_read_input_tokens": {"start": int(window * START_AT / 100.0), "step": 500}},
    }


# -- the user's installation ----------------------------------------------------

def our_settings(doc):
    """Only our hook handlers (per event, matcher and timeout kept) and our status line from ``doc``.

    Raises RehearsalError when ``doc`` holds no hook of ours.
    """
    hooks = {}
    for event, groups in (doc.get("hooks") or {}).items() if isinstance(doc.get("hooks"), dict) else ():
        for group in groups if isinstance(groups, list) else ():
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            mine = [h for h in group["hooks"] if settings.is_our_handler(h)]
            if mine:
                kept = {k: v for k, v in group.items() if k != "hooks"}
                kept["hooks"] = mine
                hooks.setdefault(event, []).append(kept)
    if not hooks:
        raise RehearsalError("no cc-continuity hooks installed; run `cc-continuity install` first")
    out = {"hooks": hooks}
    if settings.is_our_statusline(doc.get("statusLine")):
        out["statusLine"] = doc["statusLine"]
    return out


def installed_settings(path=None):
    """(path, our part of it, the plugin's copy or None) from the user's Claude Code settings.json.

    With a cc-continuity plugin enabled, the plugin is the form installed: the rehearsal installs
    that copy into its throwaway HOME (settings.json then carries only our status line, if any)."""
    path = path or os.path.join(paths.claude_config_dir(), "settings.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise RehearsalError("%s does not exist; run `cc-continuity install` first" % path) from None
    except (OSError, ValueError) as e:
        raise RehearsalError("cannot read %s: %s" % (path, e)) from None
    if not isinstance(doc, dict):
        raise RehearsalError("%s is not a JSON object" % path)
    ids = plugin.enabled(doc)
    if ids:
        root = plugin.install_path(ids[0], os.path.dirname(path))
        if not root or not os.path.isfile(os.path.join(root, "hooks", "hooks.json")):
            raise RehearsalError("the plugin %s is enabled but Claude Code has no copy of it; run `claude plugin "
                                 "install %s` first" % (ids[0], ids[0]))
        ours = {"statusLine": doc["statusLine"]} if settings.is_our_statusline(doc.get("statusLine")) else {}
        return path, ours, (ids[0], root)
    return path, our_settings(doc), None


def find_claude(explicit=None):
    """Absolute path of the claude to rehearse with (``--claude`` or the first on PATH)."""
    path = explicit or shutil.which("claude")
    if not path:
        raise RehearsalError("no `claude` on PATH; pass --claude /path/to/claude")
    path = os.path.abspath(os.path.expanduser(path))
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RehearsalError("%s is not an executable file" % path)
    return path


# -- the report -----------------------------------------------------------------

STEPS = (
    ("ready", "claude started, input box idle"),
    ("prompt", "first prompt typed"),
    ("rotate_level", "context past the rotate level"),
    ("handoff_requested", "handoff requested by the Stop hook"),  # a block or additional context, by version
    ("handoff_written", "handoff written by the model"),
    ("checkpoint", "checkpoint verified"),
    ("clear_typed", "/clear typed by the rotator"),
    ("successor_started", "successor started and claimed it"),
    ("continuation", "continuation prompt delivered"),
    ("successor_request", "successor's first model request"),
)


MOD_LABELS = {"clear_typed": "/clear run by the mod, in-process"}  # the plugin form's hand-over


def timeline(t0, times, labels=None):
    """[{step, what, at_ms, delta_ms}] for the steps reached, in order; None where missing."""
    rows, prev = [], t0
    for key, what in STEPS:
        what = (labels or {}).get(key, what)
        at = times.get(key)
        if at is None:
            rows.append({"step": key, "what": what, "at_ms": None, "delta_ms": None})
            continue
        rows.append({"step": key, "what": what, "at_ms": int(round((at - t0) * 1000)),
                     "delta_ms": int(round((at - prev) * 1000))})
        prev = at
    return rows


def verdict(steps, problems):
    """(ok, one line): the rotation completed only when every step happened and no check failed."""
    missing = [s for s in steps if s["at_ms"] is None]
    if missing:
        return False, "FAIL: the rotation stopped before: %s" % missing[0]["what"]
    if problems:
        return False, "FAIL: %s" % problems[0]
    return True, "PASS: one full rotation completed in %.1f s" % (steps[-1]["at_ms"] / 1000.0)


def format_report(result):
    """The human report: setup, one line per step with its milliseconds, figures, verdict."""
    form = result.get("plugin")
    hooks = ("hooks: the plugin %s, installed from %s into the throwaway HOME (its hooks and mod)" % tuple(form)
             if form else "hooks: %s (%s)" % (result.get("settings"), ", ".join(result.get("events") or []) or "none"))
    out = ["cc-continuity rehearse: claude %s (%s)" % (result.get("version") or "?", result.get("claude")),
           hooks,
           "sandbox: %s" % (result.get("sandbox") if result.get("kept") else "throwaway (removed)"),
           ""]
    width = max(len(w) for _, w in STEPS)
    out.append("  %-*s  %8s  %7s" % (width, "step", "at ms", "+ms"))
    for s in result.get("steps") or []:
        if s["at_ms"] is None:
            out.append("  %-*s  %8s  %7s" % (width, s["what"], "-", "-"))
        else:
            out.append("  %-*s  %8d  %7d" % (width, s["what"], s["at_ms"], s["delta_ms"]))
    out.append("")
    if form and result.get("driver") == "mod":
        out.append("handed over by the mod, in-process: /clear and the continuation with no tmux typing")
    elif form and result.get("driver"):
        out.append("handed over by the tmux rotator (the fallback), not the mod: %s" % result.get("why_tmux"))
    if result.get("rotation_overhead_ms") is not None:
        out.append("rotation overhead (checkpoint verified -> successor's first request): %d ms"
                   % result["rotation_overhead_ms"])
    if result.get("bootstrap_chars") is not None:
        out.append("bootstrap: %d chars (~%d tokens)" % (result["bootstrap_chars"], result["bootstrap_chars"] // 4))
    if result.get("model_requests") is not None:
        out.append("model requests: %d, all to the scripted model at %s" % (result["model_requests"],
                                                                          result.get("model_url")))
    for p in result.get("problems") or []:
        out.append("problem: %s" % p)
    diag = result.get("diagnostics") or {}
    if not result.get("ok") and diag:
        for name in ("hooks_log", "rotator_log", "screen"):
            if diag.get(name):
                out.append("--- %s ---" % name.replace("_", "."))
                out.append(diag[name].rstrip("\n"))
    out.append(result.get("verdict") or "FAIL: no verdict")
    return "\n".join(out) + "\n"


# -- the run --------------------------------------------------------------------

def _short_tempdir(prefix):
    """Unix sockets (tmux, Claude Code's own) cap their path near 107 bytes: keep the root short."""
    base = tempfile.gettempdir()
    if len(base) > 40:
        base = "/tmp"
    return os.path.realpath(tempfile.mkdtemp(prefix=prefix, dir=base))


def _write_json(path, data):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _is_rotator(pid):
    """Is ``pid`` still a cc-continuity rotator (and not a recycled pid of something else)?"""
    return handover.runs_rotator(pid) is True


def _tail(path, lines=15):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class CastRecorder:
    """An asciinema v2 cast of a tmux pane: the real byte stream, from ``pipe-pane`` into a FIFO
    read by a thread that timestamps each chunk.

    The file: one JSON header line (``version`` 2, ``width``, ``height``, ``timestamp``, ...) and
    then one ``[seconds, "o", text]`` line per chunk the pane's program wrote (UTF-8 decoded
    incrementally, so a character split across two chunks stays whole).
    """

    def __init__(self, path, fifo, size, title=None):
        self.path = path
        self.fifo = fifo
        self.width, self.height = size
        self.title = title
        self.events = []
        self.t0 = None
        self.started_at = None
        self._thread = None
        os.mkfifo(fifo, 0o600)

    def start(self):
        """Start reading (call before ``pipe-pane`` opens the FIFO for writing)."""
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self._thread = threading.Thread(target=self._read, name="cast-recorder", daemon=True)
        self._thread.start()

    def pipe_command(self):
        """The shell command ``tmux pipe-pane`` runs: copy the pane's output into the FIFO."""
        return "exec cat > %s" % shlex.quote(self.fifo)

    def _read(self):
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = os.open(self.fifo, os.O_RDONLY)   # blocks until pipe-pane's cat opens it
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                text = dec.decode(chunk)
                if text:
                    self.events.append((time.monotonic() - self.t0, text))
            tail = dec.decode(b"", final=True)
            if tail:
                self.events.append((time.monotonic() - self.t0, tail))
        finally:
            os.close(fd)

    def finish(self, timeout=5.0):
        """Wait for the end of the stream (the pipe closed) and write the cast; the number of events."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():   # no writer ever came (or one hangs on): end the read
                try:
                    os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
                self._thread.join(1.0)
        header = {"version": 2, "width": self.width, "height": self.height,
                  "timestamp": int(self.started_at or time.time()), "idle_time_limit": 2.0,
                  "env": {"TERM": "tmux-256color"}}
        if self.title:
            header["title"] = self.title
        events = list(self.events)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(header) + "\n")
            for t, text in events:
                f.write(json.dumps([round(t, 6), "o", text], ensure_ascii=False) + "\n")
        os.replace(tmp, self.path)
        return len(events)


class Rehearsal:
    """One throwaway installation: HOME, CC_CONTINUITY_HOME, git project, tmux server, scripted model."""

    def __init__(self, claude, hooks, settings_path=None, keep=False, timeout=120.0, progress=None, record=None,
                 plugin_copy=None):
        self.claude = claude
        self.hooks = hooks
        self.plugin_copy = plugin_copy  # (id, Claude Code's copy): installed into the throwaway HOME
        self.settings_path = settings_path
        self.keep = keep
        self.timeout = timeout
        self.progress = progress   # progress(step key or None, what, seconds since the start): as it happens
        self.record = record       # a path: write an asciinema v2 cast of the pane there
        self.recorder = None
        self._reported = set()
        self._t0 = None            # the one start (epoch) every printed second counts from
        self._m0 = None            # the same start on the monotonic clock
        self._said = 0.0           # the last second printed: the clock never runs backwards
        self.root = None
        self.model = None
        self.pane = None
        self.pids = set()

    # setup
    def _paths(self):
        r = self.root
        self.home, self.project = r + "/home", r + "/rehearsal"
        self.tmp, self.runtime, self.cc_home = r + "/tmp", r + "/run", r + "/cchome"
        self.socket = r + "/tmux.sock"

    def env(self):
        """The complete environment of claude and every process it starts (only PATH and USER are inherited)."""
        path = os.pathsep.join(dict.fromkeys([os.path.dirname(self.claude)]
                                             + os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)))
        env = {
            "HOME": self.home, "PATH": path, "USER": os.environ.get("USER", "rehearsal"),
            "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": self.model.url if self.model else "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": FAKE_API_KEY, "ANTHROPIC_MODEL": MODEL,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": self.tmp, "CLAUDE_CODE_TMPDIR": self.tmp, "XDG_RUNTIME_DIR": self.runtime,
            "CC_CONTINUITY_HOME": self.cc_home,
            "PYTHONDONTWRITEBYTECODE": "1",  # the installed app copy stays byte-for-byte as it is
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        return env

    def _run(self, cmd, cwd=None, timeout=60):
        return subprocess.run(cmd, cwd=cwd or self.project, env=self.env(), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def version(self):
        try:
            out = self._run([self.claude, "--version"], cwd=self.root)
        except (OSError, subprocess.SubprocessError) as e:
            raise RehearsalError("%s --version failed: %s" % (self.claude, e)) from None
        words = out.stdout.split()
        if out.returncode != 0 or not words:
            raise RehearsalError("%s --version failed (exit %s): %s"
                                 % (self.claude, out.returncode, out.stderr.strip()[:300]))
        return words[0]

    def setup(self):
        """Make the throwaway world; returns the claude version."""
        if not shutil.which("tmux"):
            raise RehearsalError("tmux is not installed; the rotation types /clear through tmux")
        self.root = _short_tempdir("ccr-")
        self._paths()
        for d in (self.home, self.project, self.tmp, self.runtime, self.cc_home):
            os.makedirs(d, mode=0o700)
        version = self.version()
        with open(self.home + "/.gitconfig", "w") as f:
            f.write("[user]\n\tname = Rehearsal\n\temail = rehearsal@example.invalid\n"
                    "[init]\n\tdefaultBranch = main\n")
        _write_json(self.home + "/.claude.json", {
            "hasCompletedOnboarding": True, "lastOnboardingVersion": version, "theme": "dark",
            "customApiKeyResponses": {"approved": [FAKE_API_KEY[-20:]], "rejected": []},
            "projects": {self.project: {"hasTrustDialogAccepted": True}},
            "hasSeenAutoDefaultNudge": True,
        })
        settings = {"permissions": {"defaultMode": "acceptEdits", "allow": list(ALLOWED_TOOLS)}}
        settings.update(self.hooks)
        _write_json(self.home + "/.claude/settings.json", settings)
        _write_json(self.cc_home + "/config.json", {"window": WINDOW, "tmux": True})
        if self.plugin_copy:
            self._install_plugin()
        with open(self.project + "/README.md", "w") as f:
            f.write("# rehearsal\n\nA throwaway project for `cc-continuity rehearse`.\n")
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "README.md"],
                    ["git", "commit", "-q", "-m", "rehearsal project"]):
            out = self._run(cmd)
            if out.returncode != 0:
                raise RehearsalError("%s failed: %s" % (" ".join(cmd), out.stderr.strip()[:300]))
        return version

    def _install_plugin(self):
        """The user's plugin copy, installed the ecosystem's way: a local marketplace holding a copy of
        it (a link out of a directory marketplace is refused for the mod: "Path escapes plugin
        directory"), then ``claude plugin install``."""
        pid, root = self.plugin_copy
        market = self.root + "/market"
        os.makedirs(market + "/.claude-plugin")
        shutil.copytree(root, market + "/" + plugin.NAME, ignore=shutil.ignore_patterns("__pycache__", ".in_use"))
        _write_json(market + "/.claude-plugin/marketplace.json", {
            "name": REHEARSAL_MARKET, "owner": {"name": "cc-continuity rehearse"},
            "plugins": [{"name": plugin.NAME, "source": "./" + plugin.NAME, "description": "the installed copy"}]})
        for cmd in (["marketplace", "add", market], ["install", "%s@%s" % (plugin.NAME, REHEARSAL_MARKET)]):
            out = self._run([self.claude, "plugin", *cmd], cwd=self.root, timeout=120)
            if out.returncode != 0:
                raise RehearsalError("claude plugin %s failed: %s" % (" ".join(cmd), (out.stderr or out.stdout)
                                                                      .strip()[:300]))

    def why_no_mod(self):
        """What ``claude plugin test`` says of mods in the throwaway HOME (one line)."""
        empty = self.root + "/empty"
        os.makedirs(empty, exist_ok=True)
        out = self._run([self.claude, "plugin", "test", empty], cwd=self.root)
        lines = (out.stderr or out.stdout).strip().splitlines()
        return lines[0] if lines else "claude plugin test said nothing"

    def tmux(self, *args, check=True):
        proc = subprocess.run(["tmux", "-u", "-f", "/dev/null", "-S", self.socket, *args], env=self.env(),
                              capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise RehearsalError("tmux %s failed: %s" % (args[0], proc.stderr.strip()))
        return proc.stdout

    def screen(self):
        try:
            return self.tmux("capture-pane", "-p", "-t", self.pane, check=False) if self.pane else ""
        except (OSError, subprocess.SubprocessError):
            return ""

    def claude_alive(self):
        return bool(self.pids) and all(pid_alive(p) for p in self.pids)

    # reading the throwaway state
    def ledgers(self):
        """{session number: [ledger records]} of the rehearsal project."""
        out = {}
        base = self.cc_home + "/projects"
        for key in sorted(os.listdir(base)) if os.path.isdir(base) else ():
            sdir = "%s/%s/sessions" % (base, key)
            for num in sorted(os.listdir(sdir)) if os.path.isdir(sdir) else ():
                if num.isdigit():
                    out[int(num)] = ledger.read(session.ledger_path("%s/%s" % (sdir, num)))
        return out

    def session_dir(self, number):
        base = self.cc_home + "/projects"
        for key in os.listdir(base) if os.path.isdir(base) else ():
            d = "%s/%s/sessions/%03d" % (base, key, number)
            if os.path.isdir(d):
                return d
        return None

    def times(self, first_sid):
        """When each step happened (epoch seconds), from the ledgers, files and request log."""
        led = self.ledgers()
        pred, succ = led.get(1, []), led.get(2, [])
        first = lambda recs, test: next((r["ts"] for r in recs if test(r)), None)
        t = {
            "rotate_level": first(pred, lambda r: r.get("ev") == "level" and meter.at_least(r.get("level"), "rotate")),
            "handoff_requested": first(pred, lambda r: r.get("ev") == "transition"
                                       and r.get("to") == session.HANDOFF_REQUESTED),
            "checkpoint": first(pred, lambda r: r.get("ev") == "checkpoint"),
            "clear_typed": first(pred, lambda r: r.get("ev") == "rotator" and r.get("step") == "clear_sent")
            or first(pred, lambda r: r.get("ev") == "driver" and r.get("driver") == "mod")
            and first(pred, lambda r: r.get("ev") == "session_end" and r.get("reason") == "clear"),
            "successor_started": first(succ, lambda r: r.get("ev") == "claim"),
            "continuation": first(succ, lambda r: r.get("ev") == "prompt"
                                  and str(r.get("text", "")).startswith(CONTINUATION)),
        }
        sdir = self.session_dir(1)
        manifest = self._manifest(sdir)
        if manifest and manifest.get("handoff", {}).get("validation") == "valid":
            try:
                t["handoff_written"] = os.stat(session.handoff_path(sdir)).st_mtime
            except OSError:
                pass
        req = self.successor_request(first_sid)
        t["successor_request"] = req.time if req else None
        return t

    @staticmethod
    def _manifest(sdir):
        try:
            with open(session.manifest_path(sdir), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError, TypeError):
            return None

    def successor_request(self, first_sid):
        return next((r for r in self.model.main_requests()
                     if r.session_id != first_sid and r.contains(CONTINUATION)), None)

    def rotator_failed(self):
        return next((r.get("reason") for r in self.ledgers().get(1, [])
                     if r.get("ev") == "rotator" and r.get("step") == "failed"), None)

    # the run
    def run(self):
        """Set up, rotate once, report.  Always cleans up (unless ``keep``)."""
        # lazy: python -m cc_continuity.rehearse.scripted_model imports this package first; at the top
        # runpy finds the module already imported and it runs twice (a RuntimeWarning, two ScenarioErrors)
        from .scripted_model import ScriptedModel

        result = {"claude": self.claude, "settings": self.settings_path, "plugin": self.plugin_copy,
                  "events": sorted(self.hooks.get("hooks", {})), "kept": self.keep}
        self._t0, self._m0 = time.time(), time.monotonic()
        try:
            version = self.setup()
            result.update(version=version, sandbox=self.root)
            self._say(None, "sandbox ready: claude %s, %s" % (version, self.form()))
            self.model = ScriptedModel(rotation_scenario(self.project), log_path=self.root + "/model.jsonl").start()
            result["model_url"] = self.model.url
            self._say(None, "scripted model listening on %s" % self.model.url)
            self._drive(result)
        finally:
            if self.recorder is not None:
                self._stop_recording(result)
            self.close()
        return result

    def form(self):
        """The form rehearsed, in the words of the first progress line."""
        if self.plugin_copy:
            return "the plugin %s (Claude Code's copy at %s) installed into it" % tuple(self.plugin_copy)
        return "hooks from %s" % self.settings_path

    def _seconds(self, at=None):
        """Seconds since the one start: of ``at`` (epoch, a ledger's or a file's time) or of now
        (monotonic); never less than the last one printed."""
        since = at - self._t0 if at is not None else time.monotonic() - self._m0
        self._said = max(self._said, since)
        return self._said

    def _say(self, key, what, at=None):
        if self.progress is None:
            return
        try:
            self.progress(key, what, self._seconds(at))
        except Exception:
            pass   # a broken terminal does not stop the rehearsal

    def _step(self, key, at):
        """Report step ``key`` once, as soon as it is known."""
        if key in self._reported or at is None:
            return
        self._reported.add(key)
        self._say(key, dict(STEPS, **self._labels()).get(key, key), at)

    def _labels(self):
        """The mod's words for its steps, once the ledger shows the mod drives."""
        drivers = [r.get("driver") for r in self.ledgers().get(1, []) if r.get("ev") == "driver"] if self.root else []
        return MOD_LABELS if drivers[-1:] == ["mod"] else {}

    def _poll_steps(self, first_sid, every=0.25):
        """Report the steps the ledgers show by now (at most every ``every`` seconds)."""
        now = time.monotonic()
        if self.progress is None or now < getattr(self, "_next_poll", 0.0):
            return
        self._next_poll = now + every
        try:
            found = self.times(first_sid)
        except (OSError, ValueError):
            return
        for key, at in sorted(((k, v) for k, v in found.items() if v is not None), key=lambda kv: kv[1]):
            self._step(key, at)

    def _start_recording(self):
        self.recorder = CastRecorder(self.record, self.root + "/cast.fifo", SIZE,
                                     title="cc-continuity rehearse: one rotation of Claude Code")
        self.recorder.start()
        self.tmux("pipe-pane", "-O", "-t", self.pane, self.recorder.pipe_command())

    def _stop_recording(self, result):
        try:
            if self.pane:
                self.tmux("pipe-pane", "-t", self.pane, check=False)   # closes the pipe: the stream ends
            result["record"] = {"path": self.record, "events": self.recorder.finish()}
        except (OSError, subprocess.SubprocessError, RehearsalError) as e:
            result.setdefault("problems", []).append("the recording was not written: %s" % e)
        self.recorder = None

    def _drive(self, result):
        # The report's step times count from here (claude's start); the printed ones from the run's start.
        t0 = time.time()
        deadline = time.monotonic() + self.timeout
        times = {}
        w, h = SIZE
        gate = self.root + "/go"
        # Recording: claude starts only once the pane's output is piped, so the cast has every byte.
        command = (["sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.02; done; exec "$1"', gate, self.claude]
                   if self.record else [self.claude])
        self.tmux("new-session", "-d", "-s", TMUX_SESSION, "-x", str(w), "-y", str(h), "-c", self.project,
                  *command, ";", "set-option", "-w", "-t", TMUX_SESSION, "remain-on-exit", "on")
        self.pane, pid = self.tmux("display-message", "-p", "-t", TMUX_SESSION, "#{pane_id} #{pane_pid}").split()
        self.pids.add(int(pid))
        if self.record:
            self._start_recording()
            with open(gate, "w"):
                pass
        self._say(None, "claude starting in a private tmux pane%s" % (" (recording it)" if self.record else ""))
        problems = []
        if self._wait_idle(deadline):
            times["ready"] = time.time()
            self._step("ready", times["ready"])
            self._submit(TASK, deadline)
            times["prompt"] = time.time()
            self._step("prompt", times["prompt"])
            # The session id that took the prompt (True instead: claude is gone, stop waiting).
            first_sid = self._wait(lambda: self._first_session() or not self.claude_alive(), deadline)
            if isinstance(first_sid, str):
                self._wait(lambda: self._poll_steps(first_sid) or self.successor_request(first_sid)
                           or self.rotator_failed() or not self.claude_alive(), deadline)
                times.update({k: v for k, v in self.times(first_sid).items() if v is not None})
                for key, at in sorted(((k, v) for k, v in times.items()), key=lambda kv: kv[1]):
                    self._step(key, at)
                problems += self._check(first_sid)
            else:
                problems.append("the first prompt never reached the model")
        else:
            problems.append("claude did not show an idle input box within %gs" % self.timeout)
        steps = timeline(t0, times, self._labels())
        ok, line = verdict(steps, problems)
        reqs = self.model.requests()
        result.update(ok=ok, verdict=line, steps=steps, problems=problems, model_requests=len(reqs))
        if times.get("checkpoint") and times.get("successor_request"):
            result["rotation_overhead_ms"] = int(round((times["successor_request"] - times["checkpoint"]) * 1000))
        boot = next((r.get("chars") for r in self.ledgers().get(2, []) if r.get("ev") == "bootstrap"), None)
        result["bootstrap_chars"] = boot
        drivers = [r.get("driver") for r in self.ledgers().get(1, []) if r.get("ev") == "driver"]
        result["driver"] = drivers[-1] if drivers else None
        if self.plugin_copy and result["driver"] not in (None, "mod"):
            result["why_tmux"] = self.why_no_mod()
        if not ok:
            result["diagnostics"] = {"hooks_log": _tail(self.cc_home + "/logs/hooks.log"),
                                     "rotator_log": _tail(self.cc_home + "/logs/rotator.log"),
                                     "screen": self.screen()}

    def _first_session(self):
        """The session id that took the first prompt, once it reached the model."""
        req = next((r for r in self.model.main_requests() if r.contains(TASK)), None)
        return req.session_id if req is not None else None

    def _check(self, first_sid):
        """What must hold once the successor answered: the claim, the ref, a clean context."""
        problems = []
        req = self.successor_request(first_sid)
        if req is None:
            reason = self.rotator_failed()
            if reason:
                problems.append("the rotator failed: %s" % reason)
            elif not self.claude_alive():
                problems.append("claude exited during the rotation")
            return problems
        # Hook context arrives as a role "system" message or, for some models, a <system-reminder>.
        if BOOTSTRAP_MARK + "001" not in req.text:
            problems.append("the successor's first request did not carry the bootstrap text")
        if req.contains(WORK_MARK):
            problems.append("the successor's first request still held the previous conversation")
        refs = self._run(["git", "for-each-ref", "--format=%(refname)", "refs/continuity"]).stdout.split()
        if not any(r.endswith("/cp-001") for r in refs):
            problems.append("no git snapshot ref refs/continuity/<project key>/cp-001")
        try:
            with open(session.state_path(self.session_dir(1)), encoding="utf-8") as f:
                state = json.load(f)
            if state.get("state") != session.ROTATED or state.get("successor") != 2:
                problems.append("the first session is %s (successor %s), not ROTATED to the second"
                                % (state.get("state"), state.get("successor")))
        except (OSError, ValueError, TypeError):
            problems.append("the first session's state record is missing")
        return problems

    def _submit(self, text, deadline):
        """Type ``text``, wait until the input box shows it (a fast Enter can be taken as part
        of a paste and lost), then press Enter."""
        squash = lambda s: "".join(s.split())
        self.tmux("send-keys", "-t", self.pane, "-l", "--", text)
        self._wait(lambda: squash(text) in squash(Pane.input_text(self.screen())), min(deadline, time.monotonic() + 5))
        self.tmux("send-keys", "-t", self.pane, "Enter")

    def _wait(self, predicate, deadline):
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(POLL_S)

    def _wait_idle(self, deadline, settle=0.3):
        since = None
        while time.monotonic() < deadline:
            if Pane.is_idle(self.screen()):
                since = since or time.monotonic()
                if time.monotonic() - since >= settle:
                    return True
            else:
                since = None
            if not self.claude_alive():
                return False
            time.sleep(POLL_S)
        return False

    # teardown
    def close(self):
        """Kill the tmux server, claude and any rotator of ours; stop the model; remove the sandbox."""
        if self.root and os.path.exists(self.socket):
            try:
                panes = self.tmux("list-panes", "-a", "-F", "#{pane_pid}", check=False)
                self.pids.update(int(p) for p in panes.split() if p.isdigit())
            except (OSError, subprocess.SubprocessError):
                pass
            subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=15,
                           stdin=subprocess.DEVNULL)
        for pid in self._rotator_pids():
            self.pids.add(pid)
        reap(self.pids)
        if self.model is not None:
            self.model.stop()
            self.model = None
        if self.root and not self.keep:
            # A hook still running in the sandbox (a late Stop waits up to 30 s) would write into it
            # after the removal and re-create the folder: none may outlive the teardown.
            # Gone twice in a row, a moment apart: a process caught mid-fork or mid-exec (a pane's last child
            # starting as the server went) is not in one scan (CI saw a late hook re-create the folder once).
            for _ in range(8):
                reap(sandbox_pids(self.root), grace=1.0)
                shutil.rmtree(self.root, ignore_errors=True)
                if not os.path.lexists(self.root) and not sandbox_pids(self.root):
                    time.sleep(0.3)
                    if not os.path.lexists(self.root) and not sandbox_pids(self.root):
                        break

    def _rotator_pids(self):
        """Rotators the rehearsal's hooks spawned (from the ledger), if they still run."""
        if not self.root:
            return []
        try:
            pids = [r["pid"] for recs in self.ledgers().values() for r in recs
                    if r.get("ev") == "rotator_spawned" and isinstance(r.get("pid"), int)]
        except OSError:
            return []
        return [p for p in pids if _is_rotator(p)]


def sandbox_pids(root):
    """Processes running in the sandbox ``root``: its path in their environment (HOME,
    CC_CONTINUITY_HOME, TMPDIR are all under it) or their command line.  Linux (/proc) only."""
    mark = os.fsencode(root.rstrip("/") + "/")
    found = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (name, part), "rb") as f:
                    if mark in f.read():
                        found.add(int(name))
                        break
            except OSError:  # gone, or not ours to read
                break
    return found


def rehearse(claude=None, settings_path=None, keep=False, timeout=120.0, progress=None, record=None):
    """Run one rehearsal; the result dict (``ok``, ``verdict``, ``steps`` …).  RehearsalError if it cannot start.

    ``progress(step key or None, what, seconds)`` is called as each step happens; ``record``: the path
    of an asciinema v2 cast of the Claude Code pane to write."""
    path, hooks, plugin_copy = installed_settings(settings_path)
    exe = find_claude(claude)
    if record:
        record = os.path.abspath(record)
        if not os.path.isdir(os.path.dirname(record)):
            raise RehearsalError("cannot record to %s: no such directory" % record)
    return Rehearsal(exe, hooks, settings_path=path, keep=keep, timeout=timeout, progress=progress,
                     record=record, plugin_copy=plugin_copy).run()
