"""Claude Code's hook entry moved (``cc_continuity.hooks`` -> ``cc_continuity.hosts.claude.hooks``,
issue 35): an install made by an earlier version is recognised by its old bootstrap, moved where it
stands, taken out by uninstall, and answered by the old name for one release meanwhile.

A settings.json "as an earlier version wrote it" is the one this version writes with the old
import put back in every handler: the earlier bootstrap differed from today's in that line only.
"""

import json
import os
import subprocess

from cc_continuity import paths
from cc_continuity.cli import main
from cc_continuity.install import settings

THEIRS = {
    "model": "opus",
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "later-tool"}]}],
    },
}


def _settings_path():
    return os.path.join(os.environ["HOME"], ".claude", "settings.json")


def _read():
    with open(_settings_path(), encoding="utf-8") as f:
        return settings.parse(f.read())


def _write(doc):
    with open(_settings_path(), "w", encoding="utf-8") as f:
        f.write(settings.dumps(doc))


def _install(capsys, *more):
    rc = main(["install", "--no-wrapper", *more])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def _as_an_earlier_version_wrote_it(doc):
    """``doc`` with every handler of ours running the old entry; how many handlers were changed."""
    changed = 0
    for groups in doc["hooks"].values():
        for group in groups:
            for h in group["hooks"]:
                args = h.get("args") or []
                for i, a in enumerate(args):
                    if isinstance(a, str) and settings.HOOK_MARK in a:
                        args[i] = a.replace(settings.HOOK_MARK, settings.OLD_HOOK_MARK)
                        changed += 1
    return changed


def _ours_by_event(doc, mark):
    """event -> the positions of the groups whose handlers carry ``mark``."""
    found = {}
    for event, groups in doc["hooks"].items():
        at = [i for i, g in enumerate(groups) if any(settings.is_our_handler(h, mark) for h in g["hooks"])]
        if at:
            found[event] = at
    return found


def _earlier_install(capsys):
    os.makedirs(os.path.dirname(_settings_path()), exist_ok=True)
    _write(json.loads(json.dumps(THEIRS)))
    _install(capsys)
    doc = _read()
    today = _ours_by_event(doc, settings.HOOK_MARK)
    assert _as_an_earlier_version_wrote_it(doc) >= len(today) >= 10
    _write(doc)
    return doc, today


def test_the_two_marks_name_different_entries_and_the_codex_one_is_neither():
    from cc_continuity.hosts.codex import hooks as codex_hooks

    assert settings.OLD_HOOK_MARK not in settings.HOOK_MARK and settings.HOOK_MARK not in settings.OLD_HOOK_MARK
    for mark in settings.CLAUDE_MARKS:
        assert mark not in codex_hooks.HOOK_MARK and codex_hooks.HOOK_MARK not in mark
    assert settings.HOOK_MARK in settings.boot_code("/app") and settings.OLD_HOOK_MARK not in settings.boot_code("/app")


def test_a_reinstall_moves_the_earlier_entry_where_it_stands(capsys):
    doc, today = _earlier_install(capsys)
    assert _ours_by_event(doc, settings.OLD_HOOK_MARK) == today and not _ours_by_event(doc, settings.HOOK_MARK)

    _install(capsys)
    after = _read()
    assert _ours_by_event(after, settings.HOOK_MARK) == today, "each group replaced where it stood"
    assert not _ours_by_event(after, settings.OLD_HOOK_MARK), "no event wired twice"
    assert after["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]
    assert THEIRS["hooks"]["Stop"][0] in after["hooks"]["Stop"] and after["model"] == "opus"
    assert sum(len(at) for at in _ours_by_event(after, settings.CLAUDE_MARKS).values()) == \
        sum(len(at) for at in today.values())


def test_uninstall_takes_out_the_earlier_entry_and_keeps_theirs(capsys):
    _earlier_install(capsys)
    assert main(["uninstall"]) == 0
    capsys.readouterr()
    assert _read() == THEIRS


def test_the_earlier_bootstrap_still_reaches_the_handlers(capsys, git_repo, tmp_path):
    """The old import, run by the installed app copy as Claude Code runs it: the session is registered,
    the handler's log line is written, nothing on stderr, exit 0."""
    doc, _ = _earlier_install(capsys)
    handler = next(h for g in doc["hooks"]["SessionStart"] for h in g["hooks"]
                   if settings.is_our_handler(h, settings.OLD_HOOK_MARK))
    env = {"HOME": os.environ["HOME"], "CC_CONTINUITY_HOME": paths.home(), "PATH": "/usr/bin:/bin",
           "CLAUDE_PROJECT_DIR": str(git_repo)}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {"session_id": "abc-123", "transcript_path": str(transcript), "cwd": str(git_repo),
               "hook_event_name": "SessionStart", "source": "startup"}
    p = subprocess.run([handler["command"]] + handler["args"], input=json.dumps(payload).encode(), env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b"", p
    assert os.listdir(paths.projects_dir()), "SessionStart registered the session"
    with open(os.path.join(paths.logs_dir(), "hooks.log"), encoding="utf-8") as f:
        lines = [line for line in f if "SessionStart" in line]
    assert lines and "registered" in lines[-1], lines
