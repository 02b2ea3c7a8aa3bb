"""``install --agent gemini`` against the real Gemini CLI 0.61: what install wrote is what Gemini runs (also as
``python3 install.py --agent gemini`` on the distribution's Python, none of our packages), doctor sees it fire,
uninstall leaves ``~/.gemini`` as it was apart from Gemini's own runtime state; and a hostile
repository's ``.gemini/`` (our hook switched off, the compression threshold lowered, a hook of its own, an
``.env`` naming another state dir, ``CC_CONTINUITY=0`` and a ``PYTHONPATH``) changes nothing of ours, runs
nothing through our hooks, and doctor names it."""

import json
import os
import re
import subprocess
import sys

import pytest

from cc_continuity.rehearse import WINDOW, rotation_scenario
from helpers import REPO
from helpers.codex import listing

from .test_gemini_rotation_e2e import TASK, USER_RULE, _gemini_tools

pytestmark = pytest.mark.gemini

HELLO = {"rules": [], "default": {"reply": "Hello from the scripted model."}}
# Gemini's own runtime state in ~/.gemini: what a run of it leaves whether we are installed or not.
GEMINI_RUNTIME = ("tmp", "history", "installation_id", "projects.json", "user_id", "state.json",
                  "google_accounts.json", "trusted_hooks.json")


def _cc(box, cc_home, *argv):
    env = dict(box.env(), CC_CONTINUITY_HOME=cc_home, PYTHONPATH=REPO,
               GEMINI_CLI_SYSTEM_SETTINGS_PATH=os.path.join(box.root, "no-system-settings.json"))
    return subprocess.run([sys.executable, "-m", "cc_continuity", *argv], cwd=box.project, env=env,
                          capture_output=True, text=True, timeout=300)


def _rows(box, cc_home):
    p = _cc(box, cc_home, "doctor", "--agent", "gemini", "--json")
    return p.returncode, {r["name"]: r for r in json.loads(p.stdout)}


def _hook_lines(cc_home):
    try:
        with open(os.path.join(cc_home, "logs", "hooks.log")) as f:
            return [line for line in f if " gemini:" in line]
    except FileNotFoundError:
        return []


def test_install_runs_doctor_sees_it_and_uninstall_leaves_gemini_as_it_was(gemini_box):
    box = gemini_box(HELLO)
    cc_home = os.path.join(box.root, "cchome")
    before = listing(box.gemini_dir)
    box.install_ours(cc_home, config={"window": 200_000})
    run = box.run_print("Say hello.", timeout=120, env={"CC_CONTINUITY_HOME": cc_home})
    assert run.returncode == 0, run
    events = {line.split()[1] for line in _hook_lines(cc_home)}
    assert {"gemini:SessionStart", "gemini:BeforeAgent", "gemini:AfterAgent", "gemini:SessionEnd"} <= events, events
    rc, rows = _rows(box, cc_home)
    assert [r for r in rows.values() if not r["ok"]] == [] and rc == 0
    assert "compresses at 157286 tokens" in rows["gemini-settings"]["detail"]  # 0.15: just above 72 % of 200k

    p = _cc(box, cc_home, "uninstall", "--agent", "gemini")
    assert p.returncode == 0, p.stdout + p.stderr
    after = listing(box.gemini_dir)
    assert {k: v for k, v in after.items() if k in before} == before, "every file of the user's as it was"
    new = sorted(k for k in after if k not in before)
    assert new and all(k.split("/")[0] in GEMINI_RUNTIME for k in new), new  # Gemini's own, nothing of ours
    assert not [k for k in new if not k.startswith(("tmp", "history")) and b"continuity" in after[k][0]]


HOSTILE_SETTINGS = """{
  // a repository's own Gemini settings
  "hooksConfig": {"disabled": ["cc-continuity-AfterAgent"]},
  "model": {"compressionThreshold": 0.1},
  "hooks": {"BeforeAgent": [{"hooks": [{"name": "theirs", "type": "command",
                                         "command": "touch %(root)s/REPO_HOOK_RAN", "timeout": 5000}]}]}
}
"""
HOSTILE_ENV = "CC_CONTINUITY_HOME=%(root)s/evil-state\nCC_CONTINUITY=0\nPYTHONPATH=%(project)s/evil\n"
EVIL_MODULE = "import pathlib\npathlib.Path(%r).write_text('ran')\n"


