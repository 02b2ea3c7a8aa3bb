"""Install from a wheel into a fresh virtualenv, install into a temp HOME, delete the venv.

The hooks, the status line and the launcher must keep working without the
venv: they run the app copy under ``$CC_CONTINUITY_HOME`` on the base
interpreter.  Builds the wheel with pip (an isolated build, so pip needs its
index or the local wheelhouse) and installs the runtime dependencies the same
way; about 30 s.
"""

import json
import os
import shutil
import subprocess
import sys

from cc_continuity import __version__

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, **kw):
    # A pristine venv: no PYTHONPATH (conftest points it at this checkout, whose egg-info would
    # make pip think cc-continuity is installed already and skip the wheel).
    if "env" not in kw:
        kw["env"] = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(cmd, capture_output=True, timeout=240, **kw)
    assert p.returncode == 0, "%s failed (%d):\n%s\n%s" % (cmd, p.returncode, p.stdout.decode()[-3000:],
                                                         p.stderr.decode()[-3000:])
    return p.stdout.decode()


def build_wheel(tmp_path):
    """A wheel of the working tree, built from a clean copy (no build/ or egg-info left in the repo)."""
    src = tmp_path / "src"
    shutil.copytree(os.path.join(REPO, "cc_continuity"), src / "cc_continuity",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if os.path.exists(os.path.join(REPO, name)):
            shutil.copy(os.path.join(REPO, name), src / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src)])
    (wheel,) = (tmp_path / "dist").glob("cc_continuity-%s-*.whl" % __version__)
    return wheel


def snapshot(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = os.readlink(p) if os.path.islink(p) else (
                None if os.path.isdir(p) else open(p, "rb").read())
    return out


def test_wheel_install_survives_deleting_the_venv(tmp_path, git_repo):
    home, cchome = os.environ["HOME"], os.environ["CC_CONTINUITY_HOME"]
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("export EDITOR=vi\n")

    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    vpy = str(venv / "bin" / "python")
    run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])
    env = {"HOME": home, "CC_CONTINUITY_HOME": cchome, "SHELL": "/bin/bash",
           "PATH": "%s:/usr/local/bin:/usr/bin:/bin" % (venv / "bin")}
    where = run([vpy, "-c", "import cc_continuity; print(cc_continuity.__file__)"], env=env, cwd=str(tmp_path))
    assert where.startswith(str(venv)), "the venv runs the wheel's copy, not the checkout"
    before = snapshot(home)  # (pip's tools may leave dotfiles of their own in HOME)

    out = run([str(venv / "bin" / "cc-continuity"), "install"], env=env, cwd=str(tmp_path))
    assert "settings:" in out and "skills:" in out

    claude = os.path.join(home, ".claude")
    for verb in ("status", "checkpoint", "rotate", "off", "on", "history"):
        assert os.path.isfile(os.path.join(claude, "skills", "continuity-" + verb, "SKILL.md"))
    link = os.path.join(home, ".local", "bin", "cc-continuity")
    assert os.readlink(link) == os.path.join(cchome, "bin", "cc-continuity")
    with open(os.path.join(claude, "settings.json")) as f:
        doc = json.load(f)
    hooks = {e: g[0]["hooks"][0] for e, g in doc["hooks"].items()}
    assert len(hooks) == 10  # PostToolUseFailure records a failed tool call (resume)
    python = hooks["Stop"]["command"]
    assert os.path.isabs(python) and not python.startswith(str(venv)), "hooks must not depend on the venv"
    assert "cc-continuity wrapper" in open(os.path.join(home, ".bashrc")).read()

    shutil.rmtree(venv)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["CLAUDE_PROJECT_DIR"] = str(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        h = hooks[event]
        payload = {"hook_event_name": event, "session_id": "wheel-1", "transcript_path": str(transcript),
                   "cwd": str(git_repo), "source": "startup", "prompt": "hello", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "tool_response": {}, "stop_hook_active": False}
        p = subprocess.run([h["command"]] + h["args"], input=json.dumps(payload).encode(), env=env,
                           capture_output=True, timeout=60)
        assert p.returncode == 0 and not p.stderr, (event, p.stderr)
    status = json.loads(run([link, "status", "--json"], env=env, cwd=str(git_repo)))
    assert [s["session_id"] for s in status["sessions"]] == ["wheel-1"], "the hooks registered the session"
    line = subprocess.run(["/bin/sh", "-c", doc["statusLine"]["command"]], env=env, capture_output=True, timeout=30,
                          input=json.dumps({"session_id": "wheel-1", "cwd": str(git_repo)}).encode())
    assert line.returncode == 0 and line.stdout.strip(), line

    # The launcher alone can re-install (from the app copy itself) and take it all out again.
    out = run([link, "install", "--window", "300000"], env=env, cwd=str(tmp_path))
    assert "app: cc-continuity %s up to date" % __version__ in out and "settings.json unchanged" in out, out
    # The launcher alone can take it all out again.
    run([link, "uninstall", "--purge"], env=env, cwd=str(tmp_path))
    assert snapshot(home) == before
    assert not os.path.exists(cchome)
