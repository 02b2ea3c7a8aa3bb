"""What the rotation e2e tests share: an installed sandbox, typing, reading cc-continuity's state."""

import glob
import hashlib
import json
import os

from cc_continuity import ledger
from cc_continuity.install import settings as install_settings
from cc_continuity.rehearse import CONTINUATION, HANDOFF_REQUEST, MODEL, WORK_MARK
from cc_continuity.tmux import Pane

SLUG = "project"  # the harness's project directory is called "project"
ADDITIONAL = "SessionStart hook additional context: "


def installed_sandbox(sandbox_factory, scenario_for):
    """A sandbox on a 200k-window model with cc-continuity installed by its own installer."""
    sb = sandbox_factory(model_name=MODEL)
    sb.model.set_scenario(scenario_for(sb.project))
    proc = sb.cli("install", "--no-wrapper")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert install_settings.has_ours(sb.settings()), "install did not put our hooks into settings.json"
    return sb


def progressing(scenario):
    """The rehearsal's script with each handoff its own (a real task's handoff moves on; the same handoff twice
    in a row stops a `cc-continuity run`: the chain goes round)."""
    for rule in scenario["rules"]:
        if rule.get("name") == "handoff":
            for block in rule["reply"]:
                if block.get("type") == "tool_use":
                    block["input"]["content"] = "{handoff}\nRotation marker {n}.\n"
    return scenario


def session_records(cc_home):
    """Every session record of the one project under ``cc_home``, in number order."""
    (proj,) = os.listdir(os.path.join(cc_home, "projects"))
    base = os.path.join(cc_home, "projects", proj, "sessions")
    out = []
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name, "state.json")) as f:
            out.append(json.load(f))
    return out


def squash(text):
    return "".join(text.split())


def prompt(sb, text):
    """Type a prompt, wait until the input box shows it, press Enter (a fast Enter can be lost)."""
    sb.type(text)
    sb.wait_for(lambda: squash(text) in squash(Pane.input_text(sb.screen())), 10, what="prompt in the box")
    sb.enter()


class Continuity:
    """Read-only view of the sandbox's cc-continuity state."""

    def __init__(self, sb):
        self.sb = sb

    def project_dir(self):
        found = glob.glob(os.path.join(self.sb.cc_home, "projects", "*", "project.json"))
        assert len(found) == 1, found
        return os.path.dirname(found[0])

    def numbers(self):
        base = os.path.join(self.project_dir(), "sessions")
        return sorted(int(n) for n in os.listdir(base) if n.isdigit())

    def sdir(self, n):
        return os.path.join(self.project_dir(), "sessions", "%03d" % n)

    def record(self, n):
        with open(os.path.join(self.sdir(n), "state.json"), encoding="utf-8") as f:
            return json.load(f)

    def state(self, n):
        """Session ``n``'s state, or None while its record is not there yet (a wait's predicate must not
        raise: the hooks register the project when Claude Code runs them, not when the test looks)."""
        try:
            return self.record(n)["state"]
        except (AssertionError, OSError, ValueError, KeyError):
            return None

    def manifest(self, n):
        with open(os.path.join(self.sdir(n), "checkpoint", "manifest.json"), encoding="utf-8") as f:
            return json.load(f)

    def ledger(self, n):
        return ledger.read(os.path.join(self.sdir(n), "ledger.jsonl"))

    def events(self, n, ev, **match):
        return [r for r in self.ledger(n) if r.get("ev") == ev and all(r.get(k) == v for k, v in match.items())]

    def wait_event(self, n, ev, timeout=45, **match):
        def seen():
            try:
                return self.events(n, ev, **match)
            except (AssertionError, OSError):
                return None
        return self.sb.wait_for(seen, timeout, interval=0.02, what="ledger %03d %s %s" % (n, ev, match))[0]

    def hooks_log(self):
        with open(os.path.join(self.sb.cc_home, "logs", "hooks.log"), encoding="utf-8") as f:
            return f.read()

    def cli(self, *args):
        return self.sb.cli(*args)


