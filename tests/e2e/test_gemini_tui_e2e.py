"""Rotations inside Gemini CLI 0.61's interactive TUI, in tmux, with nothing typed after the launch.

The scenario of test_gemini_rotation_e2e.py (the rehearsal's rotation script with ``write_file``, three
rotations) in the TUI instead of ``gemini -p``: installed as a user installs it (``cc-continuity install
--agent gemini``: the app copy, our hooks in ``~/.gemini/settings.json``, the policy rule), the project
trusted, the user's own rule for the work's writes (``USER_RULE``), Gemini's default approval mode (no
``--yolo``, no auto-edit).  A launcher in a private tmux server runs ``gemini -i <task>``; from then on
nothing is typed until the chain is over: the handoff's writes go through by our rule and the work's by
the user's, so the TUI never asks "Apply this change?" (the pane is polled the whole time, and its whole
scrollback read at the end), and the verifying AfterAgent clears and continues (``native``).

What differs from ``gemini -p``: the last session ends when the user quits (``/quit``, typed once the
chain is done; Gemini fires SessionEnd(exit) three times for it, our ledger keeps one), and the pane
shows each hand-over ("Agent execution blocked: cc-continuity: handoff cp-NNN verified ...",
"Conversation context has been cleared.").  Gemini also prints "This request failed. Press F12 ..."
once per typed prompt after the first block (its own low-verbosity note for any blocked agent:
shared/reference/gemini-cli-0.61.md section 5); it is not a failed request.

``CC_E2E_METRICS=<file>`` collects P4 per rotation (the predecessor's last model request to the
successor's first, on the scripted model's clock).
"""

import json
import os
import re
import shlex
import signal
import subprocess
import time

import pytest

from cc_continuity.rehearse import CONTINUATION, HANDOFF_REQUEST, WINDOW, WORK_MARK, rotation_scenario
from helpers import TmuxServer, leftovers

from .common import report_metrics
from .test_gemini_rotation_e2e import ROTATIONS, TASK, USER_RULE, _gemini_tools, _sessions

pytestmark = pytest.mark.gemini

SIZE = (120, 45)
SESSION = "gemini"
APPROVAL = ("Apply this change?", "Allow once")  # the TUI's tool approval prompt
BUSY = "esc to cancel"  # the spinner's line while a turn (or a hook) runs
COMPOSER = "Type your message"
CLEARED = "Conversation context has been cleared."
FINISH = "Picked up the handoff; the task is complete."  # the scenario's last reply (rule "finish")
CHAIN_S = 180.0  # a generous bound for the whole chain (about 10 s on an idle machine)
POLL_S = 0.2


class Tui:
    """``gemini -i <task>`` in ``box``'s project, in a private tmux server (remain-on-exit: its last screen
    and exit status stay readable).  ``typed`` records every key sent, with the time it was sent."""

    def __init__(self, box, cc_home):
        self.box = box
        self.server = TmuxServer()
        self.typed = []
        self.nudged = 0  # SIGCHLDs sent to the server for a pane dead with no status (dead())
        env = box.env(CC_CONTINUITY_HOME=cc_home)
        self.launcher = os.path.join(box.root, "launch.sh")
        with open(self.launcher, "w") as f:  # the sandbox's environment only, and the pane's own TMUX
            f.write("#!/bin/sh\ncd %s || exit 97\nexec env -i %s TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" %s -i %s\n" % (
                shlex.quote(box.project), " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(env.items())),
                shlex.quote(box.bin), shlex.quote(TASK)))
        os.chmod(self.launcher, 0o755)
        self.pane, pid = self.server.tmux(
            "start-server", ";", "set-option", "-g", "history-limit", "100000", ";",
            "set-option", "-g", "remain-on-exit", "on", ";",
            "new-session", "-d", "-s", SESSION, "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-P", "-F",
            "#{pane_id} #{pane_pid}", self.launcher).split()
        self.pid = int(pid)  # gemini itself (the launcher execs it), a process group's leader

    def screen(self):
        return self.server.tmux("capture-pane", "-p", "-t", self.pane)

    def history(self):
        """Everything the pane printed (the TUI draws inline: its history scrolls into tmux's)."""
        return self.server.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.pane)

    def dead(self):
        """None while the TUI runs, else how it ended: its exit status, or "signal N".

        tmux marks a pane dead when its pty closes and knows the status once it has reaped the process.
        tmux 3.3 (with libutempter: its SIGCHLD handler is in place while tmux closes the pane's pty) can
        miss that SIGCHLD and leave the process a zombie, the pane dead with no status, for good (seen 3 runs
        in 8 here; hosts/claude/launch.py works around the same): a pane dead with no status gets the
        server the SIGCHLD it missed (``nudged`` counts those sent), and is not over yet."""
        dead, status, sig, server = (self.server.tmux(
            "display-message", "-p", "-t", self.pane, "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}:#{pid}")
            .strip().split(":") + ["", "", ""])[:4]
        if dead != "1":
            return None
        if not (status or sig):
            if server.isdigit():
                self.nudged += 1
                os.kill(int(server), signal.SIGCHLD)
            return None
        return int(status) if status else "signal %s" % sig

    def keys(self, *keys, literal=False):
        self.typed.append((time.time(), keys))
        self.server.tmux("send-keys", "-t", self.pane, *(("-l",) if literal else ()), *keys)

    def close(self):
        """The server; a TUI still running (a chain that failed) is killed first, its group with it."""
        try:
            running = self.dead() is None
        except RuntimeError:  # no server any more
            running = True
        if running:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.server.kill()


