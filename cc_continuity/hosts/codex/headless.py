"""Codex CLI unattended: every session one ``codex exec``, rotated with no typing at all.

``cc-continuity run --agent codex "<task>"`` (the loop: rotation/run.py) starts ``codex exec "<task>"`` with
our hooks told they are headless (:data:`~cc_continuity.rotation.run.HEADLESS_ENV`).  When the context
crosses *rotate* the Stop asks for the handoff as always, checks it, makes the checkpoint and hands over
with the driver ``headless``: nothing is typed, the turn ends and ``codex exec`` exits.  The loop then
starts the next ``codex exec`` with the continuation; its SessionStart claims the checkpoint (the process
that made it is gone) and the bootstrap arrives as a developer message before the continuation.

Codex's sandbox: the handoff is written under our state dir, outside the workspace.  Hooks run outside the
sandbox (our Stop, the snapshot, the records all work in every mode), but the model's own write does not:
``workspace-write`` (Codex's default in a trusted folder) refuses it unless the folder is added
(:meth:`CodexBackend.session_args`); ``read-only`` refuses it whatever is added, and the checkpoint
degrades to a machine handoff, which ``run`` reports.  (Codex 0.171, observed.)

The hooks must be installed and trusted (``cc-continuity install --agent codex``): an untrusted hook is
skipped silently by ``codex exec``, and then nothing rotates.  Nothing here bypasses that check:
``--dangerously-bypass-hook-trust`` would trust a repository's own ``.codex/`` hooks too.
"""

import os

from ...rotation.run import Backend
from .host import CODEX, CodexContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from typing import Any

    from ...project import Project

NO_BINARY = "no codex executable: install Codex CLI (npm install -g @openai/codex) or pass --codex PATH"


class CodexBackend(Backend):
    name = "codex"
    host = CODEX
    option = "--codex"  # the run verb's option naming the executable

    def command(self, binary: str, prompt: str, extra: "list[str]") -> "list[str]":
        return [binary, "exec"] + list(extra) + [prompt]

    def find(self, env: "Mapping[str, str]", given: "str | None" = None) -> "str | None":
        return self.executable("codex", env, given, "CC_CONTINUITY_CODEX")

    def context(self, event: str, payload: "dict[str, Any]", env: "Mapping[str, str]") -> CodexContext:
        return CodexContext(event, payload, env)

    def session_args(self, proj: "Project") -> "list[str]":
        """``--add-dir`` our project folder: the handoff is written under it, outside the workspace, and under
        ``workspace-write`` (the default in a trusted folder) Codex's sandbox refuses that write otherwise.
        Under ``read-only`` Codex ignores ``--add-dir``: the handoff then degrades (run says so)."""
        os.makedirs(proj.dir, mode=0o700, exist_ok=True)
        return ["--add-dir", proj.dir]


BACKEND = CodexBackend()
