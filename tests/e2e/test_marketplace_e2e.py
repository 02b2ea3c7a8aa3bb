"""The plugin the way users install it (issue 20): ``claude plugin marketplace add <repo>`` +
``claude plugin install``, with no install.py and no ``cc-continuity install``.

The marketplace is this checkout's tracked files, served two ways: a bare git repository
behind a real smart-HTTP git server on 127.0.0.1 (how Claude Code takes a git marketplace)
and a plain directory.  Then: three rotations handed over by the mod; uninstall (plain and
``--purge``, after either route and after ``install --plugin``), after which ``claude -p``
runs none of our hooks; the HOME listed before the install and after ``uninstall --purge``.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from cc_continuity.rehearse import MODEL, rotation_scenario, work_rule
from tests.helpers.githttp import GitHTTP
from tests.test_plugin import LEAN_LIMIT

from .common import Continuity, assert_clean_successor, first_request, prompt, report_metrics
from .harness import REPO_ROOT

pytestmark = pytest.mark.e2e
PLUGIN = "cc-continuity@cc-continuity"
REPLY = {"default": {"reply": [{"type": "text", "text": "hello from the scripted model"}]}}
# Claude Code's own bookkeeping under HOME (its business, issue 20): every other path must be as it was.
# Under .claude/plugins only the data folder Claude Code keeps for our plugin is ours: assert_none_of_ours_runs.
CLAUDE_CODE_OWN = (".claude.json", ".claude/plugins", ".claude/telemetry",
                   ".claude/backups", ".claude/projects", ".claude/session-env", ".claude/shell-snapshots",
                   ".claude/todos", ".claude/statsig", ".claude/debug", ".claude/ide", ".claude/file-history",
                   ".claude/paste-cache", ".claude/cache", ".claude/history.jsonl", ".claude/tasks",
                   ".claude/plans", ".claude/local", ".claude/.credentials.json", ".claude/sessions",
                   ".local/share/applications/claude-code-url-handler.desktop",
                   # Claude Code's log of each start of a plugin's MCP server (ours is in the plugin and off by
                   # default: it fails at once, and Claude Code logs that and caches it), kept after an uninstall
                   ".cache/claude-cli-nodejs", ".claude/mcp-needs-auth-cache.json",
                   # pip asks `rustc --version` for its user agent when building the plugin's packages; where
                   # rustup's proxy is on PATH (this machine) it makes ~/.rustup in a fresh HOME (a user with
                   # rustup has one): the machine's tool's, not ours
                   ".rustup")


def snapshot(dest):
    """This checkout's tracked files (as they are in the work tree) in ``dest``, install.py left out."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        src = os.path.join(REPO_ROOT, rel)
        if not rel or rel == "install.py" or not os.path.lexists(src):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target)
    return dest


@pytest.fixture
def market(tmp_path):
    """``make(kind) -> source`` for ``claude plugin marketplace add``: "git" (bare repo over HTTP) or "dir"."""
    servers = []

    def make(kind):
        src = snapshot(str(tmp_path / "cc-continuity"))
        if kind == "dir":
            return src
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        subprocess.run(git + ["init", "-q", "-b", "main", src], check=True)
        subprocess.run(git + ["-C", src, "add", "-A"], check=True)
        subprocess.run(git + ["-C", src, "commit", "-qm", "snapshot"], check=True)
        subprocess.run(["git", "clone", "-q", "--bare", src, str(tmp_path / "srv" / "cc.git")], check=True)
        server = GitHTTP(str(tmp_path / "srv")).__enter__()
        servers.append(server)
        return server.url("cc.git")

    yield make
    for server in servers:
        server.__exit__(None, None, None)


def claude_plugin(sb, *args):
    p = sb.run([sb.claude_bin, "plugin", *args], timeout=180)
    assert p.returncode == 0, (args, p.stdout + p.stderr)
    return p.stdout


def install_from(sb, source):
    claude_plugin(sb, "marketplace", "add", source)
    claude_plugin(sb, "install", PLUGIN)
    doc = sb.settings()
    assert doc["enabledPlugins"] == {PLUGIN: True}, doc


