"""The judges' statistics: a mean over judged items with a query-clustered CI and test, the
pairwise design's two effects, and the agreement of two sets of judgements.

**Clustered means.** Every estimate is the registered ``mean_difference`` estimator's
(:mod:`sourcebias.clustered.mean_difference`, the one the citation study's twins and the
retrievers' twin preference use too): the mean over items, its cluster-robust (CR1) t interval
over queries (G − 1 df), and the sign-flip randomization test of the query sums. Items with no
value (an unparseable answer) are left out and counted. With too few queries for an interval
(the audit's rule, :func:`sourcebias.clustered.interval_refusal`: 1–4 at 95%) the estimate is
given without interval and p, and says why.

**Pairwise.** Each twin pair is shown in both orders; with ``L_o`` = 1 when the LLM copy is
picked in order ``o`` (human first: ``hf``, LLM first: ``lf``), the source preference is
``(L_hf + L_lf)/2 − 1/2`` (> 0: the LLM copy is preferred whatever its place) and the position
effect ``(A_hf + A_lf)/2 − 1/2`` with ``A`` = 1 when the first passage is picked (``A_hf = 1 −
L_hf``, ``A_lf = L_lf``). Both are clustered means over pairs decided in both orders.

**Agreement.** Cohen's κ (``sklearn.metrics.cohen_kappa_score``) between two label sets on the
items both have: on the grades themselves (unweighted and quadratic-weighted) only when both use
one scale, and always binarised at grade > 0 (relevant as the protocol counts it), so that
assessors who grade 0–2 and a judge who grades 0–3 are compared on what both scales mean alike.
Kendall's τ-b (``scipy.stats.kendalltau``) between the orderings of systems by one measure, on
the queries both qrels evaluate; its p only from 3 systems on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def clustered_mean(
    values: Sequence[float] | np.ndarray, clusters: Sequence[str], *, confidence: float = 0.95, seed: int = 0, test_resamples: int = 10_000
) -> dict[str, Any]:
    """Mean of ``values`` with the ``mean_difference`` estimator's clustered CI and test.

    Args:
        values: One value per item (NaN: no value, left out and counted).
        clusters: The item's query, aligned with ``values``.
        confidence: The CI's level.
        seed: Seed of the randomization test's patterns (beyond 20 queries).
        test_resamples: Sign patterns of the randomization test beyond 20 queries.

    Returns:
        ``estimate``, ``low``, ``high``, ``ci_method`` (the one used, or ``none (...)``), ``p``
        (two-sided; 1 when every value is 0), ``p_method``, ``items``, ``queries``, ``missing``
        (items left out), ``confidence``, ``seed``, ``refused`` (why no CI and p: "" when
        computed) and ``note``.
    """
    from sourcebias.clustered import get_estimator

    e = get_estimator("mean_difference").estimate(values, clusters, level=confidence, test_resamples=test_resamples, seed=seed)
    return {
        "estimate": e.estimate,
        "low": e.low,
        "high": e.high,
        "ci_method": e.method,
        "p": e.p,
        "p_method": e.p_method,
        "items": e.items,
        "queries": e.queries,
        "missing": e.left_out,
        "confidence": confidence,
        "seed": seed,
        "refused": e.refused,
        "note": e.note,
    }


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


def kappa(a: Sequence[float], b: Sequence[float], *, same_scale: bool = True) -> dict[str, Any]:
    """Cohen's κ between two label sets on the items where both are finite: binarised at
    grade > 0 (relevant as the protocol counts it) always; on the grades themselves (unweighted and
    quadratic-weighted) only when ``same_scale``.

    Args:
        a: One set of grades (the assessors').
        b: The other (the judge's), aligned.
        same_scale: Whether both grade on one scale (assessors 0–2 and a 0–3 judge do not: their
            grade 2 means different things, so graded κ would compare unlike labels).

    Returns:
        ``kappa_binary``, ``kappa``, ``kappa_quadratic`` (NaN when not on one scale), ``items``,
        ``note`` (why a κ is undefined or not computed: no item, a single label on both sides
        where scikit-learn divides 0 by 0, a single label on one side where κ is 0 by
        construction, or two scales).
    """
    from sklearn.metrics import cohen_kappa_score

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok].astype(int), y[ok].astype(int)
    nan = float("nan")
    out: dict[str, Any] = {"kappa_binary": nan, "kappa": nan, "kappa_quadratic": nan, "items": len(x), "note": ""}
    if len(x) == 0:
        out["note"] = "undefined: no item judged by both"
        return out
    xb, yb = (x > 0).astype(int), (y > 0).astype(int)
    notes = []
    why = _single_label(xb, yb, "binary κ", {0: "not relevant", 1: "relevant"})
    if why:
        notes.append(why)
    else:
        out["kappa_binary"] = float(cohen_kappa_score(xb, yb))
    if not same_scale:
        notes.append("graded κ not computed: the two grade on different scales; binary κ at grade > 0 (relevant as the protocol counts it)")
    elif why := _single_label(x, y, "graded κ", {}):
        notes.append(why)
    else:
        out["kappa"] = float(cohen_kappa_score(x, y))
        out["kappa_quadratic"] = float(cohen_kappa_score(x, y, weights="quadratic"))
    out["note"] = "; ".join(notes)
    return out


def _single_label(x: np.ndarray, y: np.ndarray, what: str, names: dict[int, str]) -> str:
    """Why κ is not computed when a side gives one label only ('' when both give two or more).

    With one label on both sides chance agreement is 1 and κ is 0/0. With one label on one side
    only, chance agreement equals observed agreement, so κ is 0 whatever the other side says
    (scikit-learn returns 0): a number that measures nothing, e.g. NFCorpus's judgements, which
    hold relevant documents only. The other side's share of each label is given instead."""
    one_x, one_y = len(set(x.tolist())) < 2, len(set(y.tolist())) < 2
    if one_x and one_y:
        return f"{what} undefined: one label on both sides (chance agreement 1)"
    if not (one_x or one_y):
        return ""
    side, label, other = ("the assessors give", int(x[0]), y) if one_x else ("the judge gives", int(y[0]), x)
    shares = ", ".join(f"{names.get(v, v)} {np.mean(other == v):.2f}" for v in sorted(set(other.tolist())))
    return (
        f"{what} not computed: {side} every one of the {len(x):,} items the label {names.get(label, label)},"
        f" so κ is 0 whatever the other side says; the other side's shares: {shares}"
    )


def kendall(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Kendall's τ-b between two scorings of the same systems (``scipy.stats.kendalltau``).

    Returns:
        ``tau``, ``p`` (NaN with fewer than 3 systems: two systems give τ = ±1 and p = 1 whatever
        their scores, no test), ``systems``, ``note`` (undefined with fewer than 2 systems, or a
        constant scoring; what a small number of systems allows).
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
        out["tau"] = float(res.statistic)
        if len(x) < 3:
            out["note"] = "2 systems: τ is +1 or −1, an ordering check; no p (a test needs 3 systems or more)"
        else:
            out["p"] = float(res.pvalue)
            if len(x) < 4:
                out["note"] = f"{len(x)} systems: τ can only take a few values; read it as an ordering check, not a test"
    return out


def finite_or_none(v: Any) -> Any:
    """``None`` for NaN (JSON has no NaN), the value otherwise."""
    return None if isinstance(v, float) and not math.isfinite(v) else v
