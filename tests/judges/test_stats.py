"""The judges' statistics against hand-worked values and independent computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sourcebias.clustered import interval_refusal
from sourcebias.judges.stats import clustered_mean, kappa, kendall, pairwise_effects


def test_clustered_mean_hand_worked():
    # query sums 2 (a: 1, 1), 0 (b: 0), 1 (c: -1, 1, 1), 1 (d: 1), -1 (e: -1); one missing value left out
    v = [1, 1, 0, float("nan"), -1, 1, 1, 1, -1]
    q = ["a", "a", "b", "b", "c", "c", "c", "d", "e"]
    r = clustered_mean(v, q)
    assert r["estimate"] == pytest.approx(3 / 8)
    assert (r["items"], r["queries"], r["missing"]) == (8, 5, 1) and r["refused"] == ""
    # exact sign flips of the non-zero sums (2, 1, 1, -1), T = 3: the three unit terms sum to 3, 1
    # (three ways), -1 (three ways) or -3; with +2 the totals 5, 3, 3, 3 reach |3|, with -2 the
    # totals -3, -3, -3, -5: 8 of the 16 patterns
    d = np.array([2, 1, 1, -1])
    assert r["p"] == pytest.approx(np.mean([abs(np.dot(s, d)) >= 3 for s in itertools.product((1, -1), repeat=4)]))
    assert r["p"] == pytest.approx(8 / 16) and "exact" in r["p_method"]


def test_clustered_ci_is_statsmodels_cr1_t_interval():
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, size=30)
    q = [f"q{i}" for i, n in enumerate(sizes) for _ in range(n)]
    v = rng.normal(0.3, 1.0, size=len(q))
    r = clustered_mean(v.tolist(), q)
    _, codes = np.unique(q, return_inverse=True)
    fit = sm.OLS(v, np.ones((len(v), 1))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    assert (r["low"], r["high"]) == pytest.approx(tuple(fit.conf_int(0.05)[0]))
    assert r["estimate"] == pytest.approx(v.mean()) and r["ci_method"].startswith("cluster-robust (CR1) t")


def test_clustered_mean_degenerate_cases_say_so():
    none = clustered_mean([float("nan")], ["a"])
    assert math.isnan(none["estimate"]) and none["ci_method"].startswith("none (nothing to estimate from") and none["missing"] == 1
    one = clustered_mean([1.0, 2.0], ["a", "a"])
    assert one["estimate"] == 1.5 and one["ci_method"].startswith("none (fewer than 2 queries") and math.isnan(one["p"])


def test_one_to_four_queries_give_no_interval_and_no_p():
    """Issue 38, point 5: one query printed +0.400 [–, –] p 1, three gave [+0.000, +0.500] from 10
    distinct resamples: the audit's rule refuses both, and now the judge's too."""
    for n in (1, 2, 3, 4):
        v = [0.0, 1.0] * n
        r = clustered_mean(v, [f"q{i // 2}" for i in range(2 * n)])
        assert r["estimate"] == 0.5 and math.isnan(r["low"]) and math.isnan(r["p"]) and r["refused"] == interval_refusal(n, 0.95)
    five = clustered_mean([0.0, 1.0, 1.0, 1.0, 0.0], list("abcde"))
    assert five["refused"] == "" and math.isfinite(five["low"]) and math.isfinite(five["p"])
    same = clustered_mean([0.0] * 5, list("abcde"))
    assert same["p"] == 1.0 and math.isnan(same["low"]) and "no variation" in same["note"]  # never a zero-width interval


def test_pairwise_effects_hand_worked():
    # pair 1 picks the LLM copy in both orders (source +1/2); pair 2 the human copy in both (-1/2);
    # pair 3 picks the first passage both times (position +1/2); pair 4 the second (-1/2)
    hf = [1, 0, 0, 1, float("nan")]
    lf = [1, 0, 1, 0, 1]
    r = pairwise_effects(hf, lf, ["a", "b", "c", "d", "e"])
    assert r["pairs"] == 4 and r["consistent"] == pytest.approx(0.5)
    assert r["source"]["estimate"] == pytest.approx((0.5 - 0.5 + 0 + 0) / 4)
    assert r["position"]["estimate"] == pytest.approx((0 + 0 + 0.5 - 0.5) / 4)
    r2 = pairwise_effects([0, 0], [1, 1], ["a", "b"])  # always the first passage
    assert r2["position"]["estimate"] == 0.5 and r2["source"]["estimate"] == 0.0


def test_kappa_hand_worked():
    # po = 3/4; marginals (1,1,2,0) and (1,1,1,1) of 4: pe = (1+1+2+0)/16; κ = (po - pe) / (1 - pe)
    r = kappa([0, 1, 2, 2], [0, 1, 2, 3])
    assert r["kappa"] == pytest.approx((0.75 - 0.25) / 0.75) and r["items"] == 4
    assert "undefined" in kappa([1, 1], [1, 1])["note"]
    assert kappa([float("nan")], [1])["items"] == 0


def test_kappa_is_refused_when_one_side_gives_one_label():
    """NFCorpus's judgements hold relevant documents only: with the assessors' labels all relevant,
    p_o = p_e = the judge's share relevant, so κ = 0 whatever the judge says (scikit-learn: 0).
    It is refused, with the judge's shares given (here 2 of 4 relevant: 0.50 / 0.50)."""
    from sklearn.metrics import cohen_kappa_score

    assert cohen_kappa_score([1, 1, 1, 1], [0, 1, 1, 0]) == 0 == cohen_kappa_score([1, 1, 1, 1], [1, 1, 1, 0])  # what would print
    r = kappa([1, 2, 1, 1], [0, 2, 3, 0], same_scale=False)
    assert math.isnan(r["kappa_binary"]) and r["items"] == 4
    assert r["note"].startswith(
        "binary κ not computed: the assessors give every one of the 4 items the label relevant, so κ is 0 whatever the other side says;"
        " the other side's shares: not relevant 0.50, relevant 0.50"
    )
    judge_constant = kappa([0, 1, 2, 0], [2, 2, 2, 2])
    assert math.isnan(judge_constant["kappa_binary"]) and math.isnan(judge_constant["kappa"])
    assert "the judge gives every one of the 4 items the label relevant" in judge_constant["note"]
    assert "graded κ not computed: the judge gives every one of the 4 items the label 2" in judge_constant["note"]


