"""The optional packages' environment (cc_continuity/deps): built from the user's own index, with every
file's hash, by a trusted uv or by pip (ensurepip's, or pip's wheel from the index); a refusing index
leaves one message, a red doctor row and nothing half-made.  Every index here is a real HTTP server on
127.0.0.1 (tests/helpers/pkgindex.py) serving wheels made by the test."""

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import tomllib

import pytest

from cc_continuity import config, deps
from cc_continuity.deps import build
from tests.helpers.hookdriver import HookDriver
from tests.helpers.pkgindex import PackageIndex, use_index, wheel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM_PATH = "/usr/bin:/bin"  # no uv on it (the dev venv's bin has one)


def _norm(name):
    return name.replace("_", "-").lower()


def test_the_lock_pins_pyprojects_dependencies_and_nothing_else_with_every_files_hash():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        wanted = [d.split(">")[0].split("=")[0].split("<")[0].strip() for d in tomllib.load(f)["project"]["dependencies"]]
    assert [_norm(n) for n in wanted] == list(deps.PACKAGES)
    assert [n.replace("-", "_") for n in deps.PACKAGES] == list(deps.IMPORTS)
    with open(deps.LOCK_FILE, encoding="utf-8") as f:
        text = f.read()
    pins = build.pinned(deps.LOCK_FILE)
    assert set(deps.PACKAGES) <= {_norm(p) for p in pins}
    blocks = [b for b in text.split("\n") if "==" in b and not b.startswith("#")]
    assert len(blocks) == len(pins) >= len(deps.PACKAGES)
    for pin in pins:  # each pin is followed by at least one sha256
        after = text.split("\n%s==" % pin, 1)[1].split("\n# via", 1)[0].split("    # via", 1)[0]
        assert "--hash=sha256:" in after, pin
    assert "libtmux" not in text  # the rotation needs no package


@pytest.fixture
def tiny(tmp_path, isolated_home):
    """A wheel on a real index on 127.0.0.1 named by the user's own pip.conf and uv.toml, and a lock for it."""
    files = tmp_path / "wheels"
    files.mkdir()
    _, digest = wheel(files, "tinypkg", "1.0", {"tinypkg/__init__.py": "VALUE = 42\n"})
    lock = tmp_path / "tiny.lock"
    lock.write_text("tinypkg==1.0 \\\n    --hash=sha256:%s\n" % digest)
    with PackageIndex(files) as index:
        use_index(isolated_home, index.url)
        index.lock = str(lock)
        index.files = str(files)
        yield index


def _build(data, lock, path=SYSTEM_PATH, extra_env=None):
    env = dict(os.environ, PATH=path, PIP_INDEX_URL="http://127.0.0.1:9/nowhere", UV_INDEX_URL="http://127.0.0.1:9/x",
               PIP_FIND_LINKS="/nowhere")  # what a repository's settings.json env could set: dropped
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-S", "-m", "cc_continuity.deps.build", "--data", str(data), "--lock", lock],
                          capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)


