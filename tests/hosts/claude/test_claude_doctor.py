"""Claude Code's rows (hosts/claude/doctor.py): settings.json's hooks, the hook probe, the shell reader, the
status line, the claude() wrapper, folder trust, what Claude Code is told of the model."""

import os
import subprocess
import sys
import time

from cc_continuity import paths
from cc_continuity.hosts.claude import doctor as claude
from cc_continuity.install import blocks, wrapper
from helpers.doctor import red


# -- settings.json ---------------------------------------------------------------

def test_hooks_dropped_by_a_settings_rewrite_are_red_with_the_fix(inst):
    doc = inst.read_settings()
    del doc["hooks"]
    doc["model"] = "opus"  # what a /model save from a stale copy looks like
    inst.write_settings(doc)
    res = inst.check("hooks", "hook-probe", "statusline")
    red(res["hooks"], "all our hooks are gone", "rewrite settings.json", "cc-continuity install")
    assert res["hooks"].fix == "cc-continuity install"
    red(res["hook-probe"], "no hook of ours")
    assert res["statusline"].ok


def test_not_installed_at_all(inst):
    os.unlink(os.path.join(inst.cchome, "install.json"))
    os.unlink(inst.settings_path)
    red(inst.check("hooks")["hooks"], "does not exist", "cc-continuity install")
    inst.write_settings({"theme": "dark"})
    red(inst.check("hooks")["hooks"], "not installed")


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
    red(r, "Stop", "the app copy /gone is missing", "skips resume, clear, compact",
         "SessionEnd: no timeout", "/no/such/python3")
    assert "PreToolUse" not in r.detail and "UserPromptSubmit" not in r.detail


def test_an_install_of_the_earlier_hook_entry_is_named_with_the_reinstall(inst):
    """A settings.json written before the hook entry moved (issue 35): our groups are still ours (not
    "not installed"), each handler is named with the install that moves it; once moved, the row is green."""
    from cc_continuity.install import settings as S

    doc = inst.read_settings()
    for groups in doc["hooks"].values():
        for g in groups:
            for h in g["hooks"]:
                h["args"] = [a.replace(S.HOOK_MARK, S.OLD_HOOK_MARK) if isinstance(a, str) else a
                             for a in h.get("args") or []]
    inst.write_settings(doc)
    r = inst.check("hooks")["hooks"]
    red(r, "SessionStart, UserPromptSubmit, PreToolUse", "Stop, PreCompact", "Notification run the hook entry of an "
        "earlier version", "`cc-continuity install` moves them")
    assert "not installed" not in r.detail and "missing" not in r.detail and r.detail.count("earlier") == 1
    assert r.fix == "cc-continuity install"
    doc["hooks"]["Stop"][0]["hooks"][0]["args"][2] = S.boot_code("/gone").replace(S.HOOK_MARK, S.OLD_HOOK_MARK)
    inst.write_settings(doc)
    red(inst.check("hooks")["hooks"], "Stop: the app copy /gone is missing")


def test_a_regex_matcher_that_covers_every_source_is_fine(inst):
    doc = inst.read_settings()
    doc["hooks"]["SessionStart"][0]["matcher"] = ".*"
    inst.write_settings(doc)
    assert inst.check("hooks")["hooks"].ok


def test_unparseable_settings_are_reported_not_rewritten(inst):
    with open(inst.settings_path, "w") as f:
        f.write('{"hooks": {},}')
    r = inst.check("hooks")["hooks"]
    red(r, "not valid JSON", "by hand")
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
    red(inst.check("hooks")["hooks"], "disableAllHooks")


def test_hook_probe_runs_the_installed_hook_for_real(inst, monkeypatch):
    dispatch = os.path.join(inst.app, "cc_continuity", "hosts", "claude", "hooks", "__init__.py")
    assert inst.check("hook-probe")["hook-probe"].ok
    with open(os.path.join(paths.logs_dir(), "hooks.log")) as f:
        assert any("DoctorProbe-" in line and "ignored" in line for line in f)
    with open(dispatch) as f:
        good = f.read()
    # A broken package: the bootstrap exits 0 and prints nothing, yet does nothing.
    with open(dispatch, "a") as f:
        f.write("\nthis is not python\n")
    red(inst.check("hook-probe")["hook-probe"], "never reached the dispatcher")
    with open(dispatch, "w") as f:
        f.write("print('Traceback: something broke')\ndef main(argv):\n    pass\n")
    red(inst.check("hook-probe")["hook-probe"], "something broke")
    with open(dispatch, "w") as f:
        f.write("import sys\ndef main(argv):\n    sys.exit(2)\n")
    red(inst.check("hook-probe")["hook-probe"], "exited 2")
    with open(dispatch, "w") as f:
        f.write("import time\ndef main(argv):\n    time.sleep(30)\n")
    monkeypatch.setattr(claude, "PROBE_TIMEOUT_S", 0.5)
    started = time.monotonic()
    red(inst.check("hook-probe")["hook-probe"], "timed out")
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


def test_the_shell_reader_row_says_which_reading_the_hooks_use(inst):
    """Issue 33: side-effect holds fall back to the simpler reader where tree-sitter cannot be imported by the
    hooks' own Python (an app copy made before it was a dependency, a plugin whose packages are not built)."""
    green = inst.check("shell-reader")["shell-reader"]
    assert green.ok and "tree-sitter" in green.detail, green
    kept = os.path.join(inst.app, "lib.kept")
    os.rename(os.path.join(inst.app, "lib"), kept)  # an app copy made before the parser was a dependency
    bad = inst.check("shell-reader")["shell-reader"]
    red(bad, "simpler reader", "No module named 'tree_sitter'", "cc-continuity install")


