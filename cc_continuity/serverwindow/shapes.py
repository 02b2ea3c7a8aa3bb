"""What each model server documents about its context size, one reader per shape.

Each :class:`Shape` is one request (Ollama's is two) and a reader of its JSON answer that returns an
:class:`Answer` only when the document is in that shape (else None: the next shape is asked).  The fields,
and the documents they come from:

* llama.cpp ``llama-server``: ``GET /props`` -> ``default_generation_settings.n_ctx``, the context the
  server was started with (tools/server/README.md, "GET /props: Get server global properties"); in router
  mode (several models) ``GET /props?model=<id>``.  Never ``/v1/models``' ``meta.n_ctx_train``: that is the
  size the model was trained with, not the one the server runs.
* vLLM: ``GET /v1/models`` -> ``data[].max_model_len`` (vLLM's ``ModelCard`` in its OpenAI-compatible
  server's protocol: the ``--max-model-len`` it runs with).
* Ollama: ``GET /api/ps`` -> ``models[].context_length`` of a loaded model (docs/api.md, "List Running
  Models"); not loaded: ``POST /api/show`` -> ``model_info["<arch>.context_length"]`` (the model's own
  ceiling) and a ``num_ctx`` line in ``parameters`` (the Modelfile's setting) as the ceiling: the context a
  model gets when nothing sets it depends on the machine's memory or ``OLLAMA_CONTEXT_LENGTH``
  (docs/faq.md, "How can I specify the context window size?"), which the API does not show.
* LM Studio: ``GET /api/v1/models`` -> ``models[].loaded_instances[].config.context_length`` of a loaded
  instance, else ``max_context_length`` as a ceiling (LM Studio's REST API v1, "List your models").
* LiteLLM proxy: ``GET /model/info`` -> ``data[].model_info.max_input_tokens`` (docs "Model Management",
  ``/model/info``): LiteLLM's own figure (its cost map or the proxy's config), not the backend's answer.
* Anthropic's API and servers that implement it: ``GET /v1/models/{id}`` -> ``max_input_tokens`` ("Get a
  Model"; Anthropic's own answer may carry no such field: then nothing is known).
"""

from __future__ import annotations

from urllib.parse import quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

EXACT = "window"         # the context the server runs the model with
CEILING = "ceiling"      # the most it could run with (the model's or the loader's maximum), not what it runs
NOT_LOADED = "not loaded"  # the server knows the model but runs no instance of it: unknown until loaded


class Answer:
    """What one server said: ``tokens`` (None when it knows the model but not its context yet), ``kind``
    (:data:`EXACT`, :data:`CEILING`, :data:`NOT_LOADED`), ``server`` (its name), ``where`` (the endpoint
    asked) and ``note`` (what it means for the user, when more than the number)."""

    __slots__ = ("tokens", "kind", "server", "where", "note")

    def __init__(self, tokens: int | None, kind: str, server: str, where: str, note: str = "") -> None:
        self.tokens, self.kind, self.server, self.where, self.note = tokens, kind, server, where, note

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "kind": self.kind, "server": self.server, "where": self.where,
                "note": self.note}


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 31 else None


def _named(items: object, model: str | None, *keys: str) -> list[dict[str, Any]]:
    """The dicts of ``items`` whose ``keys`` name ``model`` (all of them when no model is given or one alone)."""
    rows = [r for r in items if isinstance(r, dict)] if isinstance(items, list) else []
    if model is None:
        return rows
    want = _bare(model)
    hits = [r for r in rows if any(isinstance(r.get(k), str) and _bare(r[k]) == want for k in keys)]
    return hits or (rows if len(rows) == 1 else [])


def _bare(name: str) -> str:
    """A model name without Ollama's default tag (``qwen3:latest`` is ``qwen3``)."""
    return name[:-len(":latest")] if name.endswith(":latest") else name


def llama_props(doc: Any, model: str | None, where: str) -> Answer | None:
    settings = doc.get("default_generation_settings") if isinstance(doc, dict) else None
    n_ctx = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return Answer(n_ctx, EXACT, "llama-server", where) if n_ctx else None


