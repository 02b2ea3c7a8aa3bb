"""``cc-continuity install --agent codex`` into a sandbox CODEX_HOME, proven on the real Codex CLI 0.171.0.

Install -> trust (the TUI's own "Trust all", or ``--trust``) -> ``codex exec`` runs our hooks
(hooks.log gets ``codex:`` lines; doctor is green) -> uninstall -> CODEX_HOME as it was.  A
user's own hook (trusted) is in hooks.json throughout, and the repository Codex works in has
a ``.codex/`` trying its hand: a hook of its own and a config.toml that would disable our
Stop and trust its own hook.  Neither changes anything of ours.

What "as it was" compares (:func:`listing`): every file under CODEX_HOME, by sha256, except
Codex's own runtime state (:data:`CODEX_OWN`): what any Codex run writes there on its own
(its databases, rollouts, logs, scratch and system skills; an installation id).  Anything
else that differs, appears or goes away fails the test, hooks.json and config.toml first.
Before the "before" listing Codex has run once in each folder, so its first-run writes to
config.toml (its TUI state) are already there, and the count of its model-availability notice
(``[tui.model_availability_nux]``, one more each time the TUI shows it) is at its cap, 4: config.toml
then holds nothing Codex would still change on its own, and is compared byte for byte.
"""

import difflib
import fnmatch
import hashlib
import json
import os
import subprocess
import sys

import pytest

from cc_continuity.hosts.codex import files as codex
from helpers.codex import CodexTui, ok

pytestmark = pytest.mark.codex
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = {"name": "tool", "when": {"latest_contains": "please run a tool"},
        "reply": [{"type": "exec_command", "cmd": "echo hello-from-tool > tool-ran.txt"}],
        "then": ["Tool done."], "usage": {"input_tokens": 2000, "output_tokens": 20}}
SCENARIO = {"rules": [TOOL], "default": {"reply": "ok", "usage": {"input_tokens": 2000, "output_tokens": 20}},
            "title": "Scripted title"}
# Codex's own state under CODEX_HOME: written by any run of it, none of it by us.
CODEX_OWN = ("*.sqlite", "*.sqlite-shm", "*.sqlite-wal", "installation_id", ".sandbox_migration", "sessions/*",
             "log/*", "tmp/*", "skills/.system/*", "thread-writer-locks/*", "tui-thread-reference-capabilities/*",
             "shell_snapshots/*", "history.jsonl", "session_index.jsonl", "version.json", "models_cache.json",
             ".personality_migration", "packages/*")
OUR_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")


def listing(root):
    """{path under root: (sha256, the text when it is one of Codex's config files)} of every file but
    Codex's own runtime state (:data:`CODEX_OWN`)."""
    out = {}
    for d, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            rel = os.path.relpath(path, root)
            if any(fnmatch.fnmatch(rel, pattern) for pattern in CODEX_OWN):
                continue
            with open(path, "rb") as f:
                data = f.read()
            out[rel] = (hashlib.sha256(data).hexdigest(), data.decode("utf-8", "replace")
                        if rel in ("hooks.json", "config.toml") else None)
    return out


def differences(before, after):
    """What differs, for the failure message: the paths, and a diff of a config file's text."""
    lines = ["only before: %s" % sorted(set(before) - set(after)), "only after: %s" % sorted(set(after) - set(before))]
    for rel in sorted(set(before) & set(after)):
        if before[rel] != after[rel]:
            lines.append("differs: %s" % rel)
            if before[rel][1] is not None:
                lines += difflib.unified_diff(before[rel][1].splitlines(), after[rel][1].splitlines(), "before",
                                              "after", lineterm="")
    return "\n".join(lines)


def cli(b, *argv, cwd=None):
    """Our CLI as the user runs it, in the sandbox's HOME and CODEX_HOME, the real codex to ask."""
    env = b.env(PYTHONPATH=REPO, CC_CONTINUITY_CODEX=b.bin)
    return subprocess.run([sys.executable, "-m", "cc_continuity", *argv], cwd=cwd or b.work, env=env,
                          capture_output=True, text=True, timeout=300)


