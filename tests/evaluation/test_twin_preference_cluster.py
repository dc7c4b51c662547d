"""Twin preference's query-clustered inference: the exact sign-flip p against an enumeration
written out here, its size on clustered synthetic data with no effect (against the pair sign
test's), and the values on nq-utd with BM25 against counts read back from the written run.

Size (test_size_on_clustered_pairs_without_effect, 1,000 studies of 40 queries, 1-3 decided
pairs per query, a per-query propensity ~ Beta(0.8, 0.8), as in benchmarks/power_validation.py;
seed 20261123): the clustered test rejects 3.5% at α = 0.05 (199 seeded flips), the pair sign
test 8.6%; the Monte Carlo standard error of a 5% rate over 1,000 studies is 0.7%. With the
first 12 queries of each study (the exact path) the clustered test rejects 3.3%, the pair sign
test 7.5%.
"""

from __future__ import annotations

import csv
import itertools

import numpy as np
import pytest
from conftest import LLAMA
from scipy import stats

from sourcebias.cli.main import main
from sourcebias.evaluation.stats.twin_preference import cluster_sign_flip_test


def test_exact_sign_flip_p_is_the_enumeration():
    # per query: llm_first, human_first -> d = 2, -1, 0, 3, 1 (q3's 1-1 is decided but d = 0)
    res = cluster_sign_flip_test([2, 0, 1, 3, 1], [0, 1, 1, 0, 0], n_resamples=10)
    # T = 5; the 16 sign patterns of (2, 1, 3, 1) give the sums 7 - 2 * (sum of the flipped ones):
    # flipped {}:7 {2}:3 {1}:5 {3}:1 {1'}:5 {2,1}:1 {2,3}:-3 {2,1'}:1 {1,3}:-1 {1,1'}:3 {3,1'}:-1
    # {2,1,3}:-5 {2,1,1'}:-1 {2,3,1'}:-5 {1,3,1'}:-3 {all}:-7 -> |sum| >= 5 in 6 of 16.
    assert res["p"] == 6 / 16 and res["method"].startswith("exact") and res["resamples"] == 16 and res["queries"] == 5
    d = np.array([2, -1, 3, 1])
    sums = [abs(np.dot(s, d)) for s in itertools.product((1, -1), repeat=4)]
    assert res["p"] == np.mean(np.array(sums) >= 5)  # the same, enumerated


def test_exact_p_matches_enumeration_on_random_counts():
    rng = np.random.default_rng(7)
    for _ in range(20):
        m = int(rng.integers(1, 13))
        a, b = rng.integers(0, 4, m), rng.integers(0, 4, m)
        d = (a - b)[a != b]
        t = abs(d.sum())
        sums = np.array([abs(np.dot(s, d)) for s in itertools.product((1, -1), repeat=len(d))]) if len(d) else np.array([0])
        assert cluster_sign_flip_test(a, b)["p"] == pytest.approx(np.mean(sums >= t) if (a + b).any() else np.nan, nan_ok=True)


def test_exact_and_seeded_extremes():
    # 20 queries all LLM-first: only the two all-equal patterns reach |T| = 20
    exact = cluster_sign_flip_test([1] * 20, [0] * 20)
    assert exact["p"] == 2 / 2**20 and exact["resamples"] == 2**20
    # 25 queries: seeded flips; a random pattern reaches |T| = 25 with probability 2^-24, so
    # (almost surely) none of the 999 does and p = 1 / (1 + 999), never 0
    seeded = cluster_sign_flip_test([1] * 25, [0] * 25, n_resamples=999, seed=4)
    assert seeded["p"] == 1 / 1000 and seeded["method"].startswith("seeded") and seeded["resamples"] == 999
    assert seeded == cluster_sign_flip_test([1] * 25, [0] * 25, n_resamples=999, seed=4)
    assert cluster_sign_flip_test([1, 2], [1, 2])["p"] == 1.0  # no query leans either way
    assert np.isnan(cluster_sign_flip_test([0, 0], [0, 0])["p"])  # no decided pair


