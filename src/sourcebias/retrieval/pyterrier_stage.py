"""PyTerrier transformers inside sourcebias pipelines: the ``pt:`` kind.

``--retriever "bm25>>pt:mymodule:make_reranker"`` re-ranks BM25's list with any
``pt.Transformer`` (``mymodule.make_reranker`` is a transformer or a function returning one);
``--retriever "pt:mymodule:make_pipeline"`` ranks with a whole PyTerrier pipeline that finds its
own documents (its ``docno`` s must name documents of the dataset: ``<source>/<doc_id>`` by
default, or ``docnos=PATTERN`` such as ``{doc_id}-{source}``). Either way the result is
measured with the sourcebias protocol like any other retriever.

Frames (PyTerrier's data model): a stage hands the transformer an **R frame** (``qid, query,
docno, score, rank`` plus ``doc_id, source, text``) of the run so far; a first stage hands it a
**Q frame** (``qid, query``). The transformer's R frame comes back as a run: documents ordered
by its ``score``, equal scores by the sourcebias tie rule (:mod:`sourcebias.retrieval.ties`) —
PyTerrier's own ``rank`` column, which breaks ties by frame order, is not used, so no source is
favoured by where its copies happen to sit. A ``docno`` that names no document stops with the
name and the docno rule.

PyTerrier (``pip install "sourcebias[ecosystem]"``, the PyTerrier 1.x core, no Java) is imported
only when such a stage runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.base import Retriever, Stage
from sourcebias.retrieval.docnos import DocnoMap
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage
from sourcebias.retrieval.stages import append_stage_info
from sourcebias.retrieval.ties import TieRule


def require_pyterrier():
    """The ``pyterrier`` module, or a ConfigError saying how to install it."""
    try:
        import pyterrier as pt
    except ImportError as e:
        raise ConfigError(
            f'PyTerrier is not installed ({e}); install the ecosystem extra: pip install "sourcebias[ecosystem]" (or pip install pyterrier)'
        ) from None
    return pt


def load_transformer(target: str) -> Any:
    """``module:attribute`` -> the transformer it names (called first if it is a function or class)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"pt: expects MODULE:NAME (a pt.Transformer or a function returning one), got '{target}'")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"pt: cannot import module '{module_name}' ({e}); it must be importable (on PYTHONPATH)") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"pt: module '{module_name}' has no '{attr}'")
        obj = getattr(obj, part)
    pt = require_pyterrier()
    if not isinstance(obj, pt.Transformer) and callable(obj):
        obj = obj()
    if not isinstance(obj, pt.Transformer):
        raise ConfigError(f"pt: '{target}' is not a pt.Transformer (got {type(obj).__name__})")
    return obj


def docno_map(corpus: Corpus, pattern: str | None) -> DocnoMap:
    return DocnoMap.from_pattern(pattern, corpus) if pattern else DocnoMap.sourcebias(corpus)


def query_frame(queries: Mapping[str, str]):
    """PyTerrier's Q frame: ``qid, query``."""
    import pandas as pd

    return pd.DataFrame({"qid": list(queries), "query": [queries[q] for q in queries]})


def result_frame(run: Run, queries: Mapping[str, str], docnos: DocnoMap, *, text: bool = True):
    """PyTerrier's R frame of a run: ``qid, query, docno, doc_id, source, [text,] score, rank``,
    in the run's (final) order."""
    import pandas as pd

    corpus = run.corpus
    qids, pos, scores, ranks = [], [], [], []
    for q in run.query_ids:
        p = run.positions[q]
        qids += [q] * len(p)
        pos.append(p)
        scores.append(np.asarray(run.scores[q], dtype=np.float64))
        ranks.append(np.arange(len(p)))
    pos_a = np.concatenate(pos) if pos else np.empty(0, dtype=np.int64)
    cols: dict[str, Any] = {
        "qid": qids,
        "query": [queries.get(q, "") for q in qids],
        "docno": [docnos.names[i] for i in pos_a.tolist()],
        "doc_id": [corpus.doc_ids[i] for i in pos_a.tolist()],
        "source": [corpus.source_of(i) for i in pos_a.tolist()],
    }
    if text and corpus.has_texts:
        texts = corpus.retrieval_texts()
        cols["text"] = [texts[i] for i in pos_a.tolist()]
    cols["score"] = np.concatenate(scores) if scores else np.empty(0)
    cols["rank"] = np.concatenate(ranks) if ranks else np.empty(0, dtype=np.int64)
    return pd.DataFrame(cols)


