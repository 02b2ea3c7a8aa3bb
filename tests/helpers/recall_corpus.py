"""The recall corpus (tests/data/recall/*.json) replayed through the real hooks, one rotation each.

A corpus entry is a recorded session: the repository's files, the steps (the user's
prompts, the model's replies with their context reading, edits, shell commands with
their exit code and output, TodoWrite lists), the facts only a model's handoff can
carry, and the session's good handoff.  :func:`replay` plays one through the installed
hook commands (HookDriver: real processes, a real git repository, a transcript shaped
like Claude Code's), asks for the handoff at 65 %, writes the handoff of the given
*quality*, and returns what the successor's SessionStart(clear) put in its first
request, with the validator's verdicts on the way.

Qualities: ``good`` (the entry's own, with sources), ``thin`` (every section filled
with generic text that names only README.md: valid by the default rules, no sources,
none of the model facts), ``partial`` (the good one with its "Current state" and
"Decisions and constraints" made generic), ``bad`` (two sections missing and a file that
does not exist: the validator rejects it, three times, and the machine writes one).
"""

import json
import os

from cc_continuity import config

from .hookdriver import HookDriver, tokens_at

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "recall")
QUALITIES = ("good", "partial", "thin", "bad")
S1 = "a1a1a1a1-0000-4000-8000-0000000000a1"
S2 = "a2a2a2a2-0000-4000-8000-0000000000a2"
GENERIC = "Work continues as planned; see `README.md` for the project and the recent commits for the rest."


def entries():
    return sorted(n[:-5] for n in os.listdir(DATA) if n.endswith(".json"))


def load(name):
    with open(os.path.join(DATA, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def handoff_of(entry, quality):
    good = entry["handoffs"]["good"]
    if quality == "good":
        secs = dict(good)
    elif quality == "partial":
        secs = dict(good, **{"Current state": GENERIC, "Decisions and constraints": GENERIC})
    elif quality == "thin":
        secs = {name: GENERIC for name in config.HANDOFF_SECTIONS}
    elif quality == "bad":
        secs = {name: GENERIC for name in config.HANDOFF_SECTIONS[:-2]}
        secs["Files touched"] = "- `src/not_there.py`"
    else:
        raise ValueError(quality)
    return "# Handoff\n\n" + "\n\n".join("## %s\n%s" % (k, v) for k, v in secs.items()) + "\n"


def machine_truth(entry):
    """The machine facts of an entry, from its script (not from the ledger): prompts, open todos, changed files,
    the last failing command (unless the same command passed after it)."""
    facts, todos, failing = [], [], None
    for step in entry["steps"]:
        if "prompt" in step:
            facts.append({"kind": "prompt", "needles": [step["prompt"][:100]]})
        elif "todos" in step:
            todos = [t["content"] for t in step["todos"] if t["status"] != "completed"]
        elif "bash" in step:
            if step["exit"]:
                failing = step["bash"]
            elif step["bash"] == failing:
                failing = None
    files = []
    for step in entry["steps"]:
        path = step.get("edit") or step.get("write")
        if path and path not in files:
            files.append(path)
    facts += [{"kind": "todo", "needles": [t]} for t in todos]
    facts += [{"kind": "file", "needles": [p]} for p in files]
    if failing:
        facts.append({"kind": "failing", "needles": [failing]})
    return facts


def replay(entry, quality, root, cfg=None, inproc=True):
    """One rotation of ``entry`` with a handoff of ``quality``; ``cfg``: the user's config to merge first.

    ``inproc``: each hook's handler runs in this process (HookDriver.inproc: the installed command's code
    minus stdin/stdout, ~20x quicker); else as the installed command, a process per hook.
    """
    drv = HookDriver(root, files=entry["files"])
    hook = drv.inproc if inproc else drv.hook
    if cfg:
        drv.config(**cfg)
    t = drv.transcript(S1)
    t.assistant(tokens_at(5))
    hook("SessionStart", S1, source="startup")
    pct = 12
    for step in entry["steps"]:
        if "prompt" in step:
            t.user(step["prompt"])
            hook("UserPromptSubmit", S1, prompt=step["prompt"])
        elif "reply" in step:
            pct = step.get("percent", pct)
            t.assistant(tokens_at(pct), step["reply"])
        elif "edit" in step or "write" in step:
            rel = step.get("edit") or step.get("write")
            path = os.path.join(drv.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(step["content"])
            tool = "Edit" if "edit" in step else "Write"
            tin = ({"file_path": path, "old_string": "", "new_string": step["content"]} if tool == "Edit"
                   else {"file_path": path, "content": step["content"]})
            t.assistant(tokens_at(pct), "Changing %s." % rel, [(tool, tin)])
            hook("PostToolUse", S1, tool_name=tool, tool_input=tin, tool_response={"filePath": path})
        elif "bash" in step:
            tin = {"command": step["bash"], "description": "Run it"}
            t.assistant(tokens_at(pct), "Running it.", [("Bash", tin)])
            if step["exit"] == 0:
                hook("PostToolUse", S1, tool_name="Bash", tool_input=tin,
                         tool_response={"stdout": step["output"], "stderr": "", "interrupted": False})
            else:
                hook("PostToolUseFailure", S1, tool_name="Bash", tool_input=tin,
                         error="Exit code %d\n%s" % (step["exit"], step["output"]), is_interrupt=False)
        elif "todos" in step:
            t.todo_write(step["todos"], tokens_at(pct))
    t.assistant(tokens_at(65), "That step is done.")
    out = hook("Stop", S1)
    assert out and out.get("decision") == "block", out
    text, rejected = handoff_of(entry, quality), []
    for _ in range(4):
        with open(drv.handoff_path(S1), "w") as f:
            f.write(text)
        out = hook("Stop", S1, stop_hook_active=True)
        if drv.state(S1)["state"] != "HANDOFF_REQUESTED":
            break
        rejected.append(out["reason"] if out else "")
    rec = drv.state(S1)
    hook("SessionEnd", S1, reason="clear")
    drv.transcript(S2).assistant(tokens_at(3))
    first = hook("SessionStart", S2, source="clear")["hookSpecificOutput"]["additionalContext"]
    return {"first_request": first, "rejected": rejected, "degraded": bool(rec["checkpoint"].get("degraded")),
            "validation": rec["checkpoint"].get("validation"), "sdir": drv.sdir(S1),
            "checkpoint": rec["checkpoint"].get("id"), "driver": drv}


def record(entry_name, quality, root, out_dir, cfg=None, inproc=True):
    """Replay, then write the recorded rotation as ``cc-continuity recall --corpus`` reads it."""
    entry = load(entry_name)
    got = replay(entry, quality, root, cfg, inproc)
    case = os.path.join(out_dir, "%s.%s" % (entry_name, quality))
    os.makedirs(case)
    with open(os.path.join(case, "first-request.txt"), "w", encoding="utf-8") as f:
        f.write(got["first_request"])
    facts = {"machine": machine_truth(entry), "model": entry["model_facts"],
             "handoff": {"quality": quality, "rejections": len(got["rejected"]), "degraded": got["degraded"]}}
    with open(os.path.join(case, "facts.json"), "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)
    return got