def listing(home):
    """Every path under ``home`` but Claude Code's own bookkeeping, with a digest of each file."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(home):
        rel_dir = os.path.relpath(dirpath, home)
        dirnames[:] = [d for d in dirnames if not os.path.normpath(os.path.join(rel_dir, d)).startswith(CLAUDE_CODE_OWN)]
        for name in dirnames + filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel.startswith(CLAUDE_CODE_OWN):
                continue
            path = os.path.join(home, rel)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    out[rel] = f.read()
            else:
                out[rel] = "dir" if os.path.isdir(path) else "link"
    # A folder that only held Claude Code's files (~/.local/share/applications) is not ours either.
    held = {os.path.dirname(own) for own in CLAUDE_CODE_OWN}
    for rel in sorted((r for r, v in out.items() if v == "dir"), key=len, reverse=True):
        if not any(k.startswith(rel + "/") for k in out) and any(h == rel or h.startswith(rel + "/") for h in held):
            del out[rel]
    return out


def ours_ran(sb):
    """Did any hook of ours run: the hooks log, as (exists, size)."""
    log = os.path.join(sb.cc_home, "logs", "hooks.log")
    return os.path.exists(sb.cc_home), os.path.getsize(log) if os.path.exists(log) else 0


def no_settings(sb):
    """A HOME with no Claude Code settings (the harness seeds permissions; a -p reply needs none)."""
    os.unlink(sb.settings_path)


def assert_none_of_ours_runs(sb):
    before = ours_ran(sb)
    p = sb.run_print("hello")
    assert p.returncode == 0 and "hello from the scripted model" in p.stdout, p.stdout + p.stderr
    assert ours_ran(sb) == before, "a hook of ours ran after uninstall"
    data = os.path.join(sb.home, ".claude", "plugins", "data")
    assert not [d for d in os.listdir(data) if d.startswith("cc-continuity")] if os.path.isdir(data) else True


# -- the marketplace route, then the mod's chain ----------------------------------------------------

TASK_CHAIN = "Marketplace chain task: keep a work log"


SYSTEM_PYTHON = "/usr/bin/python3"


def pythons():
    """The Pythons users have, first on PATH: a venv's (the plugin links its base interpreter, here the one CI
    made its venv from) and the distribution's own (PEP 668, no pip-installed packages)."""
    out = ["venv-base"]
    if os.path.exists(SYSTEM_PYTHON):
        out.append("system")
    return out


def base_of(python):
    return subprocess.run([python, "-c", "import sys; print(getattr(sys, '_base_executable', sys.executable))"],
                          capture_output=True, text=True, check=True, timeout=30).stdout.strip()


def package_less(tmp_path, which):
    """``(folder to put first on PATH or None, the interpreter the plugin will link)``, after asserting that
    interpreter has none of our packages (issue 32: CI's did, so CI passed where users failed)."""
    first, python = None, base_of(sys.executable)
    if which == "system":  # its python3 first; before it, a `uv` in a folder anyone can write: never run, so
        shared = tmp_path / "shared"   # the packages are built with pip (from ensurepip), not CI's uv
        shared.mkdir()
        shared.chmod(0o777)
        (shared / "uv").write_text("#!/bin/sh\necho ran > %s\nexit 1\n" % (tmp_path / "planted-uv-ran"))
        (shared / "uv").chmod(0o755)
        sysdir = tmp_path / "system-first"
        sysdir.mkdir()
        os.symlink(SYSTEM_PYTHON, sysdir / "python3")
        first, python = "%s:%s" % (shared, sysdir), base_of(SYSTEM_PYTHON)
    for mod in ("psutil", "libtmux", "watchdog", "tree_sitter") + (("requests",) if which == "system" else ()):
        p = subprocess.run([python, "-c", "import " + mod], capture_output=True, timeout=30)
        assert p.returncode != 0, "%s can import %s: not a user's interpreter (.ci/run takes ours out)" % (python, mod)
    return first, python


def built_env(sb, timeout=240):
    """The plugin's optional packages, once their build (started by the first session) is done: .complete."""
    data = os.path.join(sb.home, ".claude", "plugins", "data", "cc-continuity-cc-continuity")

    def done():
        for path in glob.glob(os.path.join(data, "envs", "*", ".complete")):
            with open(path) as f:
                return dict(json.load(f), path=os.path.dirname(path))
        failed = glob.glob(os.path.join(data, "envs", "*.failed"))
        assert not failed, open(failed[0]).read()
        return None

    return sb.wait_for(done, timeout, what="the plugin's optional packages")


