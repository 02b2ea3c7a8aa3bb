"""Holds through the real hooks (issue 33): each command runs for real against a counting HTTP server on
127.0.0.1, its session crashes before its PostToolUse, and an unattended successor asks to run the same
command: a harmful one is denied (the server saw it once), a harmless one runs again (twice)."""

import json
import os
import subprocess

import pytest

from cc_continuity.holds import shell
from helpers.counting import Counter
from helpers.hookdriver import HookDriver, tokens_at
from helpers.transcripts import hook_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "a2a2a2a2-0000-4000-8000-0000000000a2"


@pytest.fixture(scope="module")
def counter():
    c = Counter()
    yield c
    c.close()


# Each form uses its own path ({u}: the counter's URL for that case).
HARMFUL = [
    "for i in 1; do curl -s -X POST {u}; done",
    "if true; then curl -s -X POST {u}; fi",
    "{{ curl -s -X POST {u}; }}",
    "echo `curl -s -X POST {u}`",
    "x=$(curl -s -X DELETE {u}); echo $x",
    "nice -n 10 curl -s -X POST {u}",
    "timeout -s KILL 5 curl -s -X POST {u}",
    "env -i curl -s -X POST {u}",
    "env -u HOME curl -s -X PUT -d a=1 {u}",
    "stdbuf -oL curl -s -X POST {u}",
    "echo {u} | xargs curl -s -X POST",
    "eval \"curl -s -X POST {u}\"",
    "sh -c \"curl -s -X POST {u}\"",
    "curl -sX DELETE {u}",
    "curl -sfXPOST {u}",
    "bash <<EOF\ncurl -s -X POST {u}\nEOF",
    "source ./post.sh {u}",
]
HARMLESS = [
    "for i in 1; do curl -s {u}; done",
    "nice -n 10 curl -s {u}",
    "curl -sX GET {u}",
    "echo {u} | xargs curl -s",
    "eval \"curl -s {u}\"",
    "curl -s -o /dev/null -w '%{{http_code}}' {u}",
]


@pytest.fixture(scope="module", autouse=True)
def _tree_sitter():
    if shell.parser() is None:
        pytest.fail("tree-sitter cannot be imported here (%s)" % shell.PROBLEM)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """This checkout shaped as the app copy install makes: the package, and lib/ with the optional packages
    (here tree-sitter's, from the test's environment), which the hooks' ``python -S`` finds only there."""
    import importlib.util

    root = tmp_path_factory.mktemp("app")
    os.symlink(os.path.join(REPO, "cc_continuity"), root / "cc_continuity")
    (root / "lib").mkdir()
    for name in ("tree_sitter", "tree_sitter_bash"):
        os.symlink(importlib.util.find_spec(name).submodule_search_locations[0], root / "lib" / name)
    return str(root)


def _world(tmp_path, app):
    drv = HookDriver(tmp_path / "proj", files={"post.sh": "#!/bin/sh\ncurl -s -X POST \"$1\"\n"})
    drv.command = lambda event: hook_command(event, root=app)
    drv.config(effects_local_exempt=False)  # the counter is on 127.0.0.1
    for sid in (S1, S2):
        drv.transcript(sid).assistant(tokens_at(5))
    drv.hook("SessionStart", S1, source="startup")
    return drv


def _pre(drv, sid, command, **fields):
    t = drv.transcript(sid)
    t.assistant(tokens_at(6), tool_uses=[("Bash", {"command": command})])
    with open(t.path) as f:
        tid = json.loads(f.read().splitlines()[-1])["message"]["content"][0]["id"]
    return drv.hook("PreToolUse", sid, tool_use_id=tid, tool_input={"command": command}, **fields)


def _bash(drv, command):
    return subprocess.run(["bash", "-c", command], cwd=drv.root, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("form", HARMFUL + HARMLESS)
def test_after_a_crash_an_unattended_successor_repeats_nothing_harmful_and_holds_nothing_harmless(
        tmp_path, counter, app, form):
    path = "/case-%d" % (HARMFUL + HARMLESS).index(form)
    command = form.format(u=counter.base + path)
    drv = _world(tmp_path, app)
    assert _pre(drv, S1, command) is None  # the first run goes ahead (its intent recorded if harmful)
    assert _bash(drv, command).returncode == 0
    assert len(counter.hits.get(path, [])) == 1
    # S1 dies here: no PostToolUse.  Its successor, unattended, is about to run the same command.
    drv.hook("SessionStart", S2, source="startup")
    out = _pre(drv, S2, command, permission_mode="bypassPermissions")
    if out is None:
        assert _bash(drv, command).returncode == 0
    hits = len(counter.hits.get(path, []))
    if form in HARMFUL:
        assert out and out["hookSpecificOutput"]["permissionDecision"] == "deny", (command, out)
        assert hits == 1, "a harmful command ran twice: %s" % command
    else:
        assert out is None, (command, out)
        assert hits == 2
