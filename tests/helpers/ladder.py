"""The rotation set-up as a ladder, in-process against the fake host (issue 35).

Each rung is built on the one below, as libtmux's server -> session -> window -> pane:

    project    a git repository (``FILES``), HOME and CC_CONTINUITY_HOME of the test, the fake host
    working    S1 started, its prompt recorded, its last reply at N % (65: past *rotate*, no Stop yet)
    requested  the Stop at *rotate*: HANDOFF_REQUESTED, the request and the handoff's path
    verified   the handoff (``HANDOFF``) written, the next Stop: checkpoint cp-001 verified, the user
               asked for /clear (AWAITING_MANUAL_CLEAR, driver manual); or, with the mod's heartbeat
               (``mod_hello``), offered to the mod (ROTATING, driver mod: ``verify(driver="mod")``)
    cleared    S1's SessionEnd(clear), S2's SessionStart(clear): the checkpoint claimed, the bootstrap
    claimed    S2's first prompt: ACTIVE

The steps are the protocol's own (:mod:`cc_continuity.rotation`) called as tests/rotation/test_protocol.py
calls them: no hook process, no hook adapter; a plain :class:`~cc_continuity.rotation.context.Context`
(pushes collected, no tmux).  Each reply is told to the fake host *and* written to the session's
Claude Code transcript, so a test may go on with real hooks (``ladder.drv.hook``) or the real adapter
in-process (``ladder.drv.inproc``) on the same world.

The world of *verified* (repository with its snapshot ref, state directory, transcripts) is built
once per test session (per xdist worker) and copied per test (:meth:`World.copy_to`): the copy gets
the test's own paths, every absolute path, project key and transcript folder naming the original is
rewritten, and the hash-chained ledgers are chained again over the rewritten lines.
"""

import copy
import os
import re
import shutil

from cc_continuity import config, paths, session
from cc_continuity.digest import sha256
from cc_continuity.rotation import context, handover, start, turn

from .fakehost import FakeHost
from .hookdriver import HookDriver, handoff_text, tokens_at, wait_for_snapshot_jobs

S1 = "a1a1a1a1-0000-4000-8000-0000000000d1"
S2 = "b2b2b2b2-0000-4000-8000-0000000000d2"
FILES = {"README.md": "hello\n", "src/app.py": "x = 1\n", "src/util.py": "y = 2\n"}
PROMPT = "rewrite the parser"
HANDOFF = handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `src/app.py`\n- `src/util.py`"})
STOP_WAIT_S = 0.3  # turn.STOP_WAIT_S while a ladder runs (the fake host has every reply at once)
REQUEST_PATH = re.compile(r"Handoff file \(absolute path\): (\S+)")


def added_context(out):
    """The text a step's output adds to the agent's context ("" when none)."""
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""


