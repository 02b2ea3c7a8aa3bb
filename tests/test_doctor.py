"""``cc-continuity doctor`` against real installs in a temp HOME: green when wired, red with a fix when not."""

import http.server
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from cc_continuity import __version__, atomic, lock, paths
from cc_continuity.tmux import launchenv
from cc_continuity.commands import doctor
from cc_continuity.doctor import checks
from cc_continuity.install import blocks, settings, wrapper
from cc_continuity.install import skills as install_skills

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(REPO, "cc_continuity")
PYTHON = os.path.realpath(sys.executable)


class Install:
    """A complete install, laid out the way ``cc-continuity install`` lays it out."""

    def __init__(self, tmp_path, repo, home):
        self.repo, self.home = repo, home
        self.cchome = paths.home()
        paths.ensure_dir(self.cchome)
        self.app = os.path.join(self.cchome, "app.d", "v1")
        shutil.copytree(PKG, os.path.join(self.app, "cc_continuity"), ignore=shutil.ignore_patterns("__pycache__"))
        os.makedirs(os.path.join(self.app, "lib"))  # the optional packages the hooks' python -S reads (the parser's)
        for name in ("tree_sitter", "tree_sitter_bash"):
            os.symlink(importlib.util.find_spec(name).submodule_search_locations[0], os.path.join(self.app, "lib", name))
        os.symlink("app.d/v1", os.path.join(self.cchome, "app"))
        self.settings_path = os.path.join(paths.claude_config_dir(), "settings.json")
        paths.ensure_dir(paths.claude_config_dir())
        self.write_settings(settings.render_fragment(settings.load_fragment(), PYTHON, os.path.join(self.cchome, "app")))
        self.launcher = os.path.join(paths.ensure_dir(os.path.join(self.cchome, "bin")), "cc-continuity")
        with open(self.launcher, "w") as f:
            f.write("#!/bin/sh\nexec %s -m cc_continuity.cli \"$@\"\n" % PYTHON)
        os.chmod(self.launcher, 0o700)
        for name, text in install_skills.shipped(install_skills.model_command(self.launcher)).items():
            target = install_skills.target(paths.claude_config_dir(), name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(text)
        self.bashrc = os.path.join(str(home), ".bashrc")
        with open(self.bashrc, "w") as f:
            f.write("export EDITOR=vi\n" + blocks.render(wrapper.BLOCK_NAME, __version__,
                                                         wrapper.render("bash", self.launcher), wrapper.BLOCK_STYLE))
        self.manifest = {"version": __version__, "launcher": self.launcher, "app": os.path.join(self.cchome, "app"),
                         "rc": [{"path": self.bashrc, "created": True, "shell": "bash"}], "statusline_chain": None}
        self.save_manifest()
        self.trust(str(repo))
        bindir = tmp_path / "bin"
        bindir.mkdir()
        self.claude = bindir / "claude"
        self.claude_version("2.1.328")
        self.env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), SHELL="/bin/bash",
                        **{wrapper.ACTIVE_ENV: "1"})

    def write_settings(self, doc):
        with open(self.settings_path, "w") as f:
            json.dump(doc, f, indent=2)

    def read_settings(self):
        with open(self.settings_path) as f:
            return json.load(f)

    def save_manifest(self):
        atomic.write_text(os.path.join(self.cchome, "install.json"), json.dumps(self.manifest))

    def trust(self, *dirs, path=None):
        doc = {"projects": {os.path.realpath(d): {"hasTrustDialogAccepted": True} for d in dirs}}
        with open(path or os.path.join(str(self.home), ".claude.json"), "w") as f:
            json.dump(doc, f)

    def claude_version(self, v):
        self.claude.write_text("#!/bin/sh\necho '%s (Claude Code)'\n" % v)
        self.claude.chmod(0o755)

    def check(self, *names, cwd=None, **kw):
        """The results of the named checks (all when none are named), by name."""
        chosen = [c for c in checks.CHECKS if not names or c.__name__ in ["check_" + n.replace("-", "_") for n in names]]
        ctx = checks.Context(env=kw.pop("env", self.env), cwd=str(cwd or self.repo), **kw)
        return {r.name: r for r in checks.run_checks(ctx, chosen)}

    def cli(self, *args, env=None):
        return subprocess.run([sys.executable, "-m", "cc_continuity.cli", "doctor", *args], env=env or self.env,
                              cwd=str(self.repo), capture_output=True, text=True, timeout=60)


@pytest.fixture
def inst(tmp_path, git_repo, isolated_home):
    return Install(tmp_path, git_repo, isolated_home)


def _red(result, *fragments):
    assert not result.ok, result
    for frag in fragments:
        assert frag in result.detail + " " + (result.fix or ""), result
    assert result.fix


# -- the whole report ------------------------------------------------------------

def test_good_install_is_all_green(inst):
    results = inst.check()
    bad = [r for r in results.values() if not r.ok]
    assert bad == []
    assert "10 events" in results["hooks"].detail
    assert "6 skills" in results["skills"].detail