def _hooks_log(cc_home, lines=40):
    try:
        with open(os.path.join(cc_home, "logs", "hooks.log")) as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return "(no hooks.log: %s)" % e


def _last_session_stopped(cc_home):
    """The last successor's turn is over: its AfterAgent (the ledger's ``stop``) has run."""
    try:
        sessions = _sessions(cc_home)
    except (OSError, ValueError):  # not there yet, or a state file being replaced
        return False
    last = sessions.get(ROTATIONS + 1)
    return bool(last) and any(r["ev"] == "stop" for r in last[2])


def _run_the_chain(tui, box, cc_home):
    """Poll the pane (no approval prompt, ever) until the chain is over and the TUI idle; what was seen."""
    seen = {"approval": [], "yolo": [], "screens": 0}
    deadline = time.monotonic() + CHAIN_S
    idle = 0
    while True:
        screen = tui.screen()
        seen["screens"] += 1
        if any(p in screen for p in APPROVAL):
            seen["approval"].append(screen)
            return seen  # a prompt waits for a key that never comes: no point in waiting longer
        if "YOLO" in screen:
            seen["yolo"].append(screen)
        status = tui.dead()
        if status is not None:
            raise AssertionError("gemini exited (status %s) before the chain was done:\n%s\n%s"
                                 % (status, screen, _hooks_log(cc_home)))
        finished = any(r.rule == "finish" for r in box.model.main_requests())
        idle = idle + 1 if (finished and BUSY not in screen and COMPOSER in screen
                            and _last_session_stopped(cc_home)) else 0
        if idle >= 2:  # two polls in a row: not a frame between two hooks
            seen["done"] = time.time()
            return seen
        if time.monotonic() > deadline:
            raise AssertionError("the chain was not over within %.0fs; requests %s\nlast screen:\n%s\nhooks.log:\n%s"
                                 % (CHAIN_S, [(r.seq, r.kind, r.rule) for r in box.model.requests()], screen,
                                    _hooks_log(cc_home)))
        time.sleep(POLL_S)


def _quit(tui, timeout=30.0):
    """``/quit`` and Enter (the chain is over); the TUI's exit status."""
    tui.keys("/quit", literal=True)
    deadline = time.monotonic() + 10
    while "/quit" not in tui.screen() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # Enter in the same burst as the text would be part of a paste
    tui.keys("Enter")
    deadline, again = time.monotonic() + timeout, time.monotonic() + 5
    while True:
        status = tui.dead()
        if status is not None:
            return status
        if time.monotonic() > again and "Agent powering down" not in tui.screen():  # the Enter went nowhere
            tui.keys("Enter")
            again = deadline
        if time.monotonic() > deadline:
            ps = subprocess.run(["ps", "-o", "pid,ppid,pgid,stat,etime,args", "-g", str(tui.pid)],
                                capture_output=True, text=True).stdout
            raise AssertionError("gemini did not exit within %.0fs of /quit (pane %s); its group:\n%s\nstill running: "
                                 "%s\n%s" % (timeout, tui.server.tmux(
                                     "display-message", "-p", "-t", tui.pane,
                                     "dead=#{pane_dead} status=#{pane_dead_status} signal=#{pane_dead_signal}"),
                                     ps, leftovers.find(tui.box.root), tui.screen()))
        time.sleep(0.1)


