"""Retrieval stages that compose: ``first_stage >> reranker >> reranker``.

A :class:`Retriever` ranks a whole corpus for each query; a :class:`Reranker` re-scores the
top of another stage's run. ``bm25 >> cross_encoder`` is a :class:`Pipeline`, itself a
retriever, so every stage is evaluated the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.run import Run


class Retriever(ABC):
    """A first-stage retriever.

    Subclasses implement :meth:`retrieve`, returning a :class:`Run` whose order follows the
    tie-breaking rule of :mod:`sourcebias.retrieval.ties` (use :func:`~.run.rank_rows` or
    :func:`~.ties.select_top`).
    """

    #: short name used in tables, file names and manifests
    name: str = "retriever"

    @abstractmethod
    def retrieve(
        self,
        corpus: Corpus,
        queries: Mapping[str, str],
        depth: int = 1000,
        *,
        seed: int = 0,
        exclude_self: bool = False,
    ) -> Run:
        """Rank ``corpus`` for each query (``query_id -> text``) and keep the top ``depth``.

        With ``exclude_self``, documents whose ``doc_id`` equals the query id (BEIR's
        ArguAna/Quora quirk) are left out; how many were is recorded in ``run.info``.
        """

    def config(self) -> dict[str, Any]:
        """Parameters that identify this retriever (written to manifests)."""
        return {"name": self.name, "class": type(self).__name__}

    def __rshift__(self, other: Reranker) -> Pipeline:
        if not isinstance(other, Reranker):
            return NotImplemented
        return Pipeline(self, [other])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class Reranker(ABC):
    """A re-ranking stage: re-scores the top ``depth`` documents of a run.

    Contract of :meth:`rerank`: only the input run's first ``depth`` documents per query are
    re-scored and returned (those below are dropped, as in the papers' re-ranking of BM25's top
    100), ordered by the new score and, for equal scores, by the tie rule
    (:func:`~sourcebias.retrieval.ties.tie_keys` with the given seed); ``run.info`` keeps the
    input's entries and appends one to ``info["rerankers"]`` saying what was re-ranked. The
    neural re-rankers are in :mod:`sourcebias.retrieval.rerank`.
    """

    name: str = "reranker"
    depth: int = 100

    @abstractmethod
    def rerank(self, corpus: Corpus, queries: Mapping[str, str], run: Run, *, seed: int = 0) -> Run:
        """Return a new run: the first ``self.depth`` documents of each query re-scored and re-ordered
        (ties by the tie-breaking rule); documents below ``depth`` are dropped, as in the papers'
        re-ranking of BM25's top 100."""

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": type(self).__name__, "depth": self.depth}


class Pipeline(Retriever):
    """A first stage followed by re-rankers; build it with ``retriever >> reranker``."""

    def __init__(self, first: Retriever, rerankers: Sequence[Reranker]):
        self.first = first
        self.rerankers = list(rerankers)
        self.name = ">>".join([first.name] + [r.name for r in self.rerankers])

    def __rshift__(self, other: Reranker) -> Pipeline:
        if not isinstance(other, Reranker):
            return NotImplemented
        return Pipeline(self.first, self.rerankers + [other])

    def retrieve(self, corpus, queries, depth=1000, *, seed=0, exclude_self=False) -> Run:
        first_depth = max([depth] + [r.depth for r in self.rerankers])
        run = self.first.retrieve(corpus, queries, first_depth, seed=seed, exclude_self=exclude_self)
        for r in self.rerankers:
            run = r.rerank(corpus, queries, run, seed=seed)
        run.name = self.name
        return run.cut(depth)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "first_stage": self.first.config(), "rerankers": [r.config() for r in self.rerankers]}


def self_matches(corpus: Corpus, query_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Per query, positions of documents (of any source) whose ``doc_id`` equals the query id."""
    wanted = set(query_ids)
    found: dict[str, list[int]] = {}
    for i, d in enumerate(corpus.doc_ids):
        if d in wanted:
            found.setdefault(d, []).append(i)
    return {q: np.asarray(p, dtype=np.int64) for q, p in found.items()}
