"""``cc-continuity rehearse`` without the Claude Code binary: the script it plays, what it
takes from the user's settings, its sealed environment, and its report and verdict."""

import json
import os
import time
import urllib.request

import pytest

from cc_continuity import cli, config, meter, rehearse
from cc_continuity.rotation import handoff
from cc_continuity.install import settings
from cc_continuity.rehearse.scripted_model import ScriptedModel, validate_scenario
from helpers import REPO

DEFAULTS = config.load(None)


# -- the script ----------------------------------------------------------------------

def test_usage_at_reports_the_requested_share_of_the_window():
    for pct in (rehearse.START_AT, rehearse.ROTATE_AT, 75.0):
        tokens = meter.usage_tokens(rehearse.usage_at(pct))
        assert tokens == int(rehearse.WINDOW * pct / 100)
    assert meter.level(meter.usage_tokens(rehearse.usage_at(rehearse.ROTATE_AT)), rehearse.WINDOW, DEFAULTS) == "rotate"
    assert meter.level(meter.usage_tokens(rehearse.usage_at(rehearse.START_AT)), rehearse.WINDOW, DEFAULTS) == "ok"


def test_scripted_handoff_passes_validation_and_names_a_real_file(git_repo, tmp_path):
    path = tmp_path / "handoff.md"
    path.write_text(rehearse.handoff_text())
    assert handoff.validate(str(path), str(git_repo), DEFAULTS).problems == []
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    problems = handoff.validate(str(path), str(elsewhere), DEFAULTS).problems
    assert len(problems) == 1 and "README.md" in problems[0]


def test_handoff_text_follows_custom_sections():
    text = rehearse.handoff_text(["Why", "What next"])
    assert set(handoff.sections_of(text)) == {"handoff", "why", "what next"}  # "# Handoff" is the title


def _ask(model, session, text):
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [{"name": "Write"}],
            "messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(model.url + "/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-claude-code-session-id": session})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def _percent(reply):
    return 100.0 * meter.usage_tokens(reply["usage"]) / rehearse.WINDOW


def test_rotation_scenario_plays_two_rotations_over_http():
    scenario = validate_scenario(rehearse.rotation_scenario("/proj", rotations=2, task="Do the task"))
    request = "cc-continuity: ...\n\n%s /state/sessions/%03d/checkpoint/handoff.md\n\nWrite it ..."
    with ScriptedModel(scenario) as model:
        for n, (session, opening) in enumerate([("s1", "Do the task, please"),
                                                ("s2", "Continuing from cp-001 (p-002). Quoting: Do the task")], 1):
            work = _ask(model, session, opening)
            write = work["content"][1]
            assert write["name"] == "Write" and write["input"]["file_path"].startswith("/proj/work-")
            assert rehearse.WORK_MARK in work["content"][0]["text"] and _percent(work) >= DEFAULTS["rotate"]
            done = _ask(model, session, "tool result")
            assert done["stop_reason"] == "end_turn" and _percent(done) >= DEFAULTS["rotate"]
            asked = _ask(model, session, "Stop hook feedback:\n" + request % (rehearse.HANDOFF_REQUEST, n))
            assert asked["content"][1]["input"] == {"file_path": "/state/sessions/%03d/checkpoint/handoff.md" % n,
                                                    "content": rehearse.handoff_text()}
            assert _ask(model, session, "tool result")["stop_reason"] == "end_turn"
        last = _ask(model, "s3", "Continuing from cp-002 (p-003). Quoting: Do the task")
        assert [b["type"] for b in last["content"]] == ["text"]
        assert _percent(last) < DEFAULTS["warn"]  # a fresh session starts low again


# -- the user's installation ------------------------------------------------------------

def _installed_doc():
    rendered = settings.render_fragment(settings.load_fragment(), "/usr/bin/python3", "/opt/cc/app")
    theirs = {"type": "command", "command": "their-stop-hook"}
    doc = {"model": "opus", "permissions": {"allow": ["Bash(rm -rf *)"]},
           "hooks": {"Stop": [{"hooks": [theirs]}], "Notification": [{"hooks": [theirs]}]},
           "statusLine": {"type": "command", "command": "their-status"}}
    return settings.merge(doc, rendered), rendered