def git(sb, *args):
    return sb.run(["git", *args], check=True).stdout


def git_state(sb):
    """What a snapshot must not change: HEAD, the index file's bytes, every branch and tag."""
    with open(os.path.join(sb.project, ".git", "index"), "rb") as f:
        index = hashlib.sha256(f.read()).hexdigest()
    return {"head": git(sb, "rev-parse", "HEAD").strip(), "symbolic": git(sb, "symbolic-ref", "HEAD").strip(),
            "index": index, "refs": git(sb, "for-each-ref", "--format=%(refname) %(objectname)",
                                        "refs/heads", "refs/tags")}


def first_request(sb, session_id):
    reqs = sb.model.main_requests(session_id)
    assert reqs, "no model request from session %s" % session_id
    return reqs[0]


def text_blocks(req):
    for m in req.messages:
        content = m.get("content")
        if isinstance(content, str):
            yield m.get("role"), content
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") == "text":
                yield m.get("role"), b.get("text", "")


def bootstrap_of(req):
    """The SessionStart additionalContext as it reached the model (a system message or system-reminder)."""
    for _, text in text_blocks(req):
        at = text.find(ADDITIONAL + CONTINUATION)
        if at != -1:
            body = text[at + len(ADDITIONAL):]
            return body.split("\n</system-reminder>", 1)[0]
    return None


def assert_clean_successor(req, pred_n, succ_n, task):
    """The successor's first request: our bootstrap, and nothing of the conversation before it."""
    boot = bootstrap_of(req)
    assert boot is not None, "bootstrap text missing from the successor's first request"
    assert boot.startswith("%s%03d (%s-%03d)." % (CONTINUATION, pred_n, SLUG, succ_n)), boot[:200]
    roles = [m.get("role") for m in req.messages]
    assert "assistant" not in roles, roles  # no earlier reply survived /clear
    for marker in (WORK_MARK, HANDOFF_REQUEST, "Stop hook feedback", "Writing the handoff"):
        assert not req.contains(marker), "previous conversation leaked into the successor: %r" % marker
    # The task prompt appears only where the bootstrap quotes it (machine facts), never as a message.
    for _, text in text_blocks(req):
        if task in text:
            assert ADDITIONAL + CONTINUATION in text, text[:300]
    assert not any(t.get("type") in ("tool_use", "tool_result")
                   for m in req.messages if isinstance(m.get("content"), list) for t in m["content"])


def report_metrics(name, data):
    line = json.dumps({"metric": name, **data}, sort_keys=True)
    print(line)
    target = os.environ.get("CC_E2E_METRICS")
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def plugin_sandbox(sandbox_factory, scenario_for, mods_off=False):
    """A sandbox with cc-continuity installed as a Claude Code plugin (``install --plugin``).

    ``mods_off``: Claude Code's rollout flag for plugin mods is saved off (the way a
    served-off flag or a managed login leaves it), so the plugin's classic hooks run
    but its mod does not load: the tmux rotator must drive.
    """
    extra = {"CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1"} if mods_off else None
    sb = sandbox_factory(model_name=MODEL, extra_env=extra)
    sb.model.set_scenario(scenario_for(sb.project))
    if mods_off:
        with open(sb.claude_json_path, encoding="utf-8") as f:
            seed = json.load(f)
        seed["cachedGrowthBookFeatures"] = {"tengu_plugin_hooks_modules": False}
        with open(sb.claude_json_path, "w", encoding="utf-8") as f:
            json.dump(seed, f)
    proc = sb.cli("install", "--plugin", "--no-wrapper", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = sb.settings()
    assert doc.get("enabledPlugins", {}).get("cc-continuity@cc-continuity-local") is True, doc
    assert not install_settings.has_ours({"hooks": doc.get("hooks", {})}), "hooks in settings.json too"
    return sb
