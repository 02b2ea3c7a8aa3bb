"""Session rotation in Codex CLI 0.171's TUI inside tmux, end to end and offline.

Our real hooks (hosts/codex/hooks.py) as an install writes them into ``$CODEX_HOME/hooks.json``,
trusted the way the TUI's "Trust all" trusts them (each entry's hash in config.toml: no bypass
flag), the real binary in a private tmux server (``--no-daemon``), the scripted Responses API
(tests/helpers/responses_model.py) as its model, and the tmux rotator our Stop hook starts.
What the model received is the proof: the successor's first request is a new thread
(``history_initialization: cleared``) whose developer message is our bootstrap.

The thresholds are the ones a user has: Codex with a 40 000-token window (it reports 38 000,
95 %, and compacts at 36 000, 90 % of the configured one) and our defaults (warn 55 %, rotate
62 %, hard 72 % of 38 000: 20 900, 23 560, 27 360 tokens).  A new thread starts at Codex's
base prompt (~10 k) plus our bootstrap, far under rotate (no rotation loop), and the hard
ceiling is far under Codex's compaction (it never races the rotation).

Nothing waits on a fixed time: each step waits for what it needs to see (a request, a
screen, a ledger line), within a bound.  ``CC_E2E_REPEAT=N`` runs each test N times;
``CC_E2E_METRICS=<file>`` collects P4 (the predecessor's last model request to the
successor's first, from the scripted server's clock) per rotation.
CI: ``CC_CONTINUITY_CODEX_BIN=<.ci/install-codex.sh> python3 -m pytest -m 'e2e and codex'``.
"""

import glob
import json
import os
import time

import pytest

from cc_continuity import config, ledger, paths, session
from cc_continuity.hosts.codex import rollout, screen
from cc_continuity.rehearse import HANDOFF_REQUEST, handoff_text
from cc_continuity.rotation import texts
from cc_continuity.tmux import Pane
from helpers import Keyboard
from helpers.codex import SCREENS, TOUR_SCENARIO, tour

from .common import report_metrics

pytestmark = pytest.mark.codex

WINDOW = 40_000
EFFECTIVE = rollout.effective_window(WINDOW)          # 38 000
COMPACT_AT = rollout.auto_compact_limit(WINDOW)       # 36 000
ROTATE_TOKENS = EFFECTIVE * config.DEFAULTS["rotate"] // 100
HARD_TOKENS = EFFECTIVE * config.DEFAULTS["hard"] // 100
WORK_AT = (ROTATE_TOKENS + HARD_TOKENS) // 2         # a step of work leaves the context between rotate and hard
# Past hard, under Codex's compaction by less than a command's output adds: Codex cuts what a command prints
# to ~10 KB for the model (measured: 25 KB and 40 KB of output arrived as 10 475 characters), ~2 600 tokens.
JUMP_AT = COMPACT_AT - 1000
BIG_OUTPUT = 16 * 1024
TASK = "Codex task: keep a work log in this repository, one line per step."
CONTINUATION = texts.CONTINUATION_PREFIX               # "Continuing from cp-"
USER_TEXT = "also add a changelog entry"
DRAFT = "remember to bump the version number in the changelog"
FINISH = "Picked up the handoff; the task is complete."


# -- the scripts ---------------------------------------------------------------------------------


def _step(name, when, times=None, at=WORK_AT):
    """A step of work: one shell command, then a reply whose request reports ``at`` (its output was big)."""
    rule = {"name": name, "when": when,
            "reply": [{"type": "exec_command", "cmd": "echo 'step {n}' >> work.log"}],
            "then": [{"reply": "Step {n} is done.", "usage": {"input_tokens": at}}]}
    if times:
        rule["times"] = times
    return rule