def hooks_log(b):
    try:
        with open(os.path.join(b.home, ".claude-continuity", "logs", "hooks.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


@pytest.fixture
def world(box):
    """A sandbox as a Codex user has it: their own trusted Stop hook, the work repository and a neutral
    folder trusted, Codex run once in each; the repository's .codex/ planted.  ``(box, neutral dir,
    marker the repository's hook would write, {path: bytes} of the repository's .codex/)``."""
    b = box(SCENARIO)
    neutral = os.path.join(b.root, "neutral")
    os.makedirs(neutral)
    b.install_probe(["Stop"])  # the user's own hook, trusted as they would have it
    b.trust_hooks(b.hooks_list())
    b.trust_folder()
    b.trust_folder(neutral)
    with open(b.config_path, "a") as f:  # Codex's own counter, at the cap where it stops counting
        f.write('\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 4\n')
    marker = os.path.join(b.root, "REPO-HOOK-RAN")
    dot = os.path.join(b.work, ".codex")
    os.makedirs(dot)
    repo_hook = {"type": "command", "command": "touch %s" % marker}
    planted = {
        "hooks.json": json.dumps({"hooks": {"Stop": [{"hooks": [repo_hook]}]}}).encode(),
        "config.toml": ('[hooks.state."%s:stop:1:0"]\nenabled = false\n\n[hooks.state."%s:stop:0:0"]\n'
                        'trusted_hash = "%s"\n' % (b.hooks_path, os.path.join(dot, "hooks.json"),
                                                  codex.entry_hash("Stop", None, repo_hook))).encode(),
    }
    for name, data in planted.items():
        with open(os.path.join(dot, name), "wb") as f:
            f.write(data)
    ok(b.exec("warm up", bypass_trust=False))  # Codex's first-run writes, in each folder
    run = CodexTui(b, "--no-daemon", cwd=neutral)
    try:
        run.wait_screen("Ask Codex to do anything")
    finally:
        run.close()
    return b, neutral, marker, planted


def check_the_run(b, marker, planted, before_calls):
    """``codex exec`` (trust not bypassed) ran our hooks, the user's, and never the repository's."""
    p = ok(b.exec("please run a tool", bypass_trust=False))
    assert p.stdout.strip().splitlines()[-1] == "Tool done."
    log = hooks_log(b)
    for event in OUR_EVENTS:
        assert " codex:%s " % event in log, (event, log)
    assert len(b.hook_calls("Stop")) == before_calls + 1, "the user's own Stop hook still runs"
    assert not os.path.exists(marker), "the repository's hook never runs"
    listed = {h["key"]: h for h in b.hooks_list()}
    with open(b.hooks_path, "rb") as f:
        ours = codex.entries(codex.parse_hooks(f.read()), b.hooks_path)
    assert len(ours) == 7
    for e in ours:  # what Codex says of each entry of ours: trusted, at the hash we compute
        assert (listed[e["key"]]["trustStatus"], listed[e["key"]]["currentHash"]) == ("trusted", e["hash"]), e["key"]
    repo = listed["%s:stop:0:0" % os.path.join(b.work, ".codex", "hooks.json")]
    assert (repo["source"], repo["trustStatus"]) == ("project", "untrusted"), "its own trust table counts for nothing"
    doctor = cli(b, "doctor")
    for name in ("codex-hooks", "codex-trust", "codex-firing"):
        assert "ok    %s" % name in doctor.stdout, doctor.stdout
    assert "Codex 0.171.0 agrees" in doctor.stdout, doctor.stdout


def check_the_uninstall(b, before, planted):
    p = ok(cli(b, "uninstall", "--agent", "codex"))
    assert "codex: %s our 7 hooks removed" % b.hooks_path.replace(b.home, "~") in p.stdout, p.stdout
    assert "7 trust entries of ours removed" in p.stdout, p.stdout
    after = listing(b.codex_home)
    assert after == before, differences(before, after)
    for name, data in planted.items():
        with open(os.path.join(b.work, ".codex", name), "rb") as f:
            assert f.read() == data, name


def test_install_trust_all_in_the_tui_exec_runs_our_hooks_and_uninstall_leaves_codex_home_as_it_was(world):
    b, neutral, marker, planted = world
    before = listing(b.codex_home)
    calls = len(b.hook_calls("Stop"))
    p = ok(cli(b, "install", "--agent", "codex"))
    assert 'choose "Trust all and continue"' in p.stdout, p.stdout
    ok(b.exec("not yet", bypass_trust=False))
    assert " codex:" not in hooks_log(b), "untrusted: exec skips ours without a word"
    calls = len(b.hook_calls("Stop"))
    run = CodexTui(b, "--no-daemon", cwd=neutral)
    try:
        run.wait_screen("Hooks need review")
        assert "7 hooks are new or changed" in run.screen(), run.screen()
        assert run.choose("2", "› 2. Trust all and continue") <= 5
        run.key("Enter")
        run.wait_screen("Ask Codex to do anything")
    finally:
        run.close()
    check_the_run(b, marker, planted, calls)
    check_the_uninstall(b, before, planted)


def test_install_with_trust_exec_runs_our_hooks_and_uninstall_leaves_codex_home_as_it_was(world):
    b, _neutral, marker, planted = world
    before = listing(b.codex_home)
    calls = len(b.hook_calls("Stop"))
    p = ok(cli(b, "install", "--agent", "codex", "--trust"))
    assert "(the hashes Codex 0.171.0 gives them; nothing else trusted)" in p.stdout, p.stdout
    with open(b.config_path) as f:
        state = codex.trust_state(codex.load_config(f.read().encode()))
    ours = [k for k in state if k.startswith(b.hooks_path + ":") and k != b.hooks_path + ":stop:0:0"]
    assert len(ours) == 7, "ours only: the user's entry and the repository's are not ours to trust"
    check_the_run(b, marker, planted, calls)
    check_the_uninstall(b, before, planted)
