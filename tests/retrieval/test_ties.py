"""The tie-breaking rule: deterministic, independent of corpus order, favours no source."""

import numpy as np
import pytest
from scipy import stats

from sourcebias.data import Corpus
from sourcebias.retrieval import rank_rows, select_top, tie_keys


def twin_corpus(n: int, sources=("human", "llm")) -> Corpus:
    ids = [f"d{i}" for i in range(n) for _ in sources]
    srcs = [s for _ in range(n) for s in sources]
    return Corpus(ids, srcs, [""] * len(ids), ["same text"] * len(ids))


def first_source_share(corpus: Corpus, n_queries: int, seed: int = 0) -> float:
    """Rank a corpus where every document ties; share of queries where a human doc is first."""
    qids = [f"q{i}" for i in range(n_queries)]
    rows = [np.ones(len(corpus), dtype=np.float32)] * n_queries
    pos, _ = rank_rows(corpus, qids, rows, depth=1, seed=seed)
    return float(np.mean([corpus.source_of(int(pos[q][0])) == "human" for q in qids]))


def test_ties_favour_no_source():
    corpus = twin_corpus(2)
    n = 4000
    share = first_source_share(corpus, n)
    # Two-sided binomial test against 1/2; a fixed seed makes this deterministic.
    assert stats.binomtest(round(share * n), n, 0.5).pvalue > 0.01
    # Pairwise: for each twin pair, which copy comes first is a fair coin over queries.
    qids = [f"q{i}" for i in range(2000)]
    pos, _ = rank_rows(corpus, qids, [np.ones(4, dtype=np.float32)] * len(qids), depth=4)
    human_before = [next(corpus.source_of(int(p)) for p in pos[q] if corpus.doc_ids[int(p)] == "d0") == "human" for q in qids]
    assert stats.binomtest(sum(human_before), len(qids), 0.5).pvalue > 0.01


def test_source_names_and_order_do_not_matter():
    a = first_source_share(twin_corpus(3, ("human", "llm")), 2000)
    b = first_source_share(twin_corpus(3, ("llm", "human")), 2000)
    assert a == b  # listing order of sources changes nothing
    c = first_source_share(twin_corpus(3, ("human", "zzz-llm")), 2000)
    assert stats.binomtest(round(c * 2000), 2000, 0.5).pvalue > 0.01


def ranking_keys(corpus, pos):
    return [(corpus.doc_ids[int(p)], corpus.source_of(int(p))) for p in pos]


def test_deterministic_and_independent_of_corpus_order():
    corpus = twin_corpus(50)
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 5, size=len(corpus)).astype(np.float32)  # many ties
    pos, _ = rank_rows(corpus, ["q"], [scores], depth=40)
    again, _ = rank_rows(corpus, ["q"], [scores], depth=40)
    assert ranking_keys(corpus, pos["q"]) == ranking_keys(corpus, again["q"])
    perm = rng.permutation(len(corpus))
    shuffled = corpus.take(perm)
    pos2, _ = rank_rows(shuffled, ["q"], [scores[perm]], depth=40)
    assert ranking_keys(corpus, pos["q"]) == ranking_keys(shuffled, pos2["q"])


def test_scores_decide_before_ties_and_seed_changes_tie_order():
    corpus = twin_corpus(30)
    scores = np.zeros(len(corpus), dtype=np.float32)
    scores[5] = 2.0
    scores[7] = 1.0
    orders = set()
    for seed in range(5):
        pos, sc = rank_rows(corpus, ["q"], [scores], depth=len(corpus), seed=seed)
        assert pos["q"][0] == 5 and pos["q"][1] == 7
        assert np.all(np.diff(sc["q"]) <= 0)
        orders.add(tuple(pos["q"][2:].tolist()))
    assert len(orders) == 5


def test_cut_off_inside_a_tie_uses_the_rule():
    """Which tied documents make the top k is decided by the rule, as in a full sort."""
    rng = np.random.default_rng(0)
    n = 1000
    scores = rng.integers(0, 3, size=n).astype(np.float64)
    keys = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64)
    positions = np.arange(n)
    full = np.lexsort((positions, keys, -scores))
    for k in (1, 10, 333, 999, 1000, 5000):
        assert select_top(scores, keys, positions, k).tolist() == full[:k].tolist()


