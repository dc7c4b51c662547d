"""Power of the test that marks ``*`` in ``evaluate`` for Relative Δ and the per-target
difference: the paired randomization test of every (retriever, LLM source, measure) of a report,
its p corrected across them (Holm by default, ``--correction``), ``*`` where the corrected p is
below α (:mod:`sourcebias.evaluation.stats.paired_tests`, :func:`~sourcebias.evaluation.stats.correct_tests`).

**The family.** One paired test per retriever, LLM source and measure analysed (evaluate's
default: every cut-off of NDCG for every retriever); Relative Δ and the difference of one
measure share their test. Under Holm or Benjamini–Hochberg whether one test rejects depends on
the others' p-values, so the family is simulated together.

**Resampling.** A simulated study draws n of the pilot's queries with replacement, the *same*
queries for every test of the family, so the correlation of the per-query differences across
cut-offs, retrievers and LLM sources is kept. Each test's differences are shifted to its
target mean difference (``d − mean(d) + δ``, as :mod:`sourcebias.power.paired` does; the other
tests at the effect their own rows are analysed at, by default each pilot's estimate). Each test
is the sign-flip randomization test in its large-sample form, z = |Σd| / √Σd² against N(0, 1)
(the mean and variance of Σ s_i d_i under random signs s_i; exact flips for every simulated study
would cost a null distribution each), a study whose differences are all 0 giving p = 1 as
``evaluate`` does; the p-values of the family are corrected together and the test counts as
rejecting where its corrected p < α. The draws of one n are kept as each test's Σ and Σ² of the
centred differences, so any δ costs arithmetic only: Σ(c + δ) = Σc + n·δ and
Σ(c + δ)² = Σc² + 2δΣc + n·δ².

**Analytic.** A bound, stated as such: the normal approximation of the same z-test's power at
α/m for a family of m tests (Σd ≈ N(nδ, nσ²), Σd² ≈ n(σ² + δ²), σ the pilot's standard
deviation of the differences; :func:`~sourcebias.power.twin.clustered_z_power` without a
continuity correction). Bonferroni at α/m is that test; Holm and Benjamini–Hochberg reject every
hypothesis Bonferroni rejects, so their power is at least this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sourcebias.power.base import ANALYTIC, RESAMPLING, chunks, seeded_rng
from sourcebias.power.paired import PairedPower
from sourcebias.power.twin import clustered_z_power


@dataclass(frozen=True)
class FamilyDraws:
    """Simulated studies of ``n`` queries: per study (rows) and test (columns) the sum and sum
    of squares of the centred differences drawn, and how many of them are finite."""

    total: np.ndarray
    squares: np.ndarray
    count: np.ndarray


def adjust_rows(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of each row of ``p`` (one family per row), as statsmodels'
    ``multipletests`` computes them for one family (Holm: step-down max of (m − i + 1)·p_(i);
    Benjamini–Hochberg: step-up min of m·p_(i)/i; Bonferroni: m·p; all capped at 1). Written
    here because ``multipletests`` takes one family at a time and a power curve needs thousands
    of families per point; the test suite checks it against ``multipletests``."""
    m = p.shape[1]
    if method == "none" or m == 1:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, axis=1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=1)
    if method == "holm":
        adjusted = np.minimum(1.0, np.maximum.accumulate(ranked * np.arange(m, 0, -1), axis=1))
    elif method == "fdr_bh":
        adjusted = np.minimum(1.0, np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[:, ::-1], axis=1)[:, ::-1])
    else:
        raise ValueError(f"unknown correction {method!r}")
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=1)
    return out


