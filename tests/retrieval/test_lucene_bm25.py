"""BM25 as Lucene/Elasticsearch computes it: one-byte length norms (SmallFloat) and float32
arithmetic, checked against values worked out by hand from Lucene's documented algorithm."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.retrieval.lucene import LENGTH_TABLE, LuceneBM25, byte4_to_int, int_to_byte4

f32 = np.float32


def roundtrip(n: int) -> int:
    return byte4_to_int(int_to_byte4(n))


def test_lengths_up_to_40_are_exact():
    assert [roundtrip(n) for n in range(41)] == list(range(41))
    assert [int_to_byte4(n) for n in range(41)] == list(range(41))  # the code equals the length there


@pytest.mark.parametrize(
    "length, decoded, code",
    [
        # worked by hand: n < 24 is stored as is; else 24 + longToInt4(n - 24), which keeps the top
        # 4 bits of n - 24 (the highest implicit): shift = bit_length(n - 24) - 4
        (41, 40, 40),  # 17 = 0b10001 -> shift 1 -> 0b1000 -> 16 -> 24 + 16
        (42, 42, 41),  # 18 -> 0b1001 << 1 = 18
        (43, 42, 41),
        (47, 46, 43),  # 23 -> 0b1011 << 1 = 22
        (48, 48, 44),  # 24 -> 0b1100 << 1 = 24
        (55, 54, 47),  # 31 -> 0b1111 << 1 = 30
        (56, 56, 48),  # 32 = 0b100000 -> shift 2 -> 0b1000 << 2 = 32; code (shift + 1) << 3 = 24
        (100, 96, 57),  # 76 = 0b1001100 -> shift 3 -> 0b1001 << 3 = 72
        (1000, 984, 87),  # 976 = 0b1111010000 -> shift 6 -> 0b1111 << 6 = 960
        (2**20, 983064, 167),  # 2^20 - 24 -> shift 16 -> 0b1111 << 16; code 24 + (7 | 17 << 3)
        (2**31 - 1, 2013265944, 255),  # Integer.MAX_VALUE -> the largest code
    ],
)
def test_rounding_above_40(length, decoded, code):
    assert int_to_byte4(length) == code
    assert byte4_to_int(code) == decoded == roundtrip(length)


def test_decoding_is_monotone_and_never_above():
    prev = -1
    for n in list(range(0, 5000)) + [10**6, 10**8]:
        d = roundtrip(n)
        assert d <= n and d >= prev
        prev = d
    assert LENGTH_TABLE.dtype == np.float32 and LENGTH_TABLE[255] == f32(2013265944)


def hand_scores(docs, query, k1=1.2, b=0.75, norms=True):
    """Lucene's BM25Similarity written out step by step (float32 where Java uses float)."""
    n_docs = len(docs)
    lengths = [len(d) for d in docs]
    avgdl = f32(sum(lengths) / float(n_docs))  # (float) (sumTotalTermFreq / (double) docCount)
    out = np.zeros(n_docs, dtype=np.float32)
    # Lucene merges n repeated SHOULD clauses into one BoostQuery of boost (float) n
    clauses = {term: query.count(term) for term in query}
    for j, d in enumerate(docs):
        total = 0.0  # Lucene sums clause scores in double
        for term, boost in clauses.items():
            freq = d.count(term)
            if not freq:
                continue
            df = sum(term in other for other in docs)
            idf = f32(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)))  # (float) Math.log(...) in double
            dl = f32(byte4_to_int(int_to_byte4(lengths[j]))) if norms else f32(lengths[j])
            inv = f32(1) / (f32(k1) * ((f32(1) - f32(b)) + f32(b) * dl / avgdl))
            weight = f32(boost) * idf  # BM25Scorer: this.weight = boost * idf (float)
            total += float(weight - weight / (f32(1) + f32(freq) * inv))
        out[j] = f32(total)
    return out