def _imports(env_path):
    p = subprocess.run([os.path.join(env_path, "bin", "python"), "-c", "import tinypkg; print(tinypkg.VALUE)"],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.strip()


def test_pip_from_ensurepip_builds_it_from_the_users_index_and_never_the_environments(tiny, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    p = _build(data, tiny.lock)
    assert p.returncode == 0, p.stdout + p.stderr
    env = deps.env_dir(str(data), lock=tiny.lock)
    info = deps.complete(env)
    assert info["installer"] == "pip" and info["python"] == os.path.realpath(sys.executable), info
    assert _imports(env) == "42"
    assert stat.S_IMODE(os.stat(deps.envs_dir(str(data))).st_mode) == 0o700
    assert [r for r in tiny.requests if "tinypkg" in r[1]], tiny.requests  # the user's index served it
    assert sorted(n for n in os.listdir(deps.envs_dir(str(data))) if not n.startswith(".lock")) == [
        os.path.basename(env)]  # no temporary folder left, no .failed


def test_a_second_build_leaves_a_complete_environment_as_it_is(tiny, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    assert _build(data, tiny.lock).returncode == 0
    env = deps.env_dir(str(data), lock=tiny.lock)
    before = os.stat(os.path.join(env, deps.COMPLETE)).st_mtime_ns
    served = len(tiny.requests)
    assert _build(data, tiny.lock).returncode == 0
    assert os.stat(os.path.join(env, deps.COMPLETE)).st_mtime_ns == before and len(tiny.requests) == served


def test_a_trusted_uv_builds_it_and_never_downloads_a_python(tiny, tmp_path):
    uv = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    if uv is None:
        if os.environ.get("CI") == "true":
            pytest.fail("uv is a dev dependency (pyproject [dev]); CI must test the uv route")
        pytest.skip("no uv on PATH (pip install -e '.[dev]' brings it)")
    data = tmp_path / "data"
    data.mkdir()
    p = _build(data, tiny.lock, path=os.path.dirname(uv) + ":" + SYSTEM_PATH)
    assert p.returncode == 0, p.stdout + p.stderr
    env = deps.env_dir(str(data), lock=tiny.lock)
    assert deps.complete(env)["installer"] == "uv"
    assert _imports(env) == "42"


def test_a_uv_that_cannot_reach_the_index_hands_over_to_pip(tiny, tmp_path):
    """uv and pip may reach the index differently (uv.toml, pip.conf, a proxy's certificate only one of them
    trusts: seen on CI's machine): a trusted uv that fails is said, and pip builds."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.chmod(bindir, 0o755)
    marker = tmp_path / "uv-ran"
    (bindir / "uv").write_text("#!/bin/sh\necho \"$@\" >> %s\necho 'error: invalid peer certificate: UnknownIssuer' >&2\n"
                               "exit 2\n" % marker)
    os.chmod(bindir / "uv", 0o755)
    data = tmp_path / "data"
    data.mkdir()
    p = _build(data, tiny.lock, path="%s:%s" % (bindir, SYSTEM_PATH))
    assert p.returncode == 0, p.stdout + p.stderr
    assert marker.read_text().startswith("venv "), "the trusted uv was tried first"
    assert "invalid peer certificate" in p.stdout + p.stderr and "trying pip" in p.stdout + p.stderr
    env = deps.env_dir(str(data), lock=tiny.lock)
    assert deps.complete(env)["installer"] == "pip" and _imports(env) == "42"


def test_an_untrusted_uv_first_on_path_is_never_run(tiny, tmp_path):
    """A world-writable folder on PATH holding a `uv`: not run (not even asked its version); pip builds."""
    evil = tmp_path / "shared"
    evil.mkdir()
    os.chmod(evil, 0o777)
    marker = tmp_path / "uv-ran"
    (evil / "uv").write_text("#!/bin/sh\necho ran > %s\nexit 1\n" % marker)
    os.chmod(evil / "uv", 0o755)
    data = tmp_path / "data"
    data.mkdir()
    p = _build(data, tiny.lock, path="%s:%s" % (evil, SYSTEM_PATH))
    assert p.returncode == 0, p.stdout + p.stderr
    assert not marker.exists()
    assert deps.complete(deps.env_dir(str(data), lock=tiny.lock))["installer"] == "pip"


def _no_ensurepip_python(tmp_path):
    """An interpreter whose `python -m venv` fails as Debian's does without python3-venv."""
    wrapper = tmp_path / "bin" / "python3"
    wrapper.parent.mkdir()
    real = os.path.realpath(sys.executable)
    wrapper.write_text('#!/bin/sh\nif [ "$1 $2" = "-m venv" ] && [ "$3" != "--without-pip" ]; then\n'
                       '  echo "Error: ensurepip is not available." >&2; exit 1\nfi\nexec %s "$@"\n' % real)
    os.chmod(wrapper, 0o755)
    return str(wrapper)


def _fake_pip(files, record):
    """A wheel named like pip's whose `pip` records its arguments and installs nothing."""
    return wheel(files, "pip", "99.0", {"pip/__init__.py": "", "pip/__main__.py": (
        "import json, sys\nwith open(%r, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n" % str(record))})


def test_without_ensurepip_pips_own_wheel_comes_from_the_users_index_checked_by_its_pinned_hash(tiny, tmp_path,
                                                                                                 monkeypatch):
    record = tmp_path / "pip-args.jsonl"
    path, digest = _fake_pip(tiny.files, record)
    monkeypatch.setattr(build, "PIP_WHEEL", os.path.basename(path))
    monkeypatch.setattr(build, "PIP_SHA256", digest)
    dest = str(tmp_path / "env")
    how = build.make(dest, _no_ensurepip_python(tmp_path), tiny.lock, env=dict(os.environ, PATH=SYSTEM_PATH),
                     say=lambda m: None)
    assert how == "pip from the index"
    (args,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert args[:1] == ["install"] and "--require-hashes" in args and "--no-deps" in args
    assert args[args.index("--only-binary") + 1] == ":all:" and args[-2:] == ["-r", tiny.lock]
    assert ("GET", "/simple/pip/") in tiny.requests
    assert not os.path.exists(os.path.join(dest, os.path.basename(path)))  # the wheel is not kept


def test_a_pip_wheel_that_does_not_match_its_pinned_hash_is_never_run(tiny, tmp_path, monkeypatch):
    record = tmp_path / "pip-args.jsonl"
    path, _ = _fake_pip(tiny.files, record)
    monkeypatch.setattr(build, "PIP_WHEEL", os.path.basename(path))
    monkeypatch.setattr(build, "PIP_SHA256", "0" * 64)
    with pytest.raises(build.BuildError, match="does not match its pinned sha256"):
        build.make(str(tmp_path / "env"), _no_ensurepip_python(tmp_path), tiny.lock,
                   env=dict(os.environ, PATH=SYSTEM_PATH), say=lambda m: None)
    assert not record.exists()


# -- a refusing index: one message, retried later, never a half-made environment ----------------------

@pytest.fixture
def refusing(tmp_path, isolated_home):
    with PackageIndex(tmp_path, status=403) as index:
        host = index.url.split("//", 1)[1]
        use_index(isolated_home, "http://deploy:s3cr3t-index-token-value@%s" % host)  # credentials in the URL
        yield index


def _wait_failed(env_path, after=0, timeout=120):
    """The builder's failure record, once one newer than ``after`` is there and no builder runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed = deps.failure(env_path)
        if failed is not None and failed["at"] > after and not deps.building(os.path.dirname(os.path.dirname(env_path))):
            return failed
        time.sleep(0.1)
    raise AssertionError("no .failed record for %s" % env_path)


def test_a_refusing_index_fails_once_says_so_once_and_is_tried_again_hours_later(refusing, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    env = {"CLAUDE_PLUGIN_DATA": str(data), **{k: v for k, v in os.environ.items() if k != "CLAUDE_PLUGIN_DATA"}}
    cfg = config.load(None, env)
    assert deps.at_session(cfg, env) is None  # started, nothing to say yet
    built = deps.env_dir(str(data))
    failed = _wait_failed(built)
    assert refusing.requests, "the build did not ask the user's index"
    assert "403" in failed["why"] and failed["fix"] == build.FIX and not failed["shown"], failed
    with open(built + ".failed") as f:
        assert "s3cr3t-index-token-value" not in f.read()
    assert not os.path.exists(built) and not [n for n in os.listdir(deps.envs_dir(str(data))) if n.startswith(".build-")]
    line = deps.at_session(cfg, env)
    assert line and line.startswith("cc-continuity could not build its optional packages") and "403" in line
    assert "Finish it with: cc-continuity doctor --fix" in line
    asked = len(refusing.requests)
    assert deps.at_session(cfg, env) is None  # said once
    time.sleep(0.5)
    assert len(refusing.requests) == asked and not deps.building(str(data))  # not tried again at once
    assert deps.at_session(cfg, env, now=failed["at"] + deps.RETRY_S + 1) is None  # due again: a new try
    _wait_failed(built, after=failed["at"])
    assert len(refusing.requests) > asked


def test_fetch_packages_false_never_contacts_the_index(refusing, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    config.update_global({"fetch_packages": False})
    env = dict(os.environ, CLAUDE_PLUGIN_DATA=str(data))
    assert deps.at_session(config.load(None, env), env) is None
    time.sleep(0.5)
    assert refusing.requests == [] and not os.path.exists(deps.envs_dir(str(data)))


def test_the_session_start_hook_shows_the_failure_once_beside_its_own_answer(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    built = deps.env_dir(str(data))
    os.makedirs(os.path.dirname(built), mode=0o700)
    with open(built + ".failed", "w") as f:  # a failure not shown yet, too recent to retry
        json.dump({"at": time.time(), "why": "pip install failed (exit 1): ERROR: HTTP error 403", "fix": build.FIX,
                   "shown": False}, f)
    d = HookDriver(tmp_path / "proj")
    sid = "0d0d0d0d-0000-4000-8000-000000000001"
    out = d.hook("SessionStart", sid, source="startup", env=d.env(sid, CLAUDE_PLUGIN_DATA=data))
    assert "could not build its optional packages" in out["systemMessage"] and "HTTP error 403" in out["systemMessage"]
    again = d.hook("UserPromptSubmit", sid, prompt="hello", env=d.env(sid, CLAUDE_PLUGIN_DATA=data))
    assert "optional packages" not in json.dumps(again or {})


def test_a_build_after_the_plugin_was_uninstalled_brings_no_folder_back(tiny, tmp_path):
    """`claude plugin uninstall` deletes the plugin's data folder; a build the last SessionStart started (it
    runs detached, at low priority) may only start after that.  It builds nothing and makes no folder."""
    data = tmp_path / "plugins" / "data" / "cc-continuity-inline"
    data.parent.mkdir(parents=True)
    p = _build(data, tiny.lock)
    assert p.returncode == 1 and "is gone (the plugin was uninstalled?)" in p.stderr, p.stdout + p.stderr
    assert os.listdir(data.parent) == [] and tiny.requests == []


def test_uninstall_ends_a_running_build_before_its_folder_goes(tmp_path):
    """A build still at work when `claude plugin uninstall` deletes the data folder would make its venv's
    folders again: uninstall ends it first (its process group), and only a process running the build."""
    data = tmp_path / "data"
    envs = data / "envs"
    envs.mkdir(parents=True)
    ready = tmp_path / "ready"
    builder = ("import fcntl, os, sys, time\n"
               "lock = open(os.path.join(sys.argv[1], '.lock'), 'a'); fcntl.flock(lock, fcntl.LOCK_EX)\n"
               "os.mkdir(os.path.join(sys.argv[1], '.build-%d' % os.getpid()))\n"
               "open(sys.argv[2], 'w').close()\n"
               "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-S", "-c", builder, str(envs), str(ready), deps.BUILD_MODULE],
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert deps.building(str(data))
        other = subprocess.Popen(["sleep", "120"], start_new_session=True)  # a pid not running the build
        os.mkdir(envs / (".build-%d" % other.pid))
        try:
            assert deps.stop_builds(str(data)) == 1
            assert proc.wait(timeout=10) != 0 and other.poll() is None
        finally:
            other.kill()
            other.wait()
        assert not deps.building(str(data)) and deps.stop_builds(str(data)) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_build_that_waited_while_another_failed_does_not_try_again(tmp_path):
    """Two prompts in quick succession can each start a build (the first has not taken the lock yet).  The
    one that waited finds the other's failure, newer than its own start: it leaves that record (and whether
    the user was shown it) as it is, so the user is told once, not once per build."""
    from cc_continuity.deps import build

    data = tmp_path / "data"
    data.mkdir()
    final = deps.env_dir(str(data))
    os.makedirs(os.path.dirname(final), mode=0o700)
    record = {"at": time.time(), "why": "403 from the index", "fix": "cc-continuity doctor --fix", "shown": True}
    with open(final + ".failed", "w") as f:
        json.dump(record, f)
    with pytest.raises(build.BuildError, match="a build started beside this one failed while it waited: 403"):
        build.build(str(data), after=record["at"] - 1)
    assert deps.failure(final) == record and not [n for n in os.listdir(os.path.dirname(final))
                                                  if n.startswith(".build-")]


def test_pip_fetched_from_a_refusing_index_says_its_status_and_never_its_credentials(refusing, tmp_path):
    from cc_continuity.deps import build

    with pytest.raises(build.BuildError) as e:
        build.fetch_pip(str(tmp_path), dict(os.environ))
    assert "answered HTTP 403 (Forbidden)" in str(e.value) and "s3cr3t-index-token-value" not in str(e.value)


def test_the_mcp_servers_sdk_is_built_only_once_the_user_turned_the_server_on(refusing, tmp_path, monkeypatch):
    """Its own environment (its own lock, so its own name), asked for at a session's start only with
    mcp_server on; a failure is said once, as the optional packages' is."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    env = {"CLAUDE_PLUGIN_DATA": str(data), **{k: v for k, v in os.environ.items() if k != "CLAUDE_PLUGIN_DATA"}}
    sdk = deps.env_dir(str(data), lock=deps.MCP_LOCK)
    assert sdk != deps.env_dir(str(data))
    assert deps.at_session(config.load(None, env), env) is None
    _wait_failed(deps.env_dir(str(data)))
    assert deps.failure(sdk) is None, "off: never asked for"
    config.update_global({"mcp_server": True})
    cfg = config.load(None, env)
    deps.at_session(cfg, env)
    failed = _wait_failed(sdk)
    first = build.pinned(deps.MCP_LOCK)[0]  # (the SDK's lock, not the optional packages')
    assert "403" in failed["why"] and any(first in r[1] for r in refusing.requests), refusing.requests
    line = deps.at_session(cfg, env)
    assert line and "could not build its MCP server's SDK" in line and "403" in line
    assert deps.at_session(cfg, env) is None  # said once


def test_a_build_whose_folder_lost_its_pyvenv_cfg_never_installs_into_the_base_interpreter(tiny, tmp_path):
    """CI saw it: a plugin's build went on while Claude Code's eval runner cleaned the plugin's folder; the
    half-gone virtualenv's python ran as the base interpreter and pip installed the lock there (mode 0700, the
    hooks' umask).  Now the folder is checked before each install and pip runs with --require-virtualenv."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    dest = tmp_path / "env"
    subprocess.run([base, "-m", "venv", "--without-pip", str(dest)], check=True, timeout=120)
    os.unlink(dest / "pyvenv.cfg")  # what a clean-up racing the build leaves
    try:
        with pytest.raises(build.BuildError, match="no longer a virtualenv"):
            build.make(str(dest), base, lock=tiny.lock, env=dict(os.environ, PATH=SYSTEM_PATH), say=lambda *a: None)
        with open(dest / "pyvenv.cfg", "w") as f:  # the check passed, the folder went after it: pip refuses
            f.write("home = %s\n" % os.path.dirname(base))
        real_run = build._run

        def racing(argv, what, env, cwd):
            if what == "pip install":
                os.unlink(dest / "pyvenv.cfg")
            return real_run(argv, what, env, cwd)
        build._run = racing
        try:
            with pytest.raises(build.BuildError, match="pip install failed"):
                build.make(str(dest), base, lock=tiny.lock, env=dict(os.environ, PATH=SYSTEM_PATH),
                           say=lambda *a: None)
        finally:
            build._run = real_run
        got = subprocess.run([base, "-S", "-c", "import tinypkg"], capture_output=True, timeout=60)
        assert got.returncode != 0, "the lock was installed into the base interpreter"
    finally:
        subprocess.run([base, "-m", "pip", "uninstall", "-q", "-y", "tinypkg"], capture_output=True, timeout=120)