class Ladder:
    """One project and its agent on the fake host; the rotation's steps called in-process.

    What a test needs: ``drv`` (the :class:`HookDriver`: paths, records, ledgers, real hooks),
    ``host`` (the fake host), ``S1``/``S2``, and what each rung left: ``request`` (the Stop's
    output asking for the handoff), ``handoff_path``, ``verified_out``, ``checkpoint`` (the
    manifest), ``bootstrap`` (the successor's continuation text), ``claimed_out``.
    """

    S1, S2 = S1, S2

    def __init__(self, drv, host=None):
        self.drv = drv
        self.host = host or FakeHost(pid=drv.claude_pid)
        drv.host = self.host
        self.request = self.handoff_path = self.verified_out = self.checkpoint = None
        self.bootstrap = self.cleared_out = self.claimed_out = None
        self.last_ctx = None

    @classmethod
    def new(cls, root, files=None, **kw):
        return cls(HookDriver(root, files=FILES if files is None else files, **kw))

    # -- the agent, as the fake host tells it ---------------------------------------------------
    def transcript_path(self, sid):
        return self.drv.transcript(sid).path

    def said(self, sid, tokens, text="Working on it."):
        """The agent's reply in ``sid``, its request at ``tokens`` of context (the transcript gets it too)."""
        self.host.reply(self.transcript_path(sid), tokens, text)
        self.drv.transcript(sid).assistant(tokens, text)

    # -- one step ------------------------------------------------------------------------------
    def step(self, fn, event, sid, ctx_class=context.Context, agent_pid=None, **fields):
        """Run one protocol step for ``event``; its output (the context it ran with: ``last_ctx``).

        ``agent_pid``: the step runs for that agent process (another ``claude``, e.g. a ``--resume``),
        not the ladder's (``drv.claude_pid``).  Context the step added is what the agent then holds (a
        real host finds it in its transcript)."""
        if event == "Stop" and "last_assistant_message" not in fields:  # the agent names the turn's last reply
            fields["last_assistant_message"] = self.host.last_reply(self.transcript_path(sid)) or "Done for now."
        payload = self.drv.payload(event, sid, **fields)
        host, env = self.host, self.drv.env(sid)
        if agent_pid is not None:  # the same agent's files, another process
            host, env = copy.copy(self.host), self.drv.env(sid, CLAUDE_PID=agent_pid)
            host.pid = agent_pid
        ctx = ctx_class(event, payload, env, host=host)
        out = fn(ctx)
        if out is not None:
            for then in ctx.after_output:  # as hooks.main does once the answer is written
                then()
            added = added_context(out) if isinstance(out, dict) else None
            if added:
                self.host.received(payload["transcript_path"], added)
        self.last_ctx = ctx
        return out

    def start(self, sid, source="startup", **fields):
        return self.step(start.session_started, "SessionStart", sid, source=source, **fields)

    def prompt(self, sid, prompt, **fields):
        return self.step(start.prompt_submitted, "UserPromptSubmit", sid, prompt=prompt, **fields)

    def stop(self, sid, **fields):
        return self.step(turn.turn_ended, "Stop", sid, **fields)

    def end(self, sid, reason="clear", **fields):
        return self.step(turn.session_ended, "SessionEnd", sid, reason=reason, **fields)

    # -- the rungs -----------------------------------------------------------------------------
    def work(self, percent=65, sid=S1, prompts=(PROMPT,), text="Step finished.", start_tokens=tokens_at(10)):
        """*working*: ``sid`` started and prompted; its turn's last reply at ``percent`` % (no Stop yet)."""
        self.said(sid, start_tokens)
        assert self.start(sid) is None
        for p in prompts:
            self.prompt(sid, p)
        self.said(sid, tokens_at(percent), text)
        return self

    def request_handoff(self, sid=S1, **fields):
        """*requested*: the Stop past *rotate* asks for the handoff."""
        out = self.stop(sid, **fields)
        assert out and out.get("decision") == "block", (out, self.last_ctx.outcome)
        assert self.drv.state(sid)["state"] == session.HANDOFF_REQUESTED
        self.request = out
        self.handoff_path = REQUEST_PATH.search(out["reason"]).group(1)
        assert self.handoff_path == self.drv.handoff_path(sid)
        return self

    def write_handoff(self, text=HANDOFF, sid=S1):
        with open(self.drv.handoff_path(sid), "w") as f:
            f.write(text)

    def verify(self, text=HANDOFF, sid=S1, reply="Handoff written.", percent=66, driver="manual"):
        """*verified*: the handoff written, the next Stop checks it: cp-001, the user asked for /clear
        (``driver`` manual) or the hand-over offered to the mod (``driver`` mod: after :meth:`mod_hello`)."""
        if text is not None:
            self.write_handoff(text, sid)
        if reply is not None:
            self.said(sid, tokens_at(percent), reply)
        self.verified_out = self.stop(sid, stop_hook_active=True)
        rec = self.drv.state(sid)
        state = {"manual": session.AWAITING_MANUAL_CLEAR, "mod": session.ROTATING}[driver]
        assert (rec["state"], rec["driver"]) == (state, driver), (rec["state"], rec["driver"], self.last_ctx.outcome)
        wait_for_snapshot_jobs(self.drv.root)
        self.checkpoint = self.drv.checkpoint_file("manifest.json", sid)
        return self

    def mod_hello(self, sid=S1):
        """The plugin's mod is loaded in the agent's process: its ModHello (the real handler, in-process)
        leaves the heartbeat by which the verifying Stop chooses the mod as driver."""
        out = self.drv.inproc("ModHello", sid, mod={"version": 1})
        assert out and handover.mod_alive(self.host.pid), (out, self.host.pid)
        return out

    def clear(self, old=S1, new=S2, tokens=tokens_at(3)):
        """*cleared*: /clear ends ``old``; ``new`` starts and claims the checkpoint (the bootstrap)."""
        assert self.end(old, reason="clear") is None
        if tokens is not None:
            self.said(new, tokens)
        self.cleared_out = self.start(new, source="clear")
        self.bootstrap = added_context(self.cleared_out)
        return self

    def claim(self, sid=S2, prompt="carry on"):
        """*claimed*: the successor's first prompt; it is ACTIVE."""
        self.claimed_out = self.prompt(sid, prompt)
        assert self.drv.state(sid)["state"] == session.ACTIVE
        return self