@pytest.mark.parametrize("kind", ["git", "dir"])
@pytest.mark.parametrize("where", ["tmux", "no-tmux"])
@pytest.mark.parametrize("python", pythons())
def test_marketplace_route_three_rotations_through_the_mod_then_purge(sandbox_factory, market, kind, where, python,
                                                                      claude_bin_version, tmp_path):
    first, linked = package_less(tmp_path, python)
    sb = sandbox_factory(model_name=MODEL, python_first=first)
    sb.model.set_scenario(rotation_scenario(sb.project, rotations=3, task=TASK_CHAIN))
    before = listing(sb.home)
    install_from(sb, market(kind))
    copy = [p for p in os.listdir(os.path.join(sb.home, ".claude", "plugins", "cache", "cc-continuity",
                                                "cc-continuity"))]
    (version,) = copy
    root = os.path.join(sb.home, ".claude", "plugins", "cache", "cc-continuity", "cc-continuity", version)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    assert size <= LEAN_LIMIT and not os.path.exists(os.path.join(root, "tests")), size
    cont = Continuity(sb)
    sb.start_claude(tmux_env=where == "tmux")
    prompt(sb, TASK_CHAIN)
    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=180)
    sb.wait_for(lambda: [r.get("step") for r in cont.events(3, "mod")][-1:] == ["submitted"], 30,
                what="the third hand-over")
    figures = []
    for n in (1, 2, 3):
        assert [e["driver"] for e in cont.events(n, "driver")] == ["mod"], n
        assert cont.record(n)["state"] == "ROTATED"
        req = first_request(sb, cont.record(n + 1)["session_id"])
        assert_clean_successor(req, n, n + 1, TASK_CHAIN)
        succ = sb.model.wait_for(lambda r: r.kind == "main" and r.session_id == cont.record(n + 1)["session_id"])
        figures.append(round((succ.time - cont.events(n, "checkpoint")[0]["ts"]) * 1000))
    assert done.session_id == cont.record(4)["session_id"]
    # The hooks ran the Python the SessionStart chose, through its link, and said nothing to the user.
    (data,) = [d for d in os.listdir(os.path.join(sb.home, ".claude", "plugins", "data"))]
    link = os.path.join(sb.home, ".claude", "plugins", "data", data, "python")
    assert os.path.islink(link) and os.path.realpath(link) == os.path.realpath(linked), (link, linked)
    with open(os.path.join(sb.cc_home, "logs", "hooks.log")) as f:
        log = f.read()
    assert "PostToolUse" in log and " error" not in log.lower(), log[-2000:]
    rotator = [r for n in (1, 2, 3) for r in cont.events(n, "rotator")]
    if where == "tmux":  # a standby rotator behind the mod each time, none of which failed or typed
        assert [r for r in rotator if r["step"] == "begin"] and not [r for r in rotator if r["step"] in (
            "failed", "clear_sent")], rotator
    else:
        assert rotator == [], rotator  # no tmux to drive: the mod alone
    env = built_env(sb)
    assert env["python"] == os.path.realpath(linked)
    if (kind, where) == ("git", "tmux"):  # once built, the hooks' holds read shell with tree-sitter (issue 33)
        d = sb.run([os.path.join(root, "bin", "cc-continuity"), "doctor", "--json"], timeout=180)
        rows = {r["name"]: r for r in json.loads(d.stdout)}
        assert rows["shell-reader"]["ok"] and rows["plugin-packages"]["ok"], (rows["shell-reader"],
                                                                              rows["plugin-packages"])
    assert env["installer"] == ("pip" if python == "system" else "uv"), env
    assert not (tmp_path / "planted-uv-ran").exists()
    report_metrics("marketplace_p4_ms", {"kind": kind, "where": where, "python": python, "version": claude_bin_version,
                                         "p4_ms": figures, "copy_bytes": size, "env_s": env["seconds"],
                                         "env_bytes": env["bytes"], "env_installer": env["installer"]})
    sb.exit_claude()
    # uninstall --purge: the plugin goes through Claude Code's commands, then nothing of ours runs.
    p = sb.cli("uninstall", "--purge", timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "%s uninstalled" % PLUGIN in p.stdout and "marketplace cc-continuity removed" in p.stdout, p.stdout
    after = listing(sb.home)
    # settings.json had the user's permissions: Claude Code rewrote it when it took its plugin tables out
    # (its business); what is in it is theirs alone.
    assert json.loads(after.pop(".claude/settings.json")) == dict(
        json.loads(before.pop(".claude/settings.json")), enabledPlugins={}, extraKnownMarketplaces={})
    assert sorted(set(after) ^ set(before)) == [] and after == before, sorted(set(after) ^ set(before))
    sb.model.set_scenario(REPLY)
    assert_none_of_ours_runs(sb)  # the plugin's data folder, its packages' environment with it, is gone
    assert not os.path.exists(env["path"]) and not os.path.exists(sb.cc_home)


# -- a rotator that cannot start; an index that refuses ------------------------------------------------

TASK_ONE = "Standby task: keep a work log"


def test_a_rotator_that_cannot_start_is_logged_and_the_mods_hand_over_goes_ahead(sandbox_factory, market, tmp_path):
    """Issue 32's race: the standby rotator failed at its first look at the pane and moved the record to
    AWAITING_MANUAL_CLEAR while the mod's offer was pending; the mod then refused it.  Now the rotator logs
    why and leaves the record to the mod's hand-over."""
    first, _ = package_less(tmp_path, "venv-base")
    sb = sandbox_factory(model_name=MODEL, python_first=first, extra_env={"CC_CONTINUITY_FAULT": "rotator:check"})
    sb.model.set_scenario(rotation_scenario(sb.project, task=TASK_ONE))
    install_from(sb, market("git"))
    cont = Continuity(sb)
    sb.start_claude()
    prompt(sb, TASK_ONE)
    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=120)
    assert [e["driver"] for e in cont.events(1, "driver")] == ["mod"]
    failed = cont.wait_event(1, "rotator", step="failed")
    assert "a fault injected at rotator:check" in failed["reason"], failed
    left = cont.wait_event(1, "rotator", step="left_to_mod")
    assert left["holder"] == "mod", left
    assert cont.record(1)["state"] == "ROTATED"
    assert not [e for e in cont.events(1, "transition") if e.get("to") == "AWAITING_MANUAL_CLEAR"]
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_ONE)


