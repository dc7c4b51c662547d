"""A pilot's per-query values, taken from an ``evaluate`` result (or a grid cell, which is one),
as power models: one per statistic, retriever, LLM source and measure. The statistics are those
of the statistic registry (:mod:`sourcebias.evaluation.stats`, the ``--statistics`` names and
aliases of ``evaluate``), and each pilot's estimate and p-value are the registry's own records.

* **Relative Δ** (``relative_delta_ci``) and the **per-target difference** (``paired_tests``,
  any target measure): per query human − LLM target on the mixed ranking; unit: a query. Their
  ``*`` in ``evaluate`` is the paired randomization test corrected across the report's tests, so
  the power of that test is modelled for the family (:mod:`sourcebias.power.family`), with the
  uncorrected paired t-test beside it (:class:`~sourcebias.power.paired.PairedPower`).
* **Twin preference** (``twin_preference``): per query, how many relevant pairs have the LLM copy
  first and how many the original (:func:`~sourcebias.evaluation.stats.twin_preference.pair_counts`);
  unit: a relevant (query, document) pair, resampled by query (:class:`~sourcebias.power.twin.TwinPower`).
  Needs the runs and the dataset's judgements.
* **ΔNDSR@k** (``delta_ndsr``): per query NDSR_human − NDSR_LLM
  (:func:`~sourcebias.evaluation.stats.delta_ndsr.ndsr_differences`, with the result's orphan
  rule); unit: a query. Needs the runs.

The per-query values are checked against the registry's records over all queries at once (the
same sums and means), so the pilot is the analysis' own numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.power.base import PowerModel
from sourcebias.power.family import FamilyPower, PairedFamily
from sourcebias.power.paired import PairedPower
from sourcebias.power.twin import TwinPower

if TYPE_CHECKING:
    from sourcebias.evaluation.stats.paired_tests import PairedTestsRecord

RELATIVE_DELTA = "relative_delta_ci"
NDCG_DIFFERENCE = "paired_tests"
TWIN_PREFERENCE = "twin_preference"
DELTA_NDSR = "delta_ndsr"
#: a judge's twin bias (grade of the LLM twin − the original's), planned from a ``judge`` pilot
#: (:mod:`sourcebias.judges.power`); not an ``evaluate`` statistic
JUDGE_TWIN = "judge_twin_bias"
#: the registry's statistics that have a power analysis, in the order of the tables
STATISTICS = (RELATIVE_DELTA, NDCG_DIFFERENCE, TWIN_PREFERENCE, DELTA_NDSR)
LABELS = {RELATIVE_DELTA: "Relative Δ", NDCG_DIFFERENCE: "difference", TWIN_PREFERENCE: "twin pref.", DELTA_NDSR: "ΔNDSR", JUDGE_TWIN: "judge twin bias"}
UNITS = {
    RELATIVE_DELTA: "query",
    NDCG_DIFFERENCE: "query",
    TWIN_PREFERENCE: "relevant (query, document) pair; queries resampled as clusters",
    DELTA_NDSR: "query",
    JUDGE_TWIN: "judged twin pair (both copies graded); queries resampled as clusters",
}
#: how each statistic's effect is written (the unit of --effect)
EFFECT_UNITS = {
    RELATIVE_DELTA: "percent (Relative Δ of the means)",
    NDCG_DIFFERENCE: "measure units, human − LLM (0.05 = 5 NDCG points)",
    TWIN_PREFERENCE: "share of pairs with the LLM copy first (0.55 = 55%)",
    DELTA_NDSR: "NDSR units, human − LLM",
    JUDGE_TWIN: "grade points, LLM twin − human original (0.1 = a tenth of a grade)",
}
RD_SHIFT = (
    "Relative Δ = R imposed as the mean difference δ = R·M/100 with the pilot's mean level M = (mean human + mean LLM)/2 kept "
    "(human values raised and LLM values lowered by δ/2 around each query's difference); a study's Relative Δ is that of its "
    "resampled means and is significant when its paired test is (they share their sign)"
)


#: keys of earlier releases (``--effect ndcg=0.05``, before the statistics were named as in the
#: registry) -> the key that means the same now; accepted for one more release, with a FutureWarning
DEPRECATED_KEYS = {"ndcg": "difference", "ndcg_diff": "difference", "diff": "difference", "reldelta": "rel_delta", "rd": "rel_delta"}


def accepted_keys() -> dict[str, tuple[str, ...]]:
    """Every name that means each statistic of the power analysis: its registry name and aliases.

    Returns:
        ``{statistic: (name, *aliases)}`` in :data:`STATISTICS` order.
    """
    from sourcebias.evaluation.stats import get_statistic

    return {s: (s, *get_statistic(s).aliases) for s in STATISTICS}


def statistic_name(name: str) -> str:
    """The registry statistic a user's name or alias means (``twin`` -> ``twin_preference``,
    ``rel_delta`` -> ``relative_delta_ci``), refused when it has no power analysis.

    A key of earlier releases (:data:`DEPRECATED_KEYS`, e.g. ``ndcg``) is read as the key that
    replaced it, with a :class:`FutureWarning` naming that key. A name that is no statistic is
    refused with every accepted key.
    """
    import warnings

    from sourcebias.evaluation.stats import get_statistic

    key = name.strip().lower().replace("-", "_")
    if key in DEPRECATED_KEYS:
        new = DEPRECATED_KEYS[key]
        warnings.warn(
            f"'{name}' is the spelling of earlier releases and will be refused in the next one; write '{new}' ({get_statistic(new).name})",
            FutureWarning,
            stacklevel=2,
        )
        key = new
    known = "; ".join(f"{s}: {', '.join(names[1:])}" for s, names in accepted_keys().items())
    try:
        stat = get_statistic(key).name
    except ConfigError:
        raise ConfigError(f"unknown statistic '{name}'; accepted (each statistic, then its other names): {known}") from None
    if stat not in STATISTICS:
        raise ConfigError(f"the statistic '{name}' ({stat}) has no power analysis; accepted (each statistic, then its other names): {known}")
    return stat


@dataclass
class Pilot:
    """One statistic of one retriever and LLM source (and measure) of the pilot: the power model
    of the test that marks ``*`` in ``evaluate`` (``model``), the uncorrected one beside it where
    they differ (``uncorrected``), and what the pilot itself says (its ``*`` test's p-value)."""

    statistic: str
    retriever: str
    llm_source: str
    measure: str
    model: PowerModel
    p_value: float
    details: dict[str, Any] = field(default_factory=dict)
    uncorrected: PowerModel | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.statistic, self.retriever, self.llm_source, self.measure)

    def summary(self) -> dict[str, Any]:
        m = self.model
        sd = getattr(m, "sd", math.nan) * getattr(m, "scale", 1.0)
        return {
            "statistic": self.statistic,
            "retriever": self.retriever,
            "llm_source": self.llm_source,
            "measure": self.measure,
            "unit": UNITS[self.statistic],
            "queries": m.queries,
            "estimate": m.estimate,
            "sd": sd,
            "p_value": self.p_value,
            "test": m.test,
            "uncorrected_test": self.uncorrected.test if self.uncorrected else "",
            "shift": RD_SHIFT if self.statistic == RELATIVE_DELTA else m.shift,
            "undefined": m.undefined,
            **self.details,
        }


