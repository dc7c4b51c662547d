"""A proportion over items clustered by query (a citation rate by source and rank): the pooled
share with a Wilson interval on Korn & Graubard's (1998) effective sample size.

**0 < rate < 1.** The design effect of query clustering, deff = (the ratio estimator's variance,
``G/(G − 1) · Σ_q (y_q − p·m_q)² / n²``) / (the binomial ``p(1 − p)/n``), floored at 1, gives
the effective sample size n/deff; Korn & Graubard's degrees-of-freedom adjustment multiplies it
by (z / t_{G−1})², so that few queries widen the interval as a t interval would; the Wilson
interval (statsmodels' ``proportion_confint``) is computed on that size. statsmodels has no
clustered proportion interval, so the few lines are written here.

**A rate of 0 or 1** has no estimable design effect (the variance is 0 whatever the clustering).
The interval is then Wilson's on the *effective number of queries* ``(Σ m_q)² / Σ m_q²`` (Kish's:
G when every query has as many items), df-adjusted the same way: the size the items would have if
every item of a query gave the same outcome, the most clustered case, so the interval is valid
(conservative) whatever the clustering. The row says so (``note``); it never falls back to n.

**Refusals** (:mod:`.base`): no item: no estimate; fewer queries than
:func:`~sourcebias.clustered.base.interval_refusal` allows (1–4 at 95%, a single query included):
the rate, no interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sourcebias.clustered.base import Estimate, Estimator, interval_refusal, nothing_refusal, register_estimator

METHOD = "Wilson interval on Korn & Graubard's effective sample size n/deff (query clustering), df-adjusted (z/t_{G-1})²"
METHOD_EXTREME = "Wilson interval on the effective number of queries (Σm)²/Σm², df-adjusted (rate 0 or 1: no design effect to estimate)"
EXTREME_NOTE = "rate 0 or 1: no design effect to estimate; interval on the effective number of queries (every passage of a query alike)"


def design_effect(y: np.ndarray, codes: np.ndarray) -> float:
    """The design effect of query clustering of the share of ``y`` (0/1), floored at 1.

    Args:
        y: Outcomes.
        codes: Their query, as integer codes 0..G-1.

    Returns:
        deff (NaN when the rate is 0 or 1, or with one query).
    """
    n, g = len(y), int(codes.max()) + 1
    p = float(y.mean())
    if not 0.0 < p < 1.0 or g < 2:
        return float("nan")
    y_g, m_g = np.bincount(codes, weights=y), np.bincount(codes)
    var = g / (g - 1) * float(np.sum((y_g - p * m_g) ** 2)) / n**2
    return max(1.0, var / (p * (1.0 - p) / n))


class ClusteredProportion(Estimator):
    """The share of 0/1 outcomes with a query-clustered Wilson interval (module docstring)."""

    name = "clustered_proportion"
    description = "share of 0/1 outcomes; Wilson interval on Korn & Graubard's df-adjusted effective sample size (query clustering)"
    refusals = (
        "no item: no estimate",
        "too few queries (interval_refusal: 1-4 at 95%, one query included): no interval",
        "rate 0 or 1: interval on the effective number of queries, said in the row",
    )

    def estimate(self, outcomes: Any, clusters: Any, *, level: float = 0.95) -> Estimate:
        """The share of ``outcomes`` with its interval.

        Args:
            outcomes: 0/1 per item (NaN: left out and counted).
            clusters: Each item's query.
            level: The interval's coverage.

        Returns:
            The :class:`~sourcebias.clustered.base.Estimate` (``items`` the outcomes used,
            ``method`` the interval's, ``note`` set for a rate of 0 or 1).
        """
        import pandas as pd
        from scipy.stats import norm
        from scipy.stats import t as student_t
        from statsmodels.stats.proportion import proportion_confint

        y = np.asarray(outcomes, dtype=float)
        ok = np.isfinite(y)
        groups = np.asarray(clusters, dtype=object)[ok]
        y = y[ok]
        out = Estimate(level=level, method=METHOD, items=len(y), left_out=int((~ok).sum()))
        if len(y) == 0:
            return out.refuse(nothing_refusal(out.left_out))
        codes = pd.factorize(groups)[0]
        g = int(codes.max()) + 1
        out.estimate, out.queries = float(y.mean()), g
        refused = interval_refusal(g, level)
        if refused:
            return out.refuse(refused)
        df_factor = (float(norm.ppf(0.5 + level / 2)) / float(student_t.ppf(0.5 + level / 2, g - 1))) ** 2
        deff = design_effect(y, codes)
        if np.isfinite(deff):
            n_eff = len(y) / deff
        else:
            m = np.bincount(codes).astype(float)
            n_eff = float(m.sum() ** 2 / np.sum(m**2))
            out.method, out.note = METHOD_EXTREME, EXTREME_NOTE
        n_eff *= df_factor
        low, high = proportion_confint(out.estimate * n_eff, n_eff, alpha=1.0 - level, method="wilson")
        out.low, out.high = min(float(low), out.estimate), max(float(high), out.estimate)  # Wilson's bounds of a rate of 0 or 1 sit a rounding error inside it
        return out

    def example(self, queries: int, seed: int) -> dict[str, Any]:
        """Outcomes whose propensity varies by query around 0.3."""
        rng = np.random.default_rng(seed)
        sizes = rng.integers(2, 10, size=queries)
        p = np.clip(0.3 + rng.normal(0, 0.15, size=queries), 0.01, 0.99)
        outcomes = np.concatenate([rng.random(m) < p[q] for q, m in enumerate(sizes)]).astype(float)
        return {"outcomes": outcomes, "clusters": np.repeat([f"q{q}" for q in range(queries)], sizes)}


register_estimator(ClusteredProportion())
