"""Lexical retrievers, embedded (no search server): BM25 on bm25s, TF-IDF on scikit-learn.

Both share one analyzer, :class:`~sourcebias.retrieval.analyzer.EnglishAnalyzer`, which reproduces
Elasticsearch's ``english`` analyzer — the analyzer of the papers' BM25 (Cocktail ran BEIR's
Elasticsearch BM25 with ``language="english"``); it lives in :mod:`.analyzer`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.core.moved import moved
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.analyzer import EnglishAnalyzer
from sourcebias.retrieval.base import FirstStage, ScoreBlock
from sourcebias.retrieval.specs import Param, register_first_stage

#: Scores in one block of a lexical retriever's ranking (BM25: postings summed in one sparse
#: product, about 16 bytes each), whatever the corpus size: 64 MB (at 16 million, 256 MB, a
#: block was the peak of an evaluation at 300,000 documents; smaller blocks cost no measurable time).
BLOCK_SCORES = 1 << 22


class _LexicalRetriever(FirstStage):
    """Shared driver: analyze the corpus, then score blocks of queries against every document.
    Only documents sharing a term with the query are ranked (``only_matching``)."""

    only_matching = True

    def __init__(self, analyzer: EnglishAnalyzer | None = None, batch_size: int = 256):
        self.analyzer = analyzer or EnglishAnalyzer()
        self.batch_size = batch_size
        self._info: dict[str, Any] = {}
        self._timings: dict[str, float] = {}

    def score(self, corpus: Corpus, queries: Mapping[str, str], depth: int) -> Iterator[ScoreBlock]:
        qids = list(queries)
        vocab: dict[str, int] = {}
        self._timings = {"analyse_s": 0.0, "index_s": 0.0, "rank_s": 0.0}  # filled by the steps, for run_info
        with progress.task(f"{self.name}: indexing {len(corpus):,} documents", total=1) as t:
            self._index_texts(corpus.retrieval_texts(), vocab)
            t.advance()
        self._info = {"vocabulary": len(vocab)}
        t0 = time.perf_counter()
        q_ids = self.analyzer.to_ids([queries[q] for q in qids], vocab, grow=False)
        self._timings["analyse_s"] += time.perf_counter() - t0
        try:
            with progress.task(f"{self.name}: ranking", total=len(qids), unit="queries") as t:
                for start in range(0, len(qids), self.batch_size):
                    batch = qids[start : start + self.batch_size]
                    yield from self._timed(self._blocks(batch, q_ids[start : start + self.batch_size]))
                    t.advance(len(batch))
        finally:
            self._release()  # the index is not kept alive while the next corpus is indexed

    def _timed(self, blocks: Iterator[ScoreBlock]) -> Iterator[ScoreBlock]:
        """``blocks`` one at a time (only one alive), the seconds spent making them added to ``rank_s``."""
        while True:
            t0 = time.perf_counter()
            block = next(blocks, None)
            self._timings["rank_s"] += time.perf_counter() - t0
            if block is None:
                return
            yield block

    def run_info(self) -> dict[str, Any]:
        """The vocabulary's size, and the seconds spent analysing, indexing and scoring (ranking the
        scores, the tie rule, is the run builder's)."""
        return {**self._info, "timings_s": {k: round(v, 3) for k, v in self._timings.items()}}

    def _blocks(self, batch: list[str], query_ids: list[list[int]]) -> Iterator[ScoreBlock]:
        """Score blocks of one batch of queries: dense (queries x documents) by default."""
        yield ScoreBlock(batch, np.asarray(self._score(query_ids)))

    def _release(self) -> None:
        """Drop the index built by :meth:`_index`."""

    def _index_texts(self, texts: list[str], vocab: dict[str, int]) -> None:
        """Analyse and index the corpus's texts (by default as lists of term ids, :meth:`_index`)."""
        t0 = time.perf_counter()
        ids = self.analyzer.to_ids(texts, vocab, grow=True)
        t1 = time.perf_counter()
        self._index(ids, vocab)
        self._timings["analyse_s"] += t1 - t0
        self._timings["index_s"] += time.perf_counter() - t1

    def _index(self, doc_ids: list[list[int]], vocab: dict[str, int]) -> None:
        raise NotImplementedError

    def _score(self, query_ids: list[list[int]]) -> Sequence[np.ndarray]:
        raise NotImplementedError


