"""Known truth for the listwise re-ranker: a simulated LLM (served by
:class:`~sourcebias.llmcalls.simulated.SimulatedServer`) that moves LLM-written passages up by
a known amount, and the twin study whose estimate must recover it.

The design: each query's window holds one human passage and its LLM twin (``depth=2``,
``window=2``), shown in both orders (``orders=2``). The simulated re-ranker keeps the first
shown passage first with probability ``rho + theta * (s_first - s_second)`` (``s = 1`` for the
LLM passage). Then, for a passage shown at scaled position ``x`` (0 first, 1 second) with source
indicator ``s``, its answered position has expectation ``(1 - rho + theta) + (2 rho - 1) x -
2 theta s`` exactly (a linear probability model), so the regression of
:func:`~sourcebias.retrieval.rerankers.llm_common.position_source_fit` has the known
coefficients ``position = 2 rho - 1`` and ``source = -2 theta`` (LLM passages end ``2 theta``
of the window higher than human passages shown at the same place).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from sourcebias.data.corpus import Corpus, Document
from sourcebias.retrieval.run import Run

_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.S)


def twin_study(n_queries: int, seed: int) -> tuple[Corpus, Run, dict[str, str]]:
    """A corpus of ``n_queries`` human passages and their LLM twins, and a first-stage run whose
    top 2 of each query are the twins in a random order."""
    docs = []
    for i in range(n_queries):
        docs += [Document(f"d{i}", "human", "", f"human passage number {i}"), Document(f"d{i}", "llm", "", f"llm passage number {i}")]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    rng = np.random.default_rng(seed)
    positions = {f"q{i}": rng.permutation(np.array([2 * i, 2 * i + 1], dtype=np.int64)) for i in range(n_queries)}
    scores = {q: np.array([2.0, 1.0]) for q in positions}
    queries = {f"q{i}": f"query number {i}" for i in range(n_queries)}
    return corpus, Run(corpus, "first", positions, scores, {}), queries


def biased_pair_responder(theta: float, rho: float, seed: int) -> Any:
    """A responder for two-passage RankGPT windows: keeps the first shown passage first with
    probability ``rho + theta * (s_first - s_second)``; each answer's randomness is seeded by the
    request's text and ``seed`` (thread-safe, deterministic)."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        shown = [m["content"] for m in messages if m["role"] == "user" and _PASSAGE.match(m["content"])]
        s = [1.0 if _PASSAGE.match(t).group(2).startswith("llm") else 0.0 for t in shown]  # type: ignore[union-attr]
        digest = hashlib.sha256(("\n".join(shown) + f"/{seed}").encode()).digest()
        u = np.random.default_rng(int.from_bytes(digest[:8], "little")).random()
        keep = u < rho + theta * (s[0] - s[1])
        return ("[1] > [2]" if keep else "[2] > [1]"), None

    return respond


def run_study(url: str, n_queries: int, *, theta: float, rho: float, seed: int, model: str = "sim") -> dict[str, Any]:
    """One simulated study through the server at ``url``: the fitted position and source
    coefficients (:func:`position_source_fit`'s ``coefficients``)."""
    from sourcebias.retrieval.rerankers.diagnostics import stage_diagnostics
    from sourcebias.retrieval.rerankers.rankgpt import RankGPTReranker

    _, run, queries = twin_study(n_queries, seed)
    params = {
        "model": f"openai:{model}@{url}",
        "depth": 2,
        "window": 2,
        "step": 1,
        "orders": 2,
        "words": 50,
        "concurrency": 8,
        "device": None,
        "cache_dir": None,
        "cache": False,
    }
    stage = RankGPTReranker(params)
    out = stage.apply(run, queries, seed=seed)
    fit = stage_diagnostics(out.info)[-1].position_source
    assert fit is not None, "a RankGPT stage records its position/source fit"
    return fit
