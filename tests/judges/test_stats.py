"""The judges' statistics against hand-worked values and independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.judges.stats import clustered_mean, kappa, kendall, pairwise_effects


def test_clustered_mean_hand_worked():
    # query sums 2 (a: 1, 1), 0 (b: 0), 1 (c: -1, 1, 1); one missing value left out
    v = [1, 1, 0, float("nan"), -1, 1, 1]
    q = ["a", "a", "b", "b", "c", "c", "c"]
    r = clustered_mean(v, q)
    assert r["estimate"] == pytest.approx(3 / 6)
    assert (r["items"], r["queries"], r["missing"]) == (6, 3, 1)
    # exact sign flips of the sums (2, 0, 1): T* in {±3, ±1} twice each; P(T* >= 3) = 2/8, p = 2 · 2/8
    assert r["p"] == pytest.approx(0.5) and "exact" in r["p_method"]


def test_clustered_ci_matches_an_independent_cluster_bootstrap():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, size=30)
    q = [f"q{i}" for i, n in enumerate(sizes) for _ in range(n)]
    v = rng.normal(0.3, 1.0, size=len(q))
    r = clustered_mean(v.tolist(), q, resamples=4000, seed=1)
    # a hand-rolled cluster bootstrap: draw 30 queries with replacement, pool their items
    by_q = {}
    for x, name in zip(v, q):
        by_q.setdefault(name, []).append(x)
    groups = list(by_q.values())
    draws = np.random.default_rng(99).integers(0, len(groups), size=(20_000, len(groups)))
    sums = np.array([sum(g) for g in groups])
    counts = np.array([len(g) for g in groups])
    dist = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    lo, hi = np.percentile(dist, [2.5, 97.5])
    assert r["low"] == pytest.approx(lo, abs=0.03) and r["high"] == pytest.approx(hi, abs=0.03)
    assert r["estimate"] == pytest.approx(v.mean())


def test_clustered_mean_degenerate_cases_say_so():
    none = clustered_mean([float("nan")], ["a"])
    assert math.isnan(none["estimate"]) and none["ci_method"].startswith("none") and none["missing"] == 1
    one = clustered_mean([1.0, 2.0], ["a", "a"])
    assert one["estimate"] == 1.5 and one["ci_method"] == "none (fewer than 2 queries)"
    zero = clustered_mean([0.0, 0.0, 0.0], ["a", "b", "c"])
    assert zero["p"] == 1.0 and (zero["low"], zero["high"]) == (0.0, 0.0)


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
    assert kappa([1, 1], [1, 1])["note"].startswith("undefined")
    assert kappa([float("nan")], [1])["items"] == 0


def test_kendall_hand_worked():
    # orderings (1,2,3) vs (1,3,2): 2 concordant, 1 discordant pair: τ = 1/3
    assert kendall([1, 2, 3], [1, 3, 2])["tau"] == pytest.approx(1 / 3)
    assert kendall([1.0], [2.0])["note"].startswith("undefined")
    assert math.isnan(kendall([1, 1, 1], [1, 2, 3])["tau"])
