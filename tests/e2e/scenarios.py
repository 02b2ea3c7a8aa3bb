"""Scripted-model scenarios for the rotation end-to-end tests.

The plain rotation (work past the rotate level, a valid handoff, the
successor confirming) is ``cc_continuity.rehearse.rotation_scenario``, the
same script ``cc-continuity rehearse`` runs for users; the variants here
change one part of it.
"""

from cc_continuity.rehearse import (CONTINUATION, handoff_rule, handoff_text, rotation_scenario, usage_at)

HARD_AT = 76.0  # past the default hard ceiling (72)
WARN_AT = 57.0  # between warn (55) and rotate (62)

# Too short, six sections missing, and a path that does not exist.
BAD_HANDOFF = ("# Handoff\n\n## Goal\nShip the work log.\n\n"
               "## Next steps\nContinue in `src/missing_module.py`.\n")
NOT_COMPLETE = "is not complete yet"


def invalid_then_valid(project, task):
    """The first handoff written is incomplete; the fix-up request is answered with a valid one."""
    scenario = rotation_scenario(project, task=task)
    first = handoff_rule("handoff-bad", content=BAD_HANDOFF, times=1)
    fix = handoff_rule("handoff-fix", when={"last_user_contains": NOT_COMPLETE},
                       path_pattern=r"the handoff at (/\S+) is not complete yet", times=1)
    scenario["rules"] = [first, fix] + [r for r in scenario["rules"] if r["name"] != "handoff"]
    return scenario


def hard_ceiling_burst(project, task):
    """One tool call lands past the hard ceiling, then a burst of two more.

    The burst is denied by PreToolUse; the model answers the denial (which
    names the handoff file) by writing the handoff, so the Stop at the end of
    the turn finds it valid without having to ask.
    """
    hard = usage_at(HARD_AT)
    burst = {
        "name": "burst", "times": 1, "when": {"last_user_contains": task},
        "reply": [{"type": "text", "text": "Starting the burst."},
                  {"type": "tool_use", "name": "Bash",
                   "input": {"command": "touch burst-1.txt", "description": "first file"}}],
        "usage": hard,
        "then": [{"reply": [{"type": "tool_use", "name": "Bash",
                             "input": {"command": "touch burst-2.txt", "description": "second file"}},
                            {"type": "tool_use", "name": "Write",
                             "input": {"file_path": "%s/burst-3.txt" % project, "content": "third\n"}}],
                  "usage": hard}],
    }
    answer = handoff_rule("hard-handoff", when={"last_user_contains": "past the hard ceiling"},
                          path_pattern=r"handoff file (/\S+\.md)", percent=HARD_AT, times=1)
    finish = {"name": "finish", "when": {"last_user_contains": CONTINUATION},
              "reply": "Picked up the handoff after the hard ceiling."}
    return {"rules": [answer, finish, burst], "vars": {"handoff": handoff_text()},
            "usage_plan": {"per": "session", "cache_read_input_tokens": 20000}}


def status_probe(prompt):
    """A single reply that leaves the context between warn and rotate."""
    return {"rules": [{"name": "probe", "when": {"last_user_contains": prompt},
                       "reply": "Status probed.", "usage": usage_at(WARN_AT)}]}


LOW_AT = 20.0


def final_reply_crossing(project, task, percent=63.0):
    """The turn's *last* reply crosses rotate: a tool call at 20 %, then a text-only reply at ``percent``.

    Nothing runs after that reply, so only the Stop hook (or the late Stop) can
    see the crossing, at the moment the transcript is most likely to lag.
    """
    scenario = rotation_scenario(project, task=task)
    work = {"name": "work", "times": 1, "when": {"last_user_contains": task},
            "reply": [{"type": "text", "text": "Checking the tree first."},
                      {"type": "tool_use", "name": "Bash", "input": {"command": "ls", "description": "list"}}],
            "usage": usage_at(LOW_AT),
            "then": [{"reply": "Here is the full summary of everything so far. " * 4, "usage": usage_at(percent)}]}
    scenario["rules"] = [r for r in scenario["rules"] if r["name"] != "work"] + [work]
    return scenario