def test_cli_json_shape_and_exit_status(inst):
    r = inst.cli("--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)
    assert isinstance(rows, list) and len(rows) == len(checks.CHECKS)
    for row in rows:
        assert set(row) == {"name", "ok", "detail", "fix"}
        assert row["ok"] is True and row["fix"] is None and row["detail"]
    os.unlink(inst.settings_path)
    r = inst.cli("--json")
    assert r.returncode == 1
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["hooks"]["ok"] is False and rows["hooks"]["fix"] == "cc-continuity install"


def test_text_report_one_line_per_check_with_fixes_and_no_colour_when_piped(inst):
    inst.manifest["rc"][0]["path"] = os.path.join(str(inst.home), "nowhere.rc")
    inst.save_manifest()
    r = inst.cli()
    assert r.returncode == 1
    assert "\033[" not in r.stdout
    lines = r.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith(("ok  ", "FAIL"))) == len(checks.CHECKS)
    wrapper_line = next(i for i, line in enumerate(lines) if line.startswith("FAIL") and " wrapper " in line)
    assert "fix: cc-continuity install" in lines[wrapper_line + 1]
    assert "cc-continuity rehearse" in r.stdout
    coloured = doctor.render([checks.Result("x", True, "fine"), checks.Result("y", False, "bad", "do z")], color=True)
    assert "\033[32m" in coloured and "\033[31m" in coloured


def test_a_crashing_check_is_reported_not_raised(inst):
    def check_boom(ctx):
        raise KeyError("surprise")

    [r] = checks.run_checks(checks.Context(env=inst.env), [check_boom])
    assert r.name == "boom" and not r.ok and "surprise" in r.detail


