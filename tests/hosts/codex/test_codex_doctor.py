"""Codex CLI's rows (hosts/codex/doctor.py): our entries in $CODEX_HOME/hooks.json, Codex's trust of them, whether
they ran since; each problem named with its one fix, and doctor writes nothing of Codex's.  Against real
`install --agent codex` runs in a temp HOME, without a codex binary (the real one: tests/e2e)."""

import json
import os
import subprocess

import pytest

from cc_continuity import paths
from cc_continuity.hosts.codex import doctor as codex_rows
from cc_continuity.hosts import checkup
from cc_continuity.hosts.codex import files as codex
from helpers import TESTS
from helpers.codex import cli, codex_dir, listing, write

DATA = os.path.join(TESTS, "data", "codex")


@pytest.fixture(autouse=True)
def no_codex_binary(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `codex` to ask: the hashes as computed


def codex_results():
    ctx = checkup.Context()
    return {r.name: r for r in checkup.run_checks(ctx, [codex_rows.check_codex_hooks, codex_rows.check_codex_trust,
                                                       codex_rows.check_codex_firing])}


def run_our_hook(event, cwd):
    """Our installed entry for ``event``, run as Codex runs it (its command through a shell, the payload the
    binary sent on stdin)."""
    hooks_file = os.path.join(codex_dir(), "hooks.json")
    with open(hooks_file, "rb") as f:
        (entry,) = [e for e in codex.entries(codex.parse_hooks(f.read()), hooks_file) if e["event"] == event]
    with open(os.path.join(DATA, "hook-payloads.jsonl")) as f:
        payload = next(json.loads(line)["payload"] for line in f if json.loads(line)["event"] == event)
    payload["cwd"] = str(cwd)
    p = subprocess.run(["/bin/sh", "-c", entry["handler"]["command"]], input=json.dumps(payload).encode(),
                       cwd=cwd, capture_output=True, timeout=60,
                       env={"HOME": os.environ["HOME"], "CC_CONTINUITY_HOME": paths.home(), "PATH": "/usr/bin:/bin",
                            "CODEX_HOME": codex_dir()})
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p


def test_doctor_names_each_codex_problem_with_its_one_fix(capsys, git_repo):
    got = codex_results()
    assert all(r.ok and "not installed for Codex CLI" in r.detail for r in got.values()), got
    assert cli(capsys, "install", "--agent", "codex")[0] == 0
    got = codex_results()
    assert got["codex-hooks"].ok, got["codex-hooks"]
    assert not got["codex-trust"].ok and got["codex-trust"].fix == "cc-continuity install --agent codex --trust"
    assert "not trusted: SessionStart, UserPromptSubmit, PreToolUse" in got["codex-trust"].detail
    assert not got["codex-firing"].ok and "they are not trusted" in got["codex-firing"].detail
    assert got["codex-firing"].fix == "cc-continuity install --agent codex --trust"

    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    got = codex_results()
    assert got["codex-trust"].ok and not got["codex-firing"].ok
    assert got["codex-firing"].fix.startswith("send one prompt in `codex`")
    run_our_hook("SessionStart", git_repo)
    got = codex_results()
    assert got["codex-firing"].ok and "codex:SessionStart" in got["codex-firing"].detail, got["codex-firing"]

    # An entry edited by hand (another Python): not current, and no longer the entry Codex trusted.
    hooks_file = os.path.join(codex_dir(), "hooks.json")
    with open(hooks_file) as f:
        table = json.load(f)
    stop = table["hooks"]["Stop"][0]["hooks"][0]
    stop["command"] = stop["command"].replace(stop["command"].split()[0], "/opt/old/python3", 1)
    with open(hooks_file, "w") as f:
        json.dump(table, f)
    got = codex_results()
    assert not got["codex-hooks"].ok and got["codex-hooks"].fix == "cc-continuity install --agent codex"
    assert "Stop: runs another Python or app copy" in got["codex-hooks"].detail
    assert "changed since trusted: Stop" in got["codex-trust"].detail
    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    got = codex_results()
    assert got["codex-hooks"].ok and got["codex-trust"].ok
    assert not got["codex-firing"].ok, "written again: none has run since"
    run_our_hook("Stop", git_repo)
    assert cli(capsys, "install", "--agent", "codex")[0] == 0, "a re-install that changes nothing"
    assert all(r.ok for r in codex_results().values()), codex_results()

    # Turned off in Codex's /hooks: trusted but not run.
    cfg = os.path.join(codex_dir(), "config.toml")
    with open(cfg) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(text.replace('stop:0:0"]\n', 'stop:0:0"]\nenabled = false\n'))
    got = codex_results()
    assert not got["codex-trust"].ok and "turned off in Codex: Stop" in got["codex-trust"].detail
    assert "/hooks" in got["codex-trust"].fix


def test_doctor_says_so_when_codex_hooks_are_off_and_reads_an_unusable_hooks_json_without_writing(capsys):
    assert cli(capsys, "install", "--agent", "codex", "--trust")[0] == 0
    cfg = os.path.join(codex_dir(), "config.toml")
    with open(cfg) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write("[features]\nhooks = false\n" + text)
    got = codex_results()
    assert not got["codex-firing"].ok and "delete `hooks = false` from [features]" in got["codex-firing"].fix
    hooks_file = os.path.join(codex_dir(), "hooks.json")
    write(hooks_file, b'{"hooks": ')
    before = listing(codex_dir())
    got = codex_results()
    assert not got["codex-hooks"].ok and got["codex-hooks"].fix.startswith("repair %s by hand" % hooks_file)
    assert listing(codex_dir()) == before