def cr1_rate_interval(lf: np.ndarray, hf: np.ndarray) -> tuple[float, float]:
    """The rate's CI as statsmodels computes it: OLS of d = ±1 per decided pair on a constant,
    standard errors clustered by query, t with G - 1 df, mapped to (1 + d) / 2."""
    import statsmodels.api as sm

    d = np.concatenate([np.r_[np.ones(a), -np.ones(b)] for a, b in zip(lf, hf)])
    g = np.concatenate([np.full(a + b, q) for q, (a, b) in enumerate(zip(lf, hf))])
    low, high = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True).conf_int(0.05)[0]
    return (1 + low) / 2, (1 + high) / 2


def test_cluster_ci_is_statsmodels_cr1_on_the_pairs():
    from sourcebias.clustered import get_estimator

    a, b = np.array([3, 0, 2, 1, 4, 0, 1]), np.array([0, 2, 1, 1, 0, 3, 0])
    e = get_estimator("mean_difference").from_query_sums(a - b, a + b)
    assert ((1 + e.low) / 2, (1 + e.high) / 2) == pytest.approx(cr1_rate_interval(a, b))
    assert e.estimate == pytest.approx(2 * a.sum() / (a + b).sum() - 1)
    same = get_estimator("mean_difference").from_query_sums(np.zeros(6), [2, 4, 6, 2, 2, 2])
    assert same.p == 1.0 and np.isnan(same.low) and "no variation" in same.note  # no zero-width interval


def test_size_on_clustered_pairs_without_effect():
    studies, queries = 1000, 40
    rng = np.random.default_rng(20261123)
    m = rng.integers(1, 4, (studies, queries))
    a = rng.binomial(m, rng.beta(0.8, 0.8, (studies, queries)))  # symmetric propensity: rate 1/2
    p_cluster = np.array([cluster_sign_flip_test(a[i], m[i] - a[i], n_resamples=199, seed=i)["p"] for i in range(studies)])
    p_pairs = stats.binom.cdf(np.minimum(a.sum(1), m.sum(1) - a.sum(1)), m.sum(1), 0.5) * 2  # the exact sign test, vectorised
    size_cluster, size_pairs = np.mean(p_cluster < 0.05), np.mean(np.minimum(p_pairs, 1) < 0.05)
    assert 0.03 <= size_cluster <= 0.07, size_cluster  # 0.035 with this seed
    assert size_pairs >= 0.075, size_pairs  # 0.086: anti-conservative when pairs cluster by query
    assert np.all((p_cluster > 0) & (p_cluster <= 1))
    # the exact path (12 queries): valid, conservative by discreteness (0.033; the pair sign test 0.075)
    p_exact = np.array([cluster_sign_flip_test(a[i, :12], m[i, :12] - a[i, :12])["p"] for i in range(studies)])
    assert np.mean(p_exact < 0.05) <= 0.07


def test_nq_utd_bm25_values(nq_utd, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_utd), "--retriever", "bm25", "--split", "test", "--k", "3", "--output", str(out)])
    assert info.value.code in (0, None)
    with (out / "statistics.csv").open() as fh:
        row = next(r for r in csv.DictReader(fh) if r["retriever"] == "bm25" and r["twin_pref_rate"])
    table = {r["docno"]: (r["doc_id"], r["source"]) for r in csv.DictReader((out / "runs" / "docnos.tsv").open(), delimiter="\t")}
    run: dict[str, dict] = {}
    for line in (out / "runs" / "bm25.mixed.trec").open():
        q, _, docno, rank, score, _ = line.split()
        run.setdefault(q, {})[table[docno]] = (int(rank), float(score))
    labels: dict[str, dict[str, int]] = {}
    for line in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        labels.setdefault(q, {})[d] = int(g)
    per_query = []
    for q, lab in labels.items():
        lf = hf = 0
        for d, grade in lab.items():
            h, g = run.get(q, {}).get((d, "human")), run.get(q, {}).get((d, LLAMA))
            if grade <= 0 or (h is None and g is None) or (h and g and h[1] == g[1]):
                continue
            lf, hf = (lf + 1, hf) if h is None or (g is not None and g[0] < h[0]) else (lf, hf + 1)
        per_query.append((lf, hf))
    lf, hf = np.array(per_query).T
    assert int(row["twin_pref_pairs"]) == lf.sum() + hf.sum() and float(row["twin_pref_rate"]) == pytest.approx(lf.sum() / (lf.sum() + hf.sum()))
    assert float(row["twin_pref_p"]) == pytest.approx(stats.binomtest(int(lf.sum()), int(lf.sum() + hf.sum())).pvalue)
    assert int(row["twin_pref_queries"]) == np.count_nonzero(lf + hf)
    p = float(row["twin_pref_p_cluster"])
    assert 0 < p <= 1 and row["twin_pref_p_method"] == "seeded sign-flip over queries (10,000 sign patterns)"
    keep = (lf + hf) > 0
    assert (float(row["twin_pref_ci_low"]), float(row["twin_pref_ci_high"])) == pytest.approx(cr1_rate_interval(lf[keep], hf[keep]))
    assert "query-clustered test" in (out / "summary.md").read_text()