def test_the_real_installer_passes_doctor(tmp_path, git_repo, isolated_home):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").write_text("#!/bin/sh\necho '2.1.328 (Claude Code)'\n")
    (bindir / "claude").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), SHELL="/bin/bash")
    r = subprocess.run([sys.executable, "-m", "cc_continuity.cli", "install"], env=env, cwd=str(git_repo),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(str(isolated_home), ".claude.json"), "w") as f:
        json.dump({"projects": {str(git_repo): {"hasTrustDialogAccepted": True}}}, f)
    # Right after install, in the shell that ran it: the wrapper is for new shells, not a failure.
    results = {x.name: x for x in checks.run_checks(checks.Context(env=env, cwd=str(git_repo)))}
    assert results["wrapper"].ok and "read by shells started from now on" in results["wrapper"].detail
    assert [x for x in results.values() if not x.ok] == []
    env[wrapper.ACTIVE_ENV] = "1"
    results = {x.name: x for x in checks.run_checks(checks.Context(env=env, cwd=str(git_repo)))}
    assert [x for x in results.values() if not x.ok] == []
    # The installed launcher runs `launch` from the app copy.
    launcher = checks.launcher_path(json.load(open(os.path.join(paths.home(), "install.json"))))
    r = subprocess.run([launcher, "launch", "--print", "--", "hi"], env=env, cwd=str(git_repo),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["argv"] == [str(bindir / "claude"), "hi"]


# -- settings.json ---------------------------------------------------------------

def test_hooks_dropped_by_a_settings_rewrite_are_red_with_the_fix(inst):
    doc = inst.read_settings()
    del doc["hooks"]
    doc["model"] = "opus"  # what a /model save from a stale copy looks like
    inst.write_settings(doc)
    res = inst.check("hooks", "hook-probe", "statusline")
    _red(res["hooks"], "all our hooks are gone", "rewrite settings.json", "cc-continuity install")
    assert res["hooks"].fix == "cc-continuity install"
    _red(res["hook-probe"], "no hook of ours")
    assert res["statusline"].ok


def test_not_installed_at_all(inst):
    os.unlink(os.path.join(inst.cchome, "install.json"))
    os.unlink(inst.settings_path)
    _red(inst.check("hooks")["hooks"], "does not exist", "cc-continuity install")
    inst.write_settings({"theme": "dark"})
    _red(inst.check("hooks")["hooks"], "not installed")


def test_each_broken_handler_is_named(inst):
    doc = inst.read_settings()
    del doc["hooks"]["Stop"]
    from cc_continuity.install import settings as S

    doc["hooks"]["PreCompact"][0]["hooks"][0]["args"][2] = S.boot_code("/gone")
    doc["hooks"]["SessionStart"][0]["matcher"] = "startup"
    del doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"]
    doc["hooks"]["PostToolUse"][0]["hooks"][0]["command"] = "/no/such/python3"
    inst.write_settings(doc)
    r = inst.check("hooks")["hooks"]
    _red(r, "Stop", "the app copy /gone is missing", "skips resume, clear, compact",
         "SessionEnd: no timeout", "/no/such/python3")
    assert "PreToolUse" not in r.detail and "UserPromptSubmit" not in r.detail


def test_a_regex_matcher_that_covers_every_source_is_fine(inst):
    doc = inst.read_settings()
    doc["hooks"]["SessionStart"][0]["matcher"] = ".*"
    inst.write_settings(doc)
    assert inst.check("hooks")["hooks"].ok


def test_unparseable_settings_are_reported_not_rewritten(inst):
    with open(inst.settings_path, "w") as f:
        f.write('{"hooks": {},}')
    r = inst.check("hooks")["hooks"]
    _red(r, "not valid JSON", "by hand")
    with open(inst.settings_path) as f:
        assert f.read() == '{"hooks": {},}'
    # No red check sends the user to an install that would refuse this file: the repair comes first.
    os.unlink(inst.launcher)
    results = inst.check()
    told = [r.fix for r in results.values() if not r.ok and r.fix and "cc-continuity install" in r.fix]
    assert len(told) >= 3, results  # hooks, hook-probe, statusline, wrapper (the launcher is gone) ...
    for fix in told:
        assert fix.startswith("repair %s by hand" % inst.settings_path), fix


def test_disable_all_hooks_is_red(inst):
    doc = inst.read_settings()
    doc["disableAllHooks"] = True
    inst.write_settings(doc)
    _red(inst.check("hooks")["hooks"], "disableAllHooks")


def test_hook_probe_runs_the_installed_hook_for_real(inst, monkeypatch):
    dispatch = os.path.join(inst.app, "cc_continuity", "hooks", "__init__.py")
    assert inst.check("hook-probe")["hook-probe"].ok
    with open(os.path.join(paths.logs_dir(), "hooks.log")) as f:
        assert any("DoctorProbe-" in line and "ignored" in line for line in f)
    with open(dispatch) as f:
        good = f.read()
    # A broken package: the bootstrap exits 0 and prints nothing, yet does nothing.
    with open(dispatch, "a") as f:
        f.write("\nthis is not python\n")
    _red(inst.check("hook-probe")["hook-probe"], "never reached the dispatcher")
    with open(dispatch, "w") as f:
        f.write("print('Traceback: something broke')\ndef main(argv):\n    pass\n")
    _red(inst.check("hook-probe")["hook-probe"], "something broke")
    with open(dispatch, "w") as f:
        f.write("import sys\ndef main(argv):\n    sys.exit(2)\n")
    _red(inst.check("hook-probe")["hook-probe"], "exited 2")
    with open(dispatch, "w") as f:
        f.write("import time\ndef main(argv):\n    time.sleep(30)\n")
    monkeypatch.setattr(checks, "PROBE_TIMEOUT_S", 0.5)
    started = time.monotonic()
    _red(inst.check("hook-probe")["hook-probe"], "timed out")
    assert time.monotonic() - started < 10
    # The app copy gone entirely (rm -rf without uninstall): the hook still exits 0 (never blocks Claude Code).
    with open(dispatch, "w") as f:
        f.write(good)
    import shutil
    import subprocess

    from cc_continuity.install import settings as S

    handler = inst.read_settings()["hooks"]["PreToolUse"][0]["hooks"][0]
    shutil.rmtree(os.path.join(inst.app, "cc_continuity"))
    r = subprocess.run([handler["command"]] + handler["args"], input=b'{"session_id":"x"}', capture_output=True,
                       timeout=30)
    assert (r.returncode, r.stdout) == (0, b""), (r.returncode, r.stdout, r.stderr)
    assert os.path.realpath(S.app_of_handler(handler)) == os.path.realpath(inst.app)


def test_statusline_replaced_or_chained(inst):
    inst.manifest["statusline_chain"] = {"type": "command", "command": "~/bin/my-status"}
    inst.save_manifest()
    assert "chaining '~/bin/my-status'" in inst.check("statusline")["statusline"].detail
    doc = inst.read_settings()
    doc["statusLine"] = {"type": "command", "command": "npx ccstatusline"}
    inst.write_settings(doc)
    _red(inst.check("statusline")["statusline"], "npx ccstatusline", "cc-continuity install")


# -- wrapper, skills, app copy -------------------------------------------------------

def test_wrapper_block_missing_stale_or_not_sourced(inst):
    assert inst.check("wrapper")["wrapper"].ok
    env = dict(inst.env)
    del env[wrapper.ACTIVE_ENV]
    # This test's process started before the block was written: a shell from before the install.
    r = inst.check("wrapper", env=env)["wrapper"]
    assert r.ok and "read by shells started from now on" in r.detail and "source %s" % inst.bashrc in r.detail
    # A shell started after it that still lacks it does not read that file: red.
    time.sleep(0.05)
    os.utime(inst.bashrc, (time.time() - 60,) * 2)
    out = subprocess.run(["sh", "-c", '"$0" -m cc_continuity.cli doctor; :', sys.executable], env=env,
                         cwd=str(inst.repo), capture_output=True, text=True, timeout=60).stdout
    assert "FAIL  wrapper" in out and "this shell has not read it" in out and "source %s" % inst.bashrc in out, out

    with open(inst.bashrc, "a") as f:
        f.write("alias claude='~/.claude/local/claude'\n")
    _red(inst.check("wrapper")["wrapper"], "hides the claude() wrapper")

    with open(inst.bashrc, "w") as f:
        f.write(blocks.render(wrapper.BLOCK_NAME, "0.0.1", wrapper.render("bash", "/old/bin/cc-continuity"), "hash"))
    _red(inst.check("wrapper")["wrapper"], "another version", "cc-continuity install")

    with open(inst.bashrc, "w") as f:
        f.write("export EDITOR=vi\n")
    _red(inst.check("wrapper")["wrapper"], "no claude() wrapper block")

    inst.manifest["rc"] = []  # installed with --no-wrapper
    inst.save_manifest()
    assert inst.check("wrapper")["wrapper"].ok


def test_wrapper_launcher_missing(inst):
    os.unlink(inst.launcher)
    _red(inst.check("wrapper")["wrapper"], "launcher", "missing")


def test_skills_missing_or_unparseable(inst):
    base = os.path.join(paths.claude_config_dir(), "skills")
    shutil.rmtree(os.path.join(base, "continuity-rotate"))
    with open(os.path.join(base, "continuity-status", "SKILL.md"), "w") as f:
        f.write("no front matter here\n")
    r = inst.check("skills")["skills"]
    _red(r, "continuity-rotate missing", "continuity-status has no front matter", "cc-continuity install")
    assert "continuity-on " not in r.detail


def test_app_copy_must_match_the_installed_version(inst):
    init = os.path.join(inst.app, "cc_continuity", "__init__.py")
    with open(init) as f:
        text = f.read()
    with open(init, "w") as f:
        f.write(text.replace('__version__ = "%s"' % __version__, '__version__ = "0.0.1"'))
    _red(inst.check("app-copy")["app-copy"], "0.0.1", __version__)
    shutil.rmtree(inst.app)
    _red(inst.check("app-copy")["app-copy"], "missing")


# -- state directory ---------------------------------------------------------------

def _project_dir(key):
    paths.ensure_dir(paths.projects_dir())
    return paths.ensure_dir(paths.project_dir(key))


def test_open_permissions_are_red_and_fix_takes_exactly_those_bits_away(inst):
    proj = _project_dir("repo-abc")
    state = os.path.join(proj, "project.json")
    with open(state, "w") as f:
        f.write("{}")
    os.chmod(state, 0o644)
    os.chmod(proj, 0o755)
    r = inst.check("permissions")["permissions"]
    _red(r, "project.json (644)", "cc-continuity doctor --fix")
    # Code may be world-readable but never group/world-writable: install.py's venv is code,
    # made under the user's umask (755 dirs, 644 files).
    venv = os.path.join(inst.cchome, "venv", "lib")
    os.makedirs(venv)
    os.chmod(venv, 0o755)
    os.chmod(os.path.join(inst.app, "cc_continuity"), 0o777)
    _red(inst.check("permissions")["permissions"], "cc_continuity (777)")
    r = inst.check("permissions", fix=True)["permissions"]
    assert r.ok and "fixed 3 path(s)" in r.detail, r
    assert os.stat(state).st_mode & 0o777 == 0o600 and os.stat(proj).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(inst.app, "cc_continuity")).st_mode & 0o777 == 0o755  # readable stays readable
    assert os.stat(venv).st_mode & 0o777 == 0o755  # was never wrong
    assert inst.check("permissions")["permissions"].ok