def crossing_burst(project, task, tools=3):
    """The response that crosses the hard ceiling asks for ``tools`` tool calls at once.

    Every one must be denied (the first one's PreToolUse runs before the
    response's row is on disk); the model answers the denial by writing the
    handoff, which is allowed.
    """
    hard = usage_at(HARD_AT)
    calls = []
    for i in range(1, tools + 1):
        if i % 3 == 0:
            calls.append({"type": "tool_use", "name": "Write",
                          "input": {"file_path": "%s/burst-%d.txt" % (project, i), "content": "x\n"}})
        else:
            calls.append({"type": "tool_use", "name": "Bash",
                          "input": {"command": "touch burst-%d.txt" % i, "description": "file %d" % i}})
    burst = {"name": "burst", "times": 1, "when": {"last_user_contains": task},
             "reply": [{"type": "text", "text": "Doing all of it at once."}] + calls, "usage": hard}
    answer = handoff_rule("hard-handoff", when={"last_user_contains": "past the hard ceiling"},
                          path_pattern=r"handoff file (/\S+\.md)", percent=HARD_AT, times=1)
    finish = {"name": "finish", "when": {"last_user_contains": CONTINUATION},
              "reply": "Picked up the handoff after the hard ceiling."}
    return {"rules": [answer, finish, burst], "vars": {"handoff": handoff_text()},
            "usage_plan": {"per": "session", "cache_read_input_tokens": 20000}}


def with_default(scenario, reply="Noted; I will take that into account."):
    """Answer any prompt no rule knows (a prompt the user typed in the middle of a rotation)."""
    scenario["default"] = {"reply": reply}
    return scenario


SUB_PROMPT = "do the sub task"


def rotation_with_a_running_subagent(project, task, hold_s=90):
    """A background subagent keeps running (its model call held ``hold_s``) through the rotation."""
    scenario = rotation_scenario(project, task=task)
    # Explicit rules, no "then": the subagent's requests carry the same session id and could take
    # a follow-up meant for the main conversation.  Subagent requests are told apart by the
    # "cc_is_subagent=true" Claude Code puts in their system prompt.
    sub = {"name": "sub", "when": {"system_contains": "cc_is_subagent=true"}, "delay": hold_s, "reply": "Sub done."}
    agent = {"name": "spawn", "times": 1, "when": {"last_user_contains": task},
             "reply": [{"type": "text", "text": "Starting a helper agent."},
                       {"type": "tool_use", "name": "Agent",
                        "input": {"description": "sub", "prompt": SUB_PROMPT, "subagent_type": "general-purpose"}}],
             "usage": usage_at(30.0)}
    spawned = {"name": "spawned", "times": 1, "when": {"last_user_contains": "still running"},
               "reply": "The helper runs in the background; the work here is done.", "usage": usage_at(66.0)}
    scenario["rules"] = [sub] + [r for r in scenario["rules"] if r["name"] != "work"] + [spawned, agent]
    scenario["default"] = {"reply": "Noted."}
    return scenario


def prompt_too_long(project, task):
    """A turn's second request is refused as too long: Claude Code's reactive compaction path.

    The first reply runs a tool (so there is a conversation to compact) at a low
    usage (the meter sees nothing to rotate for); the request carrying its result
    gets the 400, so only the compaction hook can turn it into a rotation.
    """
    scenario = rotation_scenario(project, task=task)
    scenario["rules"] = [r for r in scenario["rules"] if r["name"] != "work"] + [
        {"name": "read", "times": 1, "when": {"last_user_contains": task},
         "reply": [{"type": "text", "text": "Reading everything."},
                   {"type": "tool_use", "name": "Bash",
                    "input": {"command": "echo BIG-OUTPUT-MARK", "description": "read"}}],
         "usage": usage_at(30.0)},
        {"name": "too-long", "times": 1, "when": {"last_user_contains": "BIG-OUTPUT-MARK"},
         "error": {"status": 400, "type": "invalid_request_error",
                   "message": "prompt is too long: 200500 tokens > 200000 maximum"}}]
    return scenario
