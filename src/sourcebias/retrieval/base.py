"""Retrieval systems and stages that compose: ``first_stage >> stage >> stage``.

* A :class:`FirstStage` ranks a whole corpus. It only **scores**: :meth:`FirstStage.score`
  yields :class:`ScoreBlock` s (a block of queries against some or all documents); turning scores
  into ranked lists — the top ``depth``, ties by the tie rule, matching documents only where the
  retriever says so — happens in one place, :class:`RunBuilder`.
* A :class:`Stage` turns a run into a run: re-rankers, a rank cut-off, the self-match filter,
  score corrections. ``stage >> stage`` is a :class:`StageChain`.
* ``first_stage >> stage`` is a :class:`Pipeline`, itself a :class:`Retriever`, so every system
  is evaluated the same way. A pipeline asks its first stage for as many documents as its stages
  need (:meth:`Stage.input_depth`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.ties import TieRule


class Retriever(ABC):
    """Anything that ranks a corpus for a set of queries: a first stage or a pipeline."""

    #: short name used in tables, file names and manifests
    name: str = "retriever"

    @abstractmethod
    def retrieve(self, corpus: Corpus, queries: Mapping[str, str], depth: int = 1000, *, seed: int = 0) -> Run:
        """Rank ``corpus`` for each query; keep the top ``depth``.

        Args:
            corpus: The corpus to rank.
            queries: ``query_id -> text``.
            depth: How many documents to keep per query.
            seed: Seed of the tie rule (equal scores are ordered by it).

        Returns:
            The :class:`~sourcebias.retrieval.run.Run`, every query's documents best first.
        """

    def config(self) -> dict[str, Any]:
        """Parameters that identify this retriever (written to manifests).

        Returns:
            At least its ``name`` and ``class``.
        """
        return {"name": self.name, "class": type(self).__name__}

    def __rshift__(self, other: Stage) -> Pipeline:
        if not isinstance(other, Stage):
            return NotImplemented
        return Pipeline(self, [other])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


@dataclass
class ScoreBlock:
    """Scores of some queries against some documents.

    ``scores[i, j]`` is the score of query ``query_ids[i]`` for the document at corpus position
    ``positions[j]`` (``positions=None``: all documents, in corpus order). A retriever may yield
    several blocks for the same queries (e.g. one per chunk of a large corpus); they are merged.

    ``scores`` may also be a SciPy CSR matrix of that shape: each row's stored entries are the
    documents scored for that query (a lexical retriever's matching documents), and the others are
    not ranked; the builder then reads each row's entries without a dense row of the corpus's size.
    """

    query_ids: Sequence[str]
    scores: Any  # a dense array, or a SciPy CSR matrix
    positions: np.ndarray | None = None


class RunBuilder:
    """Collects :class:`ScoreBlock` s into a :class:`Run`.

    Per query, the top ``depth`` documents by score, equal scores ordered by the tie rule (a running
    top-``depth`` per query, so blocks can cover the corpus in pieces and the result equals one full
    sort). ``only_matching`` keeps only documents with a score > 0 (a lexical match), as a search
    engine returns only matching documents.

    Args:
        corpus: The corpus ranked.
        depth: Documents kept per query.
        seed: Seed of the tie rule.
        only_matching: Keep only documents with a score > 0.
    """

    def __init__(self, corpus: Corpus, depth: int, *, seed: int = 0, only_matching: bool = False):
        self.corpus = corpus
        self.depth = int(depth)
        self.rule = TieRule(corpus, seed)
        self.only_matching = only_matching
        self._best: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._all = np.arange(len(corpus), dtype=np.int64)

    def add(self, block: ScoreBlock) -> None:
        """Merge a block of scores into the running top ``depth`` of its queries.

        Args:
            block: Scores of some queries against some documents.

        Raises:
            ValueError: The block's scores do not have one row per query and one column per document.
        """
        sparse = hasattr(block.scores, "indptr")  # a SciPy CSR matrix: each row's stored entries
        scores: Any = block.scores if sparse else np.asarray(block.scores)
        if scores.ndim != 2 or scores.shape[0] != len(block.query_ids):
            raise ValueError(f"score block of shape {scores.shape} for {len(block.query_ids)} queries")
        positions = self._all if block.positions is None else np.asarray(block.positions, dtype=np.int64)
        if scores.shape[1] != len(positions):
            raise ValueError(f"score block has {scores.shape[1]} columns for {len(positions)} documents")
        if sparse:
            indptr, indices, data = scores.indptr, scores.indices, scores.data
            # a block of the whole corpus: a stored entry's column is its corpus position (no
            # gather of every matching document's position per query)
            cols = indices if block.positions is None else positions[indices]
            for i, q in enumerate(block.query_ids):
                a, b = indptr[i], indptr[i + 1]
                self._merge(q, data[a:b], cols[a:b])
            return
        for i, q in enumerate(block.query_ids):
            self._merge(q, scores[i], positions)

    def _merge(self, q: str, row: np.ndarray, pos: np.ndarray) -> None:
        """Merge one query's scored documents into its running top ``depth``."""
        if self.only_matching:
            keep = row > 0
            if not keep.all():  # a sparse row holds its matches only: no copy then
                row, pos = row[keep], pos[keep]
        top = self.rule.top(q, row, pos, self.depth)
        row, pos = row[top], pos[top].astype(np.int64, copy=False)
        prev = self._best.get(q)
        if prev is not None and len(prev[0]):
            pos = np.concatenate([prev[0], pos])
            row = np.concatenate([prev[1], row])
            keep = self.rule.top(q, row, pos, self.depth)
            pos, row = pos[keep], row[keep]
        self._best[q] = (pos, row)

    def build(self, name: str, query_ids: Sequence[str], info: dict[str, Any] | None = None, dtype: Any = None) -> Run:
        """The run, with the queries in the given order (a query no block scored gets an empty list).

        Args:
            name: The run's name.
            query_ids: The queries, in order.
            info: What to record in ``run.info``.
            dtype: The scores' dtype (default: as scored; float32 for empty lists).

        Returns:
            The :class:`~sourcebias.retrieval.run.Run`.
        """
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=dtype or np.float32))
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for q in query_ids:
            p, s = self._best.get(q, empty)
            positions[q], scores[q] = p, (s if dtype is None else s.astype(dtype, copy=False))
        return Run(self.corpus, name, positions, scores, dict(info or {}))