def test_a_lock_released_by_its_holder_is_no_leftover(inst):
    path = os.path.join(inst.cchome, "install.lock")
    with lock.Lock(path):
        pass
    assert os.path.exists(path)
    r = inst.check("leftovers")["leftovers"]
    assert r.ok and r.detail == "no leftover temp files or stale locks", r


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_leftovers_are_listed_and_fix_removes_only_ours(inst):
    old = time.time() - 3600
    proj = _project_dir("repo-abc")

    def touch(path, content="x", mtime=None):
        with open(path, "w") as f:
            f.write(content)
        if mtime:
            os.utime(path, (mtime, mtime))
        return path

    old_tmp = touch(os.path.join(proj, atomic.TMP_MARK + "state.json.123.abcd"), mtime=old)
    old_tmp_settings = touch(os.path.join(paths.claude_config_dir(), atomic.TMP_MARK + "settings.json.9.ff"),
                             mtime=old)
    young_tmp = touch(os.path.join(proj, atomic.TMP_MARK + "ledger.jsonl.5.beef"))
    env_dir = paths.ensure_dir(launchenv.files_dir())
    old_env = touch(os.path.join(env_dir, "env-repo-001-1-aa.json"), '{"env": {}}', mtime=old)
    stale_lock = touch(os.path.join(proj, "lock"), "%d\n" % _dead_pid())
    other = _project_dir("other-def")
    live_lock = os.path.join(other, "lock")
    unheld_live_pid = touch(os.path.join(_project_dir("third"), "lock"), "%d\n" % os.getpid())
    user_file = touch(os.path.join(proj, "notes.txt"), mtime=old)

    with lock.Lock(live_lock):
        r = inst.check("leftovers")["leftovers"]
        _red(r, "temp file", "launch environment", "lock file", "cc-continuity doctor --fix")
        r = inst.check("leftovers", fix=True)["leftovers"]
        assert r.ok, r
        for gone in (old_tmp, old_tmp_settings, old_env, stale_lock):
            assert not os.path.exists(gone) and gone in r.detail
        for kept in (young_tmp, live_lock, unheld_live_pid, user_file):
            assert os.path.exists(kept)
    assert inst.check("leftovers")["leftovers"].ok


def test_stale_locks_alone_are_not_an_error(inst):
    proj = _project_dir("repo-abc")
    with open(os.path.join(proj, "lock"), "w") as f:
        f.write("%d\n" % _dead_pid())
    r = inst.check("leftovers")["leftovers"]
    assert r.ok and "1 lock file" in r.detail


# -- Claude Code state -----------------------------------------------------------------

