"""Synthetic Claude Code transcripts shaped like the real ones.

Rows follow the 2.1.328 format seen live: compact JSON, assistant replies
split over several rows sharing ``message.id`` and ``usage``, and large
``prompt_snapshot`` / ``api-request-shape`` lines (8–64 KB) after every
request, so the last assistant row is typically 50–150 KB from the end.
"""

import json
import random
import uuid


def _row(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def turn(rng, i, tokens, model="claude-sonnet-4-5"):
    """One request/response cycle as transcript lines."""
    sid = "bench-session"
    mid = "msg_bench_%06d" % i
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": tokens - 2003,
             "output_tokens": 120, "service_tier": "standard"}
    lines = [_row({"parentUuid": None, "isSidechain": False, "type": "user", "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                   "sessionId": sid, "message": {"role": "user", "content": "step %d: continue the refactor" % i}})]
    for block in range(rng.randint(1, 3)):
        lines.append(_row({"parentUuid": "p", "isSidechain": False, "type": "assistant", "sessionId": sid,
                           "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                                       "content": [{"type": "text", "text": "working on step %d" % i}],
                                       "stop_reason": "tool_use", "usage": usage},
                           "apiBlockIndex": block, "requestId": "req_%d" % i}))
    lines.append(_row({"type": "user", "isSidechain": False, "sessionId": sid,
                       "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_%d" % i,
                                                                 "content": "ok " * rng.randint(10, 2000)}]}}))
    lines.append(_row({"type": "attachment", "sessionId": sid, "attachment": {
        "type": "prompt_snapshot", "content": "s" * rng.randint(8 * 1024, 64 * 1024)}}))
    lines.append(_row({"type": "api-request-shape", "sessionId": sid, "shape": "r" * rng.randint(40 * 1024, 48 * 1024)}))
    lines.append(_row({"type": "system", "subtype": "turn_duration", "durationMs": rng.randint(500, 9000)}))
    return lines


def write(path, size_bytes, final_tokens=80_000, seed=7):
    """Write a transcript of about ``size_bytes`` whose latest reading is ``final_tokens``."""
    rng = random.Random(seed)
    written = 0
    i = 0
    with open(path, "w") as f:
        while written < size_bytes:
            i += 1
            chunk = "".join(turn(rng, i, final_tokens))
            f.write(chunk)
            written += len(chunk)
    return written
