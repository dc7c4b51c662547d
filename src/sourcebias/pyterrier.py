"""sourcebias retrievers as PyTerrier transformers: :class:`SourceBias`.

::

    import pyterrier as pt
    from sourcebias.pyterrier import SourceBias

    bm25 = SourceBias("bm25", dataset)                 # a spec, a Retriever or a Pipeline
    pt.Experiment([bm25, bm25 >> my_reranker], topics, qrels, eval_metrics=["ndcg_cut_10"])

A Q frame (``qid, query``) comes in; the R frame that goes out keeps the Q frame's columns and
adds ``docno`` (``<source>/<doc_id>`` unless ``docnos=`` gives a pattern), ``doc_id``,
``source``, ``score`` and ``rank``. Its order is sourcebias' final order (ties by the tie rule,
:mod:`sourcebias.retrieval.ties`), and its scores are **strictly decreasing** in that order: a
score not below the one before it is lowered to the next 32-bit float below (trec_eval keeps
scores as C floats; :func:`sourcebias.retrieval.ties.tie_resolved_scores`), so ``pt.Experiment``, trec_eval and ranx, which sort by score and break
ties by docno, keep our order. The ``rank``
column is that order too.

The other direction — any ``pt.Transformer`` inside a sourcebias pipeline — is the ``pt:`` kind
(:mod:`sourcebias.retrieval.pyterrier_stage`). Needs ``pip install "sourcebias[ecosystem]"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sourcebias.retrieval.pyterrier_stage import docno_map, require_pyterrier, result_frame
from sourcebias.retrieval.ties import tie_resolved_scores

pt = require_pyterrier()
#: ``pt.Transformer`` (a base class taken from the module imported at run time, named for type checkers)
_Transformer: Any = pt.Transformer


class SourceBias(_Transformer):
    """A sourcebias retriever or pipeline over ``corpus`` as a ``pt.Transformer``.

    Parameters
    ----------
    retriever:
        A :class:`~sourcebias.retrieval.base.Retriever` (or pipeline), or a specification such as
        ``"bm25"`` or ``"bm25>>cut:20>>ce:minilm"`` (built with ``options``).
    corpus:
        A :class:`~sourcebias.data.corpus.Corpus`, or a dataset (its mixed corpus).
    depth:
        Documents per query.
    seed:
        Seed of the tie rule.
    docnos:
        Pattern of the ``docno`` column (``{doc_id}``, ``{source}``); default ``<source>/<doc_id>``.
    text:
        Add a ``text`` column (title and text joined), for re-rankers later in a PyTerrier pipeline.
    """

    def __init__(self, retriever: Any, corpus: Any, *, depth: int = 1000, seed: int = 0, docnos: str | None = None, text: bool = False, **options: Any):
        if isinstance(retriever, str):
            from sourcebias.retrieval.registry import build_retriever

            retriever = build_retriever(retriever, **options)
        self.retriever = retriever
        self.corpus = getattr(corpus, "corpus", corpus)
        self.depth = int(depth)
        self.seed = int(seed)
        self.docnos = docnos
        self.text = text
        self._names = docno_map(self.corpus, docnos)

    def __repr__(self) -> str:
        return f"SourceBias({self.retriever.name!r}, depth={self.depth})"

    def transform(self, inp):
        import pandas as pd

        if not {"qid", "query"} <= set(inp.columns):
            raise ValueError(f"SourceBias expects a Q frame with qid and query columns, got {list(inp.columns)}")
        topics = inp.drop_duplicates("qid")
        queries: Mapping[str, str] = dict(zip(topics["qid"].astype(str), topics["query"].astype(str)))
        run = self.retriever.retrieve(self.corpus, queries, self.depth, seed=self.seed)
        frame = result_frame(run, queries, self._names, text=self.text)
        frame["score"] = (
            np.concatenate([tie_resolved_scores(g.to_numpy()) for _, g in frame.groupby("qid", sort=False)["score"]]) if len(frame) else frame["score"]
        )
        extra = [c for c in topics.columns if c not in frame.columns]
        if extra:  # keep the Q frame's other columns, as PyTerrier retrievers do
            frame = frame.merge(topics[["qid", *extra]].astype({"qid": str}), on="qid", how="left")
        return pd.DataFrame(frame)


def topics_frame(dataset: Any):
    """PyTerrier topics (``qid, query``) of a dataset's evaluated queries."""
    import pandas as pd

    q = dataset.evaluation_queries()
    return pd.DataFrame({"qid": q, "query": [dataset.queries[x] for x in q]})


def qrels_frame(dataset: Any, target: str = "all"):
    """PyTerrier qrels (``qid, docno, label``) of the protocol for one target source: every copy of
    a judged document is listed (docnos ``<source>/<doc_id>``); copies of other sources than
    ``target`` are non-relevant (label 0), as in sourcebias' per-target scores; ``"all"`` keeps
    every copy's grade."""
    import pandas as pd

    if target != "all" and target not in dataset.sources:
        raise ValueError(f"target '{target}' is not a source of the dataset ({', '.join(dataset.sources)}) nor 'all'")
    rows = []
    for q in dataset.evaluation_queries():
        for doc_id, grade in dataset.qrels.get(q, {}).items():
            for s in dataset.sources:
                if dataset.corpus.position(doc_id, s) is not None:
                    rows.append((q, f"{s}/{doc_id}", grade if target in ("all", s) else 0))
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])