def test_kendall_hand_worked():
    # orderings (1,2,3) vs (1,3,2): 2 concordant, 1 discordant pair: τ = 1/3
    assert kendall([1, 2, 3], [1, 3, 2])["tau"] == pytest.approx(1 / 3)
    assert kendall([1.0], [2.0])["note"].startswith("undefined")
    assert math.isnan(kendall([1, 1, 1], [1, 2, 3])["tau"])


def test_kendall_gives_no_p_for_two_systems():
    """Issue 38, point 8: two systems printed τ +1.000 p 1; τ is ±1 there whatever the scores."""
    two = kendall([0.3, 0.5], [0.2, 0.4])
    assert two["tau"] == 1.0 and math.isnan(two["p"]) and "no p" in two["note"]
    assert kendall([1, 2, 3], [1, 2, 3])["p"] == pytest.approx(1 / 3)  # 3 systems: scipy's exact p


def test_orderings_compare_systems_on_their_common_queries():
    """Issue 38, point 8: under the assessors' qrels a and b are ordered on queries 1-4, under the
    judge's on 3-4 only; compared on all of each side's queries the two orderings disagree (a's
    mean 0.55 > b's 0.425 under the assessors, a < b under the judge), on the common ones (3, 4) they
    agree: a 0.2 < b 0.3 under both."""
    from sourcebias.judges.protocol import ordering

    assessors = {"a": {"1": 0.9, "2": 0.9, "3": 0.1, "4": 0.3}, "b": {"1": 0.5, "2": 0.6, "3": 0.3, "4": 0.3}, "c": {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.1}}
    judge = {"a": {"3": 0.2, "4": 0.2}, "b": {"3": 0.4, "4": 0.2}, "c": {"3": 0.0, "4": 0.0}}
    row = ordering(assessors, judge, ["a", "b", "c"], "judge-human", "NDCG@10")
    # common queries 3 and 4: assessors a 0.2, b 0.3, c 0.05; judge a 0.2, b 0.3, c 0.0: the same order, tau 1
    assert (row["queries"], row["queries_assessors"], row["queries_judge"]) == (2, 4, 2)
    assert row["tau"] == pytest.approx(1.0) and row["p"] == pytest.approx(1 / 3)  # 3 systems: scipy's exact p
    assert "on the 2 queries both qrels evaluate (assessors 4, judge 2)" in row["note"]