class FirstStage(Retriever):
    """A retriever that scores documents; ranking is done for it.

    Subclasses implement :meth:`score` (and optionally :meth:`run_info` and :meth:`config`).
    Set ``only_matching = True`` if documents scoring 0 are not matches and must not be ranked.
    """

    only_matching: bool = False

    @abstractmethod
    def score(self, corpus: Corpus, queries: Mapping[str, str], depth: int) -> Iterable[ScoreBlock]:
        """Yield score blocks covering, for every query, every document it could rank.

        Args:
            corpus: The corpus to score.
            queries: ``query_id -> text``.
            depth: How many documents per query will be kept: an exhaustive scorer ignores it; one that
                only returns candidates (an approximate index) must return at least ``depth`` of them,
                plus a margin for documents tied at the cut-off.

        Returns:
            The blocks (an iterable; a generator may yield them one at a time).
        """

    def run_info(self) -> dict[str, Any]:
        """What to record about the last :meth:`score` call in ``run.info`` (e.g. cache use).

        Returns:
            The entries (none by default).
        """
        return {}

    def retrieve(self, corpus: Corpus, queries: Mapping[str, str], depth: int = 1000, *, seed: int = 0) -> Run:
        """Rank ``corpus`` for each query from :meth:`score`'s blocks; arguments and result as :meth:`Retriever.retrieve`."""
        builder = RunBuilder(corpus, depth, seed=seed, only_matching=self.only_matching)
        for block in self.score(corpus, queries, depth):
            builder.add(block)
        return builder.build(self.name, list(queries), self.run_info())


class Stage(ABC):
    """Turns a run into a run (re-ranking, a cut-off, a filter, a score correction).

    Contract of :meth:`apply`: the result ranks the same corpus; its order is final (ties by the
    tie rule: use :class:`~sourcebias.retrieval.ties.TieRule`); ``run.info`` keeps the input's
    entries and may add its own (re-rankers append to ``info["stages"]``).
    """

    name: str = "stage"

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        """How many documents per query this stage needs from the stage before it (default: ``depth``).

        Args:
            depth: How many documents per query this stage must return.
            corpus: The corpus ranked.

        Returns:
            How many the stage before must return.
        """
        return depth

    @abstractmethod
    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        """Return the transformed run.

        Args:
            run: The run of the stage before (its order final).
            queries: ``query_id -> text``.
            seed: Seed of the tie rule.

        Returns:
            The transformed run, over the same corpus.
        """

    def config(self) -> dict[str, Any]:
        """Parameters that identify this stage (written to manifests).

        Returns:
            At least its ``name`` and ``class``.
        """
        return {"name": self.name, "class": type(self).__name__}

    def __rshift__(self, other: Stage) -> StageChain:
        if not isinstance(other, Stage):
            return NotImplemented
        return StageChain([self, other])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class StageChain(Stage):
    """Stages applied in order; ``a >> b >> c``."""

    def __init__(self, stages: Sequence[Stage]):
        flat: list[Stage] = []
        for s in stages:
            flat += s.stages if isinstance(s, StageChain) else [s]
        self.stages: list[Stage] = flat
        self.name = ">>".join(s.name for s in flat)

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        """What the first stage of the chain needs, working back from the last; as :meth:`Stage.input_depth`."""
        for s in reversed(self.stages):
            depth = s.input_depth(depth, corpus)
        return depth

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        """Apply the stages in order; arguments and result as :meth:`Stage.apply`."""
        for s in self.stages:
            run = s.apply(run, queries, seed=seed)
        return run

    def config(self) -> dict[str, Any]:
        """The chain's name and each stage's configuration.

        Returns:
            ``{"name": ..., "stages": [...]}``.
        """
        return {"name": self.name, "stages": [s.config() for s in self.stages]}

    def __rshift__(self, other: Stage) -> StageChain:
        if not isinstance(other, Stage):
            return NotImplemented
        return StageChain([*self.stages, other])


