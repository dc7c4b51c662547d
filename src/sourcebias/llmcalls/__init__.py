"""The one way anything in sourcebias reaches a model: local models (transformers; GGUF files), any
OpenAI-compatible server, the simulated server. The LLM stages (re-rankers, judges, citation
studies), Raidar's rewrites, the rewriting job and the simulated readers all go through it.

* A model is named by one grammar (:mod:`.spec`): ``smollm2`` / ``gemma3`` / a GGUF file / a
  transformers folder or name (a local model), ``openai:MODEL@http://HOST:PORT/v1`` (several
  ``@URL``: a pool of servers), or a kind a plug-in registers (:func:`register_backend`).
  :func:`open_backend` opens the backend it names (request level: :mod:`.backends`),
  :func:`open_client` a client of it.
* A client takes requests (:class:`Call`) and gives answers (:class:`Answer`), each stored once in
  the answer store (:mod:`.cache`) with what it cost, so a rerun sends only what is not answered yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.llmcalls.base import Answer, Call, LLMClient, call_key, choices_from_top, user_call
from sourcebias.llmcalls.spec import ModelSpec, open_backend, parse_model_spec, register_backend, required_extra

__all__ = [
    "Answer",
    "Call",
    "LLMClient",
    "ModelSpec",
    "call_key",
    "choices_from_top",
    "open_backend",
    "open_client",
    "parse_model_spec",
    "register_backend",
    "required_extra",
    "user_call",
]


def open_client(
    spec: str | ModelSpec,
    *,
    cache_dir: str | Path | None = None,
    cache: bool = True,
    concurrency: int | None = None,
    device: str | None = None,
    what: str = "the model",
    batch_size: int = 8,
    **options: Any,
) -> LLMClient:
    """A client of the model ``spec`` names (:func:`open_backend`).

    Args:
        spec: A model spec (:mod:`sourcebias.llmcalls.spec`).
        cache_dir: Root of the answer store (default: the sourcebias cache).
        cache: Keep every answer (``False``: nothing stored or read).
        concurrency: Requests in flight against servers (default 4 per server: a pool of N
            servers, ``openai:M@URL1@URL2...``, gets 4 N).
        device: Where a local model runs.
        what: Where the user named the model (``--judge``, a stage spec), named in errors.
        batch_size: Rows per forward pass when a local model scores choices.
        **options: The backend's own (:func:`open_backend`).

    Returns:
        An :class:`LLMClient`; a server client has asked its servers what they serve already.
    """
    backend = open_backend(spec, what=what, device=device, concurrency=concurrency, **options)
    if backend.kind == "local":  # the client over the backend opened (chosen by the spec, above)
        from sourcebias.llmcalls.local import LocalClient

        return LocalClient(backend, cache_dir=cache_dir, cache=cache, batch_size=batch_size)
    from sourcebias.llmcalls.server_client import ServerClient

    return ServerClient(backend, cache_dir=cache_dir, cache=cache)