def _handoff(name="handoff", when=None, path=r"Handoff file \(absolute path\): (/\S+)", at=WORK_AT):
    """The handoff written with one shell command to the path the request names."""
    return {"name": name, "when": when or {"latest_contains": HANDOFF_REQUEST}, "extract": {"path": path},
            "reply": [{"type": "exec_command", "cmd": "cat > {path} <<'EOF'\n{handoff}\nEOF"}],
            "usage": {"input_tokens": at + 300},
            "then": [{"reply": "Handoff written.", "usage": {"input_tokens": at + 400}}]}


def chain_scenario(rotations, at=WORK_AT):
    """``rotations`` rotations back to back: the task and each continuation but the last do a step of work
    past rotate (to ``at``); the handoff request is answered with a valid handoff; the last successor confirms.
    A successor's first request reports its real size (the body / 4): Codex's base prompt and our bootstrap."""
    rules = [_handoff(at=at)]
    if rotations > 1:
        rules.append(_step("continue", {"latest_contains": CONTINUATION}, times=rotations - 1, at=at))
    rules.append({"name": "finish", "when": {"latest_contains": CONTINUATION}, "reply": FINISH})
    rules.append(_step("task", {"latest_contains": TASK}, times=1, at=at))  # after them: a bootstrap quotes the task
    return {"rules": rules, "vars": {"handoff": handoff_text()}, "title": "Work log"}


def jump_scenario():
    """Within one turn a tool's output takes the context past hard (the next request reports JUMP_AT) and the
    model asks for a second, big output: run, it would take the context past Codex's compaction limit."""
    big = {"type": "exec_command", "cmd": "cat part-2.txt"}
    return {"rules": [dict(_handoff("hard-handoff", {"latest_contains": "past the hard ceiling"},
                                    r"handoff file (/\S+\.md)", at=JUMP_AT), times=1),
                      {"name": "finish", "when": {"latest_contains": CONTINUATION}, "reply": FINISH},
                      {"name": "task", "when": {"latest_contains": TASK}, "times": 1,
                       "reply": [{"type": "exec_command", "cmd": "cat part-1.txt"}],
                       "then": [{"reply": [big], "usage": {"input_tokens": JUMP_AT}}]}],
            "vars": {"handoff": handoff_text()}, "compact_summary": "SUMMARY: the work so far.",
            "title": "Work log"}


# -- the rig -------------------------------------------------------------------------------------


