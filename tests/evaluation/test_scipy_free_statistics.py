"""The statistics computed without ``scipy.stats`` and statsmodels (:mod:`sourcebias.evaluation.stats.resampling`,
:mod:`sourcebias.evaluation.stats.multiple`) against the libraries they stand for: the bootstrap
intervals against ``scipy.stats.bootstrap`` on the same draws (percentile to the last bit, BCa
with the jackknife in closed form to 1e-12), the t-test against ``ttest_1samp``, the sign test
against ``binomtest``, the corrections against ``multipletests``; and an evaluation's statistics
do not import ``scipy.stats``, statsmodels or pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from sourcebias.evaluation.stats.multiple import adjust_pvalues
from sourcebias.evaluation.stats.relative_delta_ci import bootstrap_relative_delta, bootstrap_relative_deltas, relative_delta_values
from sourcebias.evaluation.stats.resampling import bca_interval, bootstrap_distributions, leave_one_out_means, quantile, sign_test_p, t_test_p


def _scipy(data, statistic, method, n_resamples=2000, seed=0, confidence=0.95):
    return stats.bootstrap(
        data,
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method=method,
        confidence_level=confidence,
        random_state=np.random.default_rng(seed),
    )


def _ndcg_like(rng, n):
    """Per-query values as a measure gives them: many zeros and ones, ties, a few in between."""
    v = rng.choice([0.0, 1.0, 0.5, 0.6309297535714575, rng.random()], size=n, p=[0.4, 0.2, 0.15, 0.15, 0.1])
    return v


@pytest.mark.parametrize("n", [2, 3, 17, 324, 1000])
@pytest.mark.parametrize("kind", ["uniform", "measure"])
def test_relative_delta_bca_equals_scipy_on_the_same_resamples(n, kind):
    rng = np.random.default_rng(n)
    if kind == "uniform":
        h, g = rng.random(n), rng.random(n) * 0.8
    else:
        h, g = _ndcg_like(rng, n), _ndcg_like(rng, n)
        h[0], g[0] = 1.0, 0.0  # never a constant pair of vectors
    for confidence in (0.95, 0.9):
        ref = _scipy((h, g), relative_delta_values, "BCa", confidence=confidence)
        got = bootstrap_relative_delta(h, g, confidence=confidence)
        dist = ref.bootstrap_distribution
        if np.isfinite(dist).all() and np.isfinite([ref.confidence_interval.low, ref.confidence_interval.high]).all():
            assert got["method"] == "BCa"
            assert got["low"] == pytest.approx(ref.confidence_interval.low, rel=1e-12, abs=1e-12)
            assert got["high"] == pytest.approx(ref.confidence_interval.high, rel=1e-12, abs=1e-12)
        else:  # scipy's BCa undefined: ours says which interval it gave instead
            assert got["method"] != "BCa"


def test_the_distribution_is_scipys_to_the_last_bit_and_shared_draws_change_nothing():
    rng = np.random.default_rng(5)
    pairs = [(rng.random(300), rng.random(300)) for _ in range(3)] + [(rng.random(40), rng.random(40))]
    dists = bootstrap_distributions(relative_delta_values, pairs[:3], 2000, 0)
    for (h, g), dist in zip(pairs, dists):
        assert np.array_equal(dist, _scipy((h, g), relative_delta_values, "percentile").bootstrap_distribution)
    together = bootstrap_relative_deltas(pairs, seed=2)
    alone = [bootstrap_relative_delta(h, g, seed=2) for h, g in pairs]
    assert together == alone


def test_percentile_interval_equals_scipy_to_the_last_bit():
    rng = np.random.default_rng(9)
    h, g = _ndcg_like(rng, 200), _ndcg_like(rng, 200)
    ref = _scipy((h, g), relative_delta_values, "percentile")
    got = bootstrap_relative_delta(h, g, method="percentile")
    assert (got["low"], got["high"]) == (ref.confidence_interval.low, ref.confidence_interval.high)


def test_the_jackknife_in_closed_form_equals_the_leave_one_out_statistic():
    rng = np.random.default_rng(11)
    h, g = rng.random(500), rng.random(500)
    closed = relative_delta_values(leave_one_out_means(h)[:, None], leave_one_out_means(g)[:, None])
    direct = np.array([relative_delta_values(np.delete(h, i), np.delete(g, i)) for i in range(len(h))])
    np.testing.assert_allclose(closed, direct, rtol=1e-13)


def test_bca_interval_by_hand():
    """A distribution and jackknife small enough to follow the formulas: z0 = 0 (half the
    distribution below the estimate, no ties), acceleration 0 (a symmetric jackknife): BCa is the
    percentile interval."""
    dist = np.arange(1.0, 101.0)
    low, high = bca_interval(50.5, dist, np.array([-1.0, 0.0, 1.0]), 0.9)
    assert (low, high) == pytest.approx((5.95, 95.05), rel=1e-14)  # quantile 0.05 of 1..100: 1 + 0.05 * 99


@pytest.mark.parametrize("p", [0.0, 0.025, 0.5, 0.975, 1.0, 0.3333])
def test_quantile_equals_scipy(p):
    rng = np.random.default_rng(1)
    y = rng.random(2001)
    assert quantile(y, [p])[0] == stats.quantile(y, p, method="linear")


def test_t_test_p_equals_scipy():
    rng = np.random.default_rng(2)
    for n in (2, 3, 10, 324, 6979):
        for shift in (0.0, 0.05, 0.5, 3.0):
            d = rng.normal(shift, 1.0, n)
            assert t_test_p(d) == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-12, abs=0)


@pytest.mark.parametrize("n", [1, 2, 5, 20, 21, 324, 6979])
def test_sign_test_p_equals_scipy_for_every_count(n):
    for k in range(n + 1):
        ref = stats.binomtest(k, n, 0.5).pvalue
        assert sign_test_p(k, n) == pytest.approx(ref, rel=1e-12, abs=1e-300), (k, n)  # (both underflow below 1e-300)


@pytest.mark.parametrize("method", ["holm", "fdr_bh", "bonferroni"])
def test_corrections_equal_statsmodels(method):
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 40):
        p = rng.random(m) ** 3
        p[: m // 3] = p[m - 1]  # ties
        got = adjust_pvalues(list(p) + [float("nan")], method)
        np.testing.assert_array_equal(got[:-1], multipletests(p, method=method)[1])
        assert np.isnan(got[-1])


def test_the_t_quantile_and_the_normal_tail_equal_scipy_stats():
    """The CR1 interval's t quantile (``stdtrit``) and the sign-flip test's normal tail (``ndtr``)
    are ``scipy.stats.t.ppf``'s and ``scipy.stats.norm.sf``'s."""
    from sourcebias.clustered.mean_difference import cr1_mean_interval
    from sourcebias.evaluation.stats.twin_preference import sign_flip_normal_p

    rng = np.random.default_rng(4)
    for g in (2, 3, 5, 40, 324, 6979):
        sums, counts = rng.integers(-3, 4, g).astype(float), rng.integers(1, 4, g).astype(float)
        est, low, _high, se = cr1_mean_interval(sums, counts, level=0.95)
        assert (est - low) / se == pytest.approx(stats.t.ppf(0.975, g - 1), rel=1e-14)
    z_sums, z_squares = rng.normal(0, 30, 50), rng.uniform(1, 900, 50)
    ref = 2 * stats.norm.sf(np.maximum(0.0, np.abs(z_sums) - 1.0) / np.sqrt(z_squares))
    np.testing.assert_array_equal(sign_flip_normal_p(z_sums, z_squares, 1.0), ref)


def test_an_evaluation_imports_neither_scipy_stats_nor_statsmodels_nor_pandas(tmp_path):
    """The statistics of ``evaluate`` (every default statistic) in a fresh process."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from sourcebias.evaluation.stats import paired_tests, relative_delta_ci, twin_preference, multiple\n"
        "rng = np.random.default_rng(0); h, g = rng.random(50), rng.random(50)\n"
        "relative_delta_ci.bootstrap_relative_delta(h, g); paired_tests.paired_tests(h, g); multiple.adjust_pvalues([0.1, 0.2])\n"
        "from sourcebias.clustered.mean_difference import MeanDifference\n"
        "lf, hf = rng.integers(0, 3, 40), rng.integers(0, 3, 40)\n"
        "MeanDifference().from_query_sums(lf - hf, lf + hf); twin_preference.sign_flip_normal_p([3.0], [9.0])\n"
        "print(sorted(m for m in ('scipy.stats', 'statsmodels', 'pandas') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
