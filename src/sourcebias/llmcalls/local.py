"""Answers from a local causal LM (transformers; GGUF files converted once by
:mod:`sourcebias.models.llm`), through :class:`~sourcebias.llmcalls.backends.local.LocalBackend`.

Generation is the backend's (each model loaded once per process, generation serialised), and so are
choice log-probabilities (:meth:`~sourcebias.llmcalls.backends.local.LocalBackend.score_continuations`
on the same loaded model): ``log P(choice | prompt)`` is the sum of the choice's token
log-probabilities right after the chat-templated prompt and its generation prompt (exact, in float64,
batched with shared prefixes). A model without a chat template (a base model) continues the
messages' contents joined by blank lines.

Usage: a generated answer's prompt and completion tokens are the model's own and its seconds the
generation's; a choices-only call (``max_tokens=0``) has its prompt's tokens, no completion tokens,
and an equal share of its batch's scoring time (the choices' own tokens are not counted).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sourcebias.llmcalls.backends.base import GenerationRequest
from sourcebias.llmcalls.base import Answer, Call, top_dicts, usage_of
from sourcebias.llmcalls.client import CachingClient, OnAnswer

CHUNK = 16  # calls answered (and stored) together: a kill loses at most this many


def plain_prompt(call: Call) -> str:
    """The prompt a base model continues: the messages' contents, one paragraph each."""
    return "\n\n".join(content for _, content in call.messages) + "\n\n"


class LocalClient(CachingClient):
    """A local causal LM (``backend``: a :class:`~sourcebias.llmcalls.backends.local.LocalBackend`,
    as :func:`sourcebias.llmcalls.open_backend` opens it). Choices are scored exactly."""

    exact_choices = True

    def __init__(self, backend: Any, *, cache_dir: str | Path | None = None, cache: bool = True, batch_size: int = 8):
        super().__init__(backend, cache_dir=cache_dir, cache=cache)
        self.batch_size = batch_size
        self._identity: dict[str, Any] | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            b = self.backend
            self._identity = {"backend": "local", "model": self.model, "weights": b.weights(), "chat_template": b.chat, "dtype": b.dtype}
        return self._identity

    def settings(self) -> dict[str, Any]:
        return {"device": self.backend.device, "threads": self.backend.threads}

    def _request(self, call: Call, i: int) -> GenerationRequest:
        return GenerationRequest(
            key=str(i),
            messages=call.chat(),
            prompt=plain_prompt(call),
            max_tokens=call.max_tokens,
            temperature=call.temperature,
            seed=call.seed,
            top_logprobs=call.top_logprobs if call.top_logprobs > 0 else None,
        )

    def _choices(self, calls: Sequence[Call]) -> tuple[list[dict[str, float | None] | None], list[int], float]:
        """Exact ``log P(choice | prompt)`` of every choice of every call, in one batched pass; the
        calls' prompt lengths and the pass's seconds."""
        prefixes: list[list[int]] = []
        conts: list[list[int]] = []
        where: list[tuple[int, str]] = []
        lengths = [0] * len(calls)
        for i, c in enumerate(calls):
            if not c.choices:
                continue
            prefix = self.backend.input_ids(self._request(c, i))
            lengths[i] = len(prefix)
            for choice in c.choices:
                prefixes.append(prefix)
                conts.append(self.backend.encode(choice))
                where.append((i, choice))
        if not prefixes:
            return [None] * len(calls), lengths, 0.0
        t0 = time.perf_counter()
        lps = self.backend.score_continuations(prefixes, conts, batch_size=self.batch_size)
        seconds = time.perf_counter() - t0
        found: dict[int, dict[str, float | None]] = {}
        for (i, choice), lp in zip(where, lps):
            found.setdefault(i, {})[choice] = float(lp.sum())
        return [found.get(i) for i in range(len(calls))], lengths, seconds

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        for start in range(0, len(calls), CHUNK):
            chunk = calls[start : start + CHUNK]
            choices, lengths, seconds = self._choices(chunk)
            share = seconds / max(1, sum(1 for c in chunk if c.choices))
            for j, c in enumerate(chunk):
                scoring = share if c.choices else 0.0
                if c.max_tokens == 0:
                    on_answer(start + j, Answer(text="", finish_reason=None, choice_logprobs=choices[j], usage=usage_of(lengths[j], 0, scoring)))
                    continue
                res = self.backend.generate(self._request(c, start + j))
                usage = usage_of(res.prompt_tokens, res.completion_tokens, res.seconds + scoring)
                top = top_dicts(res.logprobs, c.top_logprobs)
                on_answer(start + j, Answer(text=res.text, finish_reason=res.finish_reason, top_logprobs=top, choice_logprobs=choices[j], usage=usage))