def test_a_refusing_index_leaves_one_message_and_a_red_doctor_row(sandbox_factory, market, tmp_path):
    """The user's own pip.conf and uv.toml name an index that answers 403: the session works on, the user
    is told once (a systemMessage), and doctor is red with the command that finishes it."""
    from tests.helpers.pkgindex import PackageIndex, use_index

    first, _ = package_less(tmp_path, "venv-base")
    sb = sandbox_factory(scenario=REPLY, python_first=first)
    with PackageIndex(tmp_path, status=403) as index:
        use_index(sb.home, index.url)
        install_from(sb, market("git"))
        sb.start_claude()
        sb.ask("hello")  # SessionStart started the build; it fails against the index
        data = os.path.join(sb.home, ".claude", "plugins", "data", "cc-continuity-cc-continuity")
        sb.wait_for(lambda: glob.glob(os.path.join(data, "envs", "*.failed")), 120, what="the build's failure")
        assert index.requests, "the build did not ask the user's index"
        for text in ("second prompt", "third prompt"):
            sb.ask(text)
        screen = sb.screen(scrollback=400)
        assert screen.count("could not build its optional packages") == 1, screen
        assert "cc-continuity doctor --fix" in screen
        (root,) = glob.glob(os.path.join(sb.home, ".claude", "plugins", "cache", "cc-continuity", "cc-continuity", "*"))
        d = sb.run([os.path.join(root, "bin", "cc-continuity"), "doctor", "--json"], timeout=180)
    assert d.stdout.strip(), (d.returncode, d.stderr[-3000:])
    rows = {r["name"]: r for r in json.loads(d.stdout)}
    row = rows["plugin-packages"]
    assert not row["ok"] and "403" in row["detail"] and row["fix"] == "cc-continuity doctor --fix", row
    assert rows["hooks"]["ok"] and rows["plugin-python"]["ok"], rows