def test_statusline_replaced_or_chained(inst):
    inst.manifest["statusline_chain"] = {"type": "command", "command": "~/bin/my-status"}
    inst.save_manifest()
    assert "chaining '~/bin/my-status'" in inst.check("statusline")["statusline"].detail
    doc = inst.read_settings()
    doc["statusLine"] = {"type": "command", "command": "npx ccstatusline"}
    inst.write_settings(doc)
    red(inst.check("statusline")["statusline"], "npx ccstatusline", "cc-continuity install")


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
    red(inst.check("wrapper")["wrapper"], "hides the claude() wrapper")

    with open(inst.bashrc, "w") as f:
        f.write(blocks.render(wrapper.BLOCK_NAME, "0.0.1", wrapper.render("bash", "/old/bin/cc-continuity"), "hash"))
    red(inst.check("wrapper")["wrapper"], "another version", "cc-continuity install")

    with open(inst.bashrc, "w") as f:
        f.write("export EDITOR=vi\n")
    red(inst.check("wrapper")["wrapper"], "no claude() wrapper block")

    inst.manifest["rc"] = []  # installed with --no-wrapper
    inst.save_manifest()
    assert inst.check("wrapper")["wrapper"].ok


def test_wrapper_launcher_missing(inst):
    os.unlink(inst.launcher)
    red(inst.check("wrapper")["wrapper"], "launcher", "missing")


# -- Claude Code state -----------------------------------------------------------------

def test_trust_flag(inst, tmp_path):
    sub = inst.repo / "pkg"
    sub.mkdir()
    assert inst.check("trust", cwd=sub)["trust"].ok  # trust given to a folder above counts
    inst.trust(str(tmp_path / "elsewhere"))
    red(inst.check("trust")["trust"], "not accepted", "accept the trust dialog", str(inst.repo))
    os.unlink(os.path.join(str(inst.home), ".claude.json"))
    red(inst.check("trust")["trust"], "does not exist")
    # With CLAUDE_CONFIG_DIR, Claude Code keeps .claude.json inside it.
    cdir = tmp_path / "cfg"
    cdir.mkdir()
    inst.trust(str(inst.repo), path=str(cdir / ".claude.json"))
    assert inst.check("trust", env=dict(inst.env, CLAUDE_CONFIG_DIR=str(cdir)))["trust"].ok


def test_local_model_server_needs_max_context_tokens(inst):
    local = dict(inst.env, ANTHROPIC_BASE_URL="http://127.0.0.1:8000")
    red(inst.check("context-window", env=local)["context-window"], "1,000,000", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=")
    assert inst.check("context-window", env=dict(local, CLAUDE_CODE_MAX_CONTEXT_TOKENS="131072"))["context-window"].ok
    red(inst.check("context-window", env=dict(local, CLAUDE_CODE_MAX_CONTEXT_TOKENS="lots"))["context-window"],
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
    red(r, "gpu-box", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=131072")
    doc["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = "131072"
    inst.write_settings(doc)
    assert inst.check("context-window")["context-window"].ok


def test_the_window_claude_code_uses_must_be_the_one_we_rotate_by(inst):
    local = dict(inst.env, ANTHROPIC_BASE_URL="http://127.0.0.1:8000", CLAUDE_CODE_MAX_CONTEXT_TOKENS="131072")
    r = inst.check("context-window", env=local)["context-window"]
    assert r.ok and "131072 (environment) for http://127.0.0.1:8000" in r.detail   # no window of ours: detected
    subprocess.run([sys.executable, "-m", "cc_continuity.cli", "configure", "--window", "200000"], env=inst.env,
                   cwd=str(inst.repo), check=True, capture_output=True)
    red(inst.check("context-window", env=local)["context-window"], "131072", "200000",
         "cc-continuity configure --window 131072", "CLAUDE_CODE_MAX_CONTEXT_TOKENS=200000")
    # The same disagreement through settings.json's env block, even against Anthropic's API.
    doc = inst.read_settings()
    doc["env"] = {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "1000000"}
    inst.write_settings(doc)
    red(inst.check("context-window")["context-window"], "settings.json env", "--window 1000000")
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
    red(inst.check(name, env=qwen)[name], "Qwen/Qwen3-Coder-30B", "short system prompt", "2.1.330",
         "CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT=0")
    r = inst.check(name, env=dict(qwen, CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT="0"))[name]
    assert r.ok and "the full system prompt" in r.detail
    # settings.json: the model key and the env block count as Claude Code reads them.
    doc = inst.read_settings()
    doc["model"] = "qwen3-coder"
    doc["env"] = {"ANTHROPIC_BASE_URL": "http://gpu-box:8000"}
    inst.write_settings(doc)
    red(inst.check(name)[name], "'qwen3-coder' (settings.json model)")
    doc["env"]["CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT"] = "1"
    inst.write_settings(doc)
    r = inst.check(name)[name]
    assert r.ok and "(settings.json env): the short system prompt" in r.detail, r


def test_claude_version_floor(inst):
    assert inst.check("claude")["claude"].ok
    inst.claude_version("2.1.100")
    red(inst.check("claude")["claude"], "2.1.100", "claude update")
    inst.claude.unlink()
    red(inst.check("claude", env=dict(inst.env, PATH="/usr/bin:/bin"))["claude"], "not found")