def test_our_settings_takes_only_our_handlers_and_status_line():
    doc, rendered = _installed_doc()
    doc["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [{"type": "command", "command": "theirs"},
                                                                    rendered["hooks"]["PreToolUse"][0]["hooks"][0]]})
    ours = rehearse.our_settings(doc)
    assert set(ours) == {"hooks", "statusLine"}  # no permissions, model or anything else of theirs
    assert set(ours["hooks"]) == set(rendered["hooks"])  # Notification had only theirs
    for groups in ours["hooks"].values():
        for group in groups:
            assert group["hooks"] and all(settings.is_our_handler(h) for h in group["hooks"])
    assert ours["hooks"]["Stop"] == rendered["hooks"]["Stop"]  # unchanged: timeout and args as installed
    assert {"matcher": "Bash", "hooks": rendered["hooks"]["PreToolUse"][0]["hooks"]} in ours["hooks"]["PreToolUse"]
    assert settings.is_our_statusline(ours["statusLine"])


def test_our_settings_without_our_hooks_says_to_install():
    with pytest.raises(rehearse.RehearsalError, match="cc-continuity install"):
        rehearse.our_settings({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}})
    with pytest.raises(rehearse.RehearsalError):
        rehearse.our_settings({"hooks": "not a mapping"})


def test_installed_settings_reads_the_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    with pytest.raises(rehearse.RehearsalError, match="does not exist"):
        rehearse.installed_settings()
    (tmp_path / "settings.json").write_text("{broken")
    with pytest.raises(rehearse.RehearsalError, match="cannot read"):
        rehearse.installed_settings()
    doc, _ = _installed_doc()
    (tmp_path / "settings.json").write_text(json.dumps(doc))
    path, ours, plugin_copy = rehearse.installed_settings()
    assert plugin_copy is None
    assert path == str(tmp_path / "settings.json") and "Stop" in ours["hooks"]