def orphan_policy(result: Any) -> str:
    """The orphan rule the result was made with (``drop``, the loader's default, when unsaid)."""
    from sourcebias.evaluation.stats.base import StatContext
    from sourcebias.evaluation.stats.delta_ndsr import result_orphan_policy

    return result_orphan_policy(result, StatContext())


def pilot_context(result: Any, *, qrels: Any = None, measures: Sequence[str] = (), ndsr_k: int = 10, correction: str = "holm") -> Any:
    """The :class:`~sourcebias.evaluation.stats.StatContext` of the pilot's own statistics: the
    settings ``evaluate`` uses by default (10,000 randomization resamples, the result's seed)."""
    from sourcebias.evaluation.stats import StatContext

    return StatContext(qrels=qrels, measures=list(measures), ndsr_k=ndsr_k, seed=int((result.parameters or {}).get("seed", 0)), correction=correction)


def paired_pilots(
    result: Any, measures: list[str], *, statistics: set[str], retrievers: Sequence[str], alpha: float, correction: str, resamples: int, seed: int
) -> list[Pilot]:
    """The Relative Δ and difference pilots of every retriever (of ``retrievers``), LLM source and
    measure, whose ``*`` tests form one family corrected with ``correction``."""
    from sourcebias.evaluation import relative_delta
    from sourcebias.evaluation.stats import correct_tests, get_statistic
    from sourcebias.evaluation.stats.base import paired_values

    members = [(r, llm, m, h, g) for r, llm, m, h, g in paired_values(result, measures) if r in retrievers]
    if not members or not statistics & {RELATIVE_DELTA, NDCG_DIFFERENCE}:
        return []
    records = {(x.retriever, x.llm_source, x.measure): x for x in get_statistic(NDCG_DIFFERENCE).compute(result, pilot_context(result, measures=measures))}
    chosen = [cast("PairedTestsRecord", records[(r, llm, m)]) for r, llm, m, _, _ in members]
    correct_tests(chosen, correction)
    several = len(result.other_sources) > 1
    labels = [f"{r}{'/' + llm if several else ''} {m}" for r, llm, m, _, _ in members]
    family = PairedFamily(np.array([h - g for *_, h, g in members]), labels, alpha=alpha, correction=correction, resamples=resamples, seed=seed)
    out: list[Pilot] = []
    for j, (retriever, llm, m, h, g) in enumerate(members):
        ok = np.isfinite(h) & np.isfinite(g)
        key = f"{retriever}\t{llm}\t{m}"
        star = FamilyPower(family, j, h[ok] - g[ok], key=key)
        plain = PairedPower(h[ok] - g[ok], alpha=alpha, resamples=resamples, seed=seed, key=key) if family.correction != "none" and family.size > 1 else None
        means = {"mean_human": float(h[ok].mean()) if ok.any() else math.nan, "mean_llm": float(g[ok].mean()) if ok.any() else math.nan}
        p = chosen[j].p_adjusted
        # the 'uncorrected' row models the paired t-test (PairedPower), so its p is the t-test's own
        details = {**means, "p_uncorrected": chosen[j].p_ttest, "family": family.describe()}
        if NDCG_DIFFERENCE in statistics:
            out.append(Pilot(NDCG_DIFFERENCE, retriever, llm, m, star, p, dict(details), plain))
        if RELATIVE_DELTA in statistics:
            level = (means["mean_human"] + means["mean_llm"]) / 2
            scale, limit = (100.0 / level, 2 * min(level, 1 - level)) if level > 0 else (math.nan, math.nan)
            rd = {**details, "relative_delta": relative_delta(means["mean_human"], means["mean_llm"]), "level": level}
            out.append(
                Pilot(RELATIVE_DELTA, retriever, llm, m, star.rescaled(scale, limit=limit), p, rd, plain.rescaled(scale, limit=limit) if plain else None)
            )
    return out