@pytest.fixture(scope="module")
def chain(gemini_box):
    box = gemini_box()
    box.model.set_scenario(_gemini_tools(rotation_scenario(box.project, rotations=ROTATIONS, task=TASK)))
    cc_home = os.path.join(box.root, "cchome")
    said = box.install_ours(cc_home, config={"window": WINDOW})
    assert "policies/cc-continuity.toml written" in said
    with open(os.path.join(box.gemini_dir, "policies", "user-work.toml"), "w") as f:
        f.write(USER_RULE % re.escape(box.project))  # the user's own rule for the work (theirs, not ours)
    tui = Tui(box, cc_home)
    try:
        seen = _run_the_chain(tui, box, cc_home)
        if not seen["approval"]:
            seen["exit"] = _quit(tui)
        seen["history"] = tui.history()
    finally:
        tui.close()
    seen["left"] = leftovers.wait_gone(box.root, 30.0)  # gemini, its hooks, their jobs: all gone by themselves
    return box, tui, seen, cc_home


def test_three_rotations_in_the_tui_each_claimed_once(chain):
    box, _tui, seen, cc_home = chain
    assert not seen["approval"], seen["approval"][0]
    sessions = _sessions(cc_home)
    assert sorted(sessions) == list(range(1, ROTATIONS + 2)), {n: s[1]["state"] for n, s in sessions.items()}
    gemini_ids = {s[1]["session_id"].split("_g")[0] for s in sessions.values()}
    assert len(gemini_ids) == 1, gemini_ids  # one Gemini session, a generation of ours per rotation
    (gid,) = gemini_ids
    for n in range(1, ROTATIONS + 1):
        sdir, rec, led = sessions[n]
        assert (rec["state"], rec["driver"], rec["successor"]) == ("ROTATED", "native", n + 1), rec
        assert [r["ev"] for r in led if r["ev"] in ("handoff_taken", "checkpoint", "generation")] == \
            ["handoff_taken", "checkpoint", "generation"], led
        assert not [r for r in led if r["ev"] == "rotator_spawned"]  # in-process: no tmux rotator, no typing
        _, succ, sled = sessions[n + 1]
        assert succ["session_id"] == "%s_g%d" % (gid, n + 1)
        assert succ["predecessor"] == n and succ["predecessor_claimed"]
        claims = [r for m in sessions for r in sessions[m][2] if r["ev"] == "claim" and r.get("predecessor") == n]
        assert len(claims) == 1, claims
    last = sessions[ROTATIONS + 1][1]
    assert (last["state"], last["ended"]["reason"]) == ("ENDED", "exit")  # /quit: SessionEnd(exit)
    # Gemini fires SessionEnd(exit) three times on one /quit: one line in the ledger, on the last session only.
    assert len([r for r in sessions[ROTATIONS + 1][2] if r["ev"] == "session_end"]) == 1
    assert all(not [r for r in sessions[n][2] if r["ev"] == "session_end"] for n in range(1, ROTATIONS + 1))