class Rig:
    """A committed project, our hooks installed and trusted, the Codex TUI up in tmux with an empty composer."""

    def __init__(self, box, tui, scenario, files=None, hooks=True, window=WINDOW, settings=None):
        if settings:  # the user's own config ($CC_CONTINUITY_HOME/config.json)
            os.makedirs(paths.home(), exist_ok=True)
            with open(os.path.join(paths.home(), "config.json"), "w") as f:
                json.dump(settings, f)
        self.box = box(scenario, window=window, env={"CC_CONTINUITY_HOME": paths.home()})
        self.model = self.box.model
        self.box.commit_files(dict({"README.md": "A work log, one line per step.\n"}, **(files or {})))
        if hooks:
            self.box.install_ours()
        self.box.trust_folder()
        if hooks:
            assert {h["trustStatus"] for h in self.box.trust_hooks()} == {"untrusted"}
            assert {h["trustStatus"] for h in self.box.hooks_list()} == {"trusted"}
        self.run = tui(self.box, "--no-daemon")
        self.pane = Pane(self.run.socket, self.run.pane, reader=screen.CodexScreen)
        self.wait("an idle, empty composer", lambda: (lambda sc: screen.is_idle(sc) and screen.fresh_thread(sc))(
            self.pane.capture()), 30)

    def attach(self):
        """A person's terminal attached to the TUI's session (a :class:`helpers.Keyboard`), once the TUI has
        redrawn for it: attached, the pane loses a row to tmux's status line and Codex redraws.  A prompt
        sent by tmux right after the attach never reached the composer in 2 runs of 20 (not reproduced in
        30 tries alone): the test waits for the redraw, as a person would see it, before anything is typed."""
        kb = Keyboard(["tmux", "-S", self.run.socket], self.run.session, size=(160, 50))
        attached = lambda: self.run.tmux("display-message", "-p", "-t", self.run.pane,
                                         "#{session_attached} #{pane_width}").split()
        self.wait("the terminal attached", lambda: attached() == ["1", "160"], 10)
        self.wait("the TUI redrawn", lambda: (lambda sc: screen.is_idle(sc) and sc == self.run.settled())(
            self.pane.capture()), 10)
        return kb

    def wait(self, what, predicate, timeout):
        """Poll ``predicate`` until it gives something true; that, or AssertionError with what was seen."""
        deadline = time.monotonic() + timeout
        while True:
            got = predicate()
            if got:
                return got
            if time.monotonic() > deadline:
                raise AssertionError("%s: not within %ss\n%s" % (what, timeout, self.diagnose()))
            time.sleep(0.1)

    def sessions(self, tries=40):
        """{number: (session dir, record)} of the project's sessions, each record read whole.

        Read without the project's lock, as ``status`` reads them: in 1 of 70 loaded runs one record
        read empty once (a hook writing it meanwhile), so an unreadable one is read again."""
        for _ in range(tries):
            out = {}
            for path in glob.glob(os.path.join(paths.home(), "projects", "*", "sessions", "*", "state.json")):
                sdir = os.path.dirname(path)
                try:
                    out[int(os.path.basename(sdir))] = (sdir, session.load(sdir))
                except (OSError, ValueError):
                    break
            else:
                return out
            time.sleep(0.05)
        raise AssertionError("a session record stayed unreadable:\n%s" % self.diagnose())

    def events(self, n, ev):
        sdir, _ = self.sessions()[n]
        return [r for r in ledger.read(session.ledger_path(sdir)) if r.get("ev") == ev]

    def steps(self, n):
        return [r["step"] for r in self.events(n, "rotator")]

    def rotated(self, n):
        """Session ``n``'s rotator has finished (its last step ``renamed``, or ``failed``)."""
        got = self.steps(n) if n in self.sessions() else []
        return bool(got) and got[-1] in ("renamed", "failed")

    def prompts(self):
        """Every prompt our UserPromptSubmit recorded, in every session, in order of its time."""
        rows = [r for n in self.sessions() for r in self.events(n, "prompt")]
        return [r["text"] for r in sorted(rows, key=lambda r: r["ts"])]

    def main(self):
        return self.model.requests(kind="main")

    def threads(self):
        """The main requests grouped by thread, threads in the order they began."""
        out = {}
        for r in self.main():
            out.setdefault(r.thread_id, []).append(r)
        return list(out.values())

    def diagnose(self):
        logs = paths.logs_dir()
        tail = lambda name: open(os.path.join(logs, name)).read()[-1500:] if os.path.exists(
            os.path.join(logs, name)) else "(no %s)" % name
        try:
            shown = self.run.screen()
        except Exception as e:  # noqa: BLE001 - the pane may be what is gone
            shown = "no screen: %s" % e
        return "screen:\n%s\nsessions: %s\nrotator steps: %s\nrequests: %s\nhooks.log:\n%s\nrotator.log:\n%s" % (
            shown, {n: r["state"] for n, (_, r) in self.sessions().items()},
            {n: self.steps(n) for n in self.sessions()},
            [(r.seq, r.kind, r.rule, r.metadata.get("history_initialization")) for r in self.model.requests()],
            tail("hooks.log"), tail("rotator.log"))


def p4_ms(rig):
    """Per rotation: the predecessor's last model request to the successor's first (the server's clock)."""
    threads = rig.threads()
    return [round((b[0].time - a[-1].time) * 1000) for a, b in zip(threads, threads[1:])]


