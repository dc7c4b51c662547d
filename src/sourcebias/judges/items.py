"""What a judge grades: the judged documents of the split (every copy: the human original and
its LLM twins) and, optionally, the documents in the top k of runs of the mixed corpus, each
graded as a (query, document, source) item.

A document is ``(doc_id, source)`` (the corpus says which copy is which); an item from a run
adds the document's other copies, so that every graded document has its twin graded too.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample


def judged_queries(dataset: Any, *, max_queries: int | None = None, seed: int = 0) -> list[str]:
    """The queries to judge: those of the split with a judgement, or a seeded sample of them.

    Args:
        dataset: A loaded dataset with a split.
        max_queries: Judge only this many, drawn by :func:`~sourcebias.core.sampling.seeded_sample`
            (a larger sample holds a smaller one), in the split's order.
        seed: The sample's seed.

    Returns:
        Query ids.

    Raises:
        ConfigError: The dataset has no judgement or no LLM source.
    """
    queries = [q for q in dataset.queries if q in dataset.qrels and len(dataset.qrels[q])]
    if not queries:
        raise ConfigError(f"{dataset.name}: no judged query in split '{dataset.split}' (a judge needs the split's judgements; pass DIR,split)")
    if not dataset.other_sources:
        raise ConfigError(f"{dataset.name}: one source only ({dataset.human_source}); a judge's twin bias needs LLM twins")
    return seeded_sample(queries, max_queries, seed)


def judged_documents(dataset: Any, query_ids: Sequence[str], *, max_docs: int | None = None, seed: int = 0) -> dict[str, list[str]]:
    """Each query's judged documents to grade: all of them, or a seeded sample of ``max_docs``.

    A query's sample is drawn from its judged document ids in sorted order with
    :func:`~sourcebias.core.sampling.seeded_sample` seeded by ``(seed, CRC-32 of the query id)``:
    it depends on neither the qrels file's order nor the other queries sampled, and a larger
    ``max_docs`` holds a smaller one (a grown study reuses every stored answer). Every grade
    is equally likely to be drawn (simple random sampling within the query, not stratified).

    Args:
        dataset: A loaded dataset with a split.
        query_ids: The queries (:func:`judged_queries`).
        max_docs: Judged documents per query (``None``: every one).
        seed: The sample's seed.

    Returns:
        ``{query: [doc_id, ...]}`` in sorted id order.
    """
    out = {}
    for q in query_ids:
        docs = sorted(dataset.qrels.get(q, {}))
        out[q] = seeded_sample(docs, max_docs, (seed, zlib.crc32(q.encode("utf-8"))))
    return out


def item_table(
    dataset: Any, query_ids: Sequence[str], runs: Mapping[str, Any] | None = None, top_k: int = 0, documents: Mapping[str, Sequence[str]] | None = None
) -> Any:
    """One row per (query, document, source) to grade.

    Args:
        dataset: The dataset.
        query_ids: The queries (:func:`judged_queries`).
        runs: ``{name: Run}`` of the mixed corpus; their top ``top_k`` documents are added.
        top_k: How many of each run's top documents to add (0: none).
        documents: ``{query: doc_ids}``: the judged documents to grade (:func:`judged_documents`;
            default: every judged document of each query).

    Returns:
        A pandas DataFrame: ``query_id``, ``doc_id``, ``source``, ``origin`` (``qrels``, or
        ``run:<name>`` for a document no judgement names), ``assessor_grade`` (the split's
        grade, NaN for a run's document); documents with a copy missing in some source are
        graded in the copies there are.
    """
    import pandas as pd

    corpus, qrels = dataset.corpus, dataset.qrels
    rows: list[tuple[str, str, str, str, float]] = []
    seen: set[tuple[str, str]] = set()

    def add(q: str, doc_id: str, origin: str, grade: float) -> None:
        if (q, doc_id) in seen:
            return
        seen.add((q, doc_id))
        rows.extend((q, doc_id, s, origin, grade) for s in corpus.sources if corpus.position(doc_id, s) is not None)

    for q in query_ids:
        judged = qrels.get(q, {})
        for doc_id in judged if documents is None else documents.get(q, ()):
            add(q, doc_id, "qrels", float(judged[doc_id]))
        for name, run in (dict(runs or {}) if top_k else {}).items():
            for pos in run.positions.get(q, np.empty(0, dtype=np.int64))[:top_k].tolist():
                add(q, corpus.doc_ids[pos], f"run:{name}", float("nan"))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "source", "origin", "assessor_grade"])


def passage(corpus: Any, doc_id: str, source: str) -> str:
    """The text a judge reads: the document's title and text joined, as a retriever sees it."""
    pos = corpus.position(doc_id, source)
    if pos is None:
        raise ConfigError(f"document {doc_id} has no copy in source {source}")
    return str(corpus[pos].retrieval_text())
