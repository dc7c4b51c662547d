"""The index a simulated loop searches, grown round by round at the cost of what a round adds.

* **BM25** (``bm25``, any parameters): a :class:`~sourcebias.retrieval.segments.SegmentedBM25`;
  a round's documents are analysed and appended as a segment, and scores equal those of
  :class:`~sourcebias.retrieval.lexical.BM25` on the whole corpus bit for bit (Lucene's norms and
  arithmetic). The index is saved after each round, so a resumed run re-analyses nothing.
* **Dense** retrievers (``minilm``, ``st:``, presets): the document vectors are held in memory and
  a round's new documents are encoded through the embedding store (a resumed run reads earlier
  rounds' vectors from the store); exact inner-product search as
  :class:`~sourcebias.retrieval.dense.DenseRetriever` does.
* **Anything else** (TF-IDF, pipelines with re-rankers): the retriever ranks the whole corpus
  again each round (``update = "full"`` in the manifest), which costs what a fresh run costs.

Every ranking goes through :class:`~sourcebias.retrieval.base.RunBuilder`, so the tie rule and the
run format are those of ``sourcebias evaluate``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.base import RunBuilder, ScoreBlock
from sourcebias.retrieval.run import Run


class LoopIndex:
    """``add(corpus, positions)`` the documents a round added; ``rank(corpus, queries, depth, seed)``
    ranks the whole current corpus; ``save(folder)`` keeps what a resumed run needs."""

    update = "full"

    def __init__(self, retriever: Any, name: str):
        self.retriever, self.name = retriever, name

    def add(self, corpus: Corpus, positions: Sequence[int]) -> None:
        """Nothing to do: the retriever ranks the corpus afresh."""

    def rank(self, corpus: Corpus, queries: Mapping[str, str], depth: int, seed: int) -> Run:
        run = self.retriever.retrieve(corpus, queries, depth, seed=seed)
        run.name = self.name
        return run

    def save(self, folder: Path) -> None:
        """Nothing to keep."""

    def config(self) -> dict[str, Any]:
        cfg = self.retriever.config() if hasattr(self.retriever, "config") else {}
        return {"update": self.update, "retriever": cfg}


class BM25LoopIndex(LoopIndex):
    """BM25 over an appendable segmented index (see the module docstring)."""

    update = "append (segmented BM25)"

    def __init__(self, retriever: Any, name: str, state: Path | None = None, n_docs: int | None = None):
        from sourcebias.retrieval.segments import SegmentedBM25

        super().__init__(retriever, name)
        index: SegmentedBM25 | None = None
        if state is not None and (state / "segments.json").is_file():
            idx = SegmentedBM25.load(state, analyzer=retriever.analyzer)
            if n_docs is None or idx.n_docs == n_docs:  # an index of another length is stale: rebuilt
                index = idx
        if index is None:
            index = SegmentedBM25(k1=retriever.k1, b=retriever.b, norms=retriever.norms, analyzer=retriever.analyzer)
        self.index = index

    def add(self, corpus: Corpus, positions: Sequence[int]) -> None:
        pos = list(positions)
        if pos and pos[0] != self.index.n_docs:
            raise RuntimeError(f"{self.name}: documents must be added in corpus order (index holds {self.index.n_docs}, got position {pos[0]})")
        if pos:
            self.index.add(_texts(corpus, pos))

    def rank(self, corpus: Corpus, queries: Mapping[str, str], depth: int, seed: int) -> Run:
        if self.index.n_docs < len(corpus):  # what it lacks (all of it when new or stale)
            self.add(corpus, range(self.index.n_docs, len(corpus)))
        qids = list(queries)
        builder = RunBuilder(corpus, depth, seed=seed, only_matching=True)
        for start in range(0, len(qids), 256):
            batch = qids[start : start + 256]
            builder.add(ScoreBlock(batch, self.index.score_batch([queries[q] for q in batch])))
        return builder.build(self.name, qids, info={"index": "segmented BM25", "segments": len(self.index.segments)})

    def save(self, folder: Path) -> None:
        self.index.save(folder)


class DenseLoopIndex(LoopIndex):
    """Exact inner-product search over vectors that grow by the round's new documents."""

    update = "append (embedding store)"

    def __init__(self, retriever: Any, name: str):
        super().__init__(retriever, name)
        self._buffer = np.zeros((0, 0), dtype=np.float32)  # grown by doubling: a round copies no old vectors
        self._n = 0

    @property
    def vectors(self) -> np.ndarray:
        return self._buffer[: self._n]

    def add(self, corpus: Corpus, positions: Sequence[int]) -> None:
        pos = list(positions)
        if not pos:
            return
        if pos[0] != self._n:
            raise RuntimeError(f"{self.name}: documents must be added in corpus order (index holds {self._n}, got position {pos[0]})")
        new = np.asarray(self.retriever.embed(_texts(corpus, pos), "document"), dtype=np.float32)
        if self._n + len(new) > len(self._buffer):
            grown = np.empty((max(2 * len(self._buffer), self._n + len(new)), new.shape[1]), dtype=np.float32)
            if self._n:
                grown[: self._n] = self._buffer[: self._n]
            self._buffer = grown
        self._buffer[self._n : self._n + len(new)] = new
        self._n += len(new)

    def rank(self, corpus: Corpus, queries: Mapping[str, str], depth: int, seed: int) -> Run:
        from sourcebias.retrieval.dense import exact_blocks

        if len(self.vectors) < len(corpus):
            self.add(corpus, range(len(self.vectors), len(corpus)))
        qids = list(queries)
        q_vecs = self.retriever.embed([queries[q] for q in qids], "query")
        builder = RunBuilder(corpus, depth, seed=seed)
        for block in exact_blocks(self.vectors, q_vecs, qids):
            builder.add(block)
        return builder.build(self.name, qids, info={"index": "exact (in memory)"})


def _texts(corpus: Corpus, positions: list[int]) -> list[str]:
    """The retrieval texts of some documents (not the whole corpus's: a round touches only its own)."""
    return [corpus[i].retrieval_text() for i in positions]


def loop_index(name: str, spec: str, *, state: Path | None = None, n_docs: int | None = None, cache_dir: Any = None, device: str | None = None) -> LoopIndex:
    """The loop index of a retriever specification (see the module docstring)."""
    from sourcebias.retrieval import build_retriever
    from sourcebias.retrieval.dense import DenseRetriever
    from sourcebias.retrieval.lexical import BM25

    options: dict[str, Any] = {}
    if cache_dir is not None:
        options["cache_dir"] = str(cache_dir)
    if device is not None:
        options["device"] = device
    retriever = build_retriever(spec, **options)  # a kind without such a parameter ignores it
    if isinstance(retriever, BM25):
        return BM25LoopIndex(retriever, name, state=state, n_docs=n_docs)
    if isinstance(retriever, DenseRetriever) and retriever.doc_transform is None and retriever.index == "exact":
        return DenseLoopIndex(retriever, name)
    return LoopIndex(retriever, name)