def mixed_runs(result: Any, records: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    """``(record, run)``: each record of a per-pair statistic with the mixed run it was computed on."""
    from sourcebias.evaluation import MIXED, RunKey

    for rec in records:
        run = result.runs.get(RunKey(rec.retriever, MIXED))
        if run is not None:
            yield rec, run


def twin_pilots(result: Any, qrels: Any, *, alpha: float, resamples: int, seed: int) -> list[Pilot]:
    """Per retriever and LLM source: the pair counts of each query (twin preference)."""
    from sourcebias.evaluation.stats import get_statistic
    from sourcebias.evaluation.stats.twin_preference import pair_counts

    out: list[Pilot] = []
    for rec, run in mixed_runs(result, get_statistic(TWIN_PREFERENCE).compute(result, pilot_context(result, qrels=qrels))):
        c = pair_counts(run, qrels, result.query_ids, result.human_source, rec.llm_source)
        a, b = c["llm_first"].astype(float), c["human_first"].astype(float)
        if a.sum() != rec.twin_pref_llm_first or b.sum() != rec.twin_pref_human_first:
            raise AssertionError("per-query twin counts do not add up to the whole run's")  # pragma: no cover - a bug
        model = TwinPower(a, b, alpha=alpha, resamples=resamples, seed=seed, key=f"{rec.retriever}\t{rec.llm_source}\ttwin")
        details = {
            "pairs": rec.twin_pref_pairs,
            "ties": rec.twin_pref_ties,
            "neither_retrieved": rec.twin_pref_neither,
            "unpaired": rec.twin_pref_unpaired,
            "pairs_per_query": model.pairs_per_query,
        }
        out.append(Pilot(TWIN_PREFERENCE, rec.retriever, rec.llm_source, "pairs", model, rec.twin_pref_p_cluster, details))
    return out


def ndsr_pilots(result: Any, k: int, *, alpha: float, resamples: int, seed: int) -> list[Pilot]:
    """Per retriever and LLM source: ΔNDSR@k of each query."""
    from sourcebias.evaluation.stats import get_statistic
    from sourcebias.evaluation.stats.delta_ndsr import ndsr_differences

    policy = orphan_policy(result)
    out: list[Pilot] = []
    for rec, run in mixed_runs(result, get_statistic(DELTA_NDSR).compute(result, pilot_context(result, ndsr_k=k))):
        d, _, _ = ndsr_differences(run, result.query_ids, result.human_source, rec.llm_source, k, orphans=policy)
        mean = float(np.nanmean(d)) if np.isfinite(d).any() else math.nan
        if rec.delta_ndsr_queries and not math.isclose(mean, rec.delta_ndsr, rel_tol=1e-9, abs_tol=1e-12):
            raise AssertionError("per-query ΔNDSR does not average to the whole run's")  # pragma: no cover - a bug
        model = PairedPower(d, alpha=alpha, resamples=resamples, seed=seed, key=f"{rec.retriever}\t{rec.llm_source}\tNDSR@{k}")
        details = {"empty_rankings": rec.delta_ndsr_empty_rankings, "unpaired_removed": rec.delta_ndsr_unpaired_removed, "rule": rec.delta_ndsr_rule}
        out.append(Pilot(DELTA_NDSR, rec.retriever, rec.llm_source, f"NDSR@{k}", model, rec.delta_ndsr_p, details))
    return out