class PairedFamily:
    """The per-query differences (human − LLM) of the family's tests over the pilot's queries
    (``differences``: tests × queries, NaN where a query has no value), the correction and α."""

    def __init__(self, differences: np.ndarray, labels: list[str], *, alpha: float, correction: str, resamples: int, seed: int):
        d = np.atleast_2d(np.asarray(differences, dtype=float))
        self.labels = list(labels)
        self.finite = np.isfinite(d)
        self.means = np.array([row[ok].mean() if ok.any() else 0.0 for row, ok in zip(d, self.finite)])
        self.centred = np.where(self.finite, d - self.means[:, None], 0.0)
        self.alpha, self.correction, self.resamples, self.seed = alpha, correction, resamples, seed
        self._draws: dict[int, FamilyDraws] = {}

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def level(self) -> float:
        """The per-test level of the Bonferroni bound (α/m; α without a correction)."""
        return self.alpha if self.correction == "none" else self.alpha / self.size

    def describe(self) -> str:
        from sourcebias.evaluation.stats import CORRECTIONS

        if self.correction == "none" or self.size == 1:
            return "uncorrected (one test)" if self.size == 1 else "uncorrected"
        return f"{CORRECTIONS[self.correction]}-corrected across {self.size} tests ({', '.join(self.labels)})"

    def draws(self, n: int) -> FamilyDraws:
        """The studies of ``n`` queries (seeded; the same for every effect)."""
        if n not in self._draws:
            rng = seeded_rng(self.seed, "family\t" + "\t".join(self.labels), n)
            m, queries = self.centred.shape
            total, squares, count = np.empty((self.resamples, m)), np.empty((self.resamples, m)), np.empty((self.resamples, m))
            for a, b in chunks(self.resamples, n * m):
                idx = rng.integers(0, queries, size=(b - a, n))
                for j in range(m):
                    x = self.centred[j][idx]
                    total[a:b, j], squares[a:b, j], count[a:b, j] = x.sum(axis=1), (x * x).sum(axis=1), self.finite[j][idx].sum(axis=1)
            self._draws[n] = FamilyDraws(total, squares, count)
        return self._draws[n]

    def p_values(self, n: int, deltas: np.ndarray) -> np.ndarray:
        """Per study and test, the large-sample randomization p at the mean differences ``deltas``."""
        from scipy.stats import norm

        dr = self.draws(n)
        delta = np.asarray(deltas, dtype=float)[None, :]
        s = dr.total + dr.count * delta
        q = np.maximum(dr.squares + 2 * delta * dr.total + dr.count * delta * delta, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(s) / np.sqrt(q)
        return np.where(q > 1e-24, 2 * norm.sf(z), 1.0)

    def rejection_rate(self, n: int, deltas: np.ndarray, index: int) -> float:
        """Share of the studies in which test ``index`` is marked (corrected p < α)."""
        adjusted = adjust_rows(self.p_values(n, deltas), self.correction)
        return float(np.mean(adjusted[:, index] < self.alpha))


class FamilyPower(PairedPower):
    """Power of test ``index`` of a :class:`PairedFamily` as ``evaluate`` marks it, the other
    tests at the mean differences ``base`` (set by the analysis: each at its row's effect)."""

    def __init__(self, family: PairedFamily, index: int, differences: np.ndarray, *, key: str):
        super().__init__(differences, alpha=family.alpha, resamples=family.resamples, seed=family.seed, key=key)
        self.family, self.index = family, index
        self.base = np.zeros(family.size)
        self.test = f"paired randomization test (large-sample z = |Σd|/√Σd²), {family.describe()}; * where the corrected p < α"

    def power(self, method: str, n: int, effect: float) -> float:
        if self.undefined or n < self.min_n:
            return math.nan
        delta = effect / self.scale
        if method == RESAMPLING:
            deltas = self.base.copy()
            deltas[self.index] = delta
            return self.family.rejection_rate(n, deltas, self.index)
        if method == ANALYTIC:
            return clustered_z_power(n, delta, self.sd**2 + delta**2, self.family.level, correction=0.0)
        raise ValueError(f"unknown method {method!r}")

    def undefined_studies(self, n: int) -> int:
        """None: a study whose differences are all 0 has p = 1 (no rejection), as in ``evaluate``."""
        return 0