@pytest.mark.parametrize("seed", range(4))
def test_pair_counts_equal_a_plain_reading_of_the_rankings(seed):
    """pair_counts (which scans a ranking for the first few relevant documents of a query and
    indexes it past them) against a dict of every ranking, on queries with 0 to 30 relevant
    documents: LLM copy first, human first, ties (equal scores), neither retrieved, unpaired."""
    from sourcebias.data.corpus import Corpus
    from sourcebias.evaluation.stats.twin_preference import pair_counts
    from sourcebias.retrieval.run import Run

    rng = np.random.default_rng(seed)
    n = 400
    ids = [f"d{i}" for i in range(n)]
    has_twin = rng.random(n) < 0.9  # the others are unpaired
    doc_ids = ids + [d for d, t in zip(ids, has_twin) if t]
    sources = ["human"] * n + [LLAMA] * int(has_twin.sum())
    corpus = Corpus(doc_ids, sources, [""] * len(doc_ids), ["text"] * len(doc_ids))
    positions, scores, qrels = {}, {}, {}
    for q in range(40):
        depth = int(rng.integers(1, len(doc_ids)))
        pos = rng.permutation(len(doc_ids))[:depth]
        positions[f"q{q}"] = pos
        scores[f"q{q}"] = np.sort(rng.integers(0, 8, depth).astype(np.float32))[::-1]  # many equal scores
        qrels[f"q{q}"] = {ids[i]: int(rng.integers(-1, 3)) for i in rng.choice(n, size=int(rng.integers(0, 31)), replace=False)}
    run = Run(corpus, "bm25", positions, scores)
    query_ids = [*positions, "q-unranked"]
    qrels["q-unranked"] = {ids[0]: 1}
    got = pair_counts(run, qrels, query_ids, "human", LLAMA)

    lf, hf, ties, neither, unpaired = np.zeros(len(query_ids), int), np.zeros(len(query_ids), int), 0, 0, 0
    for i, q in enumerate(query_ids):
        rank = {int(p): r for r, p in enumerate(positions.get(q, []))}
        for d, grade in qrels[q].items():
            if grade <= 0:
                continue
            ph, pl = corpus.position(d, "human"), corpus.position(d, LLAMA)
            if ph is None or pl is None:
                unpaired += 1
                continue
            h, g = rank.get(ph), rank.get(pl)
            if h is None and g is None:
                neither += 1
            elif h is not None and g is not None and scores[q][h] == scores[q][g]:
                ties += 1
            elif h is None or (g is not None and g < h):
                lf[i] += 1
            else:
                hf[i] += 1
    assert got["llm_first"].tolist() == lf.tolist() and got["human_first"].tolist() == hf.tolist()
    assert (got["ties"], got["neither_retrieved"], got["unpaired"]) == (ties, neither, unpaired)
    assert ties and neither and unpaired and max(len(v) for v in qrels.values()) > 8  # every case met, past the scans
