"""The judges' statistics: a mean over judged items with a query-clustered CI and test, the
pairwise design's two effects, and the agreement of two sets of judgements.

**Why clustered.** The items of one query share the query (its difficulty, the judge's reading of
it), so they are not independent; the unit of resampling is the query. The estimate is the mean
over items (``Σ_q S_q / Σ_q n_q`` for query sums ``S_q`` of ``n_q`` items), its CI the percentile
bootstrap over queries (``scipy.stats.bootstrap(paired=True)`` over ``(S_q, n_q)``, as
:func:`sourcebias.evaluation.stats.twin_preference.cluster_bootstrap_rate`), and its test the
sign-flip randomization test of the query sums (:func:`~sourcebias.evaluation.stats.paired_tests.paired_randomization_test`
of ``S_q`` against 0: exact when 2^queries is at most the resamples, seeded otherwise). Items with
no value (an unparseable answer) are left out and counted.

**Pairwise.** Each twin pair is shown in both orders; with ``L_o`` = 1 when the LLM copy is
picked in order ``o`` (human first: ``hf``, LLM first: ``lf``), the source preference is
``(L_hf + L_lf)/2 − 1/2`` (> 0: the LLM copy is preferred whatever its place) and the position
effect ``(A_hf + A_lf)/2 − 1/2`` with ``A`` = 1 when the first passage is picked (``A_hf = 1 −
L_hf``, ``A_lf = L_lf``). Both are clustered means over pairs decided in both orders.

**Agreement.** Cohen's κ (``sklearn.metrics.cohen_kappa_score``, unweighted and
quadratic-weighted) between two label sets on the items both have, and Kendall's τ-b
(``scipy.stats.kendalltau``) between the orderings of systems by one measure.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

PERCENTILE = "percentile bootstrap over queries"


def clustered_mean(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[str],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    test_resamples: int = 10_000,
) -> dict[str, Any]:
    """Mean of ``values`` with a query-clustered bootstrap CI and sign-flip test.

    Args:
        values: One value per item (NaN: no value, left out and counted).
        clusters: The item's query, aligned with ``values``.
        resamples: Bootstrap resamples of queries.
        confidence: The CI's level.
        seed: Seed of the bootstrap and of the randomization test.
        test_resamples: Sign patterns of the randomization test (all 2^queries when no more).

    Returns:
        ``estimate``, ``low``, ``high``, ``ci_method`` (the one used), ``p`` (two-sided; 1 when
        every value is 0), ``p_method``, ``items``, ``queries``, ``missing`` (items left out),
        ``confidence``, ``resamples``, ``seed``.
    """
    from sourcebias.evaluation.stats.paired_tests import paired_randomization_test

    v = np.asarray(values, dtype=float)
    c = np.asarray(clusters, dtype=object)
    ok = np.isfinite(v)
    v, c = v[ok], c[ok]
    out: dict[str, Any] = {"estimate": float("nan"), "low": float("nan"), "high": float("nan"), "ci_method": PERCENTILE, "p": float("nan"), "p_method": "",
                           "items": len(v), "queries": 0, "missing": int((~ok).sum()), "confidence": confidence, "resamples": resamples, "seed": seed}  # fmt: skip
    if len(v) == 0:
        out.update(ci_method="none (no item with a value)", p_method="none (no item with a value)")
        return out
    keys, inverse = np.unique(c.astype(str), return_inverse=True)
    sums = np.bincount(inverse, weights=v, minlength=len(keys))
    counts = np.bincount(inverse, minlength=len(keys)).astype(float)
    out.update(estimate=float(v.sum() / len(v)), queries=len(keys))
    exact = len(keys) < 63 and 2 ** len(keys) <= test_resamples
    out["p"] = paired_randomization_test(sums, np.zeros_like(sums), n_resamples=test_resamples, seed=seed)
    out["p_method"] = f"sign-flip test of the query sums ({'exact' if exact else f'{test_resamples:,} seeded patterns'})"
    out.update(_cluster_ci(sums, counts, out["estimate"], resamples=resamples, confidence=confidence, seed=seed))
    return out


def _cluster_ci(sums: np.ndarray, counts: np.ndarray, estimate: float, *, resamples: int, confidence: float, seed: int) -> dict[str, Any]:
    """``low``, ``high``, ``ci_method`` of the ratio ``Σ sums / Σ counts`` over resampled queries."""
    from scipy import stats

    if len(sums) < 2:
        return {"ci_method": "none (fewer than 2 queries)"}
    if np.ptp(sums / counts) == 0:
        return {"low": estimate, "high": estimate, "ci_method": "none (every query has the same mean)"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a degenerate resample is already handled above
        res = stats.bootstrap((sums, counts), lambda s, n, axis=-1: np.sum(s, axis=axis) / np.sum(n, axis=axis), paired=True, vectorized=True,
                              n_resamples=resamples, confidence_level=confidence, method="percentile", random_state=np.random.default_rng(seed))  # fmt: skip
    return {"low": float(res.confidence_interval.low), "high": float(res.confidence_interval.high), "ci_method": PERCENTILE}


def pairwise_effects(
    pick_llm_hf: Sequence[float] | np.ndarray, pick_llm_lf: Sequence[float] | np.ndarray, clusters: Sequence[str], **kw: Any
) -> dict[str, Any]:
    """Source preference and position effect of pairs judged in both orders (module docstring).

    Args:
        pick_llm_hf: Per pair, 1 when the LLM copy was picked with the human copy shown first, 0
            when the human copy was, NaN when unparseable.
        pick_llm_lf: The same with the LLM copy shown first.
        clusters: The pair's query.
        **kw: Passed to :func:`clustered_mean`.

    Returns:
        ``{"source": clustered_mean(...), "position": clustered_mean(...), "consistent": share of
        pairs with the same copy picked in both orders, "pairs": decided in both orders}``.
    """
    hf, lf = np.asarray(pick_llm_hf, dtype=float), np.asarray(pick_llm_lf, dtype=float)
    both = np.isfinite(hf) & np.isfinite(lf)
    source = np.where(both, (hf + lf) / 2 - 0.5, np.nan)
    position = np.where(both, ((1 - hf) + lf) / 2 - 0.5, np.nan)
    consistent = float(np.mean(hf[both] == lf[both])) if both.any() else float("nan")
    return {
        "source": clustered_mean(source, clusters, **kw),
        "position": clustered_mean(position, clusters, **kw),
        "consistent": consistent,
        "pairs": int(both.sum()),
    }


def kappa(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Cohen's κ between two label sets (unweighted and quadratic-weighted), on the items where
    both are finite.

    Returns:
        ``kappa``, ``kappa_quadratic``, ``items``, ``note`` (why κ is undefined: no item, or a
        single label on both sides, where scikit-learn divides 0 by 0).
    """
    from sklearn.metrics import cohen_kappa_score

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok].astype(int), y[ok].astype(int)
    out: dict[str, Any] = {"kappa": float("nan"), "kappa_quadratic": float("nan"), "items": len(x), "note": ""}
    if len(x) == 0:
        out["note"] = "undefined: no item judged by both"
    elif len(set(x.tolist()) | set(y.tolist())) < 2:
        out["note"] = "undefined: one label on both sides (chance agreement 1)"
    else:
        out["kappa"] = float(cohen_kappa_score(x, y))
        out["kappa_quadratic"] = float(cohen_kappa_score(x, y, weights="quadratic"))
    return out


def kendall(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Kendall's τ-b between two scorings of the same systems (``scipy.stats.kendalltau``).

    Returns:
        ``tau``, ``p``, ``systems``, ``note`` (undefined with fewer than 2 systems, or a
        constant scoring).
    """
    from scipy.stats import kendalltau

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out: dict[str, Any] = {"tau": float("nan"), "p": float("nan"), "systems": len(x), "note": ""}
    if len(x) < 2:
        out["note"] = "undefined: fewer than 2 systems"
    elif np.ptp(x) == 0 or np.ptp(y) == 0:
        out["note"] = "undefined: every system scores the same under one of the qrels"
    else:
        res = kendalltau(x, y)
        out.update(tau=float(res.statistic), p=float(res.pvalue))
        if len(x) < 4:
            out["note"] = f"{len(x)} systems: τ can only take a few values; read it as an ordering check, not a test"
    return out


def finite_or_none(v: Any) -> Any:
    """``None`` for NaN (JSON has no NaN), the value otherwise."""
    return None if isinstance(v, float) and not math.isfinite(v) else v
