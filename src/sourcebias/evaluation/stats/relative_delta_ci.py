"""Relative Δ with a bootstrap confidence interval over queries (a query's human and LLM values
resampled together): the interval of ``scipy.stats.bootstrap(paired=True)``, BCa by default,
computed by :mod:`.resampling` (SciPy's draws and formulas, the jackknife in closed form).

Relative Δ is undefined (NaN) in a resample whose human and LLM means are both 0. BCa cannot be
computed from such a distribution, so when any resample is undefined the interval is the
percentile interval over the *finite* resamples, the method is named so, and the number of
undefined resamples is reported. The method and level in the output are those actually used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, known, paired_values, register_statistic
from sourcebias.evaluation.stats.resampling import bca_interval, bootstrap_distributions, leave_one_out_means, percentile_interval

FINITE_PERCENTILE = "percentile over the finite resamples"
METHODS = ("BCa", "percentile")


def relative_delta_values(h: np.ndarray, llm: np.ndarray, axis: int = -1) -> np.ndarray:
    """Relative Δ (percent) of the means along ``axis`` (vectorised for the bootstrap)."""
    mh, ml = np.mean(h, axis=axis), np.mean(llm, axis=axis)
    return _relative_delta_of_means(mh, ml)


def _relative_delta_of_means(mh: np.ndarray, ml: np.ndarray) -> np.ndarray:
    denom = (mh + ml) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom != 0, (mh - ml) / denom * 100.0, np.nan)


def bootstrap_relative_delta(
    h: Sequence[float] | np.ndarray, llm: Sequence[float] | np.ndarray, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0, method: str = "BCa"
) -> dict[str, Any]:
    """Relative Δ and its bootstrap confidence interval over queries (pairs kept together).

    Returns ``estimate``, ``low``, ``high``, ``confidence``, ``method`` (the one used: ``BCa``,
    ``percentile``, ``percentile over the finite resamples``, or ``none (...)``),
    ``n_resamples``, ``undefined_resamples``, ``seed`` and ``queries``. Degenerate cases: both
    means 0 -> NaN everywhere; every query with the same values -> the estimate as both bounds.
    """
    return bootstrap_relative_deltas([(h, llm)], n_resamples=n_resamples, confidence=confidence, seed=seed, method=method)[0]


def bootstrap_relative_deltas(
    pairs: Sequence[tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "BCa",
) -> list[dict[str, Any]]:
    """:func:`bootstrap_relative_delta` of each ``(human, llm)`` pair of value vectors; vectors
    of one length share the bootstrap's draws (each is resampled as alone: the draws depend only
    on the length and the seed)."""
    if method not in METHODS:
        raise ConfigError(f"the bootstrap method must be one of {', '.join(METHODS)}, got '{method}'")
    out: list[dict[str, Any]] = []
    todo: dict[int, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for i, (h, llm) in enumerate(pairs):
        a, b, res = _prepared(h, llm, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method)
        out.append(res)
        if a is not None and b is not None:
            todo.setdefault(len(a), []).append((i, a, b))
    for items in todo.values():
        dists = bootstrap_distributions(relative_delta_values, [(a, b) for _, a, b in items], n_resamples, seed)
        for (i, a, b), dist in zip(items, dists):
            _interval(out[i], a, b, dist, confidence, method)
    return out


def _prepared(h: Any, llm: Any, **settings: Any) -> tuple[np.ndarray | None, np.ndarray | None, dict[str, Any]]:
    """The finite pairs and the result's fields; the arrays are ``None`` when no bootstrap is
    needed (fewer than 2 queries, Relative Δ undefined, no variability: the result is final)."""
    a = np.asarray(h, dtype=float)
    b = np.asarray(llm, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError("the human and LLM values must be paired vectors of the same length")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    est = float(relative_delta_values(a, b)) if len(a) else float("nan")
    out = {"estimate": est, "low": float("nan"), "high": float("nan"), "confidence": settings["confidence"], "method": settings["method"]}
    out |= {"n_resamples": settings["n_resamples"], "undefined_resamples": 0, "seed": settings["seed"], "queries": len(a)}
    if len(a) < 2 or not math.isfinite(est):
        out["method"] = "none (Relative Δ undefined)" if len(a) >= 2 else "none (fewer than 2 queries)"
        return None, None, out
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        out.update(low=est, high=est, method="none (no variability)")
        return None, None, out
    return a, b, out


def _interval(out: dict[str, Any], a: np.ndarray, b: np.ndarray, dist: np.ndarray, confidence: float, method: str) -> None:
    """Fill ``out``'s interval from the bootstrap distribution: ``method``'s when every resample
    is defined, else the percentile interval over the finite resamples."""
    finite = dist[np.isfinite(dist)]
    out["undefined_resamples"] = int(len(dist) - len(finite))
    if out["undefined_resamples"] == 0:
        if method == "BCa":
            jackknife = _relative_delta_of_means(leave_one_out_means(a), leave_one_out_means(b))
            lo, hi = bca_interval(out["estimate"], dist, jackknife, confidence)
        else:
            lo, hi = percentile_interval(dist, confidence)
        if math.isfinite(lo) and math.isfinite(hi):
            out.update(low=lo, high=hi, method=method)
            return
    if len(finite) < 2:
        out["method"] = "none (every resample undefined)"
        return
    alpha = (1 - confidence) / 2
    lo, hi = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    used = FINITE_PERCENTILE if out["undefined_resamples"] else "percentile"  # BCa itself undefined (e.g. a constant jackknife)
    out.update(low=float(lo), high=float(hi), method=used)


def refused_if_few(ci: dict[str, Any]) -> dict[str, Any]:
    """``ci`` without its bounds when its queries are too few for an interval at its level.

    The package's one rule for intervals over queries (:func:`~sourcebias.clustered.base.interval_refusal`:
    at 95%, 2 to 4 queries give at most 35 distinct resamples, fewer than the 40 the two tails
    need): the bootstrap's interval is then an artefact of the few resamples, so it is refused and
    the method says why (shown in the caption). Fewer than 2 queries already have no interval.
    """
    from sourcebias.clustered.base import interval_refusal

    reason = interval_refusal(int(ci["queries"]), float(ci["confidence"])) if ci["queries"] >= 2 else ""
    if not reason or str(ci["method"]).startswith("none"):
        return ci
    return ci | {"low": float("nan"), "high": float("nan"), "method": f"none ({reason})"}


@dataclass
class RelativeDeltaRecord(Record):
    rel_delta: float = float("nan")
    rel_delta_ci_low: float = float("nan")
    rel_delta_ci_high: float = float("nan")
    ci_level: float = 0.95
    ci_method: str = ""
    ci_resamples: int = 0
    ci_undefined_resamples: int = 0
    ci_seed: int = 0

    columns: ClassVar[tuple[Column, ...]] = (
        Column("rel_delta", "Rel Δ [CI]", "delta_ci", 1, low="rel_delta_ci_low", high="rel_delta_ci_high", mark="p_adjusted"),
    )


class RelativeDeltaCI(Statistic):
    """Relative Δ of each measure with its seeded bootstrap CI over queries."""

    name = "relative_delta_ci"
    aliases = ("relative_delta", "rel_delta", "ci", "bootstrap")
    description = "Relative Δ with a paired bootstrap confidence interval over queries (BCa)"
    record = RelativeDeltaRecord

    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        rows = list(paired_values(result, ctx.measures))
        cis = [
            refused_if_few(b)
            for b in bootstrap_relative_deltas([(h, g) for *_, h, g in rows], n_resamples=ctx.bootstrap_resamples, confidence=ctx.confidence, seed=ctx.seed)
        ]
        return [
            RelativeDeltaRecord(
                name, llm, m, b["estimate"], b["low"], b["high"], b["confidence"], b["method"], b["n_resamples"], b["undefined_resamples"], b["seed"]
            )
            for (name, llm, m, _, _), b in zip(rows, cis)
        ]

    def caption(self, records: Sequence[Record]) -> str:
        recs = cast("list[RelativeDeltaRecord]", list(records))  # this statistic's own records
        if not recs:
            return ""
        levels = ", ".join(f"{lv:.0%}" for lv in known(r.ci_level for r in recs)) or "a"
        resamples = ", ".join(f"{n:,}" for n in known(r.ci_resamples for r in recs)) or "?"
        seeds = ", ".join(str(x) for x in known(r.ci_seed for r in recs)) or "?"
        methods: dict[str, int] = {}
        for r in recs:
            methods[r.ci_method or "?"] = methods.get(r.ci_method or "?", 0) + 1
        used = next(iter(methods)) if len(methods) == 1 else "; ".join(f"{m} in {n} rows" for m, n in methods.items())
        text = (
            f"Relative Δ = (human − LLM) / mean × 100 with its {levels} bootstrap CI (queries resampled in pairs, {resamples} resamples, "
            f"seed {seeds}; method: {used}); > 0: human-written ranked higher, < 0: LLM-generated ranked higher."
        )
        undefined = [r for r in recs if r.ci_undefined_resamples and not r.ci_method.startswith("none")]  # a refused interval used none of its resamples
        if undefined:
            text += (
                " Undefined resamples (both means 0) left out: "
                + ", ".join(f"{r.retriever}/{r.llm_source}/{r.measure}: {r.ci_undefined_resamples:,} of {r.ci_resamples:,}" for r in undefined)
                + "."
            )
        return text


register_statistic(RelativeDeltaCI())