class BM25(_LexicalRetriever):
    """Okapi BM25 as Elasticsearch computes it: Lucene's ``BM25Similarity`` with
    Elasticsearch's defaults ``k1=1.2, b=0.75`` and one-byte document lengths
    (:mod:`sourcebias.retrieval.lucene`), so that scores equal Elasticsearch's to the last bit.

    ``norms="exact"`` scores with each document's exact length on `bm25s
    <https://github.com/xhluca/bm25s>`_ (``method`` picks bm25s's variant, ``lucene`` by
    default). A document is its title and text joined; only documents sharing at least one term
    with the query are returned (as a search engine does). Equal scores are ordered by the tie
    rule (Lucene orders them by internal document id, i.e. by indexing order, which favours the
    source indexed first).
    """

    def __init__(
        self, k1: float = 1.2, b: float = 0.75, method: str = "lucene", analyzer: EnglishAnalyzer | None = None, name: str = "bm25", norms: str = "lucene"
    ):
        super().__init__(analyzer)
        if norms not in ("lucene", "exact"):
            from sourcebias.core.errors import ConfigError

            raise ConfigError(f"bm25: norms must be 'lucene' (Elasticsearch's one-byte lengths) or 'exact', got '{norms}'")
        self.k1, self.b, self.method, self.name, self.norms = k1, b, method, name, norms

    def config(self) -> dict[str, Any]:
        if self.norms == "lucene":
            return {
                "name": self.name,
                "class": "BM25",
                "scoring": "Lucene BM25Similarity (one-byte length norms, float32), sourcebias.retrieval.lucene",
                "k1": self.k1,
                "b": self.b,
                "norms": self.norms,
                "analyzer": self.analyzer.config(),
            }
        import bm25s

        return {
            "name": self.name,
            "class": "BM25",
            "library": f"bm25s {bm25s.__version__}",
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "norms": self.norms,
            "analyzer": self.analyzer.config(),
        }

    def _index(self, doc_ids, vocab):
        self._n = len(doc_ids)
        if self.norms == "lucene":
            from sourcebias.retrieval.lucene import LuceneBM25

            self._lucene = LuceneBM25(self.k1, self.b, norms="lucene").index(doc_ids, len(vocab))
            return
        import bm25s

        self._model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        self._model.index((doc_ids, dict(vocab)), show_progress=False)

    def _index_texts(self, texts, vocab):
        if self.norms != "lucene":
            return super()._index_texts(texts, vocab)
        from sourcebias.retrieval.lucene import LuceneBM25

        t0 = time.perf_counter()
        lengths, flat = self.analyzer.to_flat_ids(texts, vocab)
        t1 = time.perf_counter()
        self._n = len(texts)
        self._lucene = LuceneBM25(self.k1, self.b, norms="lucene").index_flat(lengths, flat, len(vocab))
        self._timings["analyse_s"] += t1 - t0
        self._timings["index_s"] += time.perf_counter() - t1

    def _blocks(self, batch, query_ids):
        """With Lucene's norms, sparse blocks (the matching documents of each query only), each of
        at most :data:`BLOCK_SCORES` postings (or one query): memory stays bounded, and no query
        costs a dense row of the corpus's size (a million floats at MS MARCO's size)."""
        if self.norms != "lucene":
            yield from super()._blocks(batch, query_ids)
            return
        postings = self._lucene.postings_of(query_ids)
        start = 0
        while start < len(batch):
            end = start + max(1, int(np.searchsorted(np.cumsum(postings[start:]), BLOCK_SCORES, side="right")))
            yield ScoreBlock(batch[start:end], self._lucene.score_sparse(query_ids[start:end]))
            start = end

    def _release(self):
        self._lucene = self._model = None

    def _score(self, query_ids):
        if self.norms == "lucene":
            return self._lucene.score_batch(query_ids)
        get = self._model.get_scores
        return [get(ids) if ids else np.zeros(self._n, dtype=np.float32) for ids in query_ids]