@pytest.mark.parametrize("seed", range(6))
def test_the_top_k_is_the_three_key_sort_whatever_the_ties(seed):
    """select_top (a partition, then the candidates sorted) gives rank_order's full three-key
    sort of every document: few ties, many, all equal, equal keys decided by position, -0.0
    beside 0.0, -inf, keys given as an array or computed for the candidates only."""
    from sourcebias.retrieval.ties import rank_order

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    levels = [n, 50, 3, 1, 2, 10][seed]
    scores = rng.integers(0, levels, size=n).astype(np.float32) / 7
    scores[rng.random(n) < 0.05] = -0.0
    scores[rng.random(n) < 0.02] = -np.inf
    keys = rng.integers(0, 4 if seed == 4 else 2**62, size=n).astype(np.uint64)
    positions = rng.permutation(n) + 10
    full = rank_order(scores, keys, positions)
    asked: list[int] = []
    key_at = dict(zip(positions.tolist(), keys.tolist()))

    def keys_of(pos):
        asked.extend(pos.tolist())
        return np.array([key_at[p] for p in pos.tolist()], dtype=np.uint64)

    for k in (1, 7, n // 2 + 1, n, n + 5):
        assert select_top(scores, keys, positions, k).tolist() == full[:k].tolist()
        assert select_top(scores, keys_of, positions, k).tolist() == full[:k].tolist()
    assert set(asked) <= set(positions.tolist())


def test_keys_depend_on_query():
    h = twin_corpus(1).key_hashes()
    assert not np.array_equal(tie_keys(h, "q1"), tie_keys(h, "q2"))
    assert np.array_equal(tie_keys(h, "q1", seed=3), tie_keys(h, "q1", seed=3))


def test_nan_scores_rank_last():
    scores = np.array([np.nan, 1.0, 0.5])
    out = select_top(scores, np.zeros(3, dtype=np.uint64), np.arange(3), 3)
    assert out.tolist() == [1, 2, 0]


@pytest.mark.parametrize("depth", [0, 1])
def test_depth_edge_cases(depth):
    out = select_top(np.array([1.0, 2.0]), np.zeros(2, dtype=np.uint64), np.arange(2), depth)
    assert len(out) == depth


@pytest.mark.parametrize("seed", range(8))
def test_rank_order_of_float32_scores_is_the_three_key_lexsort(seed):
    """The one-sort path of float32 scores equals numpy's three-key lexsort: ties, -0.0 beside
    0.0, negative scores, infinities, and keys whose upper 32 bits are equal (where positions,
    then the low bits, must decide: the lexsort path)."""
    from sourcebias.retrieval.ties import rank_order

    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 2500))
    scores = (rng.integers(-5, [n, 40, 3, 2, 10, n, 6, 1][seed], size=n) / 3).astype(np.float32)
    scores[rng.random(n) < 0.05] = -0.0
    scores[rng.random(n) < 0.02] = -np.inf
    scores[rng.random(n) < 0.02] = np.inf
    if seed in (3, 7):  # the upper halves of the keys collide: lexsort decides
        keys = (np.uint64(7) << np.uint64(32)) | rng.integers(0, 3, size=n).astype(np.uint64)
    else:
        keys = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64)
    positions = rng.permutation(n)
    assert rank_order(scores, keys, positions).tolist() == np.lexsort((positions, keys, -scores)).tolist()


@pytest.mark.parametrize("case", ["ties", "distinct", "sample-favoured", "all-equal"])
def test_long_rows_narrowed_by_a_sample_give_the_same_top(case):
    """Rows past PREFILTER_MIN are narrowed by every 16th score's threshold before the partition;
    the candidates (the k best and every score tied with the k-th) and the top k are those of the
    plain partition, numpy's ``np.partition`` over the whole row, also when the sample misleads
    (every 16th score the largest: fewer than k reach its threshold, so the whole row is used)."""
    from sourcebias.retrieval.ties import PREFILTER_MIN, _at_least_kth, rank_order

    rng = np.random.default_rng(7)
    n = 3 * PREFILTER_MIN + 5
    scores = {
        "ties": rng.integers(0, 300, size=n).astype(np.float32) / 7,
        "distinct": rng.gamma(2.0, 3.0, size=n).astype(np.float32),
        "sample-favoured": np.where(np.arange(n) % 16 == 0, np.float32(100), rng.random(n).astype(np.float32)),
        "all-equal": np.full(n, 2.5, dtype=np.float32),
    }[case]
    keys = rng.integers(0, 2**62, size=n).astype(np.uint64)
    positions = np.arange(n)
    for k in (1, 1000, 2000, n // 8):
        kth = np.partition(scores, n - k)[n - k]
        assert _at_least_kth(scores, k).tolist() == np.flatnonzero(scores >= kth).tolist()
        assert select_top(scores, keys, positions, k).tolist() == rank_order(scores, keys, positions)[:k].tolist()
