"""Power of a query-clustered mean (a judge's twin bias in grade points, and any mean of paired
differences over items clustered by query that :mod:`sourcebias.clustered.mean_difference`
estimates).

**The pilot.** Per item a value (NaN: an unparseable or repaired answer, left out and counted),
per item its query; per query the sum ``S_q`` of its ``n_q`` values. The estimate is the item
mean ``m = Σ S_q / Σ n_q``, as the analysis prints it.

**The shift.** A hypothetical mean δ is imposed by moving every item by the same amount
(``S_q − m·n_q + δ·n_q``): the spread of the items within and between queries is kept, the
population mean becomes exactly δ. A simulated study draws n of the pilot's queries with
replacement (each with its items: the query is the unit, as in the analysis).

**The test.** The analysis prints the cluster-robust (CR1) t interval over queries, G − 1 df;
a study rejects when that interval excludes 0, i.e. ``|mean| > t_{1−α/2, n−1} · se_CR1`` with
``se_CR1² = n/(n − 1) · Σ (S_q − mean·n_q)² / (Σ n_q)²``. The shift moves every study's mean by
δ and leaves its ``se`` unchanged, so one set of draws serves every δ. The p-value the analysis
prints is the sign-flip test of the same sums; the two agree except near the 5% edge
(``benchmarks/clustered_mean_coverage.py``), so this is the power of the interval, said so in
the output. A study whose queries all have the same mean has no interval (the estimator refuses
it) and does not count as a rejection; fewer queries than the estimator gives an interval for
(:func:`~sourcebias.clustered.base.interval_refusal`: 1–4 at 95%) has no power.

**Analytic.** statsmodels' ``TTestPower`` on the per-query means (effect size δ / sd of the
pilot's query means): exact for the CR1 t test when every query has the same number of items
(its CR1 variance is then the one-sample t's), an approximation otherwise (said in the note).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sourcebias.power.base import chunks, seeded_rng
from sourcebias.power.paired import PairedDraws, PairedPower

TEST = "CR1 t interval of the query-clustered mean excludes 0 (two-sided, G − 1 df; the interval the analysis prints)"
SHIFT = "every item's value moved by the same amount (S_q − m·n_q + δ·n_q)"


def query_sums(values: Any, clusters: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sums, counts, left_out)`` per query of the items with a value (NaN left out)."""
    v = np.asarray(values, dtype=float)
    q = np.asarray(clusters, dtype=object)
    keep = np.isfinite(v)
    if not keep.any():
        return np.zeros(0), np.zeros(0), len(v)
    _, inv = np.unique(q[keep].astype(str), return_inverse=True)
    return np.bincount(inv, weights=v[keep]), np.bincount(inv).astype(float), int((~keep).sum())


def draw_clustered(sums: np.ndarray, counts: np.ndarray, n: int, resamples: int, rng: np.random.Generator, alpha: float) -> PairedDraws:
    """``resamples`` studies of ``n`` queries (with replacement) of the centred query sums: per
    study the item mean and its CR1 standard error (NaN: every drawn query has the same mean)."""
    from scipy import stats

    offset = np.empty(resamples)
    se = np.empty(resamples)
    for a, b in chunks(resamples, n):
        idx = rng.integers(0, len(sums), size=(b - a, n))
        s, c = sums[idx], counts[idx]
        total = c.sum(axis=1)
        mean = s.sum(axis=1) / total
        resid = s - mean[:, None] * c
        var = n / (n - 1) * (resid**2).sum(axis=1) / total**2
        means = s / c
        var[np.ptp(means, axis=1) <= 1e-12 * (1 + np.abs(means).max(axis=1))] = np.nan  # no interval: no variation between queries
        offset[a:b], se[a:b] = mean, np.sqrt(var)
    return PairedDraws(n, offset, se, float(stats.t.ppf(1 - alpha / 2, n - 1)))


class ClusteredMeanPower(PairedPower):
    """Power of the CR1 t test of a query-clustered item mean, from the pilot's ``values`` and
    their ``clusters`` (see the module docstring); ``limit``: the largest mean the quantity can
    take (3 for a difference of 0–3 grades)."""

    test = TEST
    shift = SHIFT

    def __init__(self, values: Any, clusters: Any, *, alpha: float, resamples: int, seed: int, key: str, limit: float):
        from sourcebias.clustered.base import interval_refusal

        sums, counts, left_out = query_sums(values, clusters)
        super().__init__(sums / counts if len(sums) else np.zeros(0), alpha=alpha, resamples=resamples, seed=seed, key=key, limit=limit)
        self.sums, self.counts, self.left_out = sums, counts, left_out
        self.items = int(counts.sum())
        self.mean = float(sums.sum() / counts.sum()) if len(sums) else math.nan
        self.min_n = next(g for g in range(2, 100) if not interval_refusal(g, 1 - alpha))
        self.equal_sizes = bool(len(counts) and np.ptp(counts) == 0)

    def draws(self, n: int) -> PairedDraws:
        if n not in self._draws:
            centred = self.sums - self.mean * self.counts
            self._draws[n] = draw_clustered(centred, self.counts, n, self.resamples, seeded_rng(self.seed, self.key, n), self.alpha)
        return self._draws[n]

    def notes(self) -> list[str]:
        """What the reader of the figures should know about this pilot."""
        out = [f"{self.left_out:,} items without a value (unparseable or repaired answers) left out of the pilot"] if self.left_out else []
        if not self.equal_sizes and len(self.counts):
            out.append(
                f"queries hold {int(self.counts.min())}–{int(self.counts.max())} items: the analytic figure (t on the query means) approximates the CR1 test"
            )
        return out
