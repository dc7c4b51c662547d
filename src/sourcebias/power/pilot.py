"""A pilot's per-query values, taken from an ``evaluate`` result (or a grid cell, which is one),
as power models: one per statistic, retriever, LLM source and measure.

* **Relative Δ** and the **NDCG difference** (any target measure): per query human − LLM target
  on the mixed ranking (:class:`~sourcebias.power.paired.PairedPower`); unit: a query.
* **Twin preference**: per query, how many relevant pairs have the LLM copy first and how many
  the original (:func:`sourcebias.evaluation.statistics.twin_preference` on each query alone,
  ties and pairs with neither copy retrieved left out as there); unit: a relevant (query,
  document) pair, resampled by query (:class:`~sourcebias.power.twin.TwinPower`). Needs the runs
  and the dataset's judgements.
* **ΔNDSR@k**: per query NDSR_human − NDSR_LLM (:func:`sourcebias.evaluation.statistics.delta_ndsr`
  on each query alone, with the result's orphan rule); unit: a query. Needs the runs.

The per-query values are checked against the statistics computed over all queries at once (the
same sums and means), so the pilot is the analysis' own numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.power.base import PowerModel
from sourcebias.power.paired import PairedPower
from sourcebias.power.twin import TwinPower

RELATIVE_DELTA = "relative_delta"
NDCG_DIFFERENCE = "ndcg_difference"
TWIN_PREFERENCE = "twin_preference"
DELTA_NDSR = "delta_ndsr"
STATISTICS = (RELATIVE_DELTA, NDCG_DIFFERENCE, TWIN_PREFERENCE, DELTA_NDSR)
ALIASES = {
    "rel_delta": RELATIVE_DELTA, "reldelta": RELATIVE_DELTA, "rd": RELATIVE_DELTA,
    "ndcg": NDCG_DIFFERENCE, "difference": NDCG_DIFFERENCE, "diff": NDCG_DIFFERENCE, "ndcg_diff": NDCG_DIFFERENCE,
    "twin": TWIN_PREFERENCE, "twin_pref": TWIN_PREFERENCE, "pairs": TWIN_PREFERENCE,
    "ndsr": DELTA_NDSR, "dndsr": DELTA_NDSR, "delta_ndsr": DELTA_NDSR,
}  # fmt: skip
UNITS = {
    RELATIVE_DELTA: "query",
    NDCG_DIFFERENCE: "query",
    TWIN_PREFERENCE: "relevant (query, document) pair; queries resampled as clusters",
    DELTA_NDSR: "query",
}
#: how each statistic's effect is written (the unit of --effect)
EFFECT_UNITS = {
    RELATIVE_DELTA: "percent (Relative Δ of the means)",
    NDCG_DIFFERENCE: "measure units, human − LLM (0.05 = 5 NDCG points)",
    TWIN_PREFERENCE: "share of pairs with the LLM copy first (0.55 = 55%)",
    DELTA_NDSR: "NDSR units, human − LLM",
}
RD_SHIFT = (
    "Relative Δ = R imposed as the mean difference δ = R·M/100 with the pilot's mean level M = (mean human + mean LLM)/2 kept "
    "(human values raised and LLM values lowered by δ/2 around each query's difference); a study's Relative Δ is that of its "
    "resampled means and is significant when its paired t-test is (they share their sign)"
)


def statistic_name(name: str) -> str:
    """The statistic a user's name means (``twin`` -> ``twin_preference``)."""
    key = name.strip().lower().replace("-", "_")
    if key in STATISTICS:
        return key
    if key in ALIASES:
        return ALIASES[key]
    raise ConfigError(f"unknown statistic '{name}'; statistics: {', '.join(STATISTICS)} (or {', '.join(sorted(ALIASES))})")


@dataclass
class Pilot:
    """One statistic of one retriever and LLM source (and measure) of the pilot, with its power
    model and what the pilot itself says."""

    statistic: str
    retriever: str
    llm_source: str
    measure: str
    model: PowerModel
    p_value: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.statistic, self.retriever, self.llm_source, self.measure)

    def summary(self) -> dict[str, Any]:
        m = self.model
        sd = getattr(m, "sd", math.nan) * getattr(m, "scale", 1.0)
        return {
            "statistic": self.statistic, "retriever": self.retriever, "llm_source": self.llm_source, "measure": self.measure,
            "unit": UNITS[self.statistic], "queries": m.queries, "estimate": m.estimate, "sd": sd, "p_value": self.p_value,
            "test": m.test, "shift": RD_SHIFT if self.statistic == RELATIVE_DELTA else m.shift, "undefined": m.undefined,
            **self.details,
        }  # fmt: skip


def orphan_policy(result: Any) -> str:
    """The orphan rule the result was made with (``drop``, the loader's default, when unsaid)."""
    policy = (result.parameters or {}).get("orphans") or ((result.dataset or {}).get("orphans") or {}).get("policy")
    return str(policy or "drop")


