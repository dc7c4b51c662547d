"""Power of the twin-preference test that marks significance: the query-clustered sign-flip test
of :mod:`sourcebias.evaluation.stats.twin_preference` (per query d = llm_first − human_first over
its decided pairs; two-sided test of Σ s_q d_q under random sign flips per query).

**Units.** The pairs of one query share a ranking, so studies are simulated by resampling
*queries* with their per-query pair counts; pairs tied or with neither copy retrieved are left
out, as in the analysis. A query without a decided pair has d = 0 and changes nothing.

**The shift.** A hypothetical rate π is imposed by flipping pair outcomes within each drawn
query: above the pilot's pooled rate p̂ each human-first pair becomes LLM-first with probability
f = (π − p̂) / (1 − p̂) (a query with a LLM-first and b human-first pairs gets
d = a − b + 2X, X ~ Bin(b, f)); below it each LLM-first pair becomes human-first with probability
g = (p̂ − π) / p̂ (d = a − b − 2X, X ~ Bin(a, g)). The pooled rate of the population is then π in
expectation. The flips are drawn as ``binom.ppf(u, count, f)`` from one uniform u per drawn
query per study, and the same studies serve every π, so the power moves monotonically with π.

**Which form of the test.** Resampling applies to each simulated study the clustered test's
large-sample form with a continuity correction of 1 (half the step 2 of the integer sums),
z = (|Σd| − 1) / √(Σd²) against N(0, 1)
(:func:`~sourcebias.evaluation.stats.twin_preference.sign_flip_normal_p`; Σd² = 0 is undefined and
not a rejection), not the exact or seeded sign-flip p that ``evaluate`` reports: that would cost
a null distribution per study. Measured on clustered pairs (1-3 per query), its rejection rate
is within about 1 point of the exact / seeded test from 20 queries on; without the correction
it was 2-8 points above (the sums are discrete). With few queries (about 10) the two differ by
up to 2-3 points, either way; the exact test is the more conservative where z is uncorrected.

**Analytic.** The same z-test's normal approximation: with μ = E[d] and m2 = E[d²] per query
(exact moments under the flip model above, averaged over the pilot's queries:
E[d] = a − b + 2bf, Var[d] = 4bf(1 − f), and the mirror image below p̂), Σd ≈ N(nμ, nσ²) with
σ² = m2 − μ² and Σd² ≈ n·m2, the test rejects when |Σd| > 1 + z_{α/2}·√(n·m2), so power ≈
Φ((nμ − c)/(√n·σ)) + Φ((−nμ − c)/(√n·σ)) with c = 1 + z_{α/2}·√(n·m2) (without the correction and
with σ ≈ √m2 this is Φ(√n·μ/√m2 − z_{α/2}) + Φ(−√n·μ/√m2 − z_{α/2})).
"""

from __future__ import annotations

import math

import numpy as np

from sourcebias.evaluation.stats.twin_preference import sign_flip_normal_p
from sourcebias.power.base import ANALYTIC, RESAMPLING, PowerModel, chunks, seeded_rng

#: the continuity correction of the simulated z (see the module docstring)
CORRECTION = 1.0
NO_PAIRS = "undefined: the pilot has no decided relevant pair (each needs one copy ranked above the other)"


def flip_probability(pilot_rate: float, rate: float) -> tuple[bool, float]:
    """``(upward, probability)``: whether human-first pairs turn LLM-first (rate at or above the
    pilot's) or the reverse, and the probability that one pair flips."""
    if rate >= pilot_rate:
        return True, 0.0 if pilot_rate >= 1 else (rate - pilot_rate) / (1 - pilot_rate)
    return False, (pilot_rate - rate) / pilot_rate


class FlipTable:
    """Binomial quantiles ``binom.ppf(u, count, f)`` for the pilot's per-query counts, by one
    ``searchsorted`` over the concatenated CDFs of the distinct counts (group g offset by 2g)."""

    def __init__(self, counts: np.ndarray, f: float):
        from scipy.stats import binom

        values, self.group = np.unique(counts.astype(np.int64), return_inverse=True)
        cdfs = [binom.cdf(np.arange(v + 1), v, f) for v in values.tolist()]
        self.start = np.cumsum([0] + [len(c) for c in cdfs[:-1]])
        self.table = np.concatenate([2.0 * g + c for g, c in enumerate(cdfs)])

    def flips(self, idx: np.ndarray, u: np.ndarray) -> np.ndarray:
        g = self.group[idx]
        return (np.searchsorted(self.table, 2.0 * g + u, side="left") - self.start[g]).astype(float)


