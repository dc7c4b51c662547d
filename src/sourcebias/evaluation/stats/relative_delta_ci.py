"""Relative Δ with a bootstrap confidence interval over queries (a query's human and LLM values
resampled together): ``scipy.stats.bootstrap(paired=True)``, BCa by default.

Relative Δ is undefined (NaN) in a resample whose human and LLM means are both 0. BCa cannot be
computed from such a distribution, so when any resample is undefined the interval is the
percentile interval over the *finite* resamples, the method is named so, and the number of
undefined resamples is reported. The method and level in the output are those actually used.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.evaluation.stats.base import BOOTSTRAP_BATCH, Column, Record, StatContext, Statistic, known, paired_values, register_statistic

FINITE_PERCENTILE = "percentile over the finite resamples"


def relative_delta_values(h: np.ndarray, llm: np.ndarray, axis: int = -1) -> np.ndarray:
    """Relative Δ (percent) of the means along ``axis`` (vectorised for the bootstrap)."""
    mh, ml = np.mean(h, axis=axis), np.mean(llm, axis=axis)
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
    a = np.asarray(h, dtype=float)
    b = np.asarray(llm, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError("the human and LLM values must be paired vectors of the same length")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    est = float(relative_delta_values(a, b)) if len(a) else float("nan")
    out = {
        "estimate": est,
        "low": float("nan"),
        "high": float("nan"),
        "confidence": confidence,
        "method": method,
        "n_resamples": n_resamples,
        "undefined_resamples": 0,
        "seed": seed,
        "queries": len(a),
    }
    if len(a) < 2 or not math.isfinite(est):
        out["method"] = "none (Relative Δ undefined)" if len(a) >= 2 else "none (fewer than 2 queries)"
        return out
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        out.update(low=est, high=est, method="none (no variability)")
        return out
    dist, lo, hi = _bootstrap(a, b, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method)
    finite = dist[np.isfinite(dist)]
    out["undefined_resamples"] = int(len(dist) - len(finite))
    if out["undefined_resamples"] == 0 and math.isfinite(lo) and math.isfinite(hi):
        out.update(low=lo, high=hi, method=method)
        return out
    if len(finite) < 2:
        out["method"] = "none (every resample undefined)"
        return out
    alpha = (1 - confidence) / 2
    lo, hi = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    used = FINITE_PERCENTILE if out["undefined_resamples"] else "percentile"  # BCa itself undefined (e.g. a constant jackknife)
    out.update(low=float(lo), high=float(hi), method=used)
    return out


def _bootstrap(a: np.ndarray, b: np.ndarray, *, n_resamples: int, confidence: float, seed: int, method: str) -> tuple[np.ndarray, float, float]:
    """``scipy.stats.bootstrap`` of Relative Δ over the paired queries (warnings silenced: undefined
    resamples are counted by the caller): the bootstrap distribution and the interval's bounds."""
    from scipy import stats

    def stat(x, y, axis=-1):
        return relative_delta_values(x, y, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (a, b),
            stat,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method=method,
            random_state=np.random.default_rng(seed),
            batch=BOOTSTRAP_BATCH,
        )
    return np.asarray(res.bootstrap_distribution, dtype=float), float(res.confidence_interval.low), float(res.confidence_interval.high)


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
        out: list[Record] = []
        for name, llm, m, h, g in paired_values(result, ctx.measures):
            b = bootstrap_relative_delta(h, g, n_resamples=ctx.bootstrap_resamples, confidence=ctx.confidence, seed=ctx.seed)
            out.append(
                RelativeDeltaRecord(
                    name, llm, m, b["estimate"], b["low"], b["high"], b["confidence"], b["method"], b["n_resamples"], b["undefined_resamples"], b["seed"]
                )
            )
        return out

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
        undefined = [r for r in recs if r.ci_undefined_resamples]
        if undefined:
            text += (
                " Undefined resamples (both means 0) left out: "
                + ", ".join(f"{r.retriever}/{r.llm_source}/{r.measure}: {r.ci_undefined_resamples:,} of {r.ci_resamples:,}" for r in undefined)
                + "."
            )
        return text


register_statistic(RelativeDeltaCI())
