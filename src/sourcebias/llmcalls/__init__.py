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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.llmcalls.base import Answer, Call, LLMClient, call_key, choices_from_top, user_call
from sourcebias.llmcalls.spec import ModelSpec, open_backend, parse_model_spec, register_backend, required_extra

__all__ = [
    "Answer",
    "Call",
    "LLMClient",
    "ModelAccess",
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
    timeout: float | None = None,
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
        timeout: Seconds a server request may take, waiting included (default 300; see
            :func:`~sourcebias.llmcalls.spec.open_backend`).
        **options: The backend's own (:func:`open_backend`).

    Returns:
        An :class:`LLMClient`; a server client has asked its servers what they serve already.
    """
    backend = open_backend(spec, what=what, device=device, concurrency=concurrency, timeout=timeout, **options)
    if backend.kind == "local":  # the client over the backend opened (chosen by the spec, above)
        from sourcebias.llmcalls.local import LocalClient

        return LocalClient(backend, cache_dir=cache_dir, cache=cache, batch_size=batch_size)
    from sourcebias.llmcalls.server_client import ServerClient

    return ServerClient(backend, cache_dir=cache_dir, cache=cache)


@dataclass(frozen=True)
class ModelAccess:
    """Where answers are stored and how calls are sent; none of it changes a figure.

    Attributes:
        cache_dir: Root of the answer store (default: the sourcebias cache): what makes a rerun resume.
        concurrency: Requests in flight against servers (default: 4 per server).
        device: Where a local model runs.
        timeout: Seconds a server request may take, waiting included (default 300).
        client: An open :class:`~sourcebias.llmcalls.LLMClient` to use instead of opening the
            job's spec (tests, benchmarks, a client shared by several studies); the job does not close it.
    """

    cache_dir: str | Path | None = None
    concurrency: int | None = None
    device: str | None = None
    client: Any = None
    timeout: float | None = None

    @property
    def opens(self) -> bool:
        """Whether the job opens (and closes) its own client from its spec."""
        return self.client is None

    def open(self, spec: str, *, what: str) -> Any:
        """The given client, or a new one of ``spec`` (:func:`~sourcebias.llmcalls.open_client`;
        ``what`` names the option in errors: ``--judge``, ``--generator``)."""
        if self.client is not None:
            return self.client
        return open_client(spec, cache_dir=self.cache_dir, concurrency=self.concurrency, device=self.device, what=what, timeout=self.timeout)

    def retriever_options(self) -> dict[str, Any]:
        """The options a retriever run inside the job shares with it (its device and cache)."""
        return {"device": self.device, "cache_dir": self.cache_dir}