def study_sums(a: np.ndarray, b: np.ndarray, n: int, resamples: int, rng: np.random.Generator, pilot_rate: float, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Σd and Σd² of ``resamples`` studies of ``n`` queries drawn from the pilot, each drawn
    query's outcomes flipped to the rate ``rate``; the draws depend on ``rng`` only, not on the rate."""
    upward, f = flip_probability(pilot_rate, rate)
    table = FlipTable(b if upward else a, f)
    total, squares = np.empty(resamples), np.empty(resamples)
    for s, e in chunks(resamples, n):
        idx = rng.integers(0, len(a), size=(e - s, n))
        u = 1.0 - rng.random((e - s, n))  # in (0, 1]: the quantile is then a count in [0, count]
        x = table.flips(idx, u)
        d = a[idx] - b[idx] + (2.0 * x if upward else -2.0 * x)
        total[s:e], squares[s:e] = d.sum(axis=1), (d * d).sum(axis=1)
    return total, squares


def d_moments(a: np.ndarray, b: np.ndarray, pilot_rate: float, rate: float) -> tuple[float, float]:
    """μ = E[d] and m2 = E[d²] of a query drawn from the pilot under the flips to ``rate``."""
    upward, f = flip_probability(pilot_rate, rate)
    flipped = b if upward else a
    mean = a - b + (2.0 if upward else -2.0) * flipped * f
    var = 4.0 * flipped * f * (1.0 - f)
    return float(mean.mean()), float((var + mean**2).mean())


def clustered_z_power(n: int, mu: float, m2: float, alpha: float, correction: float = CORRECTION) -> float:
    """Normal-approximation power of the two-sided z = (|Σd| − c) / √(Σd²) test over ``n`` queries whose
    d has mean ``mu`` and second moment ``m2`` (see the module docstring); ``c`` is the continuity
    ``correction`` (1 for the integer sums of twin preference, 0 for continuous differences)."""
    from scipy.stats import norm

    if n < 1 or m2 <= 0:
        return 0.0
    sigma = math.sqrt(n * max(0.0, m2 - mu * mu))
    shift, bar = n * mu, correction + norm.isf(alpha / 2) * math.sqrt(n * m2)
    if sigma == 0:
        return 1.0 if abs(shift) > bar else 0.0
    return float(norm.cdf((shift - bar) / sigma) + norm.cdf((-shift - bar) / sigma))


class TwinPower(PowerModel):
    """Power of the query-clustered twin-preference test from the pilot's per-query pair counts."""

    null = 0.5
    min_n = 1
    test = "query-clustered sign-flip test of rate = 1/2, simulated in its large-sample form z = (|Σd| − 1)/√Σd² (d = llm_first − human_first per query)"
    shift = "pair outcomes flipped at random within each query (binomial per query) so that the pooled rate is the effect (see sourcebias.power.twin)"

    def __init__(self, llm_first: np.ndarray, human_first: np.ndarray, *, alpha: float, resamples: int, seed: int, key: str):
        super().__init__(alpha=alpha, resamples=resamples, seed=seed, key=key)
        self.llm_first = np.asarray(llm_first, dtype=float)
        self.human_first = np.asarray(human_first, dtype=float)
        self.queries = len(self.llm_first)
        self.pairs = int(self.llm_first.sum() + self.human_first.sum())
        self.rate = float(self.llm_first.sum() / self.pairs) if self.pairs else math.nan
        self.pairs_per_query = self.pairs / self.queries if self.queries else math.nan
        if not self.pairs:
            self.undefined = NO_PAIRS

    @property
    def estimate(self) -> float:
        return self.rate

    def bound(self) -> float:
        return 0.5

    def search_span(self, n: int) -> float:
        return 0.5

    def power(self, method: str, n: int, effect: float) -> float:
        if self.undefined or n < self.min_n:
            return math.nan
        if method == RESAMPLING:
            rng = seeded_rng(self.seed, self.key, n)  # the same studies for every effect
            total, squares = study_sums(self.llm_first, self.human_first, n, self.resamples, rng, self.rate, effect)
            with np.errstate(invalid="ignore"):
                return float(np.mean(sign_flip_normal_p(total, squares, CORRECTION) < self.alpha))
        if method == ANALYTIC:
            mu, m2 = d_moments(self.llm_first, self.human_first, self.rate, effect)
            return clustered_z_power(n, mu, m2, self.alpha)
        raise ValueError(f"unknown method {method!r}")