class Frozen:
    """The *verified* rung with S1 ended by /clear, frozen once and put back per case: for the tests whose
    successor's hooks are killed, crashed or cut, case after case (``restore``).  The successor S2 has no
    transcript after a restore (a subclass writes the one its cases start from)."""

    def __init__(self, verified, root):
        self.drv = verified.drv
        assert verified.end(S1, reason="clear") is None
        wait_for_snapshot_jobs(self.drv.cc_home)
        self.frozen = root / "frozen"
        for name, path in self._trees().items():
            shutil.copytree(path, self.frozen / name, symlinks=True)

    def _trees(self):
        return {"cc": self.drv.cc_home, "git": os.path.join(self.drv.root, ".git")}

    def restore(self):
        wait_for_snapshot_jobs(self.drv.cc_home)
        for name, path in self._trees().items():
            shutil.rmtree(path)
            shutil.copytree(self.frozen / name, path, symlinks=True)
        self.drv.transcripts.pop(S2, None)
        try:
            os.unlink(self.drv.transcript(S2).path)
        except FileNotFoundError:
            pass
        self.drv.transcripts.pop(S2, None)


# -- the world of *verified*, built once, copied per test -----------------------------------------

class World:
    """A finished *verified* rung under ``base`` (``proj``, ``home``, ``cchome``), to copy per test."""

    def __init__(self, base, ladder):
        self.base = os.path.realpath(str(base))
        self.ladder = ladder
        self.root = ladder.drv.root
        assert self.root == os.path.join(self.base, "proj")

    def copy_to(self, dest, claude_pid=None):
        """The world under ``dest`` (its ``home`` and ``cchome`` are the test's HOME and CC_CONTINUITY_HOME),
        every path naming the original rewritten; a :class:`Ladder` on it at *verified*."""
        dest = os.path.realpath(str(dest))
        new_root = os.path.join(dest, "proj")
        assert os.environ["HOME"] == os.path.join(dest, "home"), "the test's HOME is not %s/home" % dest
        assert os.environ["CC_CONTINUITY_HOME"] == os.path.join(dest, "cchome")
        swaps = [(self.base.encode(), dest.encode()),
                 (paths.project_key(self.root).encode(), paths.project_key(new_root).encode()),
                 (_munged(self.root).encode(), _munged(new_root).encode())]
        for sub in ("proj", "home", "cchome"):
            shutil.copytree(os.path.join(self.base, sub), os.path.join(dest, sub), symlinks=True, dirs_exist_ok=True)
        for sub in ("home", "cchome"):
            _rewrite_tree(os.path.join(dest, sub), swaps)
        _rewrite_refs(os.path.join(new_root, ".git"), swaps)
        old = self.ladder
        drv = HookDriver(new_root, git=False, files={},
                         claude_pid=old.drv.claude_pid if claude_pid is None else claude_pid)
        host = FakeHost(pid=drv.claude_pid)
        for attr in ("replies", "context", "todos"):
            setattr(host, attr, {_swap_str(k, swaps): list(v) for k, v in getattr(old.host, attr).items()})
        lad = Ladder(drv, host)
        for sid, t in old.drv.transcripts.items():  # the transcript rows as they were (last reply, parent row)
            mine = drv.transcript(sid)
            mine.parent, mine.last_text = t.parent, t.last_text
        lad.request = {k: _swap_str(v, swaps) for k, v in old.request.items()}
        lad.handoff_path = _swap_str(old.handoff_path, swaps)
        lad.verified_out = old.verified_out
        lad.checkpoint = drv.checkpoint_file("manifest.json", S1)
        assert lad.checkpoint["git"]["ref"] == old.checkpoint["git"]["ref"].replace(*[s.decode() for s in swaps[1]])
        return lad


