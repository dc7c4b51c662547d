"""The bootstrap over queries, the t-test and the sign test as SciPy computes them, with
``scipy.special`` only.

Written here, not called from ``scipy.stats``, for two measured reasons (``benchmarks/bench_bm25_scale.py``):

* BCa's acceleration needs the jackknife, and ``scipy.stats.bootstrap`` gets it by computing the
  statistic again on each of the n leave-one-out samples of n values: O(n²), 1.2 s a measure at
  6,979 queries (MS MARCO's count), 4.6 s of ``evaluate``'s statistics. The statistics
  bootstrapped here (a ratio of means: Relative Δ; a ratio of sums: the twin preference rate)
  have their leave-one-out values in closed form, O(n), and SciPy has no way to take them;
* importing ``scipy.stats`` costs 0.7 s of CPU and 50 MB in a fresh process, a quarter of
  ``evaluate -r bm25`` on 10,000 documents, for formulas that ``scipy.stats`` itself computes
  with ``scipy.special`` (``ndtr``, ``ndtri``, ``stdtr``, ``betainc``: 0.1 s to import).

What is SciPy's here: the resamples (the same generator calls in the same order,
``rng.integers(0, n, (batch, n))`` per batch of :data:`BOOTSTRAP_BATCH`, the statistic on
``sample[..., i]``: the bootstrap distribution equals ``scipy.stats.bootstrap(paired=True)``'s to
the last bit); the percentile interval (Hyndman & Fan's 7th quantile, SciPy's ``quantile``);
BCa's formulas (Efron & Tibshirani 14.3, 15.4, eq. 15.36, as SciPy's ``_bca_interval``);
``ttest_1samp``'s and ``binomtest``'s p-values (p = 1/2). ``tests/evaluation/test_bootstrap_batched.py``
and ``tests/evaluation/test_scipy_free_statistics.py`` check each against ``scipy.stats`` (the
percentile interval to the last bit, BCa to 1e-12, the p-values to 1e-12 relative).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from sourcebias.evaluation.stats.base import BOOTSTRAP_BATCH

Statistic = Callable[..., np.ndarray]


def resample_indices(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap's resamples of ``n`` paired observations, as index arrays of at most
    :data:`BOOTSTRAP_BATCH` rows (``scipy.stats.bootstrap``'s draws with ``paired=True`` and
    ``random_state=numpy.random.default_rng(seed)``, in its order).

    Args:
        n: Observations (queries).
        n_resamples: Resamples.
        seed: Seed of ``numpy.random.default_rng``.

    Yields:
        ``(rows, n)`` int64 arrays of indices.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, BOOTSTRAP_BATCH):
        yield rng.integers(0, n, (min(BOOTSTRAP_BATCH, n_resamples - start), n))


def bootstrap_distributions(statistic: Statistic, samples: Sequence[Sequence[np.ndarray]], n_resamples: int, seed: int) -> list[np.ndarray]:
    """The bootstrap distribution of ``statistic`` for each tuple of paired samples in
    ``samples`` (all of one length n), every tuple resampled with the same draws: each is what
    ``scipy.stats.bootstrap(tuple, statistic, paired=True, vectorized=True, n_resamples=...,
    random_state=default_rng(seed))`` draws, since it draws the same indices for any samples of
    length n.

    Args:
        statistic: ``statistic(*arrays, axis=-1)``, vectorised along the last axis.
        samples: Tuples of paired 1-D arrays, every array of the same length.
        n_resamples: Resamples.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        One distribution (``n_resamples`` values) per tuple.
    """
    n = len(samples[0][0])
    parts: list[list[np.ndarray]] = [[] for _ in samples]
    for idx in resample_indices(n, n_resamples, seed):
        for part, arrays in zip(parts, samples):
            part.append(statistic(*(a[..., idx] for a in arrays), axis=-1))
    return [np.concatenate(p) for p in parts]


def quantile(values: np.ndarray, probabilities: Sequence[float]) -> np.ndarray:
    """Quantiles of ``values`` by Hyndman & Fan's 7th rule (linear interpolation between order
    statistics), written as ``scipy.stats.quantile(method="linear")`` computes them; NaN for a
    NaN probability or when ``values`` holds NaN.

    Args:
        values: A 1-D sample.
        probabilities: Probabilities in [0, 1].

    Returns:
        The quantiles.
    """
    y = np.sort(np.asarray(values, dtype=float))
    p = np.asarray(probabilities, dtype=float)
    n = len(y)
    if n == 0 or np.isnan(y[-1]):
        return np.full(p.shape, np.nan)
    with np.errstate(invalid="ignore"):
        jg = p * n + (1 - p)
        j = jg // 1 - 1
        g = np.where(j < 0, 0.0, jg % 1)
    bad = ~np.isfinite(p)
    j = np.clip(np.where(bad, 0, j), 0, n - 1).astype(np.int64)
    jp1 = np.clip(np.where(bad, 0, jg // 1), 0, n - 1).astype(np.int64)
    return np.where(bad, np.nan, (1 - g) * y[j] + g * y[jp1])


def percentile_interval(distribution: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided percentile interval of a bootstrap distribution (SciPy's ``percentile``).

    Args:
        distribution: The bootstrap distribution.
        confidence: The level.

    Returns:
        ``(low, high)``; NaN when the distribution holds NaN.
    """
    alpha = (1 - confidence) / 2
    low, high = quantile(distribution, [alpha, 1 - alpha])
    return float(low), float(high)