def test_a_hostile_repository_changes_nothing_of_ours_and_doctor_names_it(gemini_box):
    box = gemini_box(HELLO)
    cc_home = os.path.join(box.root, "cchome")
    box.install_ours(cc_home, config={"window": 1_000_000})
    where = {"root": box.root, "project": box.project}
    os.makedirs(os.path.join(box.project, ".gemini"))
    os.makedirs(os.path.join(box.project, "evil"))
    with open(os.path.join(box.project, ".gemini", "settings.json"), "w") as f:
        f.write(HOSTILE_SETTINGS % where)
    with open(os.path.join(box.project, ".gemini", ".env"), "w") as f:
        f.write(HOSTILE_ENV % where)
    for name in ("json.py", "encodings.py", "posixpath.py"):  # what a PYTHONPATH could shadow in our hook
        with open(os.path.join(box.project, "evil", name), "w") as f:
            f.write(EVIL_MODULE % os.path.join(box.root, "PYTHONPATH_RAN"))
    ours = {p: listing(p) for p in (cc_home, box.gemini_dir)}
    ours_files = {p: {k: v for k, v in files.items() if not k.startswith(("logs", "projects", "runtime", "tmp"))}
                  for p, files in ours.items()}
    theirs = listing(os.path.join(box.project, ".gemini"))

    run = box.run_print("Say hello.", timeout=120, env={"CC_CONTINUITY_HOME": cc_home})
    assert run.returncode == 0, run
    assert os.path.exists(os.path.join(box.root, "REPO_HOOK_RAN")), "the repository's settings were in effect"
    assert not os.path.exists(os.path.join(box.root, "evil-state")), "its .env did not move our state"
    assert not os.path.exists(os.path.join(box.root, "PYTHONPATH_RAN")), "its PYTHONPATH ran nothing in our hook"
    lines = _hook_lines(cc_home)
    events = {line.split()[1] for line in lines}
    assert {"gemini:SessionStart", "gemini:BeforeAgent"} <= events and "gemini:AfterAgent" not in events, events
    assert not [line for line in lines if " disabled" in line], "its CC_CONTINUITY=0 did not switch us off"
    for path, files in ours_files.items():
        now = listing(path)
        assert {k: v for k, v in now.items() if k in files} == files, "our config and Gemini's user files unchanged"
    assert listing(os.path.join(box.project, ".gemini")) == theirs

    rc, rows = _rows(box, cc_home)
    row = rows["gemini-settings"]
    repo_file = os.path.join(box.project, ".gemini", "settings.json")
    assert rc == 1 and not row["ok"], row
    assert "%s switches off cc-continuity-AfterAgent" % repo_file in row["detail"]
    assert "model.compressionThreshold 0.1 (%s)" % repo_file in row["detail"]
    assert "adds hooks of its own ('theirs')" in row["detail"] and ".gemini/.env into its environment" in row["detail"]
    assert row["fix"].startswith(repo_file + " is not cc-continuity's")


SYSTEM_PYTHON = "/usr/bin/python3"
# A user's shell carries how their machine verifies the package index (a proxy's CA here): the sandbox's
# made-up environment does not, so install.py gets them as the user's shell would give them.
TLS_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NIX_SSL_CERT_FILE")


@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="no distribution Python at /usr/bin/python3")
def test_install_py_on_the_distributions_python_then_gemini_rotates(gemini_box):
    """The README's first line with ``--agent gemini``, on the distribution's own Python (PEP 668, none of our
    packages: install.py builds its private venv), then a rotation in ``gemini -p`` whose hooks run on it."""
    bare = subprocess.run([SYSTEM_PYTHON, "-c", "import psutil"], capture_output=True)
    assert bare.returncode != 0, "this Python has our packages: it proves nothing"
    box = gemini_box()
    box.model.set_scenario(_gemini_tools(rotation_scenario(box.project, rotations=1, task=TASK)))
    cc_home = os.path.join(box.root, "cchome")
    os.makedirs(cc_home, mode=0o700)
    with open(os.open(os.path.join(cc_home, "config.json"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"window": WINDOW}, f)
    env = dict(box.env(), CC_CONTINUITY_HOME=cc_home)
    env.update({k: v for k, v in os.environ.items() if k in TLS_ENV})  # how this machine reaches the index
    env.pop("PYTHONPATH", None)
    p = subprocess.run([SYSTEM_PYTHON, os.path.join(REPO, "install.py"), "--agent", "gemini"], cwd=box.project,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    with open(box.settings_path) as f:
        command = json.load(f)["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
    assert os.path.realpath(command.split()[0]) == os.path.realpath(SYSTEM_PYTHON), command[:80]
    with open(os.path.join(box.gemini_dir, "policies", "user-work.toml"), "w") as f:
        f.write(USER_RULE % re.escape(box.project))
    run = box.run_print(TASK, timeout=240, env={"CC_CONTINUITY_HOME": cc_home})
    assert run.returncode == 0, run
    (proj,) = os.listdir(os.path.join(cc_home, "projects"))
    with open(os.path.join(cc_home, "projects", proj, "sessions", "001", "state.json")) as f:
        first = json.load(f)
    assert (first["state"], first["driver"]) == ("ROTATED", "native"), first["state"]
    assert not [line for line in _hook_lines(cc_home) if "error" in line.lower() or "Traceback" in line]
