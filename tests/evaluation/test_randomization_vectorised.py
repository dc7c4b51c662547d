"""The paired randomization test, drawn vectorised: exact p against an enumeration written out
here and against SciPy's exact ``permutation_test``; seeded p within Monte-Carlo error of SciPy's
on larger samples, and its null distribution SciPy's; never p = 0."""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
import pytest
from scipy import stats

from sourcebias.clustered import signflip
from sourcebias.evaluation.stats.paired_tests import paired_randomization_test, sign_flip_sums
from sourcebias.evaluation.stats.twin_preference import cluster_sign_flip_test


def _mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


def _scipy(a, b, n_resamples, seed):
    return stats.permutation_test(
        (a, b), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=n_resamples, random_state=np.random.default_rng(seed)
    )


def _enumerated_p(d) -> float:
    """Two-sided p over all 2^n sign patterns, SciPy's definition: 2 * the smaller tail."""
    means = np.array([np.dot(s, d) / len(d) for s in itertools.product((1.0, -1.0), repeat=len(d))])
    t, tol = np.mean(d), 1e-12
    return min(1.0, 2 * min(np.mean(means <= t + tol), np.mean(means >= t - tol)))


def test_small_samples_are_exact_and_equal_the_enumeration_and_scipy():
    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(2, 11))
        if trial % 2:  # NDCG-like values: many ties among the sign patterns' means
            a, b = rng.choice([0.0, 0.5, 1.0], n), rng.choice([0.0, 0.5, 1.0], n)
        else:
            a, b = rng.random(n), rng.random(n)
        if np.allclose(a, b):
            continue
        p = paired_randomization_test(a, b, n_resamples=2**n, seed=trial)
        assert p == pytest.approx(_enumerated_p(a - b), abs=1e-12)
        assert p == pytest.approx(_scipy(a, b, 2**n, trial).pvalue, abs=1e-12)  # SciPy's exact test
        assert paired_randomization_test(a, b, n_resamples=2**n, seed=trial + 1) == p  # no randomness


def test_hand_worked_exact_case():
    # d = (1, 1, 1, -1): mean 0.5; of the 16 patterns, the sums are 4 (1 pattern), 2 (4), 0 (6),
    # -2 (4), -4 (1); observed sum 2 -> P(>=) = 5/16, P(<=) = 15/16 -> p = 2 * 5/16
    a, b = np.array([1.0, 1.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])
    assert paired_randomization_test(a, b, n_resamples=16) == 10 / 16
    sums, exact = sign_flip_sums(a - b, n_resamples=16)
    assert exact and sorted(sums.tolist()) == sorted([4.0] + [2.0] * 4 + [0.0] * 6 + [-2.0] * 4 + [-4.0])


@pytest.mark.parametrize("n, shift", [(40, 0.0), (60, 0.06), (200, 0.02)])
def test_seeded_p_within_monte_carlo_error_of_scipys(n, shift):
    rng = np.random.default_rng(n)
    a = rng.random(n)
    b = np.clip(a - shift + rng.normal(0, 0.2, n), 0, 1)
    r = 20_000
    ours = paired_randomization_test(a, b, n_resamples=r, seed=1)
    theirs = _scipy(a, b, r, 2).pvalue
    # each is 2 * a tail share of r draws: standard error 2 * sqrt(q (1 - q) / r), q = p / 2
    q = max(ours, theirs) / 2
    se = 2 * np.sqrt(q * (1 - q) / r)
    assert abs(ours - theirs) <= 4 * np.sqrt(2) * se + 2 / r, (ours, theirs, se)


def test_null_distribution_is_scipys():
    rng = np.random.default_rng(11)
    a, b = rng.random(50), rng.random(50)
    sums, exact = sign_flip_sums(a - b, n_resamples=20_000, seed=1)
    ours, theirs = sums / 50, _scipy(a, b, 20_000, 2).null_distribution
    assert not exact and len(ours) == 20_000
    # two independent samples of one distribution: the Kolmogorov-Smirnov p is uniform (over 60
    # seed pairs, 5% of them below 0.05), so below 0.001 only by a 1-in-1000 chance
    assert stats.ks_2samp(ours, theirs).pvalue > 0.001
    assert np.mean(ours) == pytest.approx(0.0, abs=4 * np.std(ours) / np.sqrt(20_000))
    # variance of mean(s * d) under independent signs: sum(d^2) / n^2
    assert np.var(ours) == pytest.approx(np.sum((a - b) ** 2) / 50**2, rel=0.05)


def test_never_zero_and_seeded_and_independent_of_block_size():
    a, b = np.ones(30), np.zeros(30)  # only the all-equal patterns reach |mean| = 1: none is drawn
    assert paired_randomization_test(a, b, n_resamples=999, seed=0) == 2 / 1000
    rng = np.random.default_rng(2)
    x, y = rng.random(80), rng.random(80)
    p = paired_randomization_test(x, y, n_resamples=5000, seed=7)
    assert p == paired_randomization_test(x, y, n_resamples=5000, seed=7)
    assert p != paired_randomization_test(x, y, n_resamples=5000, seed=8)
    with mock.patch.object(signflip, "_FLIP_BLOCK", 97):  # many small blocks: the same patterns
        assert paired_randomization_test(x, y, n_resamples=5000, seed=7) == p
    assert paired_randomization_test(a, a) == 1.0 and paired_randomization_test([1.0], [0.0]) == 1.0
    with pytest.raises(ValueError):
        paired_randomization_test([1.0, 2.0], [1.0])


def test_twin_preference_seeded_test_within_monte_carlo_error_of_scipys():
    rng = np.random.default_rng(9)
    m = rng.integers(1, 4, 60)
    llm = rng.binomial(m, 0.6)
    res = cluster_sign_flip_test(llm, m - llm, n_resamples=20_000, seed=3)
    d = (llm - (m - llm))[llm != m - llm].astype(float)
    null = stats.permutation_test(
        (d,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples", vectorized=True, n_resamples=20_000, random_state=np.random.default_rng(4)
    ).null_distribution
    theirs = (1 + np.count_nonzero(np.abs(null) >= abs(d.sum()))) / 20_001
    se = np.sqrt(theirs * (1 - theirs) / 20_000)
    assert res["method"].startswith("seeded") and res["resamples"] == 20_000
    assert abs(res["p"] - theirs) <= 4 * np.sqrt(2) * se + 2 / 20_000, (res["p"], theirs)


def test_holm_through_statsmodels_unchanged_and_the_garbage_collector_left_as_it_was():
    import gc

    from sourcebias.evaluation.stats.multiple import adjust_pvalues

    frozen = gc.get_freeze_count()
    out = adjust_pvalues([0.01, float("nan"), 0.04, 0.03], "holm")
    # Holm by hand: sorted 0.01, 0.03, 0.04 times 3, 2, 1, then running maximum
    assert out[0] == pytest.approx(0.03) and np.isnan(out[1]) and out[2] == pytest.approx(0.06) and out[3] == pytest.approx(0.06)
    assert gc.get_freeze_count() == frozen and gc.isenabled()