def run_from_frame(frame, corpus: Corpus, query_ids: list[str], docnos: DocnoMap, *, name: str, depth: int, seed: int = 0, info: dict | None = None) -> Run:
    """A run from a transformer's R frame: per query, the top ``depth`` by ``score``, equal scores
    by the tie rule. Queries the frame does not mention get an empty list."""
    missing = {"qid", "docno", "score"} - set(frame.columns)
    if missing:
        raise ConfigError(f"the PyTerrier transformer returned no {', '.join(sorted(missing))} column (an R frame has qid, docno, score)")
    rule = TieRule(corpus, seed)
    positions: dict[str, np.ndarray] = {q: np.empty(0, dtype=np.int64) for q in query_ids}
    scores: dict[str, np.ndarray] = {q: np.empty(0, dtype=np.float64) for q in query_ids}
    for qid, group in frame.groupby("qid", sort=False):
        qid = str(qid)
        pos = np.fromiter((_position(docnos, str(d), qid) for d in group["docno"].tolist()), dtype=np.int64, count=len(group))
        if len(np.unique(pos)) != len(pos):
            raise ConfigError(f"the PyTerrier transformer returned a document twice for query '{qid}'")
        s = group["score"].to_numpy(dtype=np.float64)
        top = rule.top(qid, s, pos, depth)
        positions[qid], scores[qid] = pos[top], s[top]
    return Run(corpus, name, positions, scores, dict(info or {}))


def _position(docnos: DocnoMap, docno: str, qid: str) -> int:
    p = docnos.position(docno)
    if p is None:
        raise ConfigError(
            f"the PyTerrier transformer returned docno '{docno}' for query '{qid}', which names no document of the corpus ranked ({docnos.describe()}; "
            "set docnos=PATTERN; a pipeline with its own index cannot rank one source alone: evaluate it with --no-sole)"
        )
    return p


# Both a stage and a first stage: the two bases' ``>>`` differ (StageChain vs Pipeline) and Python's
# order of bases gives Stage's; a type checker cannot accept both (a known conflict, kept as it behaves).
class PyTerrierStage(Stage, Retriever):  # type: ignore[misc]
    """A ``pt.Transformer`` as a sourcebias stage (R frame in) or first stage (Q frame in).

    Parameters
    ----------
    transformer:
        Any ``pt.Transformer`` (a re-ranker, a whole pipeline, ``pt.apply.doc_score(...)``).
    name:
        Name in tables and files.
    docnos:
        How the frames name documents: ``None`` for ``<source>/<doc_id>``, else a pattern with
        ``{doc_id}`` and ``{source}``.
    depth:
        As a stage: documents per query handed to the transformer (default: the depth asked for).
    text:
        Put the documents' text (title and text joined) in the R frame's ``text`` column.
    """

    def __init__(self, transformer: Any, *, name: str | None = None, docnos: str | None = None, depth: int | None = None, text: bool = True):
        self.transformer = transformer
        self.name = name or f"pt:{type(transformer).__name__}"
        self.docnos = docnos
        self.depth = depth
        self.text = text

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return self.depth or depth

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        names = docno_map(run.corpus, self.docnos)
        frame = self.transformer.transform(result_frame(run, queries, names, text=self.text))
        depth = max((len(p) for p in run.positions.values()), default=0)
        out = run_from_frame(frame, run.corpus, run.query_ids, names, name=run.name, depth=max(depth, 1), seed=seed)
        out.info = append_stage_info(run, {"name": self.name, "transformer": repr(self.transformer)[:200]})
        return out

    def retrieve(self, corpus: Corpus, queries: Mapping[str, str], depth: int = 1000, *, seed: int = 0) -> Run:
        names = docno_map(corpus, self.docnos)
        frame = self.transformer.transform(query_frame(queries))
        info = {"transformer": repr(self.transformer)[:200], "docnos": names.describe()}
        return run_from_frame(frame, corpus, list(queries), names, name=self.name, depth=depth, seed=seed, info=info)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": "PyTerrierStage", "transformer": repr(self.transformer)[:200], "docnos": self.docnos, "depth": self.depth}


@register_stage(
    "pt",
    params={
        "target": Param(str, "MODULE:NAME of a pt.Transformer, or of a function returning one", required=True),
        "docnos": Param(str, "docno pattern of the frames, e.g. {doc_id}-{source} (default <source>/<doc_id>)"),
        "depth": Param(int, "documents per query handed to the transformer"),
        "text": Param(bool, "put the documents' text in the R frame", default=True),
        "name": Param(str, "name in tables and files"),
    },
    positional="target",
    help="any PyTerrier transformer (pyterrier>=1.0, no Java): bm25>>pt:MODULE:NAME re-ranks with it (R frame in, R frame out); "
    "pt:MODULE:NAME alone ranks with a whole PyTerrier pipeline (Q frame in); equal scores by the sourcebias tie rule",
    offline="whatever the transformer needs",
    extra="ecosystem",
    extra_modules=("pyterrier",),
)
def _pt(params: dict[str, Any], text: str) -> PyTerrierStage:
    return PyTerrierStage(
        load_transformer(params["target"]), name=params.get("name") or text, docnos=params.get("docnos"), depth=params.get("depth"), text=params["text"]
    )


_pt.ranks_alone = True  # type: ignore[attr-defined]  # pt:MODULE:NAME alone ranks with a whole PyTerrier pipeline