def vllm_models(doc: Any, model: str | None, where: str) -> Answer | None:
    data = doc.get("data") if isinstance(doc, dict) else None
    for row in _named(data, model, "id", "root"):
        n = _count(row.get("max_model_len"))
        if n:
            return Answer(n, EXACT, "vLLM", where)
    return None


def ollama_ps(doc: Any, model: str | None, where: str) -> Answer | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        return None
    for row in _named(doc["models"], model, "name", "model"):
        n = _count(row.get("context_length"))
        if n:
            return Answer(n, EXACT, "Ollama", where)
    return Answer(None, NOT_LOADED, "Ollama", where, "the model is not loaded: Ollama sets its context when it loads "
                                                     "it (OLLAMA_CONTEXT_LENGTH, or by the machine's memory)")


def ollama_show(doc: Any, model: str | None, where: str) -> Answer | None:
    info = doc.get("model_info") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    ceiling = _count(info.get("%s.context_length" % arch)) if isinstance(arch, str) else None
    params = doc.get("parameters")
    for line in params.splitlines() if isinstance(params, str) else ():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
            return Answer(int(parts[1]), CEILING, "Ollama", where, "its num_ctx, which a request or "
                                                                   "OLLAMA_CONTEXT_LENGTH can override")
    if ceiling:
        return Answer(ceiling, CEILING, "Ollama", where, "the model's own maximum; loaded, it gets what "
                                                         "OLLAMA_CONTEXT_LENGTH or the machine's memory gives")
    return None


def lmstudio_models(doc: Any, model: str | None, where: str) -> Answer | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        return None
    for row in _named(doc["models"], model, "key", "id"):
        for inst in row.get("loaded_instances") or []:
            cfg = inst.get("config") if isinstance(inst, dict) else None
            n = _count(cfg.get("context_length")) if isinstance(cfg, dict) else None
            if n:
                return Answer(n, EXACT, "LM Studio", where)
        most = _count(row.get("max_context_length"))
        if most:
            return Answer(most, CEILING, "LM Studio", where, "no loaded instance: the model's maximum; LM Studio "
                                                             "loads it with the context its load settings give")
    return None


def litellm_info(doc: Any, model: str | None, where: str) -> Answer | None:
    data = doc.get("data") if isinstance(doc, dict) else None
    for row in _named(data, model, "model_name"):
        info = row.get("model_info")
        n = _count(info.get("max_input_tokens")) if isinstance(info, dict) else None
        if n:
            return Answer(n, EXACT, "LiteLLM", where, "LiteLLM's own figure (its model map or the proxy's "
                                                      "config), not the backend's answer")
    return None


def anthropic_model(doc: Any, model: str | None, where: str) -> Answer | None:
    if not isinstance(doc, dict) or doc.get("type") != "model":
        return None
    n = _count(doc.get("max_input_tokens"))
    return Answer(n, EXACT, "Messages API", where) if n else None


class Shape:
    """One server shape: its request and its reader (``needs_model``: its path names the model)."""

    __slots__ = ("name", "method", "path", "read", "needs_model", "body")

    def __init__(self, name: str, method: str, path: str, read: Callable[[Any, str | None, str], Answer | None],
                 needs_model: bool = False, body: bool = False) -> None:
        self.name, self.method, self.path, self.read, self.needs_model, self.body = (
            name, method, path, read, needs_model, body)

    def url_path(self, model: str | None) -> str:
        return self.path.format(model=quote(model or "", safe=""))


# The order: paths only one server answers first, the shared ``/v1/models`` after them.
SHAPES = (
    Shape("llama-server", "GET", "/props", llama_props),
    Shape("llama-server (router)", "GET", "/props?model={model}", llama_props, needs_model=True),
    Shape("Ollama", "GET", "/api/ps", ollama_ps),
    Shape("LM Studio", "GET", "/api/v1/models", lmstudio_models),
    Shape("LiteLLM", "GET", "/model/info", litellm_info),
    Shape("vLLM", "GET", "/v1/models", vllm_models),
    Shape("Messages API", "GET", "/v1/models/{model}", anthropic_model, needs_model=True),
)
OLLAMA_SHOW = Shape("Ollama", "POST", "/api/show", ollama_show, needs_model=True, body=True)