def build_world(base):
    """project -> working -> requested -> verified under ``base`` (HOME and CC_CONTINUITY_HOME set there)."""
    lad = Ladder.new(os.path.join(str(base), "proj"))
    lad.work().request_handoff().verify()
    wait_for_snapshot_jobs(str(base))
    return World(base, lad)


def _munged(root):
    """The transcript folder's name Claude Code makes of a working directory."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in root)


def _swap(data, swaps):
    for old, new in swaps:
        data = data.replace(old, new)
    return data


def _swap_str(text, swaps):
    return _swap(text.encode(), swaps).decode() if isinstance(text, str) else text


PREV = re.compile(rb'"prev":"[0-9a-f]{64}"')


def _rechain(data):
    """A ledger's lines chained again (each ``prev`` the sha256 of the line before); (data, head)."""
    out, last, n = [], None, 0
    for line in data.split(b"\n"):
        if not line:
            continue
        prev = sha256(last).hexdigest().encode() if last is not None else b"0" * 64
        line = PREV.sub(b'"prev":"' + prev + b'"', line, count=1)
        out.append(line)
        last, n = line, n + 1
    head = b"%012d %s\n" % (n, sha256(last).hexdigest().encode()) if last is not None else None
    return b"".join(line + b"\n" for line in out), head


def _rewrite_tree(top, swaps):
    """Every name and every text file under ``top``: the original's paths and key swapped for the copy's."""
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or name.endswith(".head"):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if data.startswith(b"DIRC"):  # a git index of ours: relative paths, checksummed
                continue
            new = _swap(data, swaps)
            if os.path.exists(path + ".head"):  # a hash-chained ledger
                new, head = _rechain(new)
                with open(path + ".head", "wb") as f:
                    f.write(head)
            if new != data:
                with open(path, "wb") as f:
                    f.write(new)
        for name in filenames + dirnames:
            renamed = _swap_str(name, swaps)
            if renamed != name:
                os.rename(os.path.join(dirpath, name), os.path.join(dirpath, renamed))


def _rewrite_refs(git_dir, swaps):
    """The snapshot refs under the copy's project key (loose, logged or packed)."""
    for sub in ("refs/continuity", "logs/refs/continuity"):
        d = os.path.join(git_dir, sub)
        if os.path.isdir(d):
            for name in os.listdir(d):
                renamed = _swap_str(name, swaps)
                if renamed != name:
                    os.rename(os.path.join(d, name), os.path.join(d, renamed))
    packed = os.path.join(git_dir, "packed-refs")
    if os.path.exists(packed):
        with open(packed, "rb") as f:
            data = f.read()
        with open(packed, "wb") as f:
            f.write(_swap(data, swaps))