def test_trust_flag(inst, tmp_path):
    sub = inst.repo / "pkg"
    sub.mkdir()
    assert inst.check("trust", cwd=sub)["trust"].ok  # trust given to a folder above counts
    inst.trust(str(tmp_path / "elsewhere"))
    _red(inst.check("trust")["trust"], "not accepted", "accept the trust dialog", str(inst.repo))
    os.unlink(os.path.join(str(inst.home), ".claude.json"))
    _red(inst.check("trust")["trust"], "does not exist")
    # With CLAUDE_CONFIG_DIR, Claude Code keeps .claude.json inside it.
    cdir = tmp_path / "cfg"
    cdir.mkdir()
    inst.trust(str(inst.repo), path=str(cdir / ".claude.json"))
    assert inst.check("trust", env=dict(inst.env, CLAUDE_CONFIG_DIR=str(cdir)))["trust"].ok


def test_local_model_server_needs_max_context_tokens(inst):
    local = dict(inst.env, ANTHROPIC_BASE_URL="http://127.0.0.1:8000")
    _red(inst.check("context-window", env=local)["context-window"], "1,000,000", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=")
    assert inst.check("context-window", env=dict(local, CLAUDE_CODE_MAX_CONTEXT_TOKENS="131072"))["context-window"].ok
    _red(inst.check("context-window", env=dict(local, CLAUDE_CODE_MAX_CONTEXT_TOKENS="lots"))["context-window"],
         "not a positive integer")
    assert inst.check("context-window", env=dict(inst.env, ANTHROPIC_BASE_URL="https://api.anthropic.com"))[
        "context-window"].ok
    # settings.json's env block counts too, and the configured window is suggested.
    doc = inst.read_settings()
    doc["env"] = {"ANTHROPIC_BASE_URL": "http://gpu-box:8000"}
    inst.write_settings(doc)
    subprocess.run([sys.executable, "-m", "cc_continuity.cli", "configure", "--window", "131072"], env=inst.env,
                   cwd=str(inst.repo), check=True, capture_output=True)
    r = inst.check("context-window")["context-window"]
    _red(r, "gpu-box", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=131072")
    doc["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = "131072"
    inst.write_settings(doc)
    assert inst.check("context-window")["context-window"].ok


def test_the_window_claude_code_uses_must_be_the_one_we_rotate_by(inst):
    local = dict(inst.env, ANTHROPIC_BASE_URL="http://127.0.0.1:8000", CLAUDE_CODE_MAX_CONTEXT_TOKENS="131072")
    r = inst.check("context-window", env=local)["context-window"]
    assert r.ok and "131072 (environment) for http://127.0.0.1:8000" in r.detail   # no window of ours: detected
    subprocess.run([sys.executable, "-m", "cc_continuity.cli", "configure", "--window", "200000"], env=inst.env,
                   cwd=str(inst.repo), check=True, capture_output=True)
    _red(inst.check("context-window", env=local)["context-window"], "131072", "200000",
         "cc-continuity configure --window 131072", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=200000")
    # The same disagreement through settings.json's env block, even against Anthropic's API.
    doc = inst.read_settings()
    doc["env"] = {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "1000000"}
    inst.write_settings(doc)
    _red(inst.check("context-window")["context-window"], "settings.json env", "--window 1000000")
    doc["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = "200000"
    inst.write_settings(doc)
    r = inst.check("context-window")["context-window"]
    assert r.ok and "the window cc-continuity uses" in r.detail, r


def test_a_local_model_id_gets_the_short_system_prompt_unless_chosen(inst):
    name = "system-prompt"
    assert inst.check(name)[name].ok                                                     # Anthropic's API
    local = dict(inst.env, ANTHROPIC_BASE_URL="http://gpu-box:8000", CLAUDE_CODE_MAX_CONTEXT_TOKENS="131072")
    assert inst.check(name, env=local)[name].ok                   # no model named: Claude Code's default id
    assert inst.check(name, env=dict(local, ANTHROPIC_MODEL="claude-sonnet-4-5"))[name].ok
    qwen = dict(local, ANTHROPIC_MODEL="Qwen/Qwen3-Coder-30B")
    inst.claude_version("2.1.328")
    r = inst.check(name, env=qwen)[name]
    assert r.ok and "2.1.328 gives every model the full system prompt" in r.detail, r
    inst.claude_version("2.1.332")
    _red(inst.check(name, env=qwen)[name], "Qwen/Qwen3-Coder-30B", "short system prompt", "2.1.330",
         "CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=0")
    r = inst.check(name, env=dict(qwen, CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT="0"))[name]
    assert r.ok and "the full system prompt" in r.detail
    # settings.json: the model key and the env block count as Claude Code reads them.
    doc = inst.read_settings()
    doc["model"] = "qwen3-coder"
    doc["env"] = {"ANTHROPIC_BASE_URL": "http://gpu-box:8000"}
    inst.write_settings(doc)
    _red(inst.check(name)[name], "'qwen3-coder' (settings.json model)")
    doc["env"]["CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT"] = "1"
    inst.write_settings(doc)
    r = inst.check(name)[name]
    assert r.ok and "(settings.json env): the short system prompt" in r.detail, r


def test_claude_version_floor(inst):
    assert inst.check("claude")["claude"].ok
    inst.claude_version("2.1.100")
    _red(inst.check("claude")["claude"], "2.1.100", "claude update")
    inst.claude.unlink()
    _red(inst.check("claude", env=dict(inst.env, PATH="/usr/bin:/bin"))["claude"], "not found")


def test_invalid_config_is_red_with_the_file_and_key(inst):
    with open(paths.config_file(), "w") as f:
        f.write('{"rotate": "soon"}')
    _red(inst.check("config")["config"], "config.json", "rotate")


# -- notifications ---------------------------------------------------------------------

class _Ntfy(http.server.BaseHTTPRequestHandler):
    status = 200
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append((self.path, dict(self.headers), body))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def ntfy():
    handler = type("H", (_Ntfy,), {"received": [], "status": 200})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv, handler
    finally:
        srv.shutdown()
        srv.server_close()


def _configure(inst, *args):
    subprocess.run([sys.executable, "-m", "cc_continuity.cli", "configure", *args], env=inst.env,
                   cwd=str(inst.repo), check=True, capture_output=True)


def test_ntfy_unconfigured_reachable_unreachable(inst, ntfy):
    assert "not configured" in inst.check("ntfy")["ntfy"].detail
    srv, handler = ntfy
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/topic" % srv.server_address[1])
    r = inst.check("ntfy")["ntfy"]
    assert r.ok and "reachable" in r.detail
    assert handler.received == []  # a plain doctor run sends nothing
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/topic" % closed)
    _red(inst.check("ntfy")["ntfy"], "cannot connect")


def test_notify_test_without_ntfy_says_nothing_was_sent(inst, ntfy):
    srv, handler = ntfy
    r = inst.check("ntfy", notify_test=True)["ntfy"]
    _red(r, "no ntfy URL is configured", "no test message was sent", "configure --ntfy")
    assert handler.received == []


def test_notify_test_sends_one_real_message(inst, ntfy):
    srv, handler = ntfy
    _configure(inst, "--ntfy", "http://127.0.0.1:%d/my-topic" % srv.server_address[1])
    r = inst.check("ntfy", notify_test=True)["ntfy"]
    assert r.ok, r
    assert len(handler.received) == 1 and handler.received[0][0] == "/my-topic"
    handler.status = 403
    _red(inst.check("ntfy", notify_test=True)["ntfy"], "not delivered", "403")


# -- the plugin ------------------------------------------------------------------

def plugin_copy(inst, pid="cc-continuity@cc-continuity-local", version=__version__):
    """A plugin as Claude Code keeps it (plugins/cache + installed_plugins.json), enabled in settings."""
    from cc_continuity.install import plugin

    root = os.path.join(paths.claude_config_dir(), "plugins", "cache", pid.split("@")[1], "cc-continuity", version)
    files = plugin.files(PYTHON, os.path.join(inst.cchome, "app"), "#!/bin/sh\n")
    plugin.write(root, files)
    meta = json.load(open(os.path.join(root, ".claude-plugin", "plugin.json")))
    meta["version"] = version
    json.dump(meta, open(os.path.join(root, ".claude-plugin", "plugin.json"), "w"))
    index = os.path.join(paths.claude_config_dir(), "plugins", "installed_plugins.json")
    doc = json.load(open(index)) if os.path.exists(index) else {"version": 2, "plugins": {}}
    doc["plugins"][pid] = [{"scope": "user", "installPath": root, "version": version}]
    json.dump(doc, open(index, "w"))
    s = inst.read_settings()
    s.setdefault("enabledPlugins", {})[pid] = True
    s["hooks"] = {}
    inst.write_settings(s)
    shutil.rmtree(os.path.join(paths.claude_config_dir(), "skills"), ignore_errors=True)
    return root


def fake_plugin_test(inst, said):
    """`claude plugin test` answering the way the real one does (its lines checked in tests/e2e)."""
    inst.claude.write_text("#!/bin/sh\nif [ \"$1\" = plugin ]; then echo 'claude plugin test: %s' >&2; exit 1; fi\n"
                           "echo '2.1.332 (Claude Code)'\n" % said)


def test_a_plugin_install_is_green_and_its_own_hook_command_is_probed(inst):
    plugin_copy(inst)
    fake_plugin_test(inst, "/tmp/x: no hooks module to load; there is no hooks/hooks.json naming one")
    results = inst.check()
    assert [r for r in results.values() if not r.ok] == []
    assert "by the plugin cc-continuity@cc-continuity-local" in results["hooks"].detail
    assert "from the plugin" in results["skills"].detail
    assert results["mod"].detail.startswith("mods can load here")
    assert "the hook ran" in results["hook-probe"].detail


def test_plugin_and_settings_hooks_together_are_double_wiring(inst):
    plugin_copy(inst)
    s = inst.read_settings()
    s["hooks"] = settings.render_fragment(settings.load_fragment(), PYTHON, os.path.join(inst.cchome, "app"))["hooks"]
    inst.write_settings(s)
    _red(inst.check("hooks")["hooks"], "double wiring", "cc-continuity install",
         "claude plugin uninstall cc-continuity@cc-continuity-local")


def test_two_plugins_an_old_copy_or_no_copy_are_red(inst):
    root = plugin_copy(inst)
    plugin_copy(inst, pid="cc-continuity@cc-continuity")
    _red(inst.check("plugin")["plugin"], "2 cc-continuity plugins", "runs 2 times")
    s = inst.read_settings()
    del s["enabledPlugins"]["cc-continuity@cc-continuity"]
    inst.write_settings(s)
    assert inst.check("plugin")["plugin"].ok
    plugin_copy(inst, version="0.0.9")  # the same id, an older copy
    _red(inst.check("plugin")["plugin"], "version 0.0.9", "claude plugin update")
    shutil.rmtree(os.path.dirname(root))
    _red(inst.check("plugin")["plugin"], "no copy of it")
    _red(inst.check("hooks")["hooks"], "hooks/hooks.json is missing")


@pytest.mark.parametrize("said, ok, fragment", [
    ("/tmp/x: no hooks module to load; there is no hooks/hooks.json naming one", True, "mods can load"),
    ("hooks modules are turned off here (disableAllHooks, allowManagedHooksOnly or a policy)", False, "disableAllHooks"),
    ("hooks modules are turned off in this process: the rollout switch served off", False, "rollout switch"),
    ("something new", False, "no answer we know"),
])
def test_whether_mods_load_is_what_claude_plugin_test_says(inst, said, ok, fragment):
    plugin_copy(inst)
    fake_plugin_test(inst, said)
    result = inst.check("mods")["mod"]
    assert result.ok is ok and fragment in result.detail, result


def test_without_a_plugin_or_with_mod_off_nothing_is_asked(inst):
    fake_plugin_test(inst, "hooks modules are turned off in this process")
    assert "no plugin" in inst.check("mods")["mod"].detail
    plugin_copy(inst)
    with open(paths.config_file(), "w") as f:
        json.dump({"mod": False}, f)
    result = inst.check("mods")["mod"]
    assert result.ok and '"mod": false' in result.detail


def test_a_pre_skill_shell_command_hook_is_flagged_only_where_it_can_block_us(inst, monkeypatch):
    assert inst.check("skill-shell")["skill-shell"].detail == "no PreSkillShellCommand hook"
    os.makedirs(os.path.join(str(inst.repo), ".claude"), exist_ok=True)
    with open(os.path.join(str(inst.repo), ".claude", "settings.json"), "w") as f:
        json.dump({"hooks": {"PreSkillShellCommand": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "/usr/local/bin/deny-all"}]}]}}, f)
    result = inst.check("skill-shell")["skill-shell"]
    assert result.ok and "cannot be refused" in result.detail  # our skills inject no shell command
    assert checks.skill_shell_commands() == {}
    monkeypatch.setattr(checks, "skill_shell_commands", lambda: {"continuity-status": ["cc-continuity status"]})
    _red(inst.check("skill-shell")["skill-shell"], "continuity-status", "cc-continuity status")


def test_skills_that_name_a_command_the_bash_tool_cannot_find_are_red(inst):
    """The bare name resolves only through ~/.local/bin, which Claude Code's Bash tool may lack."""
    for name, text in install_skills.shipped().items():
        with open(install_skills.target(paths.claude_config_dir(), name), "wb") as f:
            f.write(text)
    _red(inst.check("skills")["skills"], "`cc-continuity`, which is not found", "cc-continuity install")
    for name, text in install_skills.shipped(inst.launcher).items():
        with open(install_skills.target(paths.claude_config_dir(), name), "wb") as f:
            f.write(text)
    assert "found without your PATH" in inst.check("skills")["skills"].detail
    os.chmod(inst.launcher, 0o600)  # there, but it cannot run
    _red(inst.check("skills")["skills"], "--version` failed")


# -- issue 20: the marketplace route's plugin (the repository's own plugin/) -------------------------

MARKET_ID = "cc-continuity@cc-continuity"


def market_copy(inst):
    """The repository's plugin/ as Claude Code copies it from a marketplace (links followed)."""
    root = plugin_copy(inst, pid=MARKET_ID)
    shutil.rmtree(root)
    shutil.copytree(os.path.join(REPO, "plugin"), root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_plugins_python_off_is_red_with_the_words_the_hook_showed(inst, tmp_path):
    from cc_continuity.install import plugin

    root = market_copy(inst)
    data = plugin.data_dir(MARKET_ID, paths.claude_config_dir())
    assert data.endswith("/plugins/data/cc-continuity-cc-continuity")
    r = inst.check("plugin-python", "hook-probe")
    assert r["plugin-python"].ok and "no session since the plugin was installed" in r["plugin-python"].detail
    assert r["hook-probe"].ok and "nothing to probe yet" in r["hook-probe"].detail
    # The SessionStart found no Python 3.11+ (run for real on a PATH with only an old one).
    import pwd

    old = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv", "versions", "3.9.18", "bin", "python3")
    if not os.access(old, os.X_OK):
        pytest.skip("no Python 3.9 here")
    only_old = tmp_path / "only-old"
    only_old.mkdir()
    (only_old / "python3").symlink_to(old)
    for tool in ("id", "find", "dirname", "ln", "mv", "rm", "tr", "uname", "readlink"):
        (only_old / tool).symlink_to(shutil.which(tool))
    os.makedirs(data)
    p = subprocess.run(["/bin/sh", os.path.join(root, "hooks", "python.sh"), "-S", "-c", "pass", "SessionStart"],
                       env={"PATH": str(only_old), "CLAUDE_PLUGIN_DATA": data}, capture_output=True, text=True)
    shown = json.loads(p.stdout)["systemMessage"]
    r = inst.check("plugin-python", "hook-probe")
    red = r["plugin-python"]
    assert not red.ok and shown.startswith(red.detail) and "3.9.18" in red.detail, (red, shown)
    assert red.fix in shown  # the one command the line named
    assert not r["hook-probe"].ok and "silently doing nothing" in r["hook-probe"].detail  # the link is `true`
    # A Python turning up: chosen at the next SessionStart, and doctor says which.
    p = subprocess.run(["/bin/sh", os.path.join(root, "hooks", "python.sh"), "-S", "-c", "pass", "SessionStart"],
                       env={"PATH": os.path.dirname(PYTHON) + ":" + str(only_old), "CLAUDE_PLUGIN_DATA": data})
    r = inst.check("plugin-python", "hook-probe")
    assert r["plugin-python"].ok and "the plugin's hooks run %s" % os.path.dirname(PYTHON) in r["plugin-python"].detail
    assert r["hook-probe"].ok and "the hook ran" in r["hook-probe"].detail, r["hook-probe"]


def test_the_plugins_packages_row_is_red_on_a_refusing_index_and_fix_builds_them(inst, tmp_path, monkeypatch):
    """A marketplace plugin's optional packages (cc_continuity/deps): a build the user's own index refused
    is red with why and the one command that finishes it; `doctor --fix` runs that build, green after."""
    from cc_continuity import deps
    from cc_continuity.install import plugin
    from tests.helpers.pkgindex import PackageIndex, use_index, wheel

    market_copy(inst)
    data = plugin.data_dir(MARKET_ID, paths.claude_config_dir())
    os.makedirs(data)
    os.symlink(os.path.realpath(sys.executable), os.path.join(data, "python"))  # what the SessionStart chose
    assert "not built yet" in inst.check("plugin-packages")["plugin-packages"].detail
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # pip from ensurepip (no uv)
    files = tmp_path / "wheels"
    files.mkdir()
    _, digest = wheel(files, "tinypkg", "1.0", {"tinypkg/__init__.py": "VALUE = 1\n"})
    lock = tmp_path / "tiny.lock"
    lock.write_text("tinypkg==1.0 --hash=sha256:%s\n" % digest)
    with PackageIndex(files, status=403) as index:
        use_index(os.environ["HOME"], index.url)
        p = subprocess.run([sys.executable, "-S", "-m", "cc_continuity.deps.build", "--data", data, "--lock", str(lock)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 1
        red = inst.check("plugin-packages")["plugin-packages"]
        assert not red.ok and "answered HTTP 403" in red.detail and red.fix == "cc-continuity doctor --fix", red
        index.status = 200
        monkeypatch.setattr(deps, "LOCK_FILE", str(lock))  # --fix builds the real lock; here, the tiny one
        from cc_continuity.deps import build

        real = build.build
        monkeypatch.setattr(build, "build", lambda d, py: real(d, py, lock=str(lock)))
        fixed = inst.check("plugin-packages", fix=True)["plugin-packages"]
    assert fixed.ok and "built in" in fixed.detail and "pip" in fixed.detail, fixed


def test_after_an_uninstall_inside_claude_code_doctor_names_what_is_left(inst):
    from cc_continuity.install import plugin

    market_copy(inst)
    s = inst.read_settings()
    s["statusLine"] = settings.render_fragment(settings.load_fragment(), PYTHON, inst.cchome + "/app")["statusLine"]
    inst.write_settings(s)
    assert inst.check("plugin")["plugin"].ok
    s["enabledPlugins"][MARKET_ID] = False  # `/plugin disable` (or uninstall) in Claude Code
    inst.write_settings(s)
    _red(inst.check("plugin")["plugin"], "no cc-continuity plugin is enabled", "the status line in settings.json",
         "the state folder %s" % paths.home())
    assert inst.check("plugin")["plugin"].fix == plugin.LEFTOVER_FIX == "cc-continuity uninstall --purge"


def test_the_marketplace_route_alone_lacks_no_status_line_wrapper_or_app_copy(inst):
    """`/plugin marketplace add` + `/plugin install` and nothing else (no `cc-continuity install`): a plugin
    cannot ship the status line, and its hooks run its own copy; none of those rows is red for it."""
    from cc_continuity.install import manifest

    root = market_copy(inst)
    os.unlink(manifest.path())  # never installed by us
    shutil.rmtree(os.path.join(inst.cchome, "app"), ignore_errors=True)
    s = inst.read_settings()
    s.pop("statusLine", None)
    inst.write_settings(s)
    os.unlink(inst.manifest["rc"][0]["path"])  # no rc file of ours either
    r = inst.check("statusline", "wrapper", "app-copy")
    assert all(x.ok for x in r.values()), r
    assert "a plugin cannot ship the status line" in r["statusline"].detail
    assert r["app-copy"].detail == "not used: the plugin's hooks run its own copy (%s)" % root
    # Once `cc-continuity install` has run here, what it made is checked again: a lost status line is red.
    inst.save_manifest()
    _red(inst.check("statusline")["statusline"], "not set, not ours")


def test_the_shell_reader_row_says_which_reading_the_hooks_use(inst):
    """Issue 33: side-effect holds fall back to the simpler reader where tree-sitter cannot be imported by the
    hooks' own Python (an app copy made before it was a dependency, a plugin whose packages are not built)."""
    green = inst.check("shell-reader")["shell-reader"]
    assert green.ok and "tree-sitter" in green.detail, green
    kept = os.path.join(inst.app, "lib.kept")
    os.rename(os.path.join(inst.app, "lib"), kept)  # an app copy made before the parser was a dependency
    red = inst.check("shell-reader")["shell-reader"]
    _red(red, "simpler reader", "No module named 'tree_sitter'", "cc-continuity install")