class Pipeline(Retriever):
    """A first stage followed by stages; build it with ``retriever >> stage``."""

    def __init__(self, first: Retriever, stages: Sequence[Stage], name: str | None = None):
        if isinstance(first, Pipeline):
            stages = [*first.stages, *stages]
            first = first.first
        self.first: Retriever = first
        self.stages: list[Stage] = StageChain(stages).stages
        self.name = name or ">>".join([first.name] + [s.name for s in self.stages])

    def __rshift__(self, other: Stage) -> Pipeline:
        if not isinstance(other, Stage):
            return NotImplemented
        return Pipeline(self.first, [*self.stages, other])

    def first_stage_depth(self, depth: int, corpus: Corpus) -> int:
        """How many documents per query the first stage must return for the stages to return ``depth``.

        Args:
            depth: Documents per query the pipeline returns.
            corpus: The corpus ranked.

        Returns:
            The first stage's depth.
        """
        return StageChain(self.stages).input_depth(depth, corpus) if self.stages else depth

    def retrieve(self, corpus: Corpus, queries: Mapping[str, str], depth: int = 1000, *, seed: int = 0) -> Run:
        """Rank with the first stage, apply the stages, cut at ``depth``; arguments and result as :meth:`Retriever.retrieve`."""
        run = self.first.retrieve(corpus, queries, self.first_stage_depth(depth, corpus), seed=seed)
        for s in self.stages:
            run = s.apply(run, queries, seed=seed)
        run = run.cut(depth)
        run.name = self.name
        return run

    def config(self) -> dict[str, Any]:
        """The pipeline's name, its first stage's and each stage's configuration.

        Returns:
            ``{"name": ..., "first_stage": {...}, "stages": [...]}``.
        """
        return {"name": self.name, "first_stage": self.first.config(), "stages": [s.config() for s in self.stages]}


def with_stage_after_first(retriever: Retriever, stage: Stage) -> Retriever:
    """``retriever`` with ``stage`` inserted right after its first stage, keeping its name.

    Used for the self-match filter, which must act before any re-ranker.

    Args:
        retriever: A first stage or a pipeline.
        stage: The stage to insert.

    Returns:
        A :class:`Pipeline`.
    """
    if isinstance(retriever, Pipeline):
        return Pipeline(retriever.first, [stage, *retriever.stages], name=retriever.name)
    return Pipeline(retriever, [stage], name=retriever.name)


def rank_rows(
    corpus: Corpus,
    query_ids: Sequence[str],
    score_rows: Sequence[np.ndarray] | np.ndarray,
    depth: int,
    *,
    seed: int = 0,
    only_matching: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Ranked lists from full score vectors (one per query, over all of ``corpus``).

    Args:
        corpus: The corpus scored.
        query_ids: The queries, in the order of ``score_rows``.
        score_rows: One score vector per query, one score per document of ``corpus``.
        depth: Documents kept per query.
        seed: Seed of the tie rule.
        only_matching: Keep only documents with a score > 0.

    Returns:
        ``(positions, scores)`` per query: the top ``depth`` under the tie rule.
    """
    builder = RunBuilder(corpus, depth, seed=seed, only_matching=only_matching)
    for q, row in zip(query_ids, score_rows):
        builder.add(ScoreBlock([q], np.asarray(row)[None, :]))
    run = builder.build("scores", list(query_ids), dtype=np.asarray(score_rows[0]).dtype if len(score_rows) else None)
    return run.positions, run.scores
