"""A loopback OpenAI-compatible server whose answers come from a Python function: the known-truth
harness of the LLM stages.

A study's estimator is checked by serving answers with a bias of known size (a re-ranker that
moves LLM-written passages up by a known amount, a judge that grades them δ higher) through the
same HTTP path, client, retries and cache as a real server, and checking that the estimate
recovers it. The server is :class:`sourcebias.llmcalls.server.GenerationServer` (the one behind
``sourcebias serve``) with the model replaced by ``responder``::

    def responder(messages, params):   # params: max_tokens, temperature, seed, top_logprobs, model
        return "yes", [{"yes": -0.1, "no": -2.4}]   # text, and per generated token {token: log-prob}

    with SimulatedServer(responder) as url:
        client = open_client(f"openai:sim@{url}", cache=False)

Unlike the model server, a responder is called from several request threads at once (it must
be thread-safe), so concurrency against it is real. ``latency`` and ``parallel`` make it a server
of known speed (each answer takes ``latency`` seconds in one of ``parallel`` slots, the others
wait their turn: ``parallel / latency`` answers a second at most, as a model server with that many
sequences in a batch), the yardstick of the client's benchmarks and of a pool of servers.

What it reports about its model can be set, and changed while it serves
(``SimulatedServer.server.model_info`` / ``.props`` / ``.fingerprint`` / ``.response_model``), to test
what a client does when a server reports another model than its answer store was made with.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from sourcebias.llmcalls.backends.base import GenerationRequest, GenerationResult

TopLogprobs = list[dict[str, float]] | dict[str, float] | None
Responder = Callable[[list[dict[str, str]], dict[str, Any]], tuple[str, TopLogprobs]]


def _content(top: TopLogprobs, k: int) -> list[dict[str, Any]] | None:
    """OpenAI chat-format log-probabilities from ``{token: log-prob}`` per generated token (a
    single dictionary: the first token only); each step's token is its most likely entry."""
    if top is None:
        return None
    steps = [top] if isinstance(top, dict) else list(top)
    out = []
    for d in steps:
        ranked = sorted(d.items(), key=lambda kv: -kv[1])
        tok, lp = ranked[0]
        out.append({"token": tok, "logprob": float(lp), "top_logprobs": [{"token": t, "logprob": float(v)} for t, v in ranked[:k]]})
    return out


class _ResponderBackend:
    """The generation-backend interface over a responder function."""

    kind = "simulated"

    def __init__(self, responder: Responder, model: str, concurrency: int, latency: float = 0.0, parallel: int | None = None):
        self.responder = responder
        self.model = model
        self.concurrency = concurrency
        self.latency = latency
        self._slots = threading.BoundedSemaphore(parallel) if parallel else None

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if self._slots is None:
            return self._generate(request)
        with self._slots:
            return self._generate(request)

    def _generate(self, request: GenerationRequest) -> GenerationResult:
        if self.latency > 0:
            time.sleep(self.latency)
        params = {
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
            "top_logprobs": request.top_logprobs,
            "model": self.model,
        }
        text, top = self.responder(request.messages, params)
        logprobs = _content(top, request.top_logprobs or 0) if request.top_logprobs is not None else None
        prompt_words = sum(len(m.get("content", "").split()) for m in request.messages) if request.messages else len(request.prompt.split())
        # token counts: words of the prompt and of the answer (a responder has no tokenizer)
        return GenerationResult(text=text, finish_reason="stop", prompt_tokens=prompt_words, completion_tokens=len(text.split()), logprobs=logprobs)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model}

    def close(self) -> None:
        """Nothing to release."""


class SimulatedServer:
    """``with SimulatedServer(responder) as url:`` serves ``responder`` at ``url``
    (``http://127.0.0.1:PORT/v1``, a free port) until the block ends. ``model_info``, ``props``,
    ``fingerprint`` and ``response_model``: what it reports about its model
    (:class:`~sourcebias.llmcalls.server.GenerationServer`). ``latency``: seconds each answer takes
    (0: as fast as the responder); ``parallel``: answers computed at once (``None``: no limit), the
    rest wait in arrival order."""

    def __init__(
        self,
        responder: Responder,
        *,
        model: str = "sim",
        host: str = "127.0.0.1",
        port: int = 0,
        max_pending: int = 256,
        model_info: dict[str, Any] | None = None,
        props: dict[str, Any] | None = None,
        fingerprint: str | None = None,
        response_model: str | None = None,
        latency: float = 0.0,
        parallel: int | None = None,
    ):
        from sourcebias.llmcalls.server import make_server

        if latency < 0 or (parallel is not None and parallel < 1):
            raise ValueError("SimulatedServer: latency must be >= 0 and parallel >= 1")
        backend = _ResponderBackend(responder, model, max_pending, latency, parallel)
        self.server = make_server(backend, host=host, port=port, model_names=[model], max_pending=max_pending, quiet=True)
        self.server.model_info = dict(model_info or {})
        self.server.props = props
        self.server.fingerprint = fingerprint
        self.server.response_model = response_model
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> str:
        # polled every 50 ms (not 0.5 s): leaving the block waits for the next poll
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="simulated-server", daemon=True)
        self._thread.start()
        return self.url

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
