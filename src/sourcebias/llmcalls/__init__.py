"""The LLM-call layer of the LLM stages (re-rankers, judges, citation studies): requests
(:class:`Call`), answers (:class:`Answer`), and clients for local models and OpenAI-compatible
servers that cache every answer persistently (a rerun sends only what is not answered yet).

``open_client(spec)``: ``smollm2`` / ``gemma3`` / a GGUF file / a transformers folder or name:
a local model; ``openai:MODEL@http://HOST:PORT/v1`` (several ``@URL``): servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.llmcalls.base import Answer, Call, LLMClient, call_key, choices_from_top, user_call

__all__ = ["Answer", "Call", "LLMClient", "call_key", "choices_from_top", "open_client", "user_call"]


def open_client(
    spec: str,
    *,
    cache_dir: str | Path | None = None,
    cache: bool = True,
    concurrency: int | None = None,
    device: str | None = None,
    **kwargs: Any,
) -> LLMClient:
    """A client for ``spec``; answers are stored under ``cache_dir`` (default: the sourcebias
    cache) unless ``cache=False``. ``concurrency``: requests in flight against servers (default
    4); ``device``: where a local model runs. Other keywords go to the client
    (:class:`~sourcebias.llmcalls.local.LocalClient` or :class:`~sourcebias.llmcalls.server.ServerClient`)."""
    if spec.startswith("openai:"):
        from sourcebias.llmcalls.server import ServerClient, parse_server_spec

        model, urls = parse_server_spec(spec)
        return ServerClient(model, urls, cache_dir=cache_dir, cache=cache, concurrency=concurrency, **kwargs)
    from sourcebias.llmcalls.local import LocalClient

    return LocalClient(spec, cache_dir=cache_dir, cache=cache, device=device, **kwargs)