def bca_interval(estimate: float, distribution: np.ndarray, jackknife: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided BCa interval (SciPy's ``_bca_interval``): the bias correction z0 from the
    share of the distribution below the estimate, the acceleration from the jackknife values.

    Args:
        estimate: The statistic on the data.
        distribution: Its bootstrap distribution.
        jackknife: Its value on each leave-one-out sample (in closed form: :func:`leave_one_out_means`).
        confidence: The level.

    Returns:
        ``(low, high)``; NaN where BCa is undefined (NaN in the distribution or the jackknife,
        a constant jackknife), as in SciPy.
    """
    from scipy.special import ndtr, ndtri

    b = len(distribution)
    share = (np.count_nonzero(distribution < estimate) + np.count_nonzero(distribution <= estimate)) / (2 * b)
    z0 = ndtri(share)
    n = float(len(jackknife))
    u = (n - 1) * (np.mean(jackknife) - jackknife)
    with np.errstate(divide="ignore", invalid="ignore"):
        accel = 1 / 6 * (np.sum(u**3) / n**3) / (np.sum(u**2) / n**2) ** (3 / 2)
        z_alpha = float(ndtri((1 - confidence) / 2))
        bounds = [ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z))) for z in (z_alpha, -z_alpha)]
    low, high = quantile(distribution, bounds)
    return float(low), float(high)


def leave_one_out_means(values: np.ndarray) -> np.ndarray:
    """The mean of ``values`` without each one of them, in O(n): ``(sum - x_i) / (n - 1)`` (the
    jackknife of a mean; of a ratio of means, the ratio of these).

    Args:
        values: A 1-D sample of at least 2 values.

    Returns:
        n means.
    """
    v = np.asarray(values, dtype=float)
    return (np.sum(v) - v) / (len(v) - 1)


def t_test_p(d: np.ndarray) -> float:
    """Two-sided p of the one-sample t-test of ``mean(d) = 0`` (``scipy.stats.ttest_1samp(d, 0)``):
    t = mean / sqrt(var(ddof=1) / n), p = 2 · P(T_{n-1} > |t|). The caller rules out the undefined cases.

    Args:
        d: At least 2 values, not all equal.

    Returns:
        The p-value (0.0 only when it underflows: below about 1e-308).
    """
    from scipy.special import stdtr

    d = np.asarray(d, dtype=float)
    n = len(d)
    mean = np.mean(d)
    var = np.mean((d - mean) ** 2) * (n / (n - 1))
    t = mean / np.sqrt(var / n)
    return float(2 * stdtr(n - 1, -abs(t)))


def sign_test_p(k: int, n: int) -> float:
    """Exact two-sided p of ``k`` successes in ``n`` trials at p = 1/2 (``scipy.stats.binomtest``):
    the probability of an outcome at most as likely as ``k``, which by symmetry is twice the
    smaller tail, P(X <= m) = I_{1/2}(n - m, m + 1) with m = min(k, n - k) (the regularized
    incomplete beta function, by which ``scipy.stats.binom`` computes its cdf; ``bdtr`` is
    1e-12 off in the tails at n = 6,979); 1 at ``k = n / 2``.

    Args:
        k: Successes.
        n: Trials (at least 1).

    Returns:
        The p-value.
    """
    from scipy.special import betainc

    if 2 * k == n:
        return 1.0
    m = min(k, n - k)
    return float(min(1.0, 2 * betainc(n - m, m + 1, 0.5)))
