"""Answers from OpenAI-compatible servers (vLLM, llama.cpp's server, ``sourcebias serve``, a
:class:`~sourcebias.llmcalls.simulated.SimulatedServer`, OpenAI), through
:class:`~sourcebias.generation.backends.openai.OpenAIBackend`: its pool of base URLs, retries
(429, 5xx, network errors, ``Retry-After``) and fail-over are reused, and ``concurrency``
requests are in flight at once.

Log-probabilities: a call with ``top_logprobs`` or ``choices`` asks for ``logprobs`` (and
``top_logprobs``, at least :data:`CHOICE_TOP_K` for choices). A server that sends none gives
answers with ``top_logprobs`` and every choice ``None``, counted as ``no_logprobs`` in
:meth:`describe`: never a silent 0.

The cache identity of a server's answers is the model name it is asked for (and the API): give
different models different names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.generation.backends.base import GenerationRequest
from sourcebias.llmcalls.base import Answer, Call, choices_from_top, top_dicts
from sourcebias.llmcalls.client import CachingClient, OnAnswer

CHOICE_TOP_K = 20  # top tokens asked for to read choice log-probabilities (OpenAI's maximum)
_URL_SPLIT = re.compile(r"@(?=https?://)")


def parse_server_spec(spec: str) -> tuple[str, list[str]]:
    """``openai:MODEL@URL[@URL...]`` -> ``(MODEL, [URL, ...])``."""
    body = spec.split(":", 1)[1] if spec.startswith("openai:") else spec
    parts = _URL_SPLIT.split(body)
    model, urls = parts[0], parts[1:]
    if not model or not urls:
        raise ConfigError(f"'{spec}': a server is named openai:MODEL@http://HOST:PORT/v1 (more @URLs for several servers)")
    return model, urls


class ServerClient(CachingClient):
    """Calls to the model ``model`` served at ``base_urls``."""

    def __init__(
        self,
        model: str,
        base_urls: list[str],
        *,
        cache_dir: str | Path | None = None,
        cache: bool = True,
        concurrency: int | None = None,
        **backend_kwargs: Any,
    ):
        super().__init__(cache_dir=cache_dir, cache=cache)
        from sourcebias.generation.backends.openai import OpenAIBackend

        self.model = model
        self.backend = OpenAIBackend(base_urls, model, concurrency=concurrency or 4, **backend_kwargs)
        self.counts["no_logprobs"] = 0

    def identity(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model, "api": "chat/completions"}

    def settings(self) -> dict[str, Any]:
        d = self.backend.describe()
        return {"base_urls": d["base_urls"], "concurrency": d["concurrency"], "requests": d["requests"]}

    def _request(self, call: Call, i: int) -> GenerationRequest:
        k: int | None = call.top_logprobs if call.top_logprobs > 0 else None
        if call.choices:
            k = max(call.top_logprobs, CHOICE_TOP_K)
        return GenerationRequest(
            key=str(i),
            messages=call.chat(),
            prompt=call.messages[-1][1],
            max_tokens=max(call.max_tokens, 1),
            temperature=call.temperature,
            seed=call.seed,
            top_logprobs=k,
        )

    def _one(self, call: Call, i: int) -> Answer:
        req = self._request(call, i)
        res = self.backend.generate(req)
        if req.top_logprobs is not None and not res.logprobs:
            with self._count_lock:
                self.counts["no_logprobs"] += 1
        choices = choices_from_top(call.choices, res.logprobs) if call.choices else None
        return Answer(text=res.text, finish_reason=res.finish_reason, top_logprobs=top_dicts(res.logprobs, call.top_logprobs), choice_logprobs=choices)

    def compute(self, calls: Sequence[Call], on_answer: OnAnswer) -> None:
        with ThreadPoolExecutor(max_workers=self.backend.concurrency, thread_name_prefix="llmcalls") as pool:
            futures: dict[Future, int] = {pool.submit(self._one, c, i): i for i, c in enumerate(calls)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)  # store each answer as it arrives
                failed = None
                for f in done:
                    if f.exception() is None:
                        on_answer(futures[f], f.result())
                    elif failed is None:
                        failed = f.exception()
                if failed is not None:  # what arrived is stored; the rest is sent again by a rerun
                    for f in pending:
                        f.cancel()
                    for f in wait(pending).done:
                        if not f.cancelled() and f.exception() is None:
                            on_answer(futures[f], f.result())
                    raise failed

    def close(self) -> None:
        self.backend.close()