def assert_chain(rig, rotations):
    """Each checkpoint claimed exactly once, by the next session; each successor's first request a cleared
    thread that carries its bootstrap and starts under rotate; every rotator done by the screen's way."""
    sessions = rig.sessions()
    assert sorted(sessions) == list(range(1, rotations + 2)), rig.diagnose()
    for n in range(1, rotations + 1):
        _, rec = sessions[n]
        _, succ = sessions[n + 1]
        cid = session.checkpoint_id(n)
        assert rec["state"] == session.ROTATED and rec["successor"] == n + 1 and rec["host"] == "codex", rec
        assert succ["predecessor"] == n and succ["predecessor_claimed"] and succ["checkpoint_from"] == cid, succ
        claims = [r for m in sessions for r in rig.events(m, "claim") if r.get("checkpoint") == cid]
        assert len(claims) == 1, (cid, claims)
        with open(session.rotator_plan_path(rig.sessions()[n][0])) as f:
            plan = json.load(f)
        assert (plan["host"], plan["claude_pid"]) == ("codex", rig.run.pid), "the Codex the hooks ran under"
        steps = rig.steps(n)
        assert "failed" not in steps and steps[-1] == "renamed", steps
        assert steps.index("clear_sent") < steps.index("cleared") < steps.index("continuation_sent") \
            < steps.index("delivered"), steps
    assert sessions[rotations + 1][1]["state"] == session.ACTIVE
    threads = rig.threads()
    assert len(threads) == rotations + 1, [len(t) for t in threads]
    for n, thread in enumerate(threads[1:], 1):
        first = thread[0]
        assert first.metadata.get("history_initialization") == "cleared", first.metadata
        dev = "\n".join(first.messages("developer"))
        assert texts.continuation_head(session.checkpoint_id(n), sessions[n + 1][1]["name"]) in dev, dev[-2000:]
        assert first.messages("user")[-1].startswith(CONTINUATION + "%03d" % n)
        assert TASK not in first.messages("user"), "a fresh context: the task is quoted by the bootstrap only"
        assert first.usage["total_tokens"] < ROTATE_TOKENS, (first.usage, ROTATE_TOKENS)
    assert rig.model.requests(kind="compaction") == []


# -- the screen the rotator reads, live --------------------------------------------------------


def test_the_screen_reader_reads_the_live_tui_in_each_state(box):
    """The recorded screens (tests/hosts/codex/test_codex_screen.py) are the same states read live, as the rotator reads."""
    b = box(TOUR_SCENARIO)
    seen = []
    for name, shown in tour(b):
        want = SCREENS[name]
        got = {"idle": screen.is_idle(shown), "text": screen.input_text(shown), "fresh": screen.fresh_thread(shown)}
        assert (got["idle"], got["fresh"]) == (want["idle"], want["fresh"]), (name, got, str(shown))
        assert "".join(got["text"].split()) == "".join(want["text"].split()), (name, got, str(shown))
        seen.append(name)
    assert seen == list(SCREENS)


# -- rotations -----------------------------------------------------------------------------------


def test_three_rotations_in_a_chain(box, tui):
    rig = Rig(box, tui, chain_scenario(3))
    assert ROTATE_TOKENS < WORK_AT < HARD_TOKENS < COMPACT_AT
    rig.run.type(TASK)
    rig.wait("the third successor's answer", lambda: [r for r in rig.main() if r.rule == "finish"], 300)
    rig.wait("the third rotator done", lambda: rig.rotated(3), 60)
    assert_chain(rig, 3)
    prompts = rig.prompts()
    assert len(prompts) == 4 and prompts[0] == TASK, prompts
    assert [p[:len(CONTINUATION) + 3] for p in prompts[1:]] == [CONTINUATION + "%03d" % n for n in (1, 2, 3)], prompts
    assert len(open(os.path.join(rig.box.work, "work.log")).read().splitlines()) == 3, "three steps of work"
    p4 = p4_ms(rig)
    report_metrics("codex_tui_p4", {"test": "chain", "p4_ms": p4,
                                    "first_request_tokens": [t[0].usage["total_tokens"] for t in rig.threads()[1:]]})


