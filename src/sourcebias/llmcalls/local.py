"""Answers from a local causal LM (transformers; GGUF files converted once by
:mod:`sourcebias.models.llm`).

Generation goes through :class:`~sourcebias.generation.backends.local.LocalBackend` (which loads
each model once per process and serialises generation), and choice log-probabilities through
:class:`~sourcebias.models.scoring.CausalLMScorer` on the same loaded model: ``log P(choice |
prompt)`` is the sum of the choice's token log-probabilities right after the chat-templated
prompt and its generation prompt (exact, in float64, batched with shared prefixes). A model without
a chat template (a base model) continues the messages' contents joined by blank lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sourcebias.generation.backends.base import GenerationRequest
from sourcebias.llmcalls.base import Answer, Call, top_dicts
from sourcebias.llmcalls.client import CachingClient, OnAnswer

ALIASES = {"gemma3": "gemma3-270m", "gemma-3": "gemma3-270m"}
CHUNK = 16  # calls answered (and stored) together: a kill loses at most this many


def plain_prompt(call: Call) -> str:
    """The prompt a base model continues: the messages' contents, one paragraph each."""
    return "\n\n".join(content for _, content in call.messages) + "\n\n"


class LocalClient(CachingClient):
    """A local causal LM. ``model``: ``smollm2``, ``gemma3`` (the offline base Gemma-3-270m), a
    ``.gguf`` file, a transformers folder or a Hugging Face name in the local cache."""

    def __init__(
        self,
        model: str = "smollm2",
        *,
        cache_dir: str | Path | None = None,
        cache: bool = True,
        device: str | None = None,
        dtype: str | None = None,
        threads: int | None = None,
        batch_size: int = 8,
    ):
        super().__init__(cache_dir=cache_dir, cache=cache)
        from sourcebias.generation.backends.local import LocalBackend
        from sourcebias.models.scoring import CausalLMScorer

        self.model = ALIASES.get(model.lower(), model)
        self.dtype = dtype
        self.backend = LocalBackend(self.model, device=device, dtype=dtype, threads=threads)
        self.scorer = CausalLMScorer(self.backend._model, self.backend._tok, batch_size=batch_size)
        self._identity: dict[str, Any] | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            from sourcebias.models.hub import folder_digest
            from sourcebias.models.llm import resolve_lm

            where = resolve_lm(self.model)
            weights = folder_digest(where)[:16] if Path(where).exists() else where
            self._identity = {"backend": "local", "model": self.model, "weights": weights, "chat_template": self.backend.chat, "dtype": self.dtype}
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

    def _choices(self, calls: Sequence[Call]) -> list[dict[str, float | None] | None]:
        """Exact ``log P(choice | prompt)`` of every choice of every call, in one batched pass."""
        prefixes: list[list[int]] = []
        conts: list[list[int]] = []
        where: list[tuple[int, str]] = []
        tok = self.backend._tok
        for i, c in enumerate(calls):
            if not c.choices:
                continue
            prefix = self.backend.input_ids(self._request(c, i))
            for choice in c.choices:
                prefixes.append(prefix)
                conts.append(list(tok(choice, add_special_tokens=False)["input_ids"]))
                where.append((i, choice))
        if not prefixes:
            return [None] * len(calls)
        with self.backend._lock:
            lps = self.scorer.continuation_logprobs(prefixes, conts)
        found: dict[int, dict[str, float | None]] = {}
        for (i, choice), lp in zip(where, lps):
            found.setdefault(i, {})[choice] = float(lp.sum())
        return [found.get(i) for i in range(len(calls))]

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        for start in range(0, len(calls), CHUNK):
            chunk = calls[start : start + CHUNK]
            choices = self._choices(chunk)
            for j, c in enumerate(chunk):
                if c.max_tokens == 0:
                    on_answer(start + j, Answer(text="", finish_reason=None, choice_logprobs=choices[j]))
                    continue
                res = self.backend.generate(self._request(c, start + j))
                on_answer(
                    start + j,
                    Answer(text=res.text, finish_reason=res.finish_reason, top_logprobs=top_dicts(res.logprobs, c.top_logprobs), choice_logprobs=choices[j]),
                )