def test_each_successors_first_request_is_a_fresh_context_with_its_bootstrap(chain):
    box, tui, _seen, cc_home = chain
    requests = box.model.main_requests()
    firsts = [r for r in requests if len(r.contents) == 1 and CONTINUATION in r.text]
    assert len(firsts) == ROTATIONS, [(r.rule, len(r.contents)) for r in requests]
    for k, req in enumerate(firsts, start=1):
        (parts,) = [c["parts"] for c in req.contents]
        texts = [p.get("text", "") for p in parts]
        assert texts[0].startswith("<session_context>")
        assert texts[1].startswith("Continuing from cp-%03d (project-%03d)." % (k, k + 1))  # the clear's reason
        assert texts[2].startswith("<hook_context>Continuing from cp-%03d (project-%03d)." % (k, k + 1))  # bootstrap
        inner = texts[2][len("<hook_context>"):-len("</hook_context>")]
        assert "## Next steps" in inner and texts[2].endswith("</hook_context>")  # the handoff itself, whole
        assert "<" not in inner and "&lt;path&gt;" in inner  # Gemini escapes additionalContext
        for marker in (HANDOFF_REQUEST, WORK_MARK, "Handoff written; ending the turn"):
            assert marker not in req.text, (k, marker)  # nothing of the conversation before the clear
    assert requests[-1].rule == "finish"
    # P4: the predecessor's last model request -> the successor's first (the verifying AfterAgent, the clear,
    # the claiming BeforeAgent in between).
    seqs = [r.seq for r in requests]
    p4 = [round((req.time - requests[seqs.index(req.seq) - 1].time) * 1000) for req in firsts]
    report_metrics("gemini_tui_p4", {"p4_ms": p4, "tmux_sigchld_nudges": tui.nudged})


def test_every_write_went_through_without_a_prompt_or_a_key(chain):
    box, tui, seen, _cc_home = chain
    assert not seen["approval"], "the TUI asked for approval:\n%s" % seen["approval"][0]
    assert not seen["yolo"], seen["yolo"][0]
    assert tui.typed and all(at >= seen["done"] for at, _keys in tui.typed), tui.typed  # only /quit, at the end
    assert [keys for _at, keys in tui.typed][:2] == [("/quit",), ("Enter",)], tui.typed
    # What the model heard back from each write_file: every one written, none refused or cancelled.
    responses = {}
    for req in box.model.main_requests():
        for resp in req.parts("functionResponse", latest=True):
            responses.setdefault(json.dumps(resp, sort_keys=True), resp)
    writes = [r for r in responses.values() if r.get("name") == "write_file"]
    assert len(writes) == 2 * ROTATIONS, writes  # each session before the last: its work step and its handoff
    assert all("error" not in r.get("response", {}) and "Successfully" in json.dumps(r["response"])
               for r in writes), writes
    # The pane, whole: no prompt ever drawn, every write accepted, each hand-over shown.
    history = seen["history"]
    assert not any(p in history for p in APPROVAL), history
    accepted = re.findall(r"WriteFile\s+(\S+) → Accepted", history)
    assert len([a for a in accepted if re.fullmatch(r"work-[0-9]+\.txt", a)]) == ROTATIONS, accepted
    assert ["continuity-handoff-%03d.md" % k for k in range(1, ROTATIONS + 1)] == \
        [a for a in accepted if a.startswith("continuity-handoff-")], accepted
    for k in range(1, ROTATIONS + 1):
        assert "Agent execution blocked: cc-continuity: handoff cp-%03d verified" % k in history, history
    assert history.count(CLEARED) == ROTATIONS, history
    assert FINISH in history


def test_quit_ends_the_tui_and_nothing_is_left_running(chain):
    _box, _tui, seen, cc_home = chain
    assert seen.get("exit") == 0, (seen.get("exit"), seen.get("history", "")[-3000:])
    assert not seen["left"], "processes left behind: %s" % seen["left"]
    # Gemini 0.61 fires SessionEnd(exit) three times on one /quit: the first one ends the session, the rest say so.
    ends = [line for line in _hooks_log(cc_home, lines=1000).splitlines() if "gemini:SessionEnd " in line]
    assert ends and ends[0].endswith(" ok") and all(e.endswith(" already ended (exit)") for e in ends[1:]), ends


def test_the_work_tree_is_snapshotted_and_nothing_of_the_users_moved(chain):
    box, _tui, _seen, cc_home = chain
    git = lambda *a: subprocess.run(["git", "-C", box.project, *a], capture_output=True, text=True, check=True).stdout
    refs = git("for-each-ref", "--format=%(refname)", "refs/continuity").split()
    assert len([r for r in refs if "/cp-" in r]) == ROTATIONS, refs
    assert git("rev-list", "--count", "HEAD").strip() == "1"  # the user's one commit, HEAD unmoved
    assert git("status", "--porcelain").count("work-") >= ROTATIONS  # the work files, untracked, still there
    temp = os.path.dirname(os.path.dirname(box.session_files()[0]))
    assert not [f for f in os.listdir(temp) if f.startswith("continuity-handoff-")]  # every draft taken