def test_a_session_waiting_for_clear_is_pinned_under_the_prompt_by_the_mod(sandbox_factory, market, tmp_path):
    """No driver can clear (no tmux, and the mod may not hand over: "mod": false): the record waits for the
    user's /clear.  The mod pins that under the prompt at the turn's end ($.ui.status), where it stays while
    the session sits idle; the successor's start takes it away."""
    first, _ = package_less(tmp_path, "venv-base")
    sb = sandbox_factory(model_name=MODEL, python_first=first)
    sb.model.set_scenario(rotation_scenario(sb.project, task=TASK_ONE))
    install_from(sb, market("git"))
    os.makedirs(sb.cc_home, exist_ok=True)
    with open(os.path.join(sb.cc_home, "config.json"), "w") as f:
        json.dump({"mod": False}, f)
    cont = Continuity(sb)
    sb.start_claude(tmux_env=False)
    prompt(sb, TASK_ONE)
    sb.wait_for(lambda: cont.state(1) == "AWAITING_MANUAL_CLEAR", 120, what="the session to wait")
    cid = cont.record(1)["checkpoint"]["id"]
    pinned = "handoff %s is verified. Type /clear" % cid

    def under_the_prompt():
        lines = sb.screen().splitlines()
        at = max(i for i, line in enumerate(lines) if line.lstrip().startswith("\u276f"))
        return pinned in " ".join(" ".join(lines[at + 1:]).split())  # below the input box, wrapped or not

    sb.wait_for(under_the_prompt, 10, what="the notice under the prompt")
    time.sleep(3)
    assert under_the_prompt(), sb.screen()  # it stays while nothing happens
    prompt(sb, "/clear")
    sb.wait_for(lambda: cont.state(1) == "ROTATED", 60, what="the successor's claim")
    sb.wait_for(lambda: not under_the_prompt(), 15, what="the notice to go")


# -- uninstall after each route, in a HOME with no settings -----------------------------------------

@pytest.mark.parametrize("route,purge", [("git", False), ("dir", True), ("install-plugin", False),
                                         ("install-plugin", True)])