def corpus():
    rng = np.random.default_rng(7)
    vocab = list(range(12))
    # lengths around the rounding: exact (3, 30), rounded (45, 100, 137)
    return [list(rng.choice(vocab, size=n)) for n in (3, 30, 45, 100, 137)]


@pytest.mark.parametrize("norms", ["lucene", "exact"])
def test_scores_equal_the_hand_computation_bit_for_bit(norms):
    docs = corpus()
    # repeated terms: boosts 2 and 4 (exact multiples) and 3, 5, 6 (float32 weight rounded anew)
    queries = [[0], [1, 5], [2, 2, 7], [11, 3, 0, 9], [2, 2, 2, 7], [3] * 5 + [4] * 6 + [8] * 4]
    scorer = LuceneBM25(norms=norms).index(docs, 12)
    got = scorer.score_batch(queries)
    assert got.dtype == np.float32
    for qi, q in enumerate(queries):
        expected = hand_scores(docs, q, norms=norms == "lucene")
        np.testing.assert_array_equal(got[qi], expected)  # to the last bit


def test_lucene_norms_change_only_long_documents():
    docs = corpus()
    a = LuceneBM25(norms="lucene").index(docs, 12).score_batch([[4]])[0]
    b = LuceneBM25(norms="exact").index(docs, 12).score_batch([[4]])[0]
    assert a[0] == b[0] and a[1] == b[1]  # 3 and 30 terms are stored exactly
    assert a[3] != b[3]  # 100 terms are stored as 96: a shorter document scores higher
    if b[3] > 0:
        assert a[3] > b[3]


def test_exact_norms_agree_with_bm25s():
    import bm25s

    docs = corpus()
    mine = LuceneBM25(norms="exact").index(docs, 12).score_batch([[1, 5], [7]])
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index(([list(map(int, d)) for d in docs], {str(i): i for i in range(12)}), show_progress=False)
    theirs = np.stack([model.get_scores([1, 5]), model.get_scores([7])])
    np.testing.assert_allclose(mine, theirs, rtol=2e-6)  # bm25s sums in another order


def test_documents_without_a_query_term_score_zero():
    docs = [[0, 1], [2, 3], []]
    s = LuceneBM25().index(docs, 4).score_batch([[0], [9 - 6]])
    assert s[0, 1] == 0 and s[0, 2] == 0 and s[0, 0] > 0 and s[1, 1] > 0


def test_a_term_repeated_three_times_is_one_clause_of_boost_3():
    """Worked by hand for one posting (Lucene's BM25Scorer with boost 3): idf and the length cache
    as Lucene computes them, then weight = 3f * idf rounded to float32 before the division.
    Document [0] among [[0], [1], [1, 1, 1]]: docCount 3, df(0) = 1, avgdl = (float) 5 / 3,
    length 1, freq 1."""
    docs = [[0], [1], [1, 1, 1]]
    idf = f32(math.log(1 + (3 - 1 + 0.5) / (1 + 0.5)))  # ln(1 + 2.5 / 1.5), rounded to float
    avgdl = f32(5 / 3)
    cache = f32(1) / (f32(1.2) * ((f32(1) - f32(0.75)) + f32(0.75) * f32(1) / avgdl))
    weight = f32(3) * idf
    expected = weight - weight / (f32(1) + f32(1) * cache)
    scorer = LuceneBM25().index(docs, 2)
    got = scorer.score_batch([[0, 0, 0]])
    assert got[0, 0] == expected and got[0, 1] == 0 and got[0, 2] == 0
    # here three times the single term's float32 score is one ulp off: the boost is not a factor
    single = scorer.score_batch([[0]])[0, 0]
    assert f32(3 * float(single)) != expected


def test_empty_batch_and_empty_query():
    scorer = LuceneBM25().index([[0], [1]], 2)
    assert scorer.score_batch([]).shape == (0, 2)
    assert (scorer.score_batch([[]]) == 0).all()
