"""What every backend takes and returns: the request-level interface under every LLM call.

A backend turns one :class:`GenerationRequest` (chat messages or a plain prompt, plus sampling
parameters) into one :class:`GenerationResult` (the raw text, why generation stopped, and what the
call cost: prompt and completion tokens, seconds). Backends are called from several worker threads
at once (up to ``backend.concurrency``); transient faults are retried inside the backend, and a
request that still fails raises :class:`GenerationError`, which the rewriting job records and
retries on the next run and an LLM stage reports. Backends are opened by name with
:func:`sourcebias.llmcalls.open_backend` (the one place a backend is chosen).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from sourcebias.core.errors import SourceBiasError


class GenerationError(SourceBiasError):
    """A request that failed (after retries, where ``retryable``). The message never holds secrets."""

    def __init__(self, message: str, *, retryable: bool = True, attempts: int = 1):
        super().__init__(message)
        self.retryable = retryable
        self.attempts = attempts


@dataclass
class GenerationRequest:
    """One generation.

    ``messages`` (OpenAI chat format) is used by chat backends; ``prompt`` (the rendered user
    text) by plain-completion backends and models without a chat template. ``seed`` is passed
    where the backend supports it (``None``: unseeded).
    """

    key: str
    messages: list[dict[str, str]]
    prompt: str
    max_tokens: int
    temperature: float = 0.2
    top_p: float = 1.0
    seed: int | None = None
    #: ``None``: no log-probabilities; ``0``: the log-probability of each generated token;
    #: ``k > 0``: also the ``k`` most likely tokens at each step (OpenAI's ``logprobs``/``top_logprobs``)
    top_logprobs: int | None = None


@dataclass
class GenerationResult:
    """Raw model output and accounting. ``finish_reason`` is ``"stop"`` (the model ended its
    answer) or ``"length"`` (cut at ``max_tokens``), as in the OpenAI API. ``prompt_tokens`` and
    ``completion_tokens``: the model's own counts (a server's ``usage``; ``None`` when it sends
    none); ``seconds``: the call's wall time, retries included. From a server: the ``model`` and
    ``system_fingerprint`` its answer named (``None`` when absent)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    attempts: int = 1
    server: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: when requested: one entry per generated token in OpenAI's chat format,
    #: ``{"token": str, "logprob": float, "top_logprobs": [{"token": str, "logprob": float}, ...]}``
    logprobs: list[dict[str, Any]] | None = None
    model: str | None = None
    system_fingerprint: str | None = None


class Backend(Protocol):
    """What every backend is (the rewriting job, the simulated readers and the LLM clients rely
    on it): ``kind`` (``"local"``, ``"openai"``), the ``model`` it was opened with, how many
    requests it answers at once, :meth:`generate`, a token count (estimated where no tokenizer is
    at hand), :meth:`describe` for manifests (no secrets), and :meth:`close`."""

    kind: str
    model: str
    concurrency: int

    def generate(self, request: GenerationRequest) -> GenerationResult: ...

    def count_tokens(self, text: str) -> int: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def estimate_tokens(text: str) -> int:
    """Token estimate without a tokenizer: 1.5 per whitespace-separated word (English BPE
    tokenizers give 1.3-1.5; erring high keeps ``max_tokens`` from cutting rewrites short)."""
    return max(1, math.ceil(1.5 * len(text.split())))


_USERINFO = re.compile(r"(?i)\b(https?://)[^/@\s]+@")


def redact_url_credentials(text: str) -> str:
    """``https://user:secret@host/v1`` -> ``https://***@host/v1`` (for messages and manifests)."""
    return _USERINFO.sub(r"\1***@", text)
