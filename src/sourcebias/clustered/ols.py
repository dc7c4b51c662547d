"""Ordinary least squares with standard errors clustered by query: the one implementation behind the
re-rankers' position/source fit (:mod:`.position_source`) and the gap decomposition
(:mod:`sourcebias.analysis.decompose`).

statsmodels ``OLS(...).fit(cov_type="cluster", use_t=True)``: the CR1 sandwich (small-sample
factor G/(G − 1) · (N − 1)/(N − K)) and t intervals with G − 1 degrees of freedom, G the queries.
Before fitting, a design that cannot be fitted is refused with what is wrong, named: a regressor
without variation, or regressors that are linear combinations of each other (which ones, read
from the null space of the design). With too few queries for an interval
(:func:`~sourcebias.clustered.base.interval_refusal`) the coefficients are fitted but carry no
interval and no p; so do they when the fit is exact (every residual zero up to rounding,
:data:`EXACT_FIT`): the standard errors are then zero in exact arithmetic, and what the sandwich
computes from residuals of 1e-16 is rounding (a listwise model that returns every window in the
order shown gave a source coefficient of 4e-16 with "p = 0.117" and a position p of 6e-61).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.clustered.base import Estimate, interval_refusal

METHOD = "OLS, standard errors clustered by query (CR1), t intervals with G − 1 df"
#: A fit is exact when its largest residual is at most this fraction of the outcome's range (of
#: its size when it does not vary, or of 1 when it is all zero): float64 rounding leaves residuals near 1e-16 of it, and
#: one answer in a thousand that departs from a perfect fit by a position in a window of 20
#: leaves one of 0.05.
EXACT_FIT = 1e-9


def collinear_terms(x: np.ndarray, names: Sequence[str], tol: float = 1e-8) -> list[list[str]]:
    """The groups of columns of ``x`` that are linear combinations of each other.

    Each null-space direction of ``x`` (right singular vectors of singular values below ``tol``
    times the largest) names the columns with a non-zero weight in it.

    Args:
        x: The design (rows × columns).
        names: A name per column.
        tol: Relative threshold of a zero singular value.

    Returns:
        One list of names per dependency (empty when ``x`` has full column rank).
    """
    if x.size == 0:
        return []
    _, s, vt = np.linalg.svd(x, full_matrices=True)
    rank = int(np.sum(s > tol * (s[0] if len(s) else 1.0)))
    out = []
    for v in vt[rank:]:
        w = np.abs(v) / np.abs(v).max()
        group = [str(names[int(i)]) for i in np.flatnonzero(w > 1e-6)]
        if group and group not in out:
            out.append(group)
    return out


def dependency_text(groups: Sequence[Sequence[str]]) -> str:
    """``collinear_terms``' groups as a phrase: "a, b and c are linearly dependent; ..."."""
    parts = []
    for g in groups:
        names = list(g)
        parts.append((", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]) + " are linearly dependent")
    return "; ".join(parts)


@dataclass
class ClusteredFit:
    """A fitted (or refused) clustered OLS: per term the coefficient, SE, interval and p."""

    names: list[str]
    rows: int
    queries: int
    level: float
    refused: str = ""
    interval_refused: str = ""
    fit: Any = None
    terms: dict[str, Estimate] = field(default_factory=dict)


def clustered_ols(y: Any, design: np.ndarray, names: Sequence[str], groups: Any, *, level: float = 0.95) -> ClusteredFit:
    """OLS of ``y`` on ``design`` (its columns named ``names``, a constant included by the caller)
    with standard errors clustered by ``groups``.

    Args:
        y: The outcome.
        design: Rows × columns.
        names: A name per column.
        groups: Each row's query.
        level: The intervals' coverage.

    Returns:
        The :class:`ClusteredFit`; ``refused`` says why nothing was fitted (too few rows, a
        regressor without variation, collinear regressors, named), ``interval_refused`` why the
        coefficients carry no interval and p (too few queries).
    """
    import statsmodels.api as sm

    y = np.asarray(y, dtype=float).reshape(-1)
    x = np.asarray(design, dtype=float)
    g = np.asarray(groups).reshape(-1)
    _, codes = np.unique(g.astype(str), return_inverse=True)
    queries = int(codes.max()) + 1 if len(codes) else 0
    out = ClusteredFit(list(names), len(y), queries, level)
    if len(y) <= x.shape[1]:
        out.refused = f"{len(y)} rows for {x.shape[1]} terms: nothing left to estimate the residuals from"
        return out
    flat = [str(n) for i, n in enumerate(names) if np.ptp(x[:, i]) == 0 and not np.all(x[:, i] == 1)]
    if flat:
        out.refused = "no variation in " + ", ".join(flat) + " (every row has the same value)"
        return out
    groups_of = collinear_terms(x, names)
    if groups_of:
        out.refused = "collinear: " + dependency_text(groups_of)
        return out
    out.interval_refused = interval_refusal(queries, level)
    # too few queries: the coefficients only (a clustered covariance on 1-4 queries can be degenerate, and is not reported)
    fit = sm.OLS(y, x).fit() if out.interval_refused else sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    out.fit = fit
    largest = float(np.max(np.abs(fit.resid)))  # len(y) > the number of terms: checked above
    scale = float(np.ptp(y)) or float(np.max(np.abs(y))) or 1.0  # the outcome's range; its size when it does not vary
    if not out.interval_refused and largest <= EXACT_FIT * scale:
        out.interval_refused = (
            f"the fit is exact (all {len(y):,} rows on it; largest residual {largest:.1e}): the standard errors are 0, "
            "so an interval or a test would be rounding"
        )
    ci = np.full((len(names), 2), np.nan) if out.interval_refused else np.asarray(fit.conf_int(alpha=1 - level))
    for i, n in enumerate(names):
        e = Estimate(estimate=float(fit.params[i]), level=level, method=METHOD, p_method="t test of the clustered fit, G − 1 df", items=len(y), queries=queries)
        if out.interval_refused:
            e.refuse(out.interval_refused)
        else:
            e.low, e.high, e.p = float(ci[i, 0]), float(ci[i, 1]), float(fit.pvalues[i])
        out.terms[str(n)] = e
    return out