def test_uninstall_leaves_no_hook_of_ours_and_no_settings(sandbox_factory, market, route, purge):
    sb = sandbox_factory(scenario=REPLY)
    no_settings(sb)
    before = listing(sb.home)
    if route == "install-plugin":
        p = sb.cli("install", "--plugin", "--no-wrapper", timeout=240)
        assert p.returncode == 0, p.stdout + p.stderr
    else:
        install_from(sb, market(route))
    p = sb.run_print("hello")
    assert p.returncode == 0, p.stdout + p.stderr
    assert ours_ran(sb)[1] > 0, "the plugin's hooks did not run"
    args = ["uninstall", "--purge"] if purge else ["uninstall"]
    p = sb.cli(*args, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "uninstalled" in p.stdout and "plugin: " in p.stdout, p.stdout
    assert not os.path.exists(sb.settings_path), open(sb.settings_path).read()
    assert_none_of_ours_runs(sb)
    if purge:
        assert listing(sb.home) == before


# -- rehearse rehearses the form that is installed ---------------------------------------------------

@pytest.mark.parametrize("route", ["git", "install-plugin"])
def test_rehearse_in_the_plugin_form_drives_the_mod(sandbox_factory, market, route, claude_bin_version):
    sb = sandbox_factory(scenario=REPLY)
    if route == "install-plugin":
        p = sb.cli("install", "--plugin", "--no-wrapper", timeout=240)
        assert p.returncode == 0, p.stdout + p.stderr
        pid = "cc-continuity@cc-continuity-local"
    else:
        install_from(sb, market(route))
        pid = PLUGIN
    p = sb.cli("rehearse", "--json", "--claude", sb.claude_bin, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.loads(p.stdout)
    assert result["ok"], result
    assert result["plugin"][0] == pid and result["driver"] == "mod", {k: result.get(k) for k in ("why_tmux", "sandbox", "steps")}
    report_metrics("rehearse_plugin_p4_ms", {"route": route, "version": claude_bin_version,
                                             "p4_ms": result["rotation_overhead_ms"]})
    human = sb.cli("rehearse", "--claude", sb.claude_bin, timeout=300).stdout
    assert "hooks: the plugin %s" % pid in human and "handed over by the mod, in-process" in human, human


# -- updates keep the state -------------------------------------------------------------------------

def update_to_011(sb, tmp_path):
    """A newer version lands in the git marketplace's repository (what a git marketplace auto-updates
    to) and Claude Code takes it; its plugin index."""
    src, bare = str(tmp_path / "cc-continuity"), str(tmp_path / "srv" / "cc.git")
    for rel in ("plugin/.claude-plugin/plugin.json", "cc_continuity/__init__.py"):
        path = os.path.join(src, rel)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('"0.1.0"', '"0.1.1"'))  # plugin.json's version, __version__ in the package
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", src]
    subprocess.run(git + ["commit", "-qam", "0.1.1"], check=True)
    subprocess.run(git + ["push", "-q", bare, "main"], check=True)
    claude_plugin(sb, "marketplace", "update", "cc-continuity")
    claude_plugin(sb, "update", PLUGIN)
    with open(os.path.join(sb.home, ".claude", "plugins", "installed_plugins.json")) as f:
        index = json.load(f)
    assert [e["version"] for e in index["plugins"][PLUGIN]] == ["0.1.1"], index
    return index

# doctor's rows about the user's own setup, not about cc-continuity: red in this sandbox for a reason of its
# own, and rightly so.  Every other row must be green after an update.
USER_SETUP = {
    "context-window": "the sandbox's model is the scripted server on 127.0.0.1 with no "
                      "CLAUDE_CODE_MAX_CONTEXT_TOKENS: the user's model setup, which doctor is right to flag",
    "server-window": "the scripted server answers every GET with {}: no window in any shape a server documents, "
                     "so doctor asks for one by hand",
}


def test_an_update_over_the_git_marketplace_keeps_state_and_stays_quiet(sandbox_factory, tmp_path, market):
    sb = sandbox_factory(scenario=REPLY)
    url = market("git")
    install_from(sb, url)
    assert sb.run_print("hello").returncode == 0
    sessions = lambda: sorted(os.path.relpath(p, sb.cc_home) for p in
                              glob.glob(os.path.join(sb.cc_home, "projects", "*", "sessions", "*")))
    first = sessions()
    assert len(first) == 1
    index = update_to_011(sb, tmp_path)
    p = sb.run_print("hello")
    assert p.returncode == 0 and "cc-continuity is off" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert sessions()[:1] == first and len(sessions()) == 2  # the first session's state is still there
    with open(os.path.join(sb.cc_home, "logs", "hooks.log")) as f:
        log = f.read()
    assert " error" not in log.lower() and log.count("SessionStart") == 2, log
    # doctor as a marketplace-only user has it: the plugin's own bin/, from the new copy.
    root = index["plugins"][PLUGIN][0]["installPath"]
    d = sb.run([os.path.join(root, "bin", "cc-continuity"), "doctor", "--json"], timeout=180)
    assert d.stdout.strip(), (d.returncode, d.stderr[-3000:])
    rows = {r["name"]: r for r in json.loads(d.stdout)}
    assert set(USER_SETUP) <= set(rows) and {"plugin", "plugin-python", "hooks", "hook-probe", "skills", "mod",
                                             "statusline", "wrapper", "app-copy"} <= set(rows), sorted(rows)
    failed = {name: r["detail"] for name, r in rows.items() if not r["ok"] and name not in USER_SETUP}
    assert failed == {}, failed
    assert "0.1.1" in rows["plugin"]["detail"]


# -- installed in a live session ----------------------------------------------------------------------

TASK_LIVE = "Live install task: keep a work log"


def mods_off(sb):
    """Claude Code's rollout flag for plugin mods saved off (see common.plugin_sandbox)."""
    with open(sb.claude_json_path, encoding="utf-8") as f:
        seed = json.load(f)
    seed["cachedGrowthBookFeatures"] = {"tengu_plugin_hooks_modules": False}
    with open(sb.claude_json_path, "w", encoding="utf-8") as f:
        json.dump(seed, f)


@pytest.mark.parametrize("mods", ["on", "off"])
def test_a_plugin_installed_in_a_live_session_rotates_it_and_no_hook_fails(sandbox_factory, market, mods,
                                                                           claude_bin_version):
    """``/plugin install`` in a running session: Claude Code fires the plugin's hooks at once, with no
    SessionStart (2.1.328 and 2.1.332).  The first prompt (or, where mods load, the mod's hello at the
    install) links the Python before any tool call: no failed hook on screen, and that very session
    rotates, through the mod or, with mods off, through tmux."""
    extra = {"CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1"} if mods == "off" else None
    sb = sandbox_factory(model_name=MODEL, extra_env=extra)
    if mods == "off":
        mods_off(sb)
    sb.model.set_scenario(rotation_scenario(sb.project, task=TASK_LIVE))
    source = market("dir")
    cont = Continuity(sb)
    debug = os.path.join(sb.root, "debug.log")
    sb.start_claude(["--debug-file", debug])
    prompt(sb, "/plugin marketplace add " + source)  # typed, seen in the box, then Enter (a fast one is lost)
    sb.wait_for_text("Added marketplace", 60)
    sb.wait_idle()
    prompt(sb, "/plugin install " + PLUGIN)
    sb.wait_for_text("Install for you (user scope)", 60)  # the scope it asks for, first in its list
    sb.enter()
    sb.wait_for_text("Plugin is now active", 120)
    sb.wait_idle()
    data = os.path.join(sb.home, ".claude", "plugins", "data", "cc-continuity-cc-continuity")
    if mods == "on":  # the mod's hello, at the install, ran the chooser
        sb.wait_for(lambda: os.path.islink(os.path.join(data, "python")), 30, what="the mod's hello to link")
    else:  # no hook of ours ran yet (the plugin's MCP server entry may have: it chooses the Python as a hook does)
        assert not os.path.exists(os.path.join(sb.cc_home, "logs", "hooks.log"))
    prompt(sb, TASK_LIVE)
    done = sb.model.wait_for(lambda r: r.rule == "finish", timeout=120)
    assert [e["driver"] for e in cont.events(1, "driver")] == ["mod" if mods == "on" else "tmux"]
    assert cont.record(1)["state"] == "ROTATED"
    assert_clean_successor(first_request(sb, done.session_id), 1, 2, TASK_LIVE)
    sb.wait_idle(60)
    screen = sb.screen(scrollback=400)
    assert "hook failed" not in screen.lower() and "hook error" not in screen.lower(), screen
    with open(debug, encoding="utf-8", errors="replace") as f:
        text = f.read()  # what Claude Code made of every hook it ran (the old table: "failed to spawn", ENOENT)
    assert "Hook command failed" not in text and not re.search(r"Hook \S+ \(\S+\) error", text)
    with open(os.path.join(sb.cc_home, "logs", "hooks.log")) as f:
        log = f.read()
    first = log.split("SessionStart", 1)[0]  # what ran in the session the plugin was installed into
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        assert event in first, (event, log)
    assert " error" not in log.lower(), log
    assert os.path.realpath(os.path.join(data, "python")).rsplit("/", 1)[-1].startswith("python3")


# -- a live session on the old version beside a new one on the new version ----------------------------

TASK_OLD, TASK_NEW = "Old version task: keep a work log", "New version task: keep a work log"
CHAIN_ANSWERS = ('"hookEventName":"Stop"', '"hookEventName":"PreToolUse"', '"hookEventName":"SessionStart"',
                 '"sessionTitle"')


class Driving:
    """Type into and read another pane of the sandbox's tmux server (the harness drives one)."""

    def __init__(self, sb, pane):
        self.sb, self.pane = sb, pane

    def __enter__(self):
        self.kept, self.sb.pane = self.sb.pane, self.pane
        return self.sb

    def __exit__(self, *exc):
        self.sb.pane = self.kept


def test_a_live_session_on_the_old_version_and_a_new_one_share_state(sandbox_factory, tmp_path, market):
    """A git marketplace updates while a session runs: session A, started on 0.1.0, stays alive on it;
    session B starts on 0.1.1, in the same project and CC_CONTINUITY_HOME.  Both work (tool calls) and
    rotate through the mod at the same time: each checkpoint is claimed once, by its own session's
    successor; nothing is lost; no error logged, no message shown, no hook failed."""
    sb = sandbox_factory(model_name=MODEL)
    scenario = rotation_scenario(sb.project, task=TASK_OLD)
    scenario["rules"].append(work_rule("work-new", {"last_user_contains": TASK_NEW}, sb.project, times=1))
    sb.model.set_scenario(scenario)
    install_from(sb, market("git"))
    cont = Continuity(sb)
    logs = {v: os.path.join(sb.root, "debug-%s.log" % v) for v in ("0.1.0", "0.1.1")}
    sb.start_claude(["--debug-file", logs["0.1.0"]])
    old_pane = sb.pane
    numbers = lambda: glob.glob(os.path.join(sb.cc_home, "projects", "*", "sessions", "*", "state.json"))
    sb.wait_for(lambda: len(numbers()) == 1, 30, what="A's SessionStart")
    update_to_011(sb, tmp_path)
    new_pane = sb.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-c", sb.project, sb.claude_bin,
                       "--debug-file", logs["0.1.1"]).strip()
    with Driving(sb, new_pane):
        sb.wait_idle(30)
    sb.wait_for(lambda: len(numbers()) == 2, 30, what="B's SessionStart")
    assert cont.numbers() == [1, 2]
    # Both at once: the prompts go in back to back, the rotations overlap.
    for pane, task in ((old_pane, TASK_OLD), (new_pane, TASK_NEW)):
        with Driving(sb, pane):
            prompt(sb, task)
    sb.wait_for(lambda: len([r for r in sb.model.main_requests() if r.rule == "finish"]) == 2, 180,
                what="both successors")
    for pane in (old_pane, new_pane):
        with Driving(sb, pane):
            sb.wait_idle(60)
            screen = sb.screen(scrollback=400)
        assert "hook failed" not in screen.lower() and "hook error" not in screen.lower(), screen
    # Which version each session's hooks ran: the plugin root in the hook commands Claude Code logged;
    # and every answer of theirs it parsed: none carries a systemMessage, no hook failed.
    # The answers every rotation's chain gives, each parsed once: the Stop's handoff request, the handoff's
    # write allowed (PreToolUse), the successor's bootstrap (SessionStart) and its title (UserPromptSubmit).
    # A PostToolUse note comes too when that call's reading crossed a level; when the transcript lagged, the
    # Stop met the crossing first (seen: 4 answers where 5 were counted before), so it is not required.
    def answered(text):
        parsed = [line for line in text.splitlines() if "Parsed initial response" in line]
        return all(any(needle in line for line in parsed) for needle in CHAIN_ANSWERS)

    roots = {}
    for version, path in logs.items():
        def debug_log():  # Claude Code writes its debug file behind the screen: the last hooks' lines come later
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            return text if answered(text) else None
        try:
            text = sb.wait_for(debug_log, 15, what="the hook answers in %s's debug log" % version)
        except TimeoutError:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        roots[version] = {v for v in ("0.1.0", "0.1.1") if "/cc-continuity/%s'" % v in text}
        assert answered(text) and "systemMessage" not in text, (version, [
            line[-200:] for line in text.splitlines() if "Parsed initial response" in line])
        assert "Hook command failed" not in text and not re.search(r"Hook \S+ \(\S+\) error", text), version
    assert roots == {"0.1.0": {"0.1.0"}, "0.1.1": {"0.1.1"}}, roots
    # Sessions: 1 (A) and 2 (B) rotated, each claimed exactly once, by its own process's successor.
    assert cont.numbers() == [1, 2, 3, 4]
    claims = [(n, r["predecessor"]) for n in cont.numbers() for r in cont.events(n, "claim")]
    assert sorted(p for _, p in claims) == [1, 2], claims
    for n in (1, 2):
        rec = cont.record(n)
        succ = cont.record(rec["successor"])
        assert rec["state"] == "ROTATED" and (rec["successor"], n) in claims, rec
        assert succ["pid"] == rec["pid"] and succ["state"] in ("ACTIVE", "BOOTSTRAPPING"), succ
        assert [e["driver"] for e in cont.events(n, "driver")] == ["mod"], n
        task = TASK_OLD if n == 1 else TASK_NEW
        assert_clean_successor(first_request(sb, succ["session_id"]), n, rec["successor"], task)
        assert os.path.isfile(os.path.join(cont.sdir(n), "checkpoint", "handoff.md"))
    log = cont.hooks_log()
    assert " error" not in log.lower() and "traceback" not in log.lower(), log
    for event in ("PreToolUse", "PostToolUse", "Stop", "ModTurnEnd"):
        assert event in log, event