def test_a_crossing_that_would_compact_rotates_instead(box, tui):
    """The usage jumps within a turn: a tool's output takes it past hard (JUMP_AT) and the model asks for
    another output that would take it past Codex's compaction limit.  PreToolUse denies that call (past
    hard) and names the handoff; the model writes it; the turn's Stop hands over; Codex never compacts.
    The same script without our hooks compacts (the control)."""
    part = "x" * 79 + "\n"
    files = {"part-1.txt": "part one\n", "part-2.txt": part * (BIG_OUTPUT // len(part))}
    control = Rig(box, tui, jump_scenario(), files=files, hooks=False)
    control.run.type(TASK)
    (compaction,) = control.wait("Codex's own compaction", lambda: control.model.requests(kind="compaction"), 120)
    called = [r for r in control.main() if "cat part-2.txt" in json.dumps(r.reply)]
    assert called and compaction.seq > called[0].seq, "within the turn, after the big output"
    control.run.close()

    rig = Rig(box, tui, jump_scenario(), files=files)
    rig.run.type(TASK)
    rig.wait("the successor's answer", lambda: [r for r in rig.main() if r.rule == "finish"], 180)
    rig.wait("the rotator done", lambda: rig.rotated(1), 60)
    assert_chain(rig, 1)
    deny = [r for r in rig.main() if "Command blocked by PreToolUse hook" in r.latest_text]
    assert len(deny) == 1 and "past the hard ceiling" in deny[0].latest_text
    assert "cat part-2.txt" in deny[0].latest_text
    assert not any("x" * 79 in r.text for r in rig.main()), "the big output never ran"
    assert max(r.usage["total_tokens"] for r in rig.main()) < COMPACT_AT
    _, rec = rig.sessions()[1]
    assert rec["checkpoint"]["degraded"] is False, rig.events(1, "handoff_check")
    report_metrics("codex_tui_p4", {"test": "compaction", "p4_ms": p4_ms(rig)})


@pytest.mark.parametrize("after", ["begin", "cleared"])
def test_a_user_typing_during_the_rotation_is_never_mixed_with_our_text(box, tui, after):
    """A person types into the composer (through an attached client) while the rotator waits to type, from
    the rotator's start (their prompt goes to the predecessor) or from the moment the new thread is on screen
    (theirs goes to the successor, before or instead of our continuation): each prompt submitted is theirs
    whole or ours whole, theirs exactly once; the rotation completes and its bootstrap reaches the model."""
    rig = Rig(box, tui, chain_scenario(1))
    kb = rig.attach()
    rig.run.type(TASK)
    rig.wait("the rotator's %s" % after, lambda: 1 in rig.sessions() and after in rig.steps(1), 120)
    try:
        kb.type(USER_TEXT, cps=12)  # ~2.2 s of typing, across the turn's end and the rotator's first look
        kb.press(b"\r")
        rig.wait("the rotator done", lambda: rig.rotated(1), 120)
        rig.wait("the user's prompt answered", lambda: USER_TEXT in rig.prompts() and screen.is_idle(
            rig.pane.capture()), 60)
    finally:
        kb.close()
    prompts = rig.prompts()
    assert prompts.count(USER_TEXT) == 1, prompts
    assert all(p in (TASK, USER_TEXT) or (p.startswith(CONTINUATION) and USER_TEXT not in p) for p in prompts), \
        prompts
    assert sum(p.startswith(CONTINUATION) for p in prompts) <= 1, prompts
    sessions = rig.sessions()
    assert sessions[1][1]["state"] == session.ROTATED and sessions[2][1]["predecessor_claimed"]
    assert "failed" not in rig.steps(1), rig.steps(1)
    first = rig.threads()[1][0]
    assert first.metadata.get("history_initialization") == "cleared"
    assert texts.continuation_head(session.checkpoint_id(1), sessions[2][1]["name"]) in "\n".join(
        first.messages("developer"))
    users = [m for r in rig.main() for m in r.messages("user")]
    assert not [m for m in users if USER_TEXT in m and m != USER_TEXT], "never typed into our text, nor ours into theirs"
    report_metrics("codex_tui_typing", {"after": after, "steps": rig.steps(1), "prompts": [p[:40] for p in prompts],
                                        "to": [n for n in sorted(sessions) for r in rig.events(n, "prompt")
                                               if r["text"] == USER_TEXT]})


def test_a_window_too_small_for_a_fresh_start_rotates_once_then_stops_the_loop(box, tui):
    """Codex's 20 000-token window (19 000 reported) under our defaults: a new thread starts at ~13 000 (its
    base prompt, our bootstrap), past rotate (11 780) by its start alone.  The first rotation happens; its
    successor, past rotate before any tool ran, says so once and never rotates (turn._first_request_past_rotate):
    no loop, where the reference's demo rotated every ~6 s."""
    small = 20_000
    effective = rollout.effective_window(small)
    rotate, hard = (effective * config.DEFAULTS[k] // 100 for k in ("rotate", "hard"))
    rig = Rig(box, tui, chain_scenario(1, at=(rotate + hard) // 2), window=small)
    rig.run.type(TASK)
    rig.wait("the successor's answer", lambda: [r for r in rig.main() if r.rule == "finish"], 120)
    rig.wait("the loop stopped", lambda: 2 in rig.sessions() and rig.events(2, "rotation_loop_stopped"), 60)
    rig.wait("the rotator done", lambda: rig.rotated(1), 60)
    first = rig.threads()[1][0]
    assert first.metadata.get("history_initialization") == "cleared" and first.usage["total_tokens"] >= rotate
    _, rec = rig.sessions()[2]
    assert rec["loop_stopped"] and rec["state"] == session.ACTIVE and rig.steps(2) == []
    assert sorted(rig.sessions()) == [1, 2] and len(rig.threads()) == 2


def test_a_draft_left_in_the_composer_is_kept_and_put_back_in_the_successors(box, tui):
    """A person types a draft and leaves it (``rotator_draft_wait_s`` 1 s): the rotator cuts it into Codex's kill
    buffer (C-e C-u), clears, continues, and yanks it back (C-y) into the successor's composer; the successor's
    bootstrap quotes it too."""
    rig = Rig(box, tui, chain_scenario(1), settings={"rotator_draft_wait_s": 1})
    kb = rig.attach()
    rig.run.type(TASK)
    # Typed while the predecessor writes its handoff: in its composer before the rotator can look.
    rig.wait("the handoff requested", lambda: 1 in rig.sessions() and any(
        r.get("to") == session.HANDOFF_REQUESTED for r in rig.events(1, "transition")), 120)
    try:
        kb.type(DRAFT, cps=20)
        rig.wait("the rotator done", lambda: rig.rotated(1), 120)
        rig.wait("the draft back in the successor's composer",
                 lambda: screen.input_text(rig.pane.capture()) == DRAFT, 10)
    finally:
        kb.close()
    # Waited for, not read once: in 1 of ~60 loaded runs one read of the ledger lacked this line, which the
    # run's ledger holds in its place (n 27 of 28, between delivered and renamed) - not explained yet.
    restored = rig.wait("the draft_restored step", lambda: [r for r in rig.events(1, "rotator")
                                                            if r["step"] == "draft_restored"], 10)
    steps = rig.steps(1)
    why = json.dumps(rig.events(1, "rotator"))
    assert "failed" not in steps and "draft_kept" in steps, rig.diagnose()
    assert steps.index("draft_kept") < steps.index("clear_sent"), why
    assert [r["ok"] for r in restored] == [True], why
    assert DRAFT not in rig.prompts() and not any(DRAFT in m for r in rig.main() for m in r.messages("user"))
    first = rig.threads()[1][0]
    assert DRAFT in "\n".join(first.messages("developer")), "the bootstrap quotes the kept draft"

