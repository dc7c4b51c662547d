"""Relative Δ's bootstrap interval follows the package's one rule for intervals over queries.

With 2 to 4 queries the paired bootstrap draws at most C(2n − 1, n) = 3, 10, 35 distinct resamples,
fewer than the 40 that a 95% interval's two 2.5% tails need (hand count: C(7, 4) = 35 < 40 ≤
C(9, 5) = 126): the interval is refused and the method says why; from 5 queries it is BCa's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.evaluation.stats.relative_delta_ci import bootstrap_relative_delta, refused_if_few


@pytest.mark.parametrize(("n", "distinct"), [(2, 3), (3, 10), (4, 35)])
def test_two_to_four_queries_give_no_interval_and_say_why(n: int, distinct: int) -> None:
    rng = np.random.default_rng(n)
    h, g = rng.random(n), rng.random(n) * 0.8
    raw = bootstrap_relative_delta(h, g)
    assert math.isfinite(raw["low"]) and raw["method"] == "BCa"  # the bootstrap alone would print one
    got = refused_if_few(raw)
    assert math.isnan(got["low"]) and math.isnan(got["high"]) and got["estimate"] == raw["estimate"]
    assert (
        got["method"]
        == f"none ({n} queries give {distinct} distinct resamples of the queries, too few for a 95% interval clustered by query (its tails need 40))"
    )


def test_five_queries_keep_their_interval_and_a_90_percent_level_needs_fewer() -> None:
    rng = np.random.default_rng(5)
    h, g = rng.random(5), rng.random(5) * 0.8
    raw = bootstrap_relative_delta(h, g)
    assert refused_if_few(raw) == raw and raw["method"] == "BCa"
    four = bootstrap_relative_delta(h[:4], g[:4], confidence=0.9)  # 35 distinct resamples ≥ the 20 a 90% interval needs
    assert refused_if_few(four) == four


def test_evaluate_prints_relative_delta_without_an_interval_on_four_queries() -> None:
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate
    from sourcebias.evaluation.stats import StatContext, compute_statistics
    from sourcebias.retrieval import build_retriever

    nq = load_dataset("nq-utd")
    for queries, refused in ((4, True), (5, False)):
        result = evaluate(nq, [build_retriever("bm25")], depth=10, sole=False, max_queries=queries, seed=3)
        stats = compute_statistics(result, StatContext(qrels=nq.qrels, measures=["NDCG@10"], bootstrap_resamples=500), ["relative_delta_ci"], correct=False)
        (record,) = stats.records["relative_delta_ci"]
        assert math.isnan(record.rel_delta_ci_low) is refused, (queries, record)
        assert record.ci_method.startswith("none (4 queries give 35") is refused


def test_the_caption_counts_undefined_resamples_only_of_intervals_it_gave() -> None:
    from sourcebias.evaluation.stats.relative_delta_ci import RelativeDeltaCI, RelativeDeltaRecord

    refused = RelativeDeltaRecord("bm25", "llm", "NDCG@1", 200.0, float("nan"), float("nan"), 0.95, "none (4 queries give 35 ...)", 2000, 14, 40)
    given = RelativeDeltaRecord("tfidf", "llm", "NDCG@1", 50.0, 10.0, 90.0, 0.95, "percentile over the finite resamples", 2000, 9, 40)
    caption = RelativeDeltaCI().caption([refused, given])
    assert "tfidf/llm/NDCG@1: 9 of 2,000" in caption and "bm25/llm/NDCG@1" not in caption
