"""Recall: the share of a rotation's facts that its successor's first request carries.

Computed without a model.  A *fact* is something a successor needs, given as one or
more *needles*: it is present when every needle appears in the text (case and runs of
white space ignored).  Two kinds:

- **machine facts**: what the ledger and the snapshot know, so the bootstrap can carry
  them whatever the model wrote: the user's prompts, the open todos, the changed files,
  the last failing command (:func:`machine_facts`);
- **model facts**: what only the model's handoff can carry (a decision taken in a reply,
  the next step of its plan, why a file must stay as it is); they are listed by hand for
  a recorded session (a corpus entry's ``facts.json``), never derived.

:func:`of_checkpoint` scores one real rotation from its checkpoint folder (the machine facts
only: ``history`` shows that figure); :func:`score` scores any fact list against any text.
"""

import os
import re

from . import checkpoint, texts
from .handoff import last_failing
from .. import fastjson, ledger, session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KINDS = ("prompt", "todo", "file", "failing")  # the machine facts, in report order
NEEDLE_CHARS = 120  # a prompt or a command is found by its first characters (the bootstrap cuts at 300)
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _needle(text: str) -> str:
    return norm(text)[:NEEDLE_CHARS].rstrip(" …")


def machine_facts(recs: "list[dict[str, Any]]", snap: "dict[str, Any]",
                  checkpoint_id: "str | None" = None) -> "list[dict[str, Any]]":
    """The facts the machine holds for a checkpoint: from the ledger ``recs`` up to its line, and its snapshot."""
    facts: "list[dict[str, Any]]" = []
    seen: "set[tuple[str, str]]" = set()

    def add(kind: str, text: str) -> None:
        needle = _needle(text)
        if needle and (kind, needle) not in seen:
            seen.add((kind, needle))
            facts.append({"kind": kind, "text": text.strip()[:300], "needles": [needle]})

    tools = []
    for r in recs:
        if checkpoint_id is not None and r.get("ev") == "checkpoint" and r.get("id") == checkpoint_id:
            break
        text = r.get("text")
        if r.get("ev") == "prompt" and isinstance(text, str) and not texts.is_continuation(text.strip()):
            add("prompt", text)
        elif r.get("ev") == "tool":
            tools.append(r)
    failing = last_failing(tools)
    for t in snap.get("todos") or []:
        if isinstance(t, dict) and isinstance(t.get("content"), str) and t.get("status") != "completed":
            add("todo", t["content"])
    for d in (snap.get("git") or {}).get("dirty") or []:
        if isinstance(d, dict) and isinstance(d.get("path"), str):
            add("file", d["path"])
    if failing:
        add("failing", failing["target"])
    return facts


def present(fact: "dict[str, Any]", text_norm: str) -> bool:
    needles = fact.get("needles") or []
    return bool(needles) and all(norm(n) in text_norm for n in needles)


def score(facts: "list[dict[str, Any]]", text: str) -> "dict[str, Any]":
    """``{"facts", "present", "percent", "missing": [...], "by_kind": {kind: [present, total]}}``."""
    low = norm(text)
    by_kind: "dict[str, list[int]]" = {}
    missing = []
    hit = 0
    for f in facts:
        ok = present(f, low)
        hit += ok
        k = by_kind.setdefault(f.get("kind") or "?", [0, 0])
        k[0] += ok
        k[1] += 1
        if not ok:
            missing.append({"kind": f.get("kind"), "text": f.get("text") or " / ".join(f.get("needles") or [])})
    return {"facts": len(facts), "present": hit, "percent": percent(hit, len(facts)), "missing": missing,
            "by_kind": by_kind}


def percent(hit: int, total: int) -> "float | None":
    return round(100.0 * hit / total, 1) if total else None


def first_context(pdir: str) -> "str | None":
    """The checkpoint's part of its successor's first context, as prepared at the verified turn's end."""
    try:
        with open(session.bootstrap_path(pdir), "rb") as f:
            text = fastjson.loads(f.read()).get("text")
    except (OSError, ValueError, AttributeError):
        return None
    return text if isinstance(text, str) else None


def of_checkpoint(pdir: str, checkpoint_id: "str | None") -> "dict[str, Any] | None":
    """The machine-fact recall of the checkpoint in session dir ``pdir`` (None: no prepared bootstrap)."""
    text = first_context(pdir)
    if text is None or not os.path.isdir(checkpoint.cp_dir(pdir)):
        return None
    facts = machine_facts(ledger.read(session.ledger_path(pdir)), checkpoint.facts(pdir), checkpoint_id)
    return score(facts, text)