def test_find_claude(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(rehearse.RehearsalError, match="--claude"):
        rehearse.find_claude()
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho 9.9.9\n")
    with pytest.raises(rehearse.RehearsalError, match="not an executable"):
        rehearse.find_claude(str(fake))
    fake.chmod(0o755)
    assert rehearse.find_claude() == str(fake)
    assert rehearse.find_claude(str(fake)) == str(fake)


def test_the_rehearsal_environment_is_sealed(tmp_path, monkeypatch):
    for name, value in (("ANTHROPIC_AUTH_TOKEN", "real-token"), ("ANTHROPIC_BASE_URL", "https://api.example"),
                        ("HTTPS_PROXY", "http://proxy.example:3128"), ("CLAUDE_CONFIG_DIR", "/home/me/.claude"),
                        ("CC_CONTINUITY_HOME", "/home/me/.claude-continuity")):
        monkeypatch.setenv(name, value)
    r = rehearse.Rehearsal("/opt/bin/claude", {"hooks": {}})
    r.root = str(tmp_path)
    r._paths()
    env = r.env()
    assert "ANTHROPIC_AUTH_TOKEN" not in env and "HTTPS_PROXY" not in env and "CLAUDE_CONFIG_DIR" not in env
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["HOME"].startswith(str(tmp_path)) and env["CC_CONTINUITY_HOME"].startswith(str(tmp_path))
    assert env["TMPDIR"].startswith(str(tmp_path)) and env["XDG_RUNTIME_DIR"].startswith(str(tmp_path))
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["DISABLE_TELEMETRY"] == "1"
    assert env["PATH"].split(os.pathsep)[0] == "/opt/bin"


# -- the report and the verdict ---------------------------------------------------------

def _times(t0, missing=()):
    return {key: t0 + 0.25 * i for i, (key, _) in enumerate(rehearse.STEPS, 1) if key not in missing}


def test_timeline_measures_each_step_from_the_start_and_from_the_step_before():
    rows = rehearse.timeline(1000.0, _times(1000.0))
    assert [r["step"] for r in rows] == [k for k, _ in rehearse.STEPS]
    assert [r["at_ms"] for r in rows] == [250 * i for i in range(1, len(rows) + 1)]
    assert [r["delta_ms"] for r in rows] == [250] * len(rows)
    gap = rehearse.timeline(1000.0, _times(1000.0, missing=("clear_typed",)))
    skipped = [r for r in gap if r["step"] == "clear_typed"][0]
    after = [r for r in gap if r["step"] == "successor_started"][0]
    assert skipped["at_ms"] is None and after["delta_ms"] == 500  # measured from the last step that happened


def test_verdict_passes_only_a_complete_rotation():
    full = rehearse.timeline(0.0, _times(0.0))
    assert rehearse.verdict(full, []) == (True, "PASS: one full rotation completed in 2.5 s")
    ok, line = rehearse.verdict(rehearse.timeline(0.0, _times(0.0, missing=("checkpoint", "clear_typed"))), [])
    assert not ok and line == "FAIL: the rotation stopped before: checkpoint verified"
    ok, line = rehearse.verdict(full, ["the successor's first request did not carry the bootstrap text"])
    assert not ok and "bootstrap" in line


def _result(ok, missing=(), problems=()):
    steps = rehearse.timeline(0.0, _times(0.0, missing))
    good, line = rehearse.verdict(steps, list(problems))
    assert good == ok
    return {"ok": good, "verdict": line, "steps": steps, "claude": "/opt/bin/claude", "version": "2.1.328",
            "settings": "/home/me/.claude/settings.json", "events": ["SessionStart", "Stop"], "kept": False,
            "sandbox": "/tmp/ccr-x", "rotation_overhead_ms": 1234, "bootstrap_chars": 1800, "model_requests": 5,
            "model_url": "http://127.0.0.1:4242", "problems": list(problems),
            "diagnostics": {"hooks_log": "LOG-LINE\n", "screen": "SCREEN-TEXT\n"}}


def test_report_lists_every_step_with_its_milliseconds():
    text = rehearse.format_report(_result(True))
    for _, what in rehearse.STEPS:
        assert what in text
    assert "   2500      250" in text  # the last step: at 2500 ms, 250 ms after the one before
    assert "1234 ms" in text and "1800 chars (~450 tokens)" in text and "127.0.0.1:4242" in text
    assert text.rstrip().endswith("PASS: one full rotation completed in 2.5 s")
    assert "LOG-LINE" not in text and "throwaway (removed)" in text


def test_failed_report_shows_missing_steps_and_diagnostics():
    text = rehearse.format_report(_result(False, missing=("successor_started", "continuation", "successor_request"),
                                          problems=("the rotator failed: pane gone",)))
    line = [ln for ln in text.splitlines() if "successor started" in ln][0]
    assert line.split()[-2:] == ["-", "-"]
    assert "problem: the rotator failed: pane gone" in text
    assert "LOG-LINE" in text and "SCREEN-TEXT" in text
    assert text.rstrip().endswith("FAIL: the rotation stopped before: successor started and claimed it")


# -- the verb ------------------------------------------------------------------------

def test_rehearse_without_an_installation_exits_2(capsys):
    assert cli.main(["rehearse"]) == 2  # HOME is a fresh temp dir: no settings.json
    assert "cc-continuity install" in capsys.readouterr().err


def test_rehearse_rejects_a_bad_timeout(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["rehearse", "--timeout", "0"])
    assert e.value.code == 2 and "seconds" in capsys.readouterr().err


# -- --record: an asciinema v2 cast of the pane ------------------------------------------------

def test_the_cast_recorder_keeps_every_byte_of_a_real_pane_with_its_timing(tmp_path, server):
    from cc_continuity.rehearse import CastRecorder
    from helpers.cast import plain_text, read_cast

    gate, out = str(tmp_path / "go"), str(tmp_path / "pane.cast")
    script = "printf 'first ünïcödé line\\n'; sleep 0.4; printf '\\033[1mbold\\033[0m second\\n'; sleep 30"
    pane = server.tmux("new-session", "-d", "-x", "90", "-y", "20", "-P", "-F", "#{pane_id}", "sh", "-c",
                       'while [ ! -e "$0" ]; do sleep 0.02; done; exec sh -c "$1"', gate, script).strip()
    rec = CastRecorder(out, str(tmp_path / "fifo"), (90, 20), title="unit")
    rec.start()
    server.tmux("pipe-pane", "-O", "-t", pane, rec.pipe_command())
    open(gate, "w").close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "second" not in "".join(t for _, t in rec.events):
        time.sleep(0.02)
    server.tmux("pipe-pane", "-t", pane)
    assert rec.finish() == len(rec.events) > 0
    header, events = read_cast(out)
    assert (header["width"], header["height"], header["title"]) == (90, 20, "unit")
    assert abs(header["timestamp"] - time.time()) < 60
    text = plain_text(events)
    assert "first ünïcödé line" in text and "bold second" in text
    assert "\x1b[1mbold" in "".join(t for _, t in events)          # the raw stream, styles and all
    first = next(t for t, s in events if "first" in s)
    second = next(t for t, s in events if "second" in s)
    assert second - first >= 0.35                                    # real timing between the two writes


def test_the_checked_in_rehearsal_cast_is_valid_and_shows_the_rotation():
    from helpers.cast import plain_text, read_cast
    from cc_continuity.rehearse import CONTINUATION, SIZE

    header, events = read_cast(os.path.join(REPO,
                                            "docs", "rehearsal.cast"))
    assert (header["width"], header["height"]) == SIZE
    text = plain_text(events)
    clear_at = text.index("❯ /clear")
    assert text.index(CONTINUATION + "001", clear_at) > clear_at      # the continuation follows the /clear
    assert "rehearsal-002" in text


def test_progress_prints_each_step_as_it_comes_and_spins_only_on_a_terminal():
    import io

    from cc_continuity.commands.rehearse import Progress

    out = io.StringIO()
    p = Progress(out, spinner=False)
    p(None, "scripted model listening on http://127.0.0.1:1", 0.12)
    p("ready", "claude started, input box idle", 3.04)
    p.close()
    assert out.getvalue() == ("  [   0.1s] scripted model listening on http://127.0.0.1:1\n"
                              "  [   3.0s] claude started, input box idle\n")
    tty = io.StringIO()
    p = Progress(tty, spinner=True, interval=0.01)
    time.sleep(0.1)
    p("ready", "claude started, input box idle", 3.0)
    time.sleep(0.1)
    p.close()
    text = tty.getvalue()
    assert "waiting for: claude started, input box idle" in text        # before it came
    assert "waiting for: first prompt typed" in text                     # after: the next one
    assert "\r\x1b[K  [   3.0s] claude started, input box idle\n" in text
    assert text.endswith("\r\x1b[K")                                     # the spinner line cleared


# -- a rehearsal against a stand-in claude: the first words, the clock, the teardown ---------------

FAKE_CLAUDE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.332 (Claude Code)"; exit 0; fi
# A late Stop hook: detached, it outlives the pane and writes into the state dir %(late)s s later.
setsid sh -c 'sleep %(late)s; mkdir -p "$CC_CONTINUITY_HOME/logs"; echo late > "$CC_CONTINUITY_HOME/logs/late"' \\
    </dev/null >/dev/null 2>&1 &
exec %(python)s %(prompt)s --out "$TMPDIR/fake.out" --raw "$TMPDIR/fake.raw"
"""


def fake_claude(tmp_path, late=3):
    import sys

    from helpers import FAKE_PROMPT

    path = tmp_path / "bin" / "claude"
    path.parent.mkdir()
    path.write_text(FAKE_CLAUDE % {"late": late, "python": sys.executable, "prompt": FAKE_PROMPT})
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(not os.path.isdir("/proc") or not __import__("shutil").which("tmux"), reason="tmux, /proc")
@pytest.mark.parametrize("form", ["settings", "plugin"])
def test_a_rehearsal_says_its_form_first_counts_from_one_start_and_leaves_no_hook_behind(tmp_path, form):
    """The stand-in shows an idle box and never calls the model, so the run stops after the prompt.
    Before: the plugin form's first line said `hooks from ~/.claude/settings.json`; the clock restarted
    when claude started (`[0.5s]` then `[0.0s]`); a hook still running after the teardown re-created
    the removed sandbox."""
    said = []
    copy = None
    if form == "plugin":
        copy = ("cc-continuity@market", str(tmp_path / "plugin-copy"))
    late = 6 if form == "settings" else 60  # the hook writes after the run's 3 s timeout (and teardown)
    r = rehearse.Rehearsal(fake_claude(tmp_path, late), {"hooks": {}}, settings_path="/home/u/.claude/settings.json",
                           timeout=3, progress=lambda key, what, sec: said.append((sec, what)))
    r.plugin_copy = copy
    r._install_plugin = lambda: None  # (the stand-in has no `plugin` verb)
    setup = r.setup

    def slow_setup():
        version = setup()
        time.sleep(0.5)  # a slow sandbox: claude starts half a second after the start
        return version

    r.setup = slow_setup
    t0 = time.monotonic()
    result = r.run()
    took = time.monotonic() - t0
    assert result["ok"] is False and "the first prompt never reached the model" in result["problems"], result
    first = said[0][1]
    if form == "plugin":
        assert first == ("sandbox ready: claude 2.1.332, the plugin cc-continuity@market (Claude Code's copy "
                         "at %s) installed into it" % copy[1]), said
    else:
        assert first == "sandbox ready: claude 2.1.332, hooks from /home/u/.claude/settings.json", said
    whats = [w for _, w in said]
    assert "claude started, input box idle" in whats and "first prompt typed" in whats, said
    seconds = [sec for sec, _ in said]
    assert seconds == sorted(seconds), said
    starting = next(sec for sec, w in said if w.startswith("claude starting"))
    assert starting >= 0.5, said  # counted from the run's start, not from claude's
    # The teardown waited for (or killed) the late hook: the sandbox stays gone after it would have written.
    assert took < late
    assert not rehearse.sandbox_pids(r.root)
    if form == "settings":
        time.sleep(late + 1 - took)
    assert not os.path.lexists(r.root), os.listdir(r.root)
