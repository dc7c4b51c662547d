"""BM25 at a million documents: the memory-saving paths give what the plain paths give.

At scale the Lucene BM25 retriever indexes from flat int32 term ids (no list per document) and
scores each block of queries as a sparse product, in blocks of a bounded number of postings, and
ranks each query's matching documents from the sparse rows (no dense row of the corpus's size).
These tests check each against the plain computation: the term ids
against the per-text lists, the index against the one built from those lists, and the ranked run
against ranking full dense score rows, on real text with queries whose terms repeat (boosts 2, 3
and 5, the non-power-of-two ones scored anew).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sourcebias.data import load_dataset
from sourcebias.retrieval import lexical
from sourcebias.retrieval.base import rank_rows
from sourcebias.retrieval.lexical import BM25, EnglishAnalyzer
from sourcebias.retrieval.lucene import LuceneBM25

REPEATS = {"R1": "cancer cancer cancer breast", "R2": "vote vote election election election election election", "R3": "the of and"}


def test_flat_term_ids_equal_the_per_text_lists(nq_utd):
    texts = load_dataset(nq_utd, split="test").corpus.retrieval_texts()
    vocab_lists: dict[str, int] = {}
    vocab_flat: dict[str, int] = {}
    lists = EnglishAnalyzer().to_ids(texts, vocab_lists, grow=True)
    lengths, flat = EnglishAnalyzer().to_flat_ids(texts, vocab_flat)
    assert vocab_flat == vocab_lists
    assert lengths.tolist() == [len(x) for x in lists]
    assert flat.dtype == np.int32 and flat.tolist() == list(itertools.chain.from_iterable(lists))


def test_index_from_flat_ids_scores_as_the_index_from_lists():
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 40, size=int(n)).tolist() for n in rng.integers(0, 90, size=300)]
    queries = [rng.integers(0, 40, size=int(n)).tolist() for n in rng.integers(0, 9, size=50)] + [[7, 7, 7], [5] * 6]
    lengths = np.array([len(d) for d in docs])
    flat = np.array(list(itertools.chain.from_iterable(docs)), dtype=np.int32)
    a = LuceneBM25().index(docs, 40).score_batch(queries)
    b = LuceneBM25().index_flat(lengths, flat, 40).score_batch(queries)
    assert a.dtype == b.dtype == np.float32 and np.array_equal(a, b)


def test_sparse_scores_hold_exactly_the_documents_sharing_a_term():
    docs = [[0, 1], [1, 1, 2], [3], [], [2, 2, 2, 0]]
    scorer = LuceneBM25().index(docs, 5)
    sparse = scorer.score_sparse([[1], [2, 2, 2], [4], []])
    assert [sorted(sparse[i].indices.tolist()) for i in range(4)] == [[0, 1], [1, 4], [], []]
    assert np.array_equal(sparse.toarray(), scorer.score_batch([[1], [2, 2, 2], [4], []]))


@pytest.mark.parametrize("block_scores", [1 << 24, 1])
def test_run_from_sparse_blocks_equals_ranking_dense_rows(nq_utd, monkeypatch, block_scores):
    """The retriever's run (bounded blocks, sparse products) equals the top 100 of each full dense
    score row ranked by the tie rule, documents scoring 0 left out: same documents, order, scores;
    also with blocks of one query (a corpus as large as the block bound)."""
    monkeypatch.setattr(lexical, "BLOCK_SCORES", block_scores)
    ds = load_dataset(nq_utd, split="test")
    queries = {**{q: ds.queries[q] for q in list(ds.queries)[:40]}, **REPEATS}
    for corpus in (ds.corpus, ds.sole_corpus(ds.corpus.sources[0])):
        run = BM25().retrieve(corpus, queries, 100)
        analyzer, vocab = EnglishAnalyzer(), {}
        scorer = LuceneBM25().index(analyzer.to_ids(corpus.retrieval_texts(), vocab, grow=True), len(vocab))
        rows = scorer.score_batch(analyzer.to_ids(list(queries.values()), vocab, grow=False))
        positions, scores = rank_rows(corpus, list(queries), rows, 100, only_matching=True)
        for q in queries:
            assert run.positions[q].tolist() == positions[q].tolist(), q
            assert np.array_equal(run.scores[q], scores[q]), q
        assert len(run.positions["R3"]) == 0  # stop words only: nothing matches
        assert len(run.positions["R2"]) > 0


@pytest.mark.parametrize("block", [1, 7, 50])
def test_posting_scores_by_blocks_of_terms_equal_one_block(monkeypatch, block):
    """The postings' scores computed a block of terms at a time equal those computed in one
    block, to the bit (blocks of one posting, of a few terms, a term alone larger than a block),
    and so do the scores of queries (boosts 3 and 5 read the stored frequencies)."""
    from sourcebias.retrieval import lucene

    rng = np.random.default_rng(block)
    docs = [rng.integers(0, 60, size=int(n)).tolist() for n in rng.integers(0, 120, size=400)]
    docs[0] = [9] * 300  # one term's postings span several blocks
    queries = [rng.integers(0, 60, size=int(n)).tolist() for n in rng.integers(0, 9, size=40)] + [[7, 7, 7], [5] * 5, [9, 9, 9]]
    whole = LuceneBM25().index(docs, 60)
    monkeypatch.setattr(lucene, "POSTING_BLOCK", block)
    blocks = LuceneBM25().index(docs, 60)
    a, b = whole._matrix, blocks._matrix
    assert a.dtype == b.dtype and np.array_equal(a.data, b.data) and np.array_equal(a.indices, b.indices) and np.array_equal(a.indptr, b.indptr)
    assert whole._freqs.dtype == blocks._freqs.dtype and np.array_equal(whole._freqs, blocks._freqs)
    assert np.array_equal(whole.score_batch(queries), blocks.score_batch(queries))


@pytest.mark.parametrize("top", [255, 256, 70000])
def test_boosts_that_are_not_powers_of_two_score_from_the_stored_frequencies(top):
    """A term repeated 3 or 5 times in a query is scored anew from each posting's frequency, kept in
    the smallest integer type (uint8 to 255, uint16, uint32): the score is the module's formula
    computed here per document in float32 (``weight = (float) n * idf``; ``weight - weight / (1 +
    freq * cache[norm])``), to the bit, for frequencies at and past each type's limit."""
    from sourcebias.retrieval.lucene import encode_lengths, norm_cache

    rng = np.random.default_rng(top)
    docs = [rng.integers(0, 30, size=int(n)).tolist() for n in rng.integers(1, 80, size=200)]
    docs[3] = [4] * top + [5, 6]  # term 4 at the frequency under test
    index = LuceneBM25().index(docs, 30)
    assert index._freqs.dtype == (np.uint8 if top <= 255 else np.uint16 if top <= 65535 else np.uint32)
    lengths = np.array([len(d) for d in docs])
    cache = norm_cache(1.2, 0.75, np.float32(lengths.sum() / len(docs)))[encode_lengths(lengths)]
    for n in (3, 5):
        got = index.score_batch([[4] * n])[0]
        weight = np.float32(n) * index.idf[4]
        expected = np.zeros(len(docs), dtype=np.float32)
        for i, d in enumerate(docs):
            freq = np.float32(d.count(4))
            if freq:
                expected[i] = weight - weight / (np.float32(1.0) + freq * cache[i])
        assert got.dtype == np.float32 and np.array_equal(got, expected)
