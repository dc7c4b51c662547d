"""The backends under every LLM call: a local transformers model (:class:`LocalBackend`), or
OpenAI-compatible HTTP servers (:class:`OpenAIBackend`). Open one by name with
:func:`sourcebias.llmcalls.open_backend`; the request-level interface is :class:`Backend`."""

from sourcebias.llmcalls.backends.base import Backend, GenerationError, GenerationRequest, GenerationResult, estimate_tokens, redact_url_credentials

__all__ = ["Backend", "GenerationError", "GenerationRequest", "GenerationResult", "LocalBackend", "OpenAIBackend", "estimate_tokens", "redact_url_credentials"]


def __getattr__(name: str):
    # Imported lazily: the local backend pulls in torch, the HTTP one httpx.
    if name == "LocalBackend":
        from sourcebias.llmcalls.backends.local import LocalBackend

        return LocalBackend
    if name == "OpenAIBackend":
        from sourcebias.llmcalls.backends.openai import OpenAIBackend

        return OpenAIBackend
    raise AttributeError(name)