class TfIdf(_LexicalRetriever):
    """TF-IDF cosine similarity on scikit-learn's ``TfidfTransformer`` (smoothed idf, l2 norm),
    over the same analyzer as BM25."""

    def __init__(self, sublinear_tf: bool = False, analyzer: EnglishAnalyzer | None = None, name: str = "tfidf"):
        super().__init__(analyzer)
        self.sublinear_tf = sublinear_tf
        self.name = name

    def config(self) -> dict[str, Any]:
        import sklearn

        return {
            "name": self.name,
            "class": "TfIdf",
            "library": f"scikit-learn {sklearn.__version__}",
            "sublinear_tf": self.sublinear_tf,
            "smooth_idf": True,
            "norm": "l2",
            "analyzer": self.analyzer.config(),
        }

    def _counts(self, ids: list[list[int]], n_terms: int):
        from scipy.sparse import csr_matrix

        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(x) for x in ids])
        indices = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(indptr[-1]))
        m = csr_matrix((np.ones_like(indices, dtype=np.float64), indices, indptr), shape=(len(ids), n_terms))
        m.sum_duplicates()
        return m

    def _index(self, doc_ids, vocab):
        from sklearn.feature_extraction.text import TfidfTransformer

        self._n_terms = max(len(vocab), 1)
        self._tf = TfidfTransformer(norm="l2", use_idf=True, smooth_idf=True, sublinear_tf=self.sublinear_tf)
        self._docs_t = self._tf.fit_transform(self._counts(doc_ids, self._n_terms)).T.tocsr()

    def _score(self, query_ids):
        q = self._tf.transform(self._counts(query_ids, self._n_terms))
        return np.asarray((q @ self._docs_t).todense(), dtype=np.float32)


_ANALYZER_PARAMS = {
    "stemmer": Param(
        str,
        "porter: Lucene's Porter stemmer (Elasticsearch's english analyzer, via NLTK); another name: a Snowball stemmer of PyStemmer (english: Porter2)",
        default="porter",
    )
}


@register_first_stage(
    "bm25",
    params={
        "k1": Param(float, "term-frequency saturation", default=1.2),
        "b": Param(float, "length normalisation", default=0.75),
        "norms": Param(str, "document lengths: lucene (one byte, as Elasticsearch) or exact (bm25s)", default="lucene", choices=("lucene", "exact")),
        "method": Param(str, "bm25s scoring variant (with norms=exact)", default="lucene"),
        **_ANALYZER_PARAMS,
    },
    help="BM25 as Elasticsearch scores it (Lucene BM25Similarity, one-byte length norms, k1=1.2 "
    "b=0.75, english analyzer); bm25:k1=0.9,b=0.4; bm25:norms=exact (bm25s, exact lengths)",
    offline="always (no model)",
)
def _bm25(params: dict[str, Any], text: str) -> BM25:
    analyzer = EnglishAnalyzer(stemmer=params.pop("stemmer"))
    return BM25(analyzer=analyzer, name=text, **params)


@register_first_stage(
    "tfidf",
    params={"sublinear_tf": Param(bool, "1 + log(tf) instead of tf", default=False), **_ANALYZER_PARAMS},
    help="TF-IDF cosine (scikit-learn, same analyzer); tfidf:sublinear_tf=true",
    offline="always (no model)",
)
def _tfidf(params: dict[str, Any], text: str) -> TfIdf:
    analyzer = EnglishAnalyzer(stemmer=params.pop("stemmer"))
    return TfIdf(analyzer=analyzer, name=text, **params)


_MOVED = {"*": "sourcebias.retrieval.analyzer"}  # the analyzer's other names, for one release
__getattr__ = moved(__name__, _MOVED)
