"""Rewriting backends: a local transformers model, or OpenAI-compatible HTTP servers."""

from sourcebias.generation.backends.base import Backend, GenerationError, GenerationRequest, GenerationResult, estimate_tokens

__all__ = ["Backend", "GenerationError", "GenerationRequest", "GenerationResult", "LocalBackend", "OpenAIBackend", "estimate_tokens"]


def __getattr__(name: str):
    # Imported lazily: the local backend pulls in torch, the HTTP one httpx.
    if name == "LocalBackend":
        from sourcebias.generation.backends.local import LocalBackend

        return LocalBackend
    if name == "OpenAIBackend":
        from sourcebias.generation.backends.openai import OpenAIBackend

        return OpenAIBackend
    raise AttributeError(name)