def paired_pilots(result: Any, measures: list[str], *, statistics: set[str], alpha: float, resamples: int, seed: int) -> list[Pilot]:
    """The Relative Δ and difference pilots of every retriever, LLM source and measure."""
    from sourcebias.evaluation import MIXED, Key, paired_t_test, relative_delta

    out: list[Pilot] = []
    for retriever in result.retrievers:
        for llm in result.other_sources:
            for m in measures:
                kh, kl = Key(retriever, MIXED, result.human_source, m), Key(retriever, MIXED, llm, m)
                if kh not in result.per_query or kl not in result.per_query:
                    continue
                h, lv = result.per_query[kh], result.per_query[kl]
                ok = np.isfinite(h) & np.isfinite(lv)
                base = PairedPower(h[ok] - lv[ok], alpha=alpha, resamples=resamples, seed=seed, key=f"{retriever}\t{llm}\t{m}")
                p = paired_t_test(h[ok], lv[ok]) if ok.sum() else math.nan
                means = {"mean_human": float(h[ok].mean()) if ok.any() else math.nan, "mean_llm": float(lv[ok].mean()) if ok.any() else math.nan}
                if NDCG_DIFFERENCE in statistics:
                    out.append(Pilot(NDCG_DIFFERENCE, retriever, llm, m, base, p, dict(means)))
                if RELATIVE_DELTA in statistics:
                    level = (means["mean_human"] + means["mean_llm"]) / 2
                    rd = base.rescaled(100.0 / level if level > 0 else math.nan, limit=2 * min(level, 1 - level) if level > 0 else math.nan)
                    means["relative_delta"] = relative_delta(means["mean_human"], means["mean_llm"])
                    out.append(Pilot(RELATIVE_DELTA, retriever, llm, m, rd, p, {**means, "level": level}))
    return out


def twin_pilots(result: Any, qrels: Any, *, alpha: float, resamples: int, seed: int) -> list[Pilot]:
    """Per retriever and LLM source: the pair counts of each query (twin preference)."""
    from sourcebias.evaluation import MIXED, RunKey
    from sourcebias.evaluation.statistics import twin_preference

    out: list[Pilot] = []
    for retriever in result.retrievers:
        run = result.runs.get(RunKey(retriever, MIXED))
        if run is None:
            continue
        for llm in result.other_sources:
            per_query = [twin_preference(run, qrels, [q], result.human_source, llm) for q in result.query_ids]
            whole = twin_preference(run, qrels, result.query_ids, result.human_source, llm)
            a = np.array([t["llm_first"] for t in per_query], dtype=float)
            b = np.array([t["human_first"] for t in per_query], dtype=float)
            if a.sum() != whole["llm_first"] or b.sum() != whole["human_first"]:
                raise AssertionError("per-query twin counts do not add up to the whole run's")  # pragma: no cover - a bug
            model = TwinPower(a, b, alpha=alpha, resamples=resamples, seed=seed, key=f"{retriever}\t{llm}\ttwin")
            details = {"pairs": whole["pairs"], "ties": whole["ties"], "neither_retrieved": whole["neither_retrieved"], "unpaired": whole["unpaired"], "pairs_per_query": model.pairs_per_query}
            out.append(Pilot(TWIN_PREFERENCE, retriever, llm, "pairs", model, whole["p_cluster"], details))
    return out


def ndsr_pilots(result: Any, k: int, *, alpha: float, resamples: int, seed: int) -> list[Pilot]:
    """Per retriever and LLM source: ΔNDSR@k of each query."""
    from sourcebias.evaluation import MIXED, RunKey
    from sourcebias.evaluation.statistics import delta_ndsr

    policy = orphan_policy(result)
    out: list[Pilot] = []
    for retriever in result.retrievers:
        run = result.runs.get(RunKey(retriever, MIXED))
        if run is None:
            continue
        for llm in result.other_sources:
            d = np.array([delta_ndsr(run.restrict([q]), [q], result.human_source, llm, k, orphans=policy)["delta"] for q in result.query_ids])
            whole = delta_ndsr(run, result.query_ids, result.human_source, llm, k, orphans=policy)
            if not math.isclose(float(np.nanmean(d)) if np.isfinite(d).any() else math.nan, whole["delta"], rel_tol=1e-9, abs_tol=1e-12) and whole["queries"]:
                raise AssertionError("per-query ΔNDSR does not average to the whole run's")  # pragma: no cover - a bug
            model = PairedPower(d, alpha=alpha, resamples=resamples, seed=seed, key=f"{retriever}\t{llm}\tNDSR@{k}")
            details = {"empty_rankings": whole["empty_rankings"], "unpaired_removed": whole["unpaired_removed"], "rule": whole["rule"]}
            out.append(Pilot(DELTA_NDSR, retriever, llm, f"NDSR@{k}", model, whole["p_ttest"], details))
    return out
