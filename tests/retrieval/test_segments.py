"""SegmentedBM25 (an appendable, segmented BM25 index): after any sequence of additions its
scores equal, bit for bit, those of LuceneBM25 (checked against Lucene 9.9.1) and of the BM25
retriever indexed once on the whole corpus, and a score worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset
from sourcebias.retrieval.lexical import BM25, EnglishAnalyzer
from sourcebias.retrieval.lucene import LuceneBM25, byte4_to_int, int_to_byte4
from sourcebias.retrieval.segments import SegmentedBM25

f32 = np.float32

SMALL = [
    "Apples and bananas grow in the orchard",
    "",  # empty: no terms, not counted in doc_count
    "the of and",  # stop words only: also no terms
    "An apple a day; apple pie, apple juice and cherry",
    "Bananas are yellow. Cherries are red.",
    "Orchard orchard orchard: apples " + "fruit " * 45,  # longer than 40: a rounded norm
    "cherry",
]
QUERIES = [
    "apple apple apple orchard",  # "appl" three times: one clause of boost 3
    "banana banana cherry",  # boost 2 (a power of two)
    "orchard fruit",
    "kiwi durian",  # no term in the vocabulary
    "",
    "the",  # a stop word only
]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and np.array_equal(a.view(np.int32), b.view(np.int32))


def eager(texts, queries, norms):
    """LuceneBM25 indexed once on every text (in order), as BM25 does."""
    analyzer, vocab = EnglishAnalyzer(), {}
    docs = analyzer.to_ids(texts, vocab, grow=True)
    q = analyzer.to_ids(queries, vocab, grow=False)
    return LuceneBM25(norms=norms).index(docs, len(vocab)).score_batch(q), vocab


@pytest.mark.parametrize("norms", ["lucene", "exact"])
@pytest.mark.parametrize("cuts", [[7], [1, 3, 7], [1, 2, 3, 4, 5, 6, 7]])
def test_small_texts_equal_lucene_after_every_add(norms, cuts):
    index = SegmentedBM25(norms=norms, max_segments=None)
    start = 0
    for end in cuts:
        rows = index.add(SMALL[start:end])
        assert rows == range(start, end)
        want, vocab = eager(SMALL[:end], QUERIES, norms)  # the corpus so far
        assert same_bits(index.score_batch(QUERIES), want)
        assert index.vocab == vocab
        start = end
    assert len(index.segments) == len(cuts)
    assert index.n_docs == 7 and index.doc_count == 5  # the empty and stop-word documents are not counted


def test_boost_three_worked_by_hand():
    """Lucene's arithmetic written out for the query "apple apple apple" on SMALL, added in
    two rounds: weight = 3f * idf, term = weight - weight / (1 + freq * cache[norm])."""
    index = SegmentedBM25()
    index.add(SMALL[:4])
    index.add(SMALL[4:])
    got = index.score_batch(["apple apple apple"])[0]
    lengths = [len(EnglishAnalyzer()(t)) for t in SMALL]
    assert lengths == [4, 0, 0, 7, 4, 49, 1] and byte4_to_int(int_to_byte4(49)) == 48  # "are": a stop word
    freq = [1, 0, 0, 3, 0, 1, 0]  # "appl" (apples, apple) per document
    doc_count, df = 5, 3
    idf = f32(math.log(1 + (doc_count - df + 0.5) / (df + 0.5)))
    avgdl = f32(sum(lengths) / doc_count)
    weight = f32(3.0) * idf
    for d in range(7):
        if not freq[d]:
            assert got[d] == 0.0
            continue
        norm = f32(byte4_to_int(int_to_byte4(lengths[d])))
        cache = f32(1.0) / (f32(1.2) * (f32(1.0) - f32(0.75) + f32(0.75) * norm / avgdl))
        want = weight - weight / (f32(1.0) + f32(freq[d]) * cache)
        assert got[d] == want, d


@pytest.fixture(scope="module")
def nq(nq_utd):
    ds = load_dataset(nq_utd)
    qids = ds.evaluation_queries()
    queries = [ds.queries[q] for q in qids]
    queries += [queries[0] + " " + queries[0] + " " + queries[0]]  # every term three times
    return ds, ds.corpus.retrieval_texts(), qids, queries


def three_adds(texts, norms="lucene", **kw):
    index = SegmentedBM25(norms=norms, **kw)
    n = len(texts)
    for a, b in [(0, n // 2), (n // 2, n // 2 + 7), (n // 2 + 7, n)]:
        index.add(texts[a:b])
    return index


@pytest.mark.parametrize("norms", ["lucene", "exact"])
def test_nq_utd_in_three_adds_equals_lucene(nq, norms):
    _, texts, _, queries = nq
    index = three_adds(texts, norms)
    want, vocab = eager(texts, queries, norms)
    assert index.vocab == vocab and len(index.segments) == 3
    assert same_bits(index.score_batch(queries), want)
    index.merge()
    assert len(index.segments) == 1
    assert same_bits(index.score_batch(queries), want)


def test_nq_utd_equals_the_bm25_retriever(nq):
    ds, texts, qids, queries = nq
    got = three_adds(texts).score_batch(queries[: len(qids)])
    blocks = list(BM25().score(ds.corpus, dict(zip(qids, queries)), depth=10))
    rows = {q: s for blk in blocks for q, s in zip(blk.query_ids, blk.scores.toarray())}  # sparse blocks: the matching documents
    assert all(blk.positions is None for blk in blocks)
    assert same_bits(got, np.stack([rows[q] for q in qids]).astype(np.float32))


def test_automatic_merges_keep_scores(nq):
    _, texts, _, queries = nq
    index = SegmentedBM25(max_segments=3)
    for a in range(0, len(texts), 100):  # 16 rounds
        index.add(texts[a : a + 100])
        assert len(index.segments) <= 3
    assert next(s.base for s in index.segments) == 0
    assert same_bits(index.score_batch(queries), eager(texts, queries, "lucene")[0])


@pytest.mark.parametrize("norms", ["lucene", "exact"])
def test_save_load_then_add(nq, norms, tmp_path):
    _, texts, _, queries = nq
    n = len(texts)
    index = SegmentedBM25(norms=norms, max_segments=2)
    index.add(texts[:1000])
    index.add(texts[1000:1200])
    index.save(tmp_path)
    first = sorted(p.name for p in tmp_path.glob("seg-*.npz"))
    loaded = SegmentedBM25.load(tmp_path)
    assert loaded.norms == norms and loaded.vocab == index.vocab and np.array_equal(loaded.df, index.df)
    assert same_bits(loaded.score_batch(queries), eager(texts[:1200], queries, norms)[0])
    # a resumed run: add to the loaded index (a third segment forces a merge of the two small ones)
    before = (tmp_path / first[0]).stat().st_mtime_ns
    loaded.add(texts[1200:n])
    loaded.save(tmp_path)
    assert (tmp_path / first[0]).stat().st_mtime_ns == before  # the big segment is not rewritten
    assert len(list(tmp_path.glob("seg-*.npz"))) == 2  # the merged-away segment's file is gone
    again = SegmentedBM25.load(tmp_path)
    assert same_bits(again.score_batch(queries), eager(texts, queries, norms)[0])


def test_errors(tmp_path):
    with pytest.raises(ConfigError, match="norms"):
        SegmentedBM25(norms="bm25s")
    with pytest.raises(DataError, match=r"segments\.json"):
        SegmentedBM25.load(tmp_path)
    index = SegmentedBM25()
    index.add(SMALL)
    with pytest.raises(ConfigError, match="vocabulary"):
        index.add_ids([[len(index.vocab)]])
    index.save(tmp_path)
    with pytest.raises(ConfigError, match="analyzer"):
        SegmentedBM25.load(tmp_path, analyzer=EnglishAnalyzer(stemmer=None))
    assert SegmentedBM25().score_batch(["apple"]).shape == (1, 0)
